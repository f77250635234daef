"""WAIC (against R loo's and ArviZ 0.x's waic and the closed form of a conjugate normal model,
with its Monte Carlo se) and the Jacobian adjustment (a lognormal model of y and a normal model
of log y give elpd differing by exactly Σ log y_i) — issue 26 item 5."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy import special
from scipy.stats import norm

import stanlogz
from stanlogz.cli import main
from stanlogz.crossval.observations.jacobian import jacobian_adjusted, log_jacobian
from stanlogz.crossval.psis_loo.waic import waic
from stanlogz.crossval.refit.cv_se import calibration_factor
from stanlogz.draws import from_array, sample
from stanlogz.errors import InputError
from stanlogz.stan.settings import NutsArgs

FIX = Path("/work/shared/fixtures/cmdstan")
SCHOOLS = sorted(str(p) for p in (FIX / "schools").glob("schools-*.csv"))
COIN = sorted(str(p) for p in (FIX / "coin").glob("coin-*.csv"))
TESTS = Path(__file__).resolve().parents[3] / "stan_models" / "tests"


def _conjugate(seed: int, s: int, y: np.ndarray, tau0: float = 2.0):
    """Exact posterior draws of θ in y_i ~ N(θ, 1), θ ~ N(0, tau0²), their log-likelihood and
    the S → ∞ value of elpd_waic in closed form."""
    n = y.size
    v = 1 / (1 / tau0**2 + n)
    m = v * y.sum()
    th = np.random.default_rng(seed).normal(m, math.sqrt(v), s)
    ll = norm.logpdf(y[None, :], th[:, None], 1.0)
    d = y - m
    lppd = norm.logpdf(y, m, math.sqrt(1 + v))
    p_waic = (2 * v**2 + 4 * d**2 * v) / 4  # Var of (y - θ)²/2 with θ ~ N(m, v)
    return ll, float(np.sum(lppd - p_waic))


def test_waic_equals_loo_and_arviz0_and_the_closed_form() -> None:
    """The fields are R loo's ``waic`` numbers (issue 44 item 4): p_waic_i the variance over
    draws with S − 1 (``matrixStats::colVars``), se = sqrt(N var(elpd_waic_i)) with N − 1
    (``table_of_estimates``); ``arviz0()`` is ArviZ 0.x's ``waic`` (ddof 0 both times)."""
    import arviz as az

    from tests.conftest import arviz_from_csv

    idata = arviz_from_csv(SCHOOLS)
    ll_s = np.asarray(idata.log_likelihood["log_lik"]).reshape(-1, 8)
    s, n = ll_s.shape
    lppd_i = special.logsumexp(ll_s, axis=0) - np.log(s)
    p_i = np.var(ll_s, axis=0, ddof=1)  # loo's colVars
    ref_i = lppd_i - p_i
    ref_elpd, ref_p = ref_i.sum(), p_i.sum()
    ref_se = np.sqrt(n * np.var(ref_i, ddof=1))  # loo's sqrt(n * var(pointwise))
    if hasattr(az, "waic"):  # ArviZ 0.x
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            a = az.waic(idata, pointwise=True)
        az0 = {"elpd_waic": a.elpd_waic, "se": a.se, "p_waic": a.p_waic}
    else:  # ArviZ 1.x has no WAIC: ArviZ 0.x's formulas (ddof 0 over draws and observations)
        a_i = lppd_i - np.var(ll_s, axis=0)
        az0 = {"elpd_waic": a_i.sum(), "se": np.sqrt(n * np.var(a_i)),
               "p_waic": np.var(ll_s, axis=0).sum()}
    for fit in (idata, SCHOOLS):
        w = waic(fit)
        assert abs(w.elpd_waic - ref_elpd) < 1e-9 and abs(w.se - ref_se) < 1e-9
        assert abs(w.p_waic - ref_p) < 1e-9 and abs(w.p_waic_se - np.sqrt(
            n * np.var(p_i, ddof=1))) < 1e-9
        assert w.se_elpd_waic == w.se and w.se_waic == 2 * w.se
        iv = w.elpd_waic_interval
        assert iv.high - w.elpd_waic == pytest.approx(
            2 * calibration_factor(w.elpd_i) * ref_se, rel=1e-9)
        for k, v in w.arviz0().items():
            assert abs(v - az0[k]) < 1e-9, k
        # the two conventions differ: ArviZ 0.x's p_waic is (S - 1)/S of loo's
        assert w.arviz0()["p_waic"] == pytest.approx(w.p_waic * (s - 1) / s, rel=1e-12)
    np.testing.assert_allclose(w.elpd_i, ref_i, atol=1e-9)
    y = np.random.default_rng(4).normal(0.3, 1.0, 20)
    ll, truth = _conjugate(7, 4000, y)
    w = waic(ll)
    # benchmarks/waic_mcse.py: |error| / mcse is close to N(0, 1) (±2 mcse covers 95%), so
    # 4.5 mcse fails with probability ~1e-5
    assert 0 < w.mcse < 0.05 and abs(w.elpd_waic - truth) < 4.5 * w.mcse
    assert not w.warnings


