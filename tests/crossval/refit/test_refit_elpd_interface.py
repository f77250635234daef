"""LFO results read through the common elpd interface; ``mcse`` is the Monte Carlo se's
canonical name on K-fold and LFO results, ``mcse`` its former name."""

from __future__ import annotations

import math

import numpy as np
import pytest

from stanlogz.crossval.elpd.base import ElpdResult
from stanlogz.crossval.observations.observations import Observations
from stanlogz.crossval.refit.kfold import KFoldResult
from stanlogz.crossval.refit.lfo_result import LfoResult
from stanlogz.crossval.refit.unbiased import CVResult


def test_lfo_result_is_an_elpd_result() -> None:
    r = LfoResult(model="m", method="psis", min_train=5, ahead=1, origins=np.arange(5, 9),
                  elpd_t=np.array([-1.0, -1.2, -0.9, -1.1]),
                  mcse_t=np.array([0.01, 0.02, 0.01, 0.02]),
                  khat_t=np.full(4, np.nan), refits=[5], k_threshold=0.7, n_samples=400,
                  n_gradient_evals=0)
    assert isinstance(r, ElpdResult) and r.kind == "lfo"
    assert r.elpd == r.elpd_lfo and math.isnan(r.p) and r.n_obs == 4
    assert r.mcse == r.mc_se == math.sqrt(np.sum(r.mcse_t**2))
    np.testing.assert_array_equal(r.pointwise_mcse(), r.mcse_t)
    assert r.to_dict()["mcse"] == r.mcse


def test_kfold_keeps_mc_se_as_the_former_name() -> None:
    assert KFoldResult.mc_se.canonical == "mcse" and "mcse" in vars(KFoldResult)


def _cv_result(n_valid: int, criterion: str = "log") -> CVResult:
    reps = np.array([1.1, 0.9, 1.3, 0.8, 1.0, 1.2])
    return CVResult(model="m", estimate=1.05, estimate_mcse=0.07, ci=(0.9, 1.2), ci_level=0.95,
                    n_valid=n_valid, replicates=reps,
                    splits=np.arange(6 * n_valid).reshape(6, n_valid) % 10,
                    lambdas=np.full(6, 0.5), meeting_times=np.ones(6, int), tail_k=0.1,
                    n_evals=10, n_evals_tuning=5, seconds=1.0,
                    observations=Observations(size_name="N", fields=("y",), n=10),
                    criterion=criterion, n_samples=400)


def test_cv_result_reads_as_a_sum_over_observations() -> None:
    """Unbiased CV's objective is a mean per split; the elpd interface gives the sum over the
    N = 10 observations (leave-one-out, log score) with its Monte Carlo se, and the mean keeps
    its own names (issue 34)."""
    r = _cv_result(1)
    assert isinstance(r, ElpdResult) and r.kind == "cv" and r.n_obs == 10
    assert r.elpd == -10 * 1.05 and r.mcse == 10 * 0.07
    assert math.isnan(r.se) and math.isnan(r.p) and np.all(np.isnan(r.pointwise_mcse()))
    d = r.to_dict()
    assert d["elpd"] == -10.5 and d["mcse"] == pytest.approx(0.7) and d["se"] is None
    assert d["cv"] == 1.05 and d["cv_mcse"] == 0.07 and d["n_obs"] == 10
    assert d["kind"] == "cv" and d["n_samples"] == 400 and d["p"] is None
    assert r.table()[1] == ["elpd_loo (= -N cv)", -10.5, 0.7, -12.0, -9.0]
    text = str(r)
    assert "MCSE" in text and "elpd_loo (= -N cv)" in text


@pytest.mark.parametrize(("n_valid", "criterion"), [(2, "log"), (1, "squared_error")])
def test_cv_result_off_the_elpd_scale_has_no_sum(n_valid: int, criterion: str) -> None:
    r = _cv_result(n_valid, criterion)
    assert math.isnan(r.elpd) and math.isnan(r.mcse) and len(r.table()) == 1
    d = r.to_dict()
    assert d["elpd"] is None and d["mcse"] is None and d["cv_mcse"] == 0.07


def test_held_out_and_fixed_points_name_their_monte_carlo_se_mcse() -> None:
    """A held-out split's and a fixed point's se is a Monte Carlo se: ``mcse`` (the key in
    JSON too), ``se`` its former name with the same value."""
    from stanlogz.crossval.fixups.fixups import FixedPoint
    from stanlogz.crossval.refit.heldout import HeldOut

    h = HeldOut(index=np.array([2, 5]), elpd=-2.5, mcse=0.03, method="bridge",
                elpd_i=np.array([-1.2, -1.4]), elpd_i_mcse=0.02, khat=(0.2, 0.3), n_latent=0,
                n_gradient_evals=100, n_evals=400, seconds=0.5, shared_mcse=0.01,
                elpd_i_shared_mcse=0.005)
    assert h.se == h.mcse == 0.03
    d = h.to_dict()
    assert d["mcse"] == 0.03 and d["elpd_i_mcse"] == 0.02 and d["elpd_i_shared_mcse"] == 0.005
    assert "se" not in d and d["observations"] == [3, 6]
    f = FixedPoint(index=4, elpd=-1.1, mcse=0.04, method="mm", khat=0.9, psis_elpd=-1.2,
                   n_gradient_evals=0, n_evals=50, seconds=0.1)
    assert f.se == f.mcse == 0.04
    assert f.to_dict()["mcse"] == 0.04 and "se" not in f.to_dict()
