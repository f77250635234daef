"""The shortcuts graded by Grosse, Ghahramani & Adams (2015) (BIC, harmonic mean, likelihood
weighting, nested sampling) on conjugate normal models, against their own closed-form
expectations."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from stanlogz.densities.gaussian import GaussianTarget
from stanlogz.errors import InputError
from stanlogz.estimators import shortcuts as sc


class Conjugate:
    """θ ~ N(0, τ² I_d), y_i ~ N(θ, σ² I_d), i = 1..n, vectorized, with exact log Z and exact
    posterior draws."""

    def __init__(self, y: np.ndarray, tau: float, sigma: float) -> None:
        self.y, self.tau, self.sigma = np.atleast_2d(y), tau, sigma
        self.n, self.dim = self.y.shape
        self.prior = GaussianTarget(np.zeros(self.dim), tau**2 * np.eye(self.dim))

    def log_lik_many(self, xs: np.ndarray) -> np.ndarray:
        r = self.y[None] - np.atleast_2d(xs)[:, None, :]
        return (-0.5 * np.sum(r * r, axis=(1, 2)) / self.sigma**2
                - self.n * self.dim * math.log(math.sqrt(2 * math.pi) * self.sigma))

    def log_density_many(self, xs: np.ndarray) -> np.ndarray:
        return self.log_lik_many(xs) + self.prior.log_density_many(xs)

    def log_density(self, x: np.ndarray) -> float:
        return float(self.log_density_many(np.asarray(x)[None])[0])

    def log_density_gradient(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        g = np.sum(self.y - x, axis=0) / self.sigma**2 - x / self.tau**2
        return self.log_density(x), g

    @property
    def post_var(self) -> float:
        return 1.0 / (1.0 / self.tau**2 + self.n / self.sigma**2)

    def posterior_draws(self, rng: np.random.Generator, k: int) -> np.ndarray:
        m = self.post_var * self.y.sum(axis=0) / self.sigma**2
        return (m + math.sqrt(self.post_var) * rng.standard_normal((k, self.dim)))[None]

    def log_z(self) -> float:
        cov = self.sigma**2 * np.eye(self.n) + self.tau**2 * np.ones((self.n, self.n))
        return float(sum(stats.multivariate_normal(np.zeros(self.n), cov).logpdf(self.y[:, j])
                         for j in range(self.dim)))


def test_bic_is_the_formula_at_the_maximum_likelihood():
    rng = np.random.default_rng(1)
    model = Conjugate(rng.normal(0.7, 1.3, size=(6, 2)), tau=2.0, sigma=1.3)
    draws = model.posterior_draws(rng, 400)
    r = sc.bic(model, draws, prior=model.prior, n_obs=6)
    # The MLE is ȳ, so log L̂ = -n d log(√(2π) σ) - Σ (y - ȳ)²/(2σ²) and BIC = log L̂ - (d/2) log n.
    ybar = model.y.mean(axis=0)
    ll_hat = (-6 * 2 * math.log(math.sqrt(2 * math.pi) * 1.3)
              - np.sum((model.y - ybar) ** 2) / (2 * 1.3**2))
    # L-BFGS to gtol 1e-8 on a quadratic: the log likelihood is off by far less than 1e-8.
    assert r.log_z == pytest.approx(ll_hat - math.log(6), abs=1e-8)
    np.testing.assert_allclose(r.diagnostics["mle"], ybar, atol=1e-6)
    assert math.isnan(r.log_z_se) and r.warnings and r.n_evals > 0
    with pytest.raises(InputError, match="number of observations"):
        sc.bic(model, draws, prior=model.prior)
    with pytest.raises(InputError, match=r"give the prior program \(prior\)"):
        sc.bic(model, draws, n_obs=6)


def test_harmonic_mean_is_unbiased_for_one_over_z():
    """With exact posterior draws E[1/L] = 1/Z, so exp(-log Ẑ) (the mean of 1/L) is unbiased
    for 1/Z. Here the prior is narrow (τ = 0.3, σ = 2, n = 2), which makes 1/L's moments finite
    up to order 23 (posterior precision 11.6 minus k n/σ² = k/2 must stay positive) and 1/L
    nearly log-normal with a small spread, so the mean of 400 replicates of 50 draws is close to
    normal: |t| exceeds 4.0 with probability 7.5e-5 (t_399, two-sided). (Over 60 seeds the t
    statistics had mean -0.02 and sd 1.09.)"""
    rng = np.random.default_rng(2)
    model = Conjugate(np.array([[0.9], [-0.2]]), tau=0.3, sigma=2.0)
    truth = model.log_z()
    inv = []
    for _ in range(400):
        d = model.posterior_draws(rng, 50)
        r = sc.harmonic_mean(model, d, prior=model.prior)
        inv.append(math.exp(truth - r.log_z))  # (1/Ẑ) / (1/Z)
    inv = np.array(inv)
    t = (inv.mean() - 1.0) / (inv.std(ddof=1) / math.sqrt(inv.size))
    assert abs(t) < 4.0, t
    # The estimate is exactly -log mean(1/L) over the draws (closed-form likelihood).
    d = model.posterior_draws(rng, 50)
    r = sc.harmonic_mean(model, d, prior=model.prior)
    ll = model.log_lik_many(d[0])
    assert r.log_z == pytest.approx(-(np.logaddexp.reduce(-ll) - math.log(50)), abs=1e-10)
    assert r.log_z_se > 0 and r.n_evals == 50


def test_likelihood_weighting_is_unbiased_for_z():
    """Prior draws make the mean of L unbiased for Z. L is bounded, so every moment is finite;
    400 replicates of 50 prior draws (τ = 1, σ = 1, n = 2): |t| > 4.0 has probability 6e-5.
    (Over 60 seeds the t statistics had mean -0.08 and sd 0.84.)"""
    rng = np.random.default_rng(3)
    model = Conjugate(np.array([[0.4], [1.1]]), tau=1.0, sigma=1.0)
    truth = model.log_z()
    post = model.posterior_draws(rng, 50)
    z = np.array([math.exp(sc.likelihood_weighting(model, post, prior=model.prior,
                                                   seed=int(s)).log_z - truth)
                  for s in rng.integers(2**31, size=400)])
    t = (z.mean() - 1.0) / (z.std(ddof=1) / math.sqrt(z.size))
    assert abs(t) < 4.0, t
    # From a pool of exact prior draws, without replacement: a pool of exactly n draws is used
    # whole, so the estimate is log mean L over the pool.
    pool = model.prior.sample(rng, 50)
    r = sc.likelihood_weighting(model, post, prior=GaussianTarget(np.zeros(1)), prior_draws=pool,
                                seed=5)
    assert r.log_z == pytest.approx(np.logaddexp.reduce(model.log_lik_many(pool))
                                    - math.log(50), abs=1e-10)
    assert r.diagnostics["n_prior_draws"] == 50 and r.log_z_se > 0
    r = sc.likelihood_weighting(model, post, prior=model.prior, prior_draws=pool[:20], seed=5)
    assert r.diagnostics["n_prior_draws"] == 20 and "all 20 prior draws" in r.warnings[0]


def test_nested_sampling_with_dynesty(monkeypatch):
    """dynesty over the Gaussian prior (the reference prior is the prior itself, so its
    likelihood is L). Over 30 seeds at nlive=100 on this 2-d model the error was 0.03 +- 0.14
    nat (dynesty's own se 0.14; extremes -0.31, +0.25): 0.8 nat is > 5.5 sd."""
    model = Conjugate(np.array([[0.4, -1.0], [1.1, -0.3], [0.8, 0.1]]), tau=1.5, sigma=1.0)
    post = model.posterior_draws(np.random.default_rng(0), 400)
    r = sc.nested(model, post, prior=model.prior, seed=4, nlive=100)
    assert abs(r.log_z - model.log_z()) < 0.8
    assert 0 < r.log_z_se < 0.5 and r.n_evals == r.diagnostics["n_calls"] > 1000
    assert r.diagnostics["reference_prior"] == "the prior (Gaussian)"
    # Without a prior the reference is a widened Gaussian fitted to the posterior draws.
    assert "posterior draws" in sc.reference_prior(post, None, None)[1]
    monkeypatch.setattr(sc, "dynesty_available", lambda: False)
    with pytest.raises(InputError, match="pip install dynesty"):
        sc.nested(model, post, prior=model.prior)
