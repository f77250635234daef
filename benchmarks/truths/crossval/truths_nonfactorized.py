"""Independent numpy/scipy implementations of the non-factorized test programs
(``stan_models/tests``: ``garch_like``, ``hmm_gauss``, ``poisson_ar``, ``zip_ar``,
``far_mixture``) and exact values for
tests and benchmarks: log p(y_i | y₋ᵢ, θ) at fixed θ by scipy's adaptive quadrature or an exact
sum, and the exact leave-one-out values of the Poisson autoregression by grid quadrature over
its two parameters."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from scipy import integrate, special, stats


def garch_data(t_len: int, rng: np.random.Generator) -> dict[str, Any]:
    """A series simulated from GARCH(1,1) (mu 0.3, alpha0 0.2, alpha1 0.4, beta1 0.3)."""
    mu, a0, a1, b1 = 0.3, 0.2, 0.4, 0.3
    y, s2 = np.zeros(t_len), 1.0
    for t in range(t_len):
        if t:
            s2 = a0 + a1 * (y[t - 1] - mu) ** 2 + b1 * s2
        y[t] = mu + np.sqrt(s2) * rng.normal()
    return {"T": t_len, "y": y.round(3).tolist(), "sigma1": 1.0}


def garch_loglik(y: np.ndarray, p: Mapping[str, float], sigma1: float) -> np.ndarray:
    """posteriordb garch11's log-likelihood of each row of ``y`` (a float for a 1-D ``y``)."""
    z = np.atleast_2d(np.asarray(y, dtype=float))
    s = np.empty(z.shape)
    s[:, 0] = sigma1
    for t in range(1, z.shape[1]):
        s[:, t] = np.sqrt(p["alpha0"] + p["alpha1"] * (z[:, t - 1] - p["mu"]) ** 2
                          + p["beta1"] * s[:, t - 1] ** 2)
    out = np.sum(-0.5 * np.log(2 * np.pi * s**2) - 0.5 * (z - p["mu"]) ** 2 / s**2, axis=1)
    return out if np.ndim(y) == 2 else out[0]


def hmm_data(n: int, rng: np.random.Generator) -> dict[str, Any]:
    """A 2-state series (means 3 and 10, sd 1, stay probability 0.8)."""
    z = np.zeros(n, dtype=int)
    for t in range(1, n):
        z[t] = z[t - 1] if rng.random() < 0.8 else 1 - z[t - 1]
    return {"N": n, "y": (np.where(z == 0, 3.0, 10.0) + rng.normal(size=n)).round(3).tolist()}


def hmm_loglik(y: np.ndarray, p: Mapping[str, Any]) -> float:
    """The forward algorithm of hmm_example in numpy (initial weight 1 per state)."""
    gam = np.log(np.asarray(p["theta"]))  # gam[j, k] = log P(k | j)
    mu = np.asarray(p["mu"])
    emit = -0.5 * np.log(2 * np.pi) - 0.5 * (np.asarray(y)[:, None] - mu[None, :]) ** 2
    a = emit[0]
    for t in range(1, len(y)):
        a = np.logaddexp(a[0] + gam[0], a[1] + gam[1]) + emit[t]
    return float(np.logaddexp(a[0], a[1]))


def quad_conditional(loglik: Callable[[np.ndarray], float], y: np.ndarray, i: int,
                     lower: float = -np.inf) -> float:
    """log p(y_i | y₋ᵢ) = loglik(y) − log ∫ exp(loglik(y with y_i = u)) du by scipy's quad."""
    y = np.asarray(y, dtype=float)
    base = loglik(y)

    def f(u: float) -> float:
        z = y.copy()
        z[i] = u
        return float(np.exp(loglik(z) - base))

    total, _ = integrate.quad(f, lower, np.inf, epsabs=0.0, epsrel=1e-11, limit=400)
    return -float(np.log(total))


def par_data(t_len: int, rng: np.random.Generator) -> dict[str, Any]:
    """Counts simulated from the Poisson autoregression (alpha 2, beta 0.5)."""
    alpha, beta = 2.0, 0.5
    y = [rng.poisson(alpha / (1 - beta))]
    for _ in range(t_len - 1):
        y.append(rng.poisson(alpha + beta * y[-1]))
    return {"T": t_len, "y": [int(v) for v in y]}


