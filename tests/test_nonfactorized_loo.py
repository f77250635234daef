"""Non-factorized LOO where the density is not Gaussian in y_i: log p(y_i | y_-i, theta) by
quadrature over y_i (continuous) or a sum over its support (integer)
(stanlogz.crossval.conditional_quadrature, routed by stanlogz.crossval.nonfactorized), checked
against independent numpy/scipy implementations of each program at fixed theta, against a
brute-force exact LOO (grid quadrature over theta), and its refusals.

Tolerances: at fixed theta the computation is deterministic; it is compared with scipy's quad
(epsrel 1e-11) or an exact numpy sum, and must agree within the error bound it reports (the
disagreement of its last two quadrature levels, itself <= 1e-6) plus 1e-9 for rounding of a
few hundred density terms. A PSIS estimate is asymptotically normal around the truth with sd
its Monte Carlo se, so |error| <= 4 se fails with probability 6e-5; the seeds are fixed."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, special, stats

from stanlogz.crossval.conditional_quadrature import QuadratureLogLik
from stanlogz.crossval.loo import loo
from stanlogz.crossval.nonfactorized import NonFactorizedSource
from stanlogz.crossval.observations import find_observations
from stanlogz.crossval.psis import psis_loo
from stanlogz.crossval.sum_mcse import sum_mcse
from stanlogz.errors import InputError

# ----------------------------------------------------------------- GARCH(1,1)


def _garch_data(t_len: int = 30, seed: int = 1) -> dict:
    rng = np.random.default_rng(seed)
    mu, a0, a1, b1 = 0.3, 0.2, 0.4, 0.3
    y, s2 = np.zeros(t_len), 1.0
    for t in range(t_len):
        if t:
            s2 = a0 + a1 * (y[t - 1] - mu) ** 2 + b1 * s2
        y[t] = mu + np.sqrt(s2) * rng.normal()
    return {"T": t_len, "y": y.round(3).tolist(), "sigma1": 1.0}


def _garch_loglik(y: np.ndarray, p: dict, sigma1: float) -> float:
    """posteriordb garch11's likelihood written out in numpy."""
    s = np.empty(y.size)
    s[0] = sigma1
    for t in range(1, y.size):
        s[t] = np.sqrt(p["alpha0"] + p["alpha1"] * (y[t - 1] - p["mu"]) ** 2
                       + p["beta1"] * s[t - 1] ** 2)
    return float(np.sum(-0.5 * np.log(2 * np.pi * s**2) - 0.5 * (y - p["mu"]) ** 2 / s**2))


GARCH_THETA = [{"mu": 0.3, "alpha0": 0.2, "alpha1": 0.4, "beta1": 0.3},
               {"mu": -0.2, "alpha0": 0.6, "alpha1": 0.1, "beta1": 0.6},
               {"mu": 0.5, "alpha0": 0.05, "alpha1": 0.8, "beta1": 0.15}]


def _quad_conditional(loglik, y: np.ndarray, i: int, lower: float = -np.inf) -> float:
    """log p(y_i | y_-i) = loglik(y) - log ∫ exp(loglik(y with y_i = u)) du by scipy's quad."""
    base = loglik(y)

    def f(u: float) -> float:
        z = y.copy()
        z[i] = u
        return np.exp(loglik(z) - base)

    total, _ = integrate.quad(f, lower, np.inf, epsabs=0.0, epsrel=1e-11, limit=400)
    return -float(np.log(total))


def test_garch_conditional_matches_scipy_quad(compiled):
    data = _garch_data()
    m = compiled("garch_like", data)
    unc = np.array([m.unconstrain_dict(p) for p in GARCH_THETA])
    src = NonFactorizedSource(m, data, find_observations(data, "T"))
    y = np.array(data["y"])
    for i in (0, 9, 28, 29):
        got = src.column(i, unc)
        want = [_quad_conditional(lambda z, p=p: _garch_loglik(z, p, 1.0), y, i)
                for p in GARCH_THETA]
        # y[T] enters only its own normal term: the Gaussian closed form; the others enter the
        # next volatility: quadrature, with its reported error bound
        assert src.method[i] == ("gaussian" if i == 29 else "quadrature")
        bound = src.quad.error[i] if i < 29 else 0.0
        assert bound <= 1e-6
        np.testing.assert_allclose(got, want, rtol=0, atol=bound + 1e-9)


