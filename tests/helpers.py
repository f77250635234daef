"""Test targets that several test modules share."""

from __future__ import annotations

import numpy as np
from scipy import stats

from stanlogz.densities.gaussian import GaussianTarget


class NormalNormal:
    """θ ~ N(0, τ² I_d), y_i ~ N(θ, σ² I_d), i = 1..n: prior × likelihood, with exact log Z."""

    def __init__(self, y: np.ndarray, tau: float, sigma: float) -> None:
        self.y, self.tau, self.sigma = y, tau, sigma
        self.prior = GaussianTarget(np.zeros(y.shape[1]), tau**2 * np.eye(y.shape[1]))

    @property
    def dim(self) -> int:
        return self.y.shape[1]

    def log_density_gradient(self, x):
        r = self.y - x
        n = self.y.shape[0]
        ll = -0.5 * np.sum(r**2) / self.sigma**2 - n * self.dim * np.log(
            np.sqrt(2 * np.pi) * self.sigma)
        lp, gp = self.prior.log_density_gradient(x)
        return ll + lp, gp + r.sum(0) / self.sigma**2

    def log_density(self, x):
        return self.log_density_gradient(x)[0]

    def log_z(self) -> float:
        n = self.y.shape[0]
        cov = self.sigma**2 * np.eye(n) + self.tau**2 * np.ones((n, n))
        return float(sum(stats.multivariate_normal(np.zeros(n), cov).logpdf(self.y[:, j])
                         for j in range(self.dim)))