def par_loglik(y: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    """The Poisson autoregression's log-likelihood in numpy, of each row of ``y``."""
    y = np.atleast_2d(y)
    rate = np.column_stack([np.full(y.shape[0], alpha / (1 - beta)),
                            alpha + beta * y[:, :-1]])
    return np.sum(y * np.log(rate) - rate - special.gammaln(y + 1.0), axis=1)


def _poisson_lpmf(k: np.ndarray | int, rate: np.ndarray) -> np.ndarray:
    return k * np.log(rate) - rate - special.gammaln(np.asarray(k) + 1.0)


def par_exact_loo(data: Mapping[str, Any]) -> np.ndarray:
    """Exact elpd_i = log p(y) − log Σ_u p(y with y_i = u) of ``poisson_ar.stan``, p(y) by the
    trapezoid rule over (log alpha, logit beta) on a box holding the posterior (posterior sds
    ~0.3 and ~0.8 there, spacing 0.05 and 0.1; it agrees with a wider grid twice as fine to
    4e-7, far below Monte Carlo errors)."""
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
    top = int(max(80, 3 * y.max() + 40))  # rates stay below y.max() + 10 at the posterior
    for i in range(y.size):
        rest = total - terms[i] - (terms[i + 1] if i + 1 < y.size else 0.0)
        parts = []
        for u in range(0, top):
            lp = rest + _poisson_lpmf(u, rate(i, y[i - 1] if i else 0))
            if i + 1 < y.size:
                lp = lp + _poisson_lpmf(y[i + 1], rate(i + 1, u))
            parts.append(special.logsumexp(lp))
        out[i] = log_py - special.logsumexp(parts)
    return out


def zip_data(t_len: int, rng: np.random.Generator) -> dict[str, Any]:
    """Counts from the zero-inflated Poisson autoregression ``zip_ar.stan`` (alpha 90, beta
    0.1, pi 0.3): near 100, about 30% structural zeros."""
    y = [0 if rng.random() < 0.3 else rng.poisson(100.0)]
    for _ in range(t_len - 1):
        y.append(0 if rng.random() < 0.3 else rng.poisson(90.0 + 0.1 * y[-1]))
    return {"T": t_len, "y": [int(v) for v in y]}


def zip_loglik(y: np.ndarray, alpha: float, beta: float, pi: float) -> np.ndarray:
    """``zip_ar.stan``'s log-likelihood in numpy, of each row of ``y``."""
    y = np.atleast_2d(y)
    rate = np.column_stack([np.full(y.shape[0], alpha / (1 - beta)), alpha + beta * y[:, :-1]])
    lp = _poisson_lpmf(y, rate)
    zero = np.logaddexp(np.log(pi), np.log1p(-pi) - rate)
    return np.sum(np.where(y == 0, zero, np.log1p(-pi) + lp), axis=1)


def zip_conditional(y: np.ndarray, i: int, p: Mapping[str, float], top: int = 3000) -> float:
    """log p(y_i | y₋ᵢ, θ) of ``zip_ar.stan`` by the sum over y_i = 0..top − 1 (terms beyond
    3000 are below e^-5000 at rates near 100)."""
    ys = np.repeat(np.asarray(y)[None, :], top, axis=0)
    ys[:, i] = np.arange(top)
    ll = zip_loglik(ys, p["alpha"], p["beta"], p["pi"])
    return float(ll[y[i]] - special.logsumexp(ll))


def mixture_data(t_len: int, rng: np.random.Generator) -> dict[str, Any]:
    """A series from ``far_mixture.stan`` (mu 90, phi 0.1, sigma 2, pi 0.1), rounded to 1e-3."""
    y = [rng.normal(0, 1) if rng.random() < 0.1 else rng.normal(100.0, 2.0)]
    for _ in range(t_len - 1):
        y.append(rng.normal(0, 1) if rng.random() < 0.1
                 else rng.normal(90.0 + 0.1 * y[-1], 2.0))
    return {"T": t_len, "y": [round(float(v), 3) for v in y]}


def mixture_loglik(y: np.ndarray, p: Mapping[str, float]) -> np.ndarray:
    """``far_mixture.stan``'s log-likelihood in numpy, of each row of ``y``."""
    y = np.atleast_2d(y)
    mean = np.column_stack([np.full(y.shape[0], p["mu"] / (1 - p["phi"])),
                            p["mu"] + p["phi"] * y[:, :-1]])
    a = np.log(p["pi"]) + stats.norm.logpdf(y, 0.0, 1.0)
    b = np.log1p(-p["pi"]) + stats.norm.logpdf(y, mean, p["sigma"])
    return np.sum(np.logaddexp(a, b), axis=1)


def mixture_conditional(y: np.ndarray, i: int, p: Mapping[str, float]) -> float:
    """log p(y_i | y₋ᵢ, θ) of ``far_mixture.stan`` by the trapezoid rule on a uniform grid
    of spacing 5e-3 over [-60, 400] (the conditional sds are 1 and about 2, so the rule's error
    exp(-2 pi^2 sd^2 / h^2) is nil, and the mass outside is below e^-1000)."""
    u = np.arange(-60.0, 400.0, 5e-3)
    ys = np.repeat(np.asarray(y, dtype=float)[None, :], u.size, axis=0)
    ys[:, i] = u
    ll = mixture_loglik(ys, p)
    return float(mixture_loglik(np.asarray(y, dtype=float), p)[0]
                 - special.logsumexp(ll) - np.log(5e-3))
