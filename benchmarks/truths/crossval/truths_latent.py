"""Exact leave-one-out values of the test programs with linked latents, non-factorized
likelihoods and per-observation latents (``stan_models/tests``), for tests and benchmarks:
Gaussian conditioning where y is marginally Gaussian, 1-D quadrature otherwise."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from scipy import integrate, special, stats


def gaussian_loo(y: np.ndarray, cov: np.ndarray, mean: np.ndarray | None = None) -> np.ndarray:
    """log p(y_i | y₋ᵢ) for y ~ MVN(mean, cov), every i."""
    y = np.asarray(y, dtype=float)
    r = y - (0.0 if mean is None else mean)
    prec = np.linalg.inv(cov)
    var = 1.0 / np.diag(prec)
    resid = var * (prec @ r)  # y_i − E[y_i | y₋ᵢ]
    return stats.norm.logpdf(resid, 0.0, np.sqrt(var))


def rw_states_cov(data: Mapping[str, Any]) -> np.ndarray:
    """Marginal covariance of y in ``rw_states.stan``: x₁ ~ N(0, 10²), random walk σ_x."""
    n = int(data["N"])
    idx = np.arange(1, n + 1)
    return (100.0 + data["sigma_x"] ** 2 * (np.minimum.outer(idx, idx) - 1)
            + data["sigma_y"] ** 2 * np.eye(n))


def ar1_states_cov(data: Mapping[str, Any]) -> np.ndarray:
    """Marginal covariance of y in ``ar1_states.stan``: μ ~ N(0, 2²), stationary AR(1) x."""
    n, phi, s = int(data["N"]), float(data["phi"]), float(data["s"])
    lag = np.abs(np.subtract.outer(np.arange(n), np.arange(n)))
    return 4.0 + s**2 / (1 - phi**2) * phi**lag + data["sigma_y"] ** 2 * np.eye(n)


def car_ring_cov(data: Mapping[str, Any]) -> np.ndarray:
    """Marginal covariance of y in ``car_ring.stan``: Q⁻¹ + σ_y² I."""
    n, tau, alpha = int(data["N"]), float(data["tau"]), float(data["alpha"])
    q = 2 * tau * np.eye(n)
    for i in range(n):
        j = (i + 1) % n
        q[i, j] -= alpha * tau
        q[j, i] -= alpha * tau
    return np.linalg.inv(q) + data["sigma_y"] ** 2 * np.eye(n)


def mvn_ar1_cov(data: Mapping[str, Any]) -> np.ndarray:
    """Marginal covariance of y in ``mvn_ar1.stan``: AR(1) errors plus μ ~ N(0, 3²)."""
    n, rho, sigma = int(data["N"]), float(data["rho"]), float(data["sigma"])
    lag = np.abs(np.subtract.outer(np.arange(n), np.arange(n)))
    return sigma**2 * rho**lag + 9.0


def trunc_latent_loo(data: Mapping[str, Any]) -> np.ndarray:
    """log p(y_i | y₋ᵢ) of ``trunc_latent.stan`` as the program's normalized joint defines it
    (z_i half-normal): y_i − μ has the skew-normal density 2 φ(r; 0, √2) Φ(r/√2); μ by
    quadrature."""
    y = np.asarray(data["y"], dtype=float)

    def log_g(r: np.ndarray) -> np.ndarray:
        return math.log(2) + stats.norm.logpdf(r, 0, math.sqrt(2)) + special.log_ndtr(
            r / math.sqrt(2))

    def log_z(v: np.ndarray) -> float:
        mu = np.linspace(-8, 8, 4001)
        lp = stats.norm.logpdf(mu) + np.sum(log_g(v[:, None] - mu[None, :]), axis=0)
        m = lp.max()
        return float(m + math.log(integrate.simpson(np.exp(lp - m), x=mu)))

    full = log_z(y)
    return np.array([full - log_z(np.delete(y, i)) for i in range(y.size)])


def ark_log_p(y: np.ndarray, k: int, sigma: float, prior_sd: float = 10.0) -> np.ndarray:
    """log p̃(y) of ``ark.stan`` with (α, β) integrated out, for each row of ``y`` ``(m, T)``
    (or one series): the first K values carry no term (flat), y[K+1:] | y[:K] is Gaussian
    given the lags."""
    y = np.atleast_2d(np.asarray(y, dtype=float))
    n = y.shape[1] - k
    x = np.stack([np.ones((y.shape[0], n))] + [y[:, k - j:k - j + n] for j in range(1, k + 1)],
                 axis=2)
    cov = sigma**2 * np.eye(n) + prior_sd**2 * x @ np.swapaxes(x, 1, 2)
    chol = np.linalg.cholesky(cov)
    r = np.linalg.solve(chol, y[:, k:, None])[:, :, 0]
    logdet = 2.0 * np.sum(np.log(np.diagonal(chol, axis1=1, axis2=2)), axis=1)
    return -0.5 * (n * math.log(2 * math.pi) + logdet + np.sum(r**2, axis=1))


def ark_loo(data: Mapping[str, Any]) -> np.ndarray:
    """log p(y_t | y₋ₜ) of ``ark.stan`` under its joint (flat in the first K values, whose
    conditionals are improper: only t > K is meaningful): the marginal normalized over y_t by
    Simpson's rule on 481 points over y_t ± 12 sd(y)."""
    y = np.asarray(data["y"], dtype=float)
    k, sigma = int(data["K"]), float(data["sigma"])
    f0 = float(ark_log_p(y, k, sigma)[0])
    out = np.empty(y.size)
    grid_unit = np.linspace(-12, 12, 481) * max(float(np.std(y)), 1.0)
    for t in range(y.size):
        grid = y[t] + grid_unit
        z = np.repeat(y[None], grid.size, axis=0)
        z[:, t] = grid
        lp = ark_log_p(z, k, sigma)
        m = lp.max()
        out[t] = f0 - (m + math.log(integrate.simpson(np.exp(lp - m), x=grid)))
    return out


