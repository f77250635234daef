"""A multivariate Student-t density fitted to draws: a heavier-tailed importance proposal.

A Gaussian proposal fitted at one state has importance weights of infinite variance wherever
the target is more than √2 times wider in some direction (Geweke 1989); in many dimensions a
small mismatch suffices. The t's polynomial tails keep the ratio target/proposal bounded for
any Gaussian-tailed target, so the weights' variance is finite everywhere.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from ..errors import InputError
from .fits import draw_moments

#: Degrees of freedom of the fitted t proposal.
DEFAULT_NU = 10.0


class StudentTDensity:
    """The normalized multivariate t with ``nu`` degrees of freedom, location ``mean`` and
    scale matrix ``scale`` (covariance ``scale · nu / (nu − 2)`` for nu > 2)."""

    def __init__(self, mean: np.ndarray, scale: np.ndarray, nu: float = DEFAULT_NU) -> None:
        self.mean = np.atleast_1d(np.asarray(mean, dtype=float))
        d = self.mean.size
        self.scale = np.atleast_2d(np.asarray(scale, dtype=float))
        if self.scale.shape != (d, d):
            raise InputError(f"scale must be {d}x{d}, got {self.scale.shape}")
        if not nu > 0:
            raise InputError(f"the t proposal needs nu > 0, got {nu}")
        self.nu = float(nu)
        self.chol = np.linalg.cholesky(self.scale)
        self._chol_inv = np.linalg.inv(self.chol)
        self._norm = (special.gammaln((self.nu + d) / 2) - special.gammaln(self.nu / 2)
                      - 0.5 * d * math.log(self.nu * math.pi)
                      - float(np.sum(np.log(np.diag(self.chol)))))

    @property
    def dim(self) -> int:
        return self.mean.size

    def log_density_many(self, xs: np.ndarray) -> np.ndarray:
        r = np.atleast_2d(np.asarray(xs, dtype=float)) - self.mean
        z = np.einsum("ij,nj->ni", self._chol_inv, r)
        q = np.einsum("ni,ni->n", z, z)
        return self._norm - 0.5 * (self.nu + self.dim) * np.log1p(q / self.nu)

    def log_density(self, x: np.ndarray) -> float:
        return float(self.log_density_many(np.asarray(x)[None, :])[0])

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        g = rng.chisquare(self.nu, n) / self.nu
        z = rng.standard_normal((n, self.dim)) @ self.chol.T
        return self.mean + z / np.sqrt(g)[:, None]


def student_t_from_draws(draws: np.ndarray, nu: float = DEFAULT_NU,
                         inflate: float = 1.0) -> StudentTDensity:
    """The t with ``nu`` degrees of freedom whose mean is the draws' and whose covariance is
    ``inflate`` times theirs (the scale matrix is that times (nu − 2) / nu; nu > 2)."""
    if not nu > 2:
        raise InputError(f"a t proposal matched to the draws' covariance needs nu > 2, got {nu}")
    mean, cov = draw_moments(draws, inflate)
    return StudentTDensity(mean, cov * (nu - 2) / nu, nu)
