"""Issue 35 item 1: every name loo or ArviZ uses carries loo's number (R loo 2.10:
se_elpd_loo = sqrt(N) sd(elpd_i), se_p_loo = sqrt(N) sd(p_loo_i), se_looic = 2 se_elpd_loo,
se_diff = sqrt(N) sd(d_i), sd with N − 1 degrees of freedom), checked against those formulas
applied to the pointwise values; stanlogz's calibrated statement goes beside them as an
interval (``elpd_loo_interval``, ``diff_interval``), not an se."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import stanlogz
from stanlogz import arviz_compat
from stanlogz.crossval import loo_compare
from stanlogz.crossval.psis_loo.waic import waic
from stanlogz.crossval.refit.cv_se import LEVEL_2SE, MAX_FACTOR, calibration_factor


def _r_sd(x: np.ndarray) -> float:
    """R's sd(): the sample sd with N − 1 in the denominator, written out."""
    x = np.asarray(x, dtype=float)
    return math.sqrt(float(np.sum((x - x.mean()) ** 2)) / (x.size - 1))


def _conjugate_idata(n: int, shift: float = 0.0, seed: int = 5):
    """InferenceData of y_i ~ N(mu, 1), mu ~ N(0, 10²), with exact posterior draws (4 chains
    of 500) and log_lik; ``shift`` moves the posterior mean by about that much (a worse
    program on the same y when it is nonzero)."""
    rng = np.random.default_rng(seed)
    y = np.random.default_rng(99).normal(0.5, 1.3, n)
    prec = n + 1 / 100
    mu = rng.normal((y + shift).sum() / prec, 1 / math.sqrt(prec), (4, 500))
    ll = stats.norm.logpdf(y[None, None, :], mu[..., None], 1.0)
    return arviz_compat.from_dict({"posterior": {"mu": mu},
                                   "log_likelihood": {"log_lik": ll}})


def test_loo_names_hold_loos_values_on_15_observations() -> None:
    r = stanlogz.loo(_conjugate_idata(15))
    n = 15
    se = math.sqrt(n) * _r_sd(r.elpd_i)
    for name in ("se", "se_elpd_loo"):
        assert abs(getattr(r, name) - se) < 1e-6, name
    assert abs(r.se_looic - 2 * se) < 1e-6
    assert abs(r.se_p_loo - math.sqrt(n) * _r_sd(r.lppd_i - r.elpd_i)) < 1e-6
    a = r.to_arviz()
    assert abs((float(a.se) if hasattr(a, "se") else float(a["se"])) - se) < 1e-6
    d = r.to_dict()
    assert abs(d["se"] - se) < 1e-6 and abs(d["se_elpd_loo"] - se) < 1e-6
    # beside it: the calibrated interval, elpd_loo ± 2 c se with c the capped bootstrap-t
    # factor; at N = 15 the factor is above 1 (the case: the cap of 2)
    iv = r.elpd_loo_interval
    c = calibration_factor(r.elpd_i)
    assert 1.0 < c <= MAX_FACTOR and iv.factor == c and iv.level == pytest.approx(LEVEL_2SE)
    assert iv.low == pytest.approx(r.elpd_loo - 2 * c * se, rel=1e-12)
    assert iv.high == pytest.approx(r.elpd_loo + 2 * c * se, rel=1e-12)
    assert d["elpd_loo_interval"] == pytest.approx(iv.to_dict())


def test_waic_names_hold_loos_values() -> None:
    w = waic(_conjugate_idata(15))
    n = 15
    se = math.sqrt(n) * _r_sd(w.elpd_i)
    assert abs(w.se - se) < 1e-6 and abs(w.se_elpd_waic - se) < 1e-6
    assert abs(w.se_waic - 2 * se) < 1e-6 and abs(w.waic + 2 * w.elpd_waic) < 1e-9
    assert abs(w.se_p_waic - math.sqrt(n) * _r_sd(w.p_waic_i)) < 1e-6
    assert w.to_dict()["se_elpd_waic"] == w.se
    iv = w.elpd_waic_interval
    assert iv.high - iv.low == pytest.approx(4 * calibration_factor(w.elpd_i) * se, rel=1e-12)


