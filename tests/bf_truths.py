"""Closed-form and quadrature truths for the Bayes-factor tools' tests and benchmarks.

Conjugate normal with known sigma (``stan_models/tests/normal.stan``): prior mu ~ N(mu0, tau0²),
y_i ~ N(mu, sigma²). The prior raised to α and renormalized is N(mu0, tau0²/α); the likelihood
raised to β is, per observation, (2πσ²)^((1−β)/2) β^(−1/2) N(y_i | mu, σ²/β).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats


def _mvn_log_z(y: np.ndarray, mu0: float, prior_var: float, noise_var: float) -> float:
    n = y.size
    cov = noise_var * np.eye(n) + prior_var * np.ones((n, n))
    return float(stats.multivariate_normal(np.full(n, mu0), cov).logpdf(y))


def normal_log_z(d: dict, alpha: float = 1.0, beta: float = 1.0) -> float:
    """log Z of the conjugate normal model with prior^α (renormalized) and likelihood^β."""
    y, s2 = np.asarray(d["y"], float), d["sigma"] ** 2
    n = y.size
    const = n * (0.5 * (1 - beta) * math.log(2 * math.pi * s2) - 0.5 * math.log(beta))
    return const + _mvn_log_z(y, d["mu0"], d["tau0"] ** 2 / alpha, s2 / beta)


def _posterior(y: np.ndarray, mu0: float, prior_var: float, noise_var: float
               ) -> tuple[float, float]:
    prec = 1 / prior_var + y.size / noise_var
    return (mu0 / prior_var + y.sum() / noise_var) / prec, 1 / prec


def normal_elpd_loo(d: dict, alpha: float = 1.0, beta: float = 1.0) -> float:
    """elpd_loo of the scaled model, each y_i predicted by the unscaled N(y_i | mu, σ²)."""
    y, s2 = np.asarray(d["y"], float), d["sigma"] ** 2
    out = 0.0
    for i in range(y.size):
        m, v = _posterior(np.delete(y, i), d["mu0"], d["tau0"] ** 2 / alpha, s2 / beta)
        out += stats.norm(m, math.sqrt(s2 + v)).logpdf(y[i])
    return float(out)


def derivative(f, h: float = 1e-4) -> float:
    """d f(exp(t)) / dt at t = 0 (central difference; error O(h²) ~ 1e-8 here)."""
    return (f(math.exp(h)) - f(math.exp(-h))) / (2 * h)


def normal_log_bf01(d: dict, mu_null: float) -> float:
    """Savage–Dickey log BF01 for mu = mu_null: log posterior density − log prior density."""
    y = np.asarray(d["y"], float)
    m, v = _posterior(y, d["mu0"], d["tau0"] ** 2, d["sigma"] ** 2)
    return float(stats.norm(m, math.sqrt(v)).logpdf(mu_null)
                 - stats.norm(d["mu0"], d["tau0"]).logpdf(mu_null))