# ----------------------------------------------------------------- 2-state Gaussian HMM


def _hmm_data(n: int = 20, seed: int = 2) -> dict:
    rng = np.random.default_rng(seed)
    z = np.zeros(n, dtype=int)
    for t in range(1, n):
        z[t] = z[t - 1] if rng.random() < 0.8 else 1 - z[t - 1]
    return {"N": n, "y": (np.where(z == 0, 3.0, 10.0) + rng.normal(size=n)).round(3).tolist()}


HMM_THETA = [{"theta": [[0.8, 0.2], [0.3, 0.7]], "mu": [3.0, 9.5]},
             {"theta": [[0.6, 0.4], [0.1, 0.9]], "mu": [2.0, 7.0]},
             {"theta": [[0.95, 0.05], [0.5, 0.5]], "mu": [4.0, 5.0]}]


def _hmm_loglik(y: np.ndarray, p: dict) -> float:
    """The forward algorithm of hmm_example in numpy (initial weight 1 per state)."""
    gam = np.log(np.asarray(p["theta"]))  # gam[j, k] = log P(k | j)
    mu = np.asarray(p["mu"])
    emit = -0.5 * np.log(2 * np.pi) - 0.5 * (y[:, None] - mu[None, :]) ** 2
    a = emit[0]
    for t in range(1, y.size):
        a = np.logaddexp(a[0] + gam[0], a[1] + gam[1]) + emit[t]
    return float(np.logaddexp(a[0], a[1]))


def test_hmm_conditional_matches_scipy_quad(compiled):
    # The conditional of y_t is a two-component normal mixture: near y_t the density can be
    # quadratic to 1e-7 while the other state's mode lies 7 sds away, where the closed form
    # would miss its mass; the far check sends those observations to quadrature.
    data = _hmm_data()
    m = compiled("hmm_gauss", data)
    unc = np.array([m.unconstrain_dict(p) for p in HMM_THETA])
    src = NonFactorizedSource(m, data, find_observations(data, "N"))
    y = np.array(data["y"])
    for i in (0, 7, 19):
        got = src.column(i, unc)
        want = [_quad_conditional(lambda z, p=p: _hmm_loglik(z, p), y, i) for p in HMM_THETA]
        assert src.method[i] == "quadrature" and src.quad.error[i] <= 1e-6
        np.testing.assert_allclose(got, want, rtol=0, atol=src.quad.error[i] + 1e-9)


# ----------------------------------------------------------------- bounded continuous y


def test_lower_bounded_y_uses_its_declared_range(compiled):
    # vector<lower=0> y with a lognormal likelihood (factorized, so the conditional is the
    # lognormal density itself): the bound is found from the values the program refuses.
    m = compiled("lognormal_y")
    data = {"N": 15, "y": [1.6944, 4.893, 4.392, 12.0, 1.299, 1.0812, 2.6007, 1.5764, 2.9967,
                           0.3761, 5.7733, 1.5263, 2.8414, 1.4781, 1.2174]}
    pars = [{"mu": 0.7, "sigma": 0.8}, {"mu": 1.5, "sigma": 0.3}]
    unc = np.array([m.unconstrain_dict(p) for p in pars])
    q = QuadratureLogLik(m, data, find_observations(data, "N"))
    for i in (3, 9):
        got = q.column(i, unc)
        assert q.bounds(i) == (0.0, None)
        want = [stats.lognorm.logpdf(data["y"][i], p["sigma"], scale=np.exp(p["mu"]))
                for p in pars]
        np.testing.assert_allclose(got, want, rtol=0, atol=q.error[i] + 1e-9)


# ----------------------------------------------------------------- integer y


def _par_data(t_len: int = 15, seed: int = 3) -> dict:
    rng = np.random.default_rng(seed)
    alpha, beta = 2.0, 0.5
    y = [rng.poisson(alpha / (1 - beta))]
    for _ in range(t_len - 1):
        y.append(rng.poisson(alpha + beta * y[-1]))
    return {"T": t_len, "y": [int(v) for v in y]}