@pytest.mark.parametrize("n", [15, 40])
def test_compare_se_diff_is_loos_and_always_given(n: int) -> None:
    """se_diff / dse / diff_se = sqrt(N) sd(d_i) for every program, small or large difference,
    few or many observations; p_worse = pnorm(0, elpd_diff, se_diff) = Φ(−elpd_diff / se_diff)
    as loo, NaN only where |elpd_diff| < 4 (with the reason); the calibrated interval only
    where |elpd_diff| >= 4 and N >= 20."""
    best = stanlogz.loo(_conjugate_idata(n))
    near = stanlogz.loo(_conjugate_idata(n, shift=0.1, seed=6))
    far = stanlogz.loo(_conjugate_idata(n, shift=2.0, seed=7))
    c = loo_compare([best, near, far], ["best", "near", "far"])
    assert c.best == 0
    for j in (1, 2):
        d = c.results[j].elpd_i - best.elpd_i
        se = math.sqrt(n) * _r_sd(d)
        for name in ("diff_se", "se_diff", "dse"):
            assert abs(getattr(c, name)[j] - se) < 1e-6, name
        assert c.to_dict()["models"][j]["diff_se"] == pytest.approx(se, abs=1e-6)
        small = abs(c.elpd_diff[j]) < 4
        if small:
            assert np.isnan(c.p_worse[j])
        else:
            assert c.p_worse[j] == pytest.approx(stats.norm.cdf(-c.elpd_diff[j] / se), abs=1e-9)
        given = not small and n >= 20
        assert np.all(np.isfinite(c.diff_interval[j])) == given
    assert abs(c.elpd_diff[1]) < 4 <= abs(c.elpd_diff[2])
    assert any("near: |elpd_diff| < 4" in w and "p_worse" in w for w in c.warnings())
    assert c.diag_diff[1] == "|elpd_diff| < 4" and c.diag_diff[2] == "N < 100"


def test_kfold_names_hold_loos_values() -> None:
    """loo's ``kfold()`` se (``se``, ``se_elpd_kfold``) and ArviZ's K-fold ``se`` are sqrt(N)
    sd(elpd_i); stanlogz's fold-aware, calibrated se stays under its own name beside them."""
    from stanlogz.crossval.observations.observations import Observations
    from stanlogz.crossval.refit.cv_se import kfold_se
    from stanlogz.crossval.refit.kfold import KFoldResult

    e = np.random.default_rng(4).normal(-1.2, 0.6, 15)
    fold_of = np.arange(15) % 3
    r = KFoldResult(model="m", scheme="random", k=3, fold_of=fold_of, elpd_i=e, folds=[],
                    observations=Observations(size_name="N", fields=("y",), n=15),
                    n_samples=1000)
    se = math.sqrt(15) * _r_sd(e)
    assert abs(r.se - se) < 1e-6 and abs(r.se_elpd_kfold - se) < 1e-6
    assert abs(r.se_pointwise - se) < 1e-6 and abs(r.to_dict()["se"] - se) < 1e-6
    a = r.to_arviz()
    assert abs((float(a.se) if hasattr(a, "se") else float(a["se"])) - se) < 1e-6
    assert r.se_fold_aware == pytest.approx(kfold_se(e, fold_of)) and r.se_fold_aware >= se
    assert r.to_dict()["se_fold_aware"] == r.se_fold_aware
    assert r.table()[0] == ["elpd_kfold", round(e.sum(), 3), round(se, 3), 0.0]
    # K-fold reads through the elpd interface too (issue 34)
    assert r.kind == "kfold" and r.elpd == pytest.approx(e.sum()) and math.isnan(r.p)
    assert r.elpd_dict()["kind"] == "kfold" and r.elpd_dict()["n_obs"] == 15


def test_mcse_is_the_one_name_of_the_monte_carlo_se() -> None:
    r = stanlogz.loo(_conjugate_idata(15))
    assert r.mcse == r.mcse_elpd_loo and np.isfinite(r.mcse)
    w = waic(_conjugate_idata(15))
    assert w.mcse_elpd_waic == w.mcse and w.to_dict()["mcse_elpd_waic"] == w.mcse


def test_loo_and_waic_share_the_elpd_interface() -> None:
    """Issue 34's ground floor: the same names for the same things on LOO and WAIC results."""
    from stanlogz.crossval.elpd.base import ElpdResult

    idata = _conjugate_idata(15)
    r, w = stanlogz.loo(idata), waic(idata)
    for res, kind, elpd, p in ((r, "loo", r.elpd_loo, r.p_loo), (w, "waic", w.elpd_waic, w.p_waic)):
        assert isinstance(res, ElpdResult) and res.kind == kind
        assert res.elpd == elpd and res.p == p and res.pointwise_mcse().shape == (15,)
        d = res.elpd_dict()
        assert d == {"kind": kind, "elpd": elpd, "se": res.se, "mcse": res.mcse, "p": p,
                     "n_obs": 15, "n_samples": 2000}
        assert {k: res.to_dict()[k] for k in d} == d
    np.testing.assert_array_equal(r.pointwise_mcse(), r.mcse_i)
    assert np.all(np.isnan(w.pointwise_mcse()))  # WAIC has no pointwise Monte Carlo se
