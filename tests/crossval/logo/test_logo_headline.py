"""Leave-one-group-out has one headline whichever command computes it (issue 43): ``kfold``
with the groups as folds (one refit per group) and ``loo --group`` (no refits) both lead with
elpd_logo = Σ_g log p(y_g | y₋g), agree with each other and with Gaussian conditioning on the
README's hierarchical example, and both results read through the elpd interface.

Tolerances: each estimate is asymptotically normal around the truth with sd its Monte Carlo
se. The two runs are independent (different programs of draws: refits against one NUTS run),
so their difference has sd sqrt(mcse_kfold² + mcse_loo²), the combined mc se, which already
holds all the between-run noise; |z| < 3.9 fails with probability 1e-4 per check, and the
three z-checks below share one Monte Carlo error each way, so the union bound is 3e-4 at most
and the seeds are fixed (measured z at these seeds: see the asserts' messages).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from benchmarks.truths.crossval.truths import gaussian_heldout, hier_regression_cov
from stanlogz._util.sum_se import sum_se
from stanlogz.crossval.elpd.base import ElpdResult
from stanlogz.crossval.logo.estimator import logo
from stanlogz.crossval.refit.kfold import kfold

EX = Path(__file__).resolve().parents[3] / "stan_models" / "examples"
Z = 3.9


@pytest.fixture(scope="module")
def both(compiled):
    data = json.loads((EX / "hier_regression.data.json").read_text())
    m = compiled(EX / "hier_regression.stan", data)
    by_refit = kfold(m, data, k=None, group="g", seed=5)
    no_refit = logo(m, data, group="g", seed=6)
    cov, y = hier_regression_cov(data), np.asarray(data["y"])
    truth = np.array([gaussian_heldout(y, cov, g.rows) for g in no_refit.groups])
    return by_refit, no_refit, truth


@pytest.mark.stan
def test_kfold_and_loo_group_agree_on_elpd_logo(both) -> None:
    k, lg, truth = both
    assert k.is_logo and k.k == lg.n_groups == 6
    # the folds are the groups in label order (make_folds with k=None), as loo --group's
    for f, g in zip(k.folds, lg.groups, strict=True):
        np.testing.assert_array_equal(np.sort(f.index), g.rows)
    combined = math.hypot(k.mcse_elpd_logo, lg.mcse_elpd_logo)
    z = (k.elpd_logo - lg.elpd_logo) / combined
    assert abs(z) < Z, (k.elpd_logo, lg.elpd_logo, combined, z)
    # each against the exact Σ_g log p(y_g | y_-g) (the refits' se is ~1e-11 here: the
    # evidence difference of a Gaussian program; 1e-8 is the floor of its arithmetic)
    assert abs(k.elpd_logo - truth.sum()) < Z * k.mcse_elpd_logo + 1e-8
    assert abs(lg.elpd_logo - truth.sum()) < Z * lg.mcse_elpd_logo
    # the same se over groups, sqrt(G var) ddof 1, on each run's group values; against the
    # exact values' it moves by at most sqrt(G / (G - 1)) ||a - b|| <= 4.8 sqrt(G/(G-1)) mcse
    # w.p. 1 - 1.6e-6 (the argument of tests/crossval/refit/test_kfold.py)
    assert k.elpd_logo_se == pytest.approx(sum_se(k.group_elpd))
    assert lg.se == pytest.approx(sum_se(lg.elpd_g))
    fac = math.sqrt(6 / 5)
    assert abs(k.elpd_logo_se - sum_se(truth)) < 4.8 * fac * k.mcse_elpd_logo + 1e-8
    assert abs(lg.se - sum_se(truth)) < 4.8 * fac * lg.mcse_elpd_logo
    # the per-observation sum beside the headline is kfold's elpd_kfold; loo --group gives
    # the same sum of its observation values (estimates of one quantity: the refits' per-
    # observation values carry mc se k.mcse, loo's obs values theirs, summed in quadrature)
    obs_mcse = math.sqrt(np.nansum(lg.mcse_obs**2))
    assert abs(k.elpd_kfold - lg.elpd_logo_obs) < Z * math.hypot(k.mcse, obs_mcse)
    # the joint and the per-observation sums are different quantities (here 4.6 nats apart)
    assert k.elpd_kfold < k.elpd_logo - 1.0


@pytest.mark.stan
def test_both_headline_elpd_logo(both, capsys) -> None:
    k, lg, _ = both
    assert k.table()[0][0] == lg.table()[0][0] == "elpd_logo"
    assert k.table()[0][1] == pytest.approx(k.elpd_logo, abs=1e-3)
    assert k.table()[2][0].startswith("elpd_kfold")
    print(k)  # the kfold command prints exactly this (tests/cli/test_cv_tables.py)
    out = capsys.readouterr().out
    assert out.index("elpd_logo") < out.index("elpd_kfold")
    d = k.to_dict()
    assert d["elpd_logo"] == k.elpd_logo and d["mcse_elpd_logo"] == k.mcse_elpd_logo
    assert d["elpd_logo_se"] == k.elpd_logo_se and d["elpd_kfold"] == k.elpd_kfold
    assert d["elpd_logo_interval"]["low"] < k.elpd_logo < d["elpd_logo_interval"]["high"]
    assert lg.to_dict()["elpd_logo_obs"] == pytest.approx(lg.elpd_logo_obs)


@pytest.mark.stan
def test_logo_result_is_an_elpd_result(both) -> None:
    _, lg, _ = both
    assert isinstance(lg, ElpdResult) and lg.kind == "logo" and lg.unit == "groups"
    assert lg.elpd == lg.elpd_logo and lg.mcse == lg.mcse_elpd_logo and math.isnan(lg.p)
    np.testing.assert_array_equal(lg.elpd_i, lg.elpd_g)
    np.testing.assert_array_equal(lg.pointwise_mcse(), [g.mcse for g in lg.groups])
    assert lg.n_obs == 30 and lg.n_groups == 6
    d = lg.elpd_dict()
    assert d == {"kind": "logo", "elpd": lg.elpd_logo, "se": lg.se, "mcse": lg.mcse_elpd_logo,
                 "p": None, "n_obs": 30, "n_samples": lg.n_samples}
    assert {key: lg.to_dict()[key] for key in d} == d