def test_waic_warns_when_p_waic_is_large() -> None:
    y = np.random.default_rng(4).normal(0.3, 1.0, 20)
    y[0] = 9.0  # an outlier: its log-likelihood varies a lot over the posterior
    ll, _ = _conjugate(8, 2000, y, tau0=5.0)
    w = waic(ll)
    assert w.p_waic_i[0] > 0.4 and any("p_waic above 0.4 (1)" in m for m in w.warnings)


def test_jacobian_lognormal_vs_normal_on_log_y(compiled) -> None:
    logn = compiled("lognormal_y")
    normal = compiled("normal_logy")
    y = np.array(json.loads((TESTS / "lognormal_y.json").read_text())["y"])
    d = sample(logn, NutsArgs(chains=2, warmup=300, draws=500), seed=5)
    u = d.unconstrained  # the two posteriors are the same: one set of draws for both
    a = stanlogz.loo(logn, draws=from_array(u, logn), fix="none")
    b = stanlogz.loo(normal, draws=from_array(u, normal), fix="none")
    # log lognormal(y | μ, σ) = log normal(log y | μ, σ) − log y at every draw: exact
    assert abs((b.elpd_loo - a.elpd_loo) - np.log(y).sum()) < 1e-8
    adj = jacobian_adjusted(b, "log", y)
    np.testing.assert_allclose(adj.elpd_i, a.elpd_i, atol=1e-9)
    assert abs(adj.elpd_loo - a.elpd_loo) < 1e-8 and abs(adj.se - a.se) < 1e-8
    assert abs(adj.p_loo - b.p_loo) < 1e-12  # p_loo does not change
    wa, wb = waic(logn, draws=from_array(u, logn)), waic(normal, draws=from_array(u, normal))
    assert abs(jacobian_adjusted(wb, "log", y).elpd_waic - wa.elpd_waic) < 1e-8
    cmp = stanlogz.loo_compare([a, adj], names=["lognormal", "normal on log y"])
    assert abs(cmp.elpd_diff).max() < 1e-8


def test_jacobian_transforms_and_refusals() -> None:
    y = np.array([0.2, 0.5, 0.9])
    # log|g'(y)| against numerical derivatives of g
    for name, g in (("log", np.log), ("log1p", np.log1p), ("sqrt", np.sqrt),
                    ("logit", lambda v: np.log(v / (1 - v)))):
        h = 1e-6
        num = np.log(np.abs((g(y + h) - g(y - h)) / (2 * h)))
        np.testing.assert_allclose(log_jacobian(name, y), num, atol=1e-7)
    with pytest.raises(InputError, match="needs y > 0; observation 2 is -1"):
        log_jacobian("log", [1.0, -1.0])
    with pytest.raises(InputError, match="must be one of"):
        log_jacobian("exp", y)
    r = waic(np.zeros((100, 3)) + np.random.default_rng(0).normal(size=(100, 3)))
    with pytest.raises(InputError, match="2 values for 3 observations"):
        jacobian_adjusted(r, "log", [1.0, 2.0])


def test_cli_waic_and_loo_jacobian(capsys) -> None:
    data = str(FIX / "coin" / "coin.data.json")
    rc = main(["--json", "--quiet", "waic", "--fit", *SCHOOLS])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert abs(json.loads(out)["elpd_waic"] - waic(SCHOOLS).elpd_waic) < 1e-9
    rc = main(["--json", "--quiet", "loo", "--fit", *COIN, "--data", data,
               "--jacobian", "log1p:y"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    res = json.loads(out)
    # y holds 2 ones and 8 zeros: Σ −log(1 + y) = −2 log 2
    assert abs(res["elpd_loo"] - (stanlogz.loo(COIN).elpd_loo - 2 * math.log(2))) < 1e-9
    assert abs(res["jacobian"]["sum_log_abs_derivative"] + 2 * math.log(2)) < 1e-12
    for argv, msg in ((["loo", "--fit", *COIN, "--data", data, "--jacobian", "log:y"],
                       "needs y > 0"),
                      (["waic", "--fit", *COIN, "--jacobian", "log1p"], "TRANSFORM:VAR"),
                      (["waic", "--fit", *COIN, "--jacobian", "log1p:y"], "needs --data"),
                      (["waic"], "--fit")):
        rc = main(argv)
        err = capsys.readouterr().err
        assert rc == 2 and err.count("\n") == 1 and msg in err, err
