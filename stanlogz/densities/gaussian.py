"""Analytic targets with known log normalizing constants, for tests and benchmarks."""

from __future__ import annotations

import math

import numpy as np

from ..errors import InputError


class GaussianTarget:
    """``exp(log_z) * N(x | mean, cov)``: an unnormalized Gaussian whose log Z is ``log_z``.

    It is also an exactly sampleable density: :meth:`sample` draws from N(mean, cov).
    """

    def __init__(self, mean: np.ndarray, cov: np.ndarray | None = None, log_z: float = 0.0):
        self.mean = np.atleast_1d(np.asarray(mean, dtype=float))
        d = self.mean.size
        self.cov = np.eye(d) if cov is None else np.atleast_2d(np.asarray(cov, dtype=float))
        if self.cov.shape != (d, d):
            raise InputError(f"cov must be {d}x{d}, got {self.cov.shape}")
        self.chol = np.linalg.cholesky(self.cov)
        self.prec = np.linalg.inv(self.cov)
        self.log_z = float(log_z)
        self._norm = -0.5 * d * np.log(2 * np.pi) - np.sum(np.log(np.diag(self.chol)))

    @property
    def dim(self) -> int:
        return self.mean.size

    def log_density_many(self, xs: np.ndarray) -> np.ndarray:
        r = np.atleast_2d(xs) - self.mean
        # a matrix product, not einsum's unblocked triple loop (40 s for 8000 rows at d = 600)
        return self.log_z + self._norm - 0.5 * np.sum((r @ self.prec) * r, axis=1)

    def log_density(self, x: np.ndarray) -> float:
        return float(self.log_density_many(np.asarray(x)[None, :])[0])

    def log_density_gradient(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        x = np.asarray(x, dtype=float)
        return self.log_density(x), -self.prec @ (x - self.mean)

    def log_density_gradient_many(self, xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        r = np.atleast_2d(np.asarray(xs, dtype=float)) - self.mean
        g = -(r @ self.prec)  # the precision is symmetric
        return self.log_z + self._norm + 0.5 * np.sum(g * r, axis=1), g

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return self.mean + rng.standard_normal((n, self.dim)) @ self.chol.T


def noncentred_log_prior(mu: np.ndarray, s: np.ndarray, eta: np.ndarray, mu_sd: float,
                         tau_sd: float) -> np.ndarray:
    """log density of a non-centred hierarchy's prior on the unconstrained scale: mu ~
    normal(0, mu_sd), tau = exp(s) ~ half-normal(0, tau_sd) with its Jacobian s, eta ~ std
    normal (rows of ``eta``: one draw each)."""
    c = -0.5 * math.log(2 * math.pi)
    tau = np.exp(s)
    return (c - math.log(mu_sd) - 0.5 * (mu / mu_sd) ** 2
            + c + math.log(2.0) - math.log(tau_sd) - 0.5 * (tau / tau_sd) ** 2 + s
            + np.sum(c - 0.5 * eta * eta, axis=1))


def noncentred_gradient(x: np.ndarray, mu_sd: float, tau_sd: float,
                        score: np.ndarray) -> np.ndarray:
    """Gradient at ``x`` = (mu, log tau, eta) of the prior of :func:`noncentred_log_prior` plus
    a likelihood of a = mu + tau eta whose derivative in a is ``score``."""
    mu, tau, eta = x[0], math.exp(x[1]), x[2:]
    g = np.empty_like(x)
    g[0] = -mu / mu_sd**2 + np.sum(score)
    g[1] = (-tau / tau_sd**2 + np.sum(score * eta)) * tau + 1.0
    g[2:] = -eta + tau * score
    return g


class NoncentredHierarchy:
    """A non-centred hierarchy on Stan's unconstrained scale ``(mu, log tau, eta_1..J)``: the
    prior of :func:`noncentred_log_prior` and a likelihood of the group values a = mu + tau eta
    that a subclass gives by :meth:`log_likelihood_many` (rows of a) and :meth:`score` (its
    derivative in a at one point); density and gradient come from here."""

    mu_sd: float
    tau_sd: float

    def log_likelihood_many(self, a: np.ndarray) -> np.ndarray:
        """log p(y | a) per row of ``a``."""
        raise NotImplementedError

    def score(self, a: np.ndarray) -> np.ndarray:
        """d log p(y | a) / d a at one point ``a``."""
        raise NotImplementedError

    def log_density_many(self, xs: np.ndarray) -> np.ndarray:
        xs = np.atleast_2d(np.asarray(xs, dtype=float))
        mu, s, eta = xs[:, 0], xs[:, 1], xs[:, 2:]
        a = mu[:, None] + np.exp(s)[:, None] * eta
        return (noncentred_log_prior(mu, s, eta, self.mu_sd, self.tau_sd)
                + self.log_likelihood_many(a))

    def log_density(self, x: np.ndarray) -> float:
        return float(self.log_density_many(np.asarray(x)[None, :])[0])

    def log_density_gradient(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        x = np.asarray(x, dtype=float)
        if not np.all(np.isfinite(x)) or abs(x[1]) > 700:
            return -math.inf, np.zeros_like(x)
        score = self.score(x[0] + math.exp(x[1]) * x[2:])
        return self.log_density(x), noncentred_gradient(x, self.mu_sd, self.tau_sd, score)


class HierarchicalNormalTarget(NoncentredHierarchy):
    """The non-centred hierarchical normal of ``stan_models/highdim/hier_normal_nc.stan`` on
    Stan's unconstrained scale ``(mu, log tau, eta_1..J)``:

    ``mu ~ N(0, mu_sd)``, ``tau ~ half-N(0, tau_sd)``, ``eta_j ~ N(0, 1)``,
    ``y_j ~ N(mu + tau eta_j, sigma_j)``, every density normalized, so ``log_z`` is p(y).

    ``log_z`` integrates the analytic marginal ``y | tau ~ N(0, mu_sd^2 11' + diag(tau^2 +
    sigma^2))`` over tau by adaptive quadrature; :meth:`sample` draws exactly (tau by inverse CDF
    on a fine grid of its marginal posterior, then mu and the group effects from their Gaussian
    conditionals).
    """

    def __init__(self, y: np.ndarray, sigma: np.ndarray, mu_sd: float = 5.0,
                 tau_sd: float = 2.0) -> None:
        self.y = np.asarray(y, dtype=float)
        self.sigma = np.asarray(sigma, dtype=float)
        if self.y.shape != self.sigma.shape or self.y.ndim != 1 or np.any(self.sigma <= 0):
            raise InputError("y and sigma must be vectors of the same length, sigma > 0")
        self.mu_sd, self.tau_sd = float(mu_sd), float(tau_sd)
        self._grid = np.linspace(1e-6, 10 * self.tau_sd + 5 * float(np.std(self.y)), 40001)
        # in blocks of the grid: 40001 x J at once would hold gigabytes at J = 10,000
        lm = np.concatenate([self.log_marginal(self._grid[a:a + 1000])
                             for a in range(0, self._grid.size, 1000)])
        self.log_z = self._integrate(lm)
        self._log_post = lm

    @property
    def dim(self) -> int:
        return self.y.size + 2

    def log_marginal(self, tau: float | np.ndarray) -> float | np.ndarray:
        """log p(tau) + log p(y | tau), mu and the group effects integrated out (vectorized
        over ``tau``)."""
        tau_a = np.asarray(tau, dtype=float)
        d = tau_a[..., None] ** 2 + self.sigma**2
        a, b = np.sum(1 / d, axis=-1), np.sum(self.y / d, axis=-1)
        v = self.mu_sd**2
        logdet = np.sum(np.log(d), axis=-1) + np.log1p(v * a)
        quad = np.sum(self.y**2 / d, axis=-1) - v * b * b / (1 + v * a)
        lp_tau = (math.log(2.0) - 0.5 * math.log(2 * math.pi) - math.log(self.tau_sd)
                  - 0.5 * (tau_a / self.tau_sd) ** 2)
        out = -0.5 * self.y.size * math.log(2 * math.pi) - 0.5 * logdet - 0.5 * quad + lp_tau
        return float(out) if out.ndim == 0 else out

    def _integrate(self, lm: np.ndarray) -> float:
        from scipy import integrate

        c = float(np.max(lm))
        peak = float(self._grid[np.argmax(lm)])
        f = lambda t: math.exp(self.log_marginal(t) - c)  # noqa: E731
        cuts = sorted({0.0, 0.5 * peak, peak, 2 * peak + 1e-3, float(self._grid[-1])})
        val = sum(integrate.quad(f, lo, hi, epsabs=0, epsrel=1e-11, limit=500)[0]
                  for lo, hi in zip(cuts[:-1], cuts[1:], strict=False))
        val += integrate.quad(f, cuts[-1], np.inf, epsabs=0, epsrel=1e-11, limit=500)[0]
        return c + math.log(val)

    def log_likelihood_many(self, a: np.ndarray) -> np.ndarray:
        r = (self.y - a) / self.sigma
        return np.sum(-0.5 * math.log(2 * math.pi) - np.log(self.sigma) - 0.5 * r * r, axis=1)

    def score(self, a: np.ndarray) -> np.ndarray:
        return (self.y - a) / self.sigma**2

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` exact posterior draws on the unconstrained scale."""
        w = np.exp(self._log_post - self._log_post.max())
        cdf = np.concatenate([[0.0], np.cumsum(0.5 * (w[1:] + w[:-1]) * np.diff(self._grid))])
        tau = np.interp(rng.uniform(0, cdf[-1], n), cdf, self._grid)
        d = tau[:, None] ** 2 + self.sigma**2
        prec_mu = 1 / self.mu_sd**2 + np.sum(1 / d, axis=1)
        mu = np.sum(self.y / d, axis=1) / prec_mu + rng.standard_normal(n) / np.sqrt(prec_mu)
        prec_t = 1 / self.sigma**2 + 1 / tau[:, None] ** 2
        mean_t = (self.y / self.sigma**2 + mu[:, None] / tau[:, None] ** 2) / prec_t
        theta = mean_t + rng.standard_normal((n, self.y.size)) / np.sqrt(prec_t)
        eta = (theta - mu[:, None]) / tau[:, None]
        return np.column_stack([mu, np.log(tau), eta])

