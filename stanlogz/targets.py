"""Analytic targets with known log normalizing constants, for tests and benchmarks."""

from __future__ import annotations

import numpy as np

from .errors import InputError


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
        return self.log_z + self._norm - 0.5 * np.einsum("ni,ij,nj->n", r, self.prec, r)

    def log_density(self, x: np.ndarray) -> float:
        return float(self.log_density_many(np.asarray(x)[None, :])[0])

    def log_density_gradient(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        x = np.asarray(x, dtype=float)
        return self.log_density(x), -self.prec @ (x - self.mean)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return self.mean + rng.standard_normal((n, self.dim)) @ self.chol.T