def _par_loglik(y: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    """The Poisson autoregression's log-likelihood in numpy, of each row of ``y``."""
    y = np.atleast_2d(y)
    rate = np.column_stack([np.full(y.shape[0], alpha / (1 - beta)),
                            alpha + beta * y[:, :-1]])
    return np.sum(y * np.log(rate) - rate - special.gammaln(y + 1.0), axis=1)


def test_poisson_autoregression_sum_matches_numpy(compiled):
    data = _par_data()
    m = compiled("poisson_ar", data)
    pars = [(2.0, 0.4), (1.0, 0.7), (5.0, 0.1)]
    unc = np.array([m.unconstrain_dict({"alpha": a, "beta": b}) for a, b in pars])
    src = NonFactorizedSource(m, data, find_observations(data, "T"))
    y = np.array(data["y"])
    us = np.arange(0, 400)  # terms beyond 400 are below e^-500 at these rates
    for i in (0, 6, 14):
        got = src.column(i, unc)
        assert src.method[i] == "sum" and src.quad.support[i][0] == 0.0
        for s, (a, b) in enumerate(pars):
            ys = np.repeat(y[None, :], us.size, axis=0)
            ys[:, i] = us
            want = _par_loglik(y, a, b)[0] - special.logsumexp(_par_loglik(ys, a, b))
            assert abs(got[s] - want) <= src.quad.error[i] + 1e-9


def test_binomial_sum_stops_where_the_program_rejects(compiled):
    # binomial_logit rejects y > n: the terms are zero there and the sum is the pmf's total
    rng = np.random.default_rng(4)
    data = {"I": 6, "n": [5, 9, 12, 3, 20, 7], "y": [2, 4, 12, 0, 8, 3], "sigma": 0.8}
    m = compiled("binom_re", data)
    x = rng.normal(size=(3, m.dim))
    q = QuadratureLogLik(m, data, find_observations(data, "I"))
    for i in (2, 3):
        got = q.column(i, x)
        p = special.expit(x[:, 0] + 0.8 * x[:, 1 + i])
        np.testing.assert_allclose(got, stats.binom.logpmf(data["y"][i], data["n"][i], p),
                                   rtol=0, atol=1e-9)


def _poisson_lpmf(k: np.ndarray | int, rate: np.ndarray) -> np.ndarray:
    return k * np.log(rate) - rate - special.gammaln(np.asarray(k) + 1.0)


def _par_exact_loo(data: dict) -> np.ndarray:
    """Exact elpd_i = log p(y) - log sum_u p(y with y_i = u), p(y) by the trapezoid rule over
    (log alpha, logit beta) on a box holding the posterior (posterior sds ~0.3 and ~0.8 there,
    spacing 0.05 and 0.1; it agrees with a wider grid twice as fine to 4e-7, far below the
    Monte Carlo se)."""
    la, lb = np.meshgrid(np.linspace(-4, 3.5, 151), np.linspace(-7, 7, 141), indexing="ij")
    alpha, beta = np.exp(la), special.expit(lb)
    prior = (stats.gamma.logpdf(alpha, 2, scale=1.0) + stats.beta.logpdf(beta, 2, 2)
             + la + np.log(beta) + np.log1p(-beta))
    y = np.array(data["y"])

    def rate(t: int, prev: np.ndarray | int) -> np.ndarray:
        return alpha / (1 - beta) if t == 0 else alpha + beta * prev

    terms = np.array([_poisson_lpmf(y[t], rate(t, y[t - 1] if t else 0))
                      for t in range(y.size)])
    total = prior + terms.sum(axis=0)
    log_py = special.logsumexp(total)
    out = np.empty(y.size)
    for i in range(y.size):
        rest = total - terms[i] - (terms[i + 1] if i + 1 < y.size else 0.0)
        parts = []
        for u in range(0, 80):  # rates below 10 at the posterior: terms past 80 are < e^-100
            lp = rest + _poisson_lpmf(u, rate(i, y[i - 1] if i else 0))
            if i + 1 < y.size:
                lp = lp + _poisson_lpmf(y[i + 1], rate(i + 1, u))
            parts.append(special.logsumexp(lp))
        out[i] = log_py - special.logsumexp(parts)
    return out


def test_loo_poisson_autoregression_matches_brute_force(compiled):
    data = _par_data()
    m = compiled("poisson_ar", data)
    r = loo(m, data, obs="T", seed=21, fix="none", chains=4, warmup=300, n_draws=500)
    assert r.log_lik_source == "conditional"
    assert any("summed over the support" in w for w in r.warnings)
    truth = _par_exact_loo(data)
    src = NonFactorizedSource(m, data, r.observations)
    unc = r.draws.unconstrained
    ll = src.columns(np.arange(data["T"]), unc.reshape(-1, unc.shape[2]))
    se = max(sum_mcse(ll.reshape(unc.shape[0], unc.shape[1], -1)),
             float(np.sqrt(np.sum(r.mcse_i ** 2))))
    assert np.all(r.khat <= 0.7)
    err = float(np.sum(r.elpd_i - truth))
    assert abs(err) <= 4 * se, (err, se)


# ----------------------------------------------------------------- the full pass


def test_loo_garch_pointwise_matrix_matches_dense_numpy_grid(compiled):
    # The full pass (every observation, every draw) against an independent numpy computation
    # at the same draws: a dense uniform grid in u (spacing 0.01 over +-30 of y_i; the
    # conditional sds lie between 0.1 and 3 here, so the trapezoid rule's error,
    # ~exp(-2 pi^2 sd^2 / h^2), and the mass beyond 10 sds are nil), then
    # the same PSIS: elpd_i must agree to 1e-6 (the quadrature's bound).
    data = _garch_data(t_len=12, seed=5)
    m = compiled("garch_like", data)
    r = loo(m, data, obs="T", seed=22, fix="none", chains=2, warmup=200, n_draws=100)
    assert r.log_lik_source == "conditional"
    assert any("by quadrature" in w for w in r.warnings)
    th = m.constrain_many(r.draws.flat_unconstrained())
    y = np.array(data["y"])
    ll = np.empty((th.shape[0], y.size))
    for i in range(y.size):
        u = y[i] + np.arange(-30.0, 30.0, 0.01)
        for s, (mu, a0, a1, b1) in enumerate(th):
            p = {"mu": mu, "alpha0": a0, "alpha1": a1, "beta1": b1}
            base = _garch_loglik(y, p, 1.0)
            z = np.repeat(y[None, :], u.size, axis=0)
            z[:, i] = u
            lv = _garch_loglik_rows(z, p, 1.0)
            ll[s, i] = base - (special.logsumexp(lv) + np.log(0.01))
    want = psis_loo(ll, r.r_eff, chains=2)
    np.testing.assert_allclose(r.elpd_i, want.elpd_i, rtol=0, atol=1e-6)


def _garch_loglik_rows(z: np.ndarray, p: dict, sigma1: float) -> np.ndarray:
    """:func:`_garch_loglik` of each row of ``z``."""
    s = np.empty(z.shape)
    s[:, 0] = sigma1
    for t in range(1, z.shape[1]):
        s[:, t] = np.sqrt(p["alpha0"] + p["alpha1"] * (z[:, t - 1] - p["mu"]) ** 2
                          + p["beta1"] * s[:, t - 1] ** 2)
    return np.sum(-0.5 * np.log(2 * np.pi * s**2) - 0.5 * (z - p["mu"]) ** 2 / s**2, axis=1)


# ----------------------------------------------------------------- refusals


@pytest.mark.parametrize(("name", "data", "why"), [
    ("fixed_total", {"N": 5, "y": [0.25, 0.5, 1.0, -0.75, 2.0], "total": 3.0},
     "accepts no other value of y\\[1\\]"),
    ("unused_first", {"T": 8, "y": [0.1, 0.5, -0.3, 1.2, 0.2, -0.1, 0.7, 0.4]},
     "does not fall off in y\\[1\\]"),
])
def test_loo_refuses_with_reason_and_routes(compiled, name, data, why):
    m = compiled(name, data)
    with pytest.raises(InputError, match=why + ".*stanlogz lfo.*kfold --groups") as err:
        loo(m, data, seed=1, chains=1, warmup=100, n_draws=50)
    assert "\n" not in str(err.value)