def _schools_log_z_cauchy(y: np.ndarray, sigma: np.ndarray, mu_sd: float = 5.0,
                          tau_scale: float = 5.0) -> float:
    """log Z of ``stan_models/tests/eight_schools.stan`` (μ ~ N(0, 5²), τ ~ half-Cauchy(0, 5))
    on any subset of schools: μ in closed form, τ by adaptive quadrature on τ = 5 tan(a)."""
    def log_lik(tau: float) -> float:
        v = sigma**2 + tau**2
        a = 1.0 + mu_sd**2 * np.sum(1.0 / v)
        b = np.sum(y / v)
        quad = np.sum(y**2 / v) - mu_sd**2 * b**2 / a
        return float(-0.5 * (y.size * math.log(2 * math.pi) + np.sum(np.log(v)) + math.log(a)
                             + quad))

    ref = log_lik(tau_scale)

    def f(a: float) -> float:  # τ = scale tan(a): the half-Cauchy prior becomes uniform on a
        return 2.0 / math.pi * math.exp(log_lik(tau_scale * math.tan(a)) - ref)

    val = integrate.quad(f, 0.0, math.pi / 2, epsabs=0.0, epsrel=1e-12, limit=400)[0]
    return ref + math.log(val)


def eight_schools_cauchy_loo(data: Mapping[str, Any]) -> np.ndarray:
    """log p(y_j | y₋ⱼ) for every school of ``stan_models/tests/eight_schools.stan``."""
    y, s = np.asarray(data["y"], dtype=float), np.asarray(data["sigma"], dtype=float)
    full = _schools_log_z_cauchy(y, s)
    return np.array([full - _schools_log_z_cauchy(np.delete(y, j), np.delete(s, j))
                     for j in range(y.size)])


def binom_re_loo(data: Mapping[str, Any]) -> np.ndarray:
    """log p(y_i | y₋ᵢ) of ``binom_re.stan`` (μ ~ N(0, 1), z_i ~ N(0, 1), σ known): each unit's
    z_i by 80-node Gauss–Hermite, μ by Simpson's rule on [-8, 8]."""
    n, y = np.asarray(data["n"]), np.asarray(data["y"])
    sigma = float(data["sigma"])
    t, w = np.polynomial.hermite.hermgauss(80)
    mu = np.linspace(-8, 8, 1601)
    eta = mu[:, None, None] + sigma * math.sqrt(2) * t[None, None, :]  # (mu, 1, node)
    lpm = stats.binom.logpmf(y[None, :, None], n[None, :, None], special.expit(eta))
    log_g = special.logsumexp(lpm + np.log(w / math.sqrt(math.pi))[None, None, :], axis=2)

    def log_z(keep: np.ndarray) -> float:
        lp = stats.norm.logpdf(mu) + log_g[:, keep].sum(axis=1)
        m = lp.max()
        return float(m + math.log(integrate.simpson(np.exp(lp - m), x=mu)))

    every = np.arange(y.size)
    full = log_z(every)
    return np.array([full - log_z(np.delete(every, i)) for i in range(y.size)])
