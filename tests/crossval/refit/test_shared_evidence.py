"""K-fold folds that fall back to the evidence difference share one log Z(full) (estimated
once from the shared full-data draws), and the Monte Carlo se of their sum adds that shared
part linearly (stanlogz.crossval.refit.heldout.shared_sum_se)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from stanlogz.crossval.refit import heldout
from stanlogz.crossval.refit.fold_sums import folds_sum_se
from stanlogz.crossval.refit.heldout import shared_sum_se
from stanlogz.crossval.refit.kfold import kfold
from stanlogz.estimators.bridge import bridge
from tests.crossval.refit.test_kfold import HIER, _data, _pointwise_truth


def test_shared_sum_se_adds_the_shared_part_linearly() -> None:
    # own parts 0.3² − 0.1² and 0.4² − 0.2² in quadrature, shared parts 0.1 + 0.2 linearly
    assert shared_sum_se([0.3, 0.4], [0.1, 0.2]) == pytest.approx(math.sqrt(0.08 + 0.12 + 0.09))
    assert shared_sum_se([0.5, 0.5, 0.5], [0.5, 0.5, 0.5]) == pytest.approx(1.5)
    assert shared_sum_se([0.3, 0.4], [0.0, 0.0]) == pytest.approx(0.5)


@pytest.mark.slow
def test_evidence_difference_folds_share_one_full_log_z(compiled, monkeypatch) -> None:
    """Forced onto the evidence difference, 5 folds make 6 gbs fits (one of the full data, one
    per training set) instead of 10, every fold carries the same shared se, and the K-fold
    total still agrees with the Gaussian closed form within 4.5 of its (now shared-aware) mc
    se: one z-test, failure probability 6.8e-6 for an honest se."""
    monkeypatch.setattr(heldout, "KHAT_HEAVY", -1.0)  # every bridge counts as poor
    calls: list[int] = []
    real = bridge.gbs

    def counting(target, draws, **kw):
        calls.append(target.dim)
        return real(target, draws, **kw)

    monkeypatch.setattr(bridge, "gbs", counting)
    d = _data("hier_regression")
    m = compiled(HIER, d)
    r = kfold(m, d, k=5, chains=4, warmup=500, n_draws=1000, seed=21)
    assert all(f.method == "evidence-difference" for f in r.folds)
    assert len(calls) == 6
    shared = {f.shared_mcse for f in r.folds}
    assert len(shared) == 1 and shared.pop() > 0
    # each fold's Σ elpd_i carries its slope in log r times the shared se (delta method)
    assert all(0 < f.elpd_i_shared_mcse < f.index.size * f.shared_mcse for f in r.folds)
    # (the full draws' influence summed over the folds as well: fold_sums)
    assert r.mcse == pytest.approx(folds_sum_se(r.folds))
    # the shared part never makes the total's mc se smaller than the folds' se in quadrature
    # (it adds (sum s_j)^2 - sum s_j^2 >= 0). Not strictly larger here: the posterior is
    # Gaussian, so the full data's gbs se is often ~1e-11 (the Gaussianized proposal fits it
    # to rounding) and the increase falls below float resolution; the strict increase is
    # test_shared_sum_se_adds_the_shared_part_linearly's
    assert r.mcse >= math.sqrt(sum(f.elpd_i_mcse**2 for f in r.folds)) * (1 - 1e-12)
    each, _ = _pointwise_truth(d, r.fold_of)
    assert abs(r.elpd_kfold - each.sum()) < 4.5 * r.mcse, (r.elpd_kfold, each.sum(), r.mcse)
    assert np.isfinite(r.se)


def test_shared_evidence_travels_to_a_cluster() -> None:
    """Units of work sent to Dask are pickled: the lock stays behind, the seed travels (each
    worker then fits log Z(full) once with it, the same value everywhere)."""
    import pickle

    s = pickle.loads(pickle.dumps(heldout.SharedEvidence(17)))
    assert s.seed == 17 and s.result is None and s._lock.acquire(blocking=False)
