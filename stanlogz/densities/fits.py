"""Normalized, exactly sampleable Gaussian bases: moments of posterior draws, or Laplace."""

from __future__ import annotations

import numpy as np
from scipy import optimize

from ..errors import EstimationError, InputError
from .gaussian import GaussianTarget
from .target import Target


def as_draw_matrix(draws: np.ndarray) -> np.ndarray:
    """Flatten draws shaped ``(chains, n, dim)`` or ``(n, dim)`` into ``(chains*n, dim)``."""
    a = np.asarray(draws, dtype=float)
    if a.ndim == 3:
        return a.reshape(-1, a.shape[-1])
    if a.ndim == 2:
        return a
    raise InputError(f"draws must have shape (chains, n, dim) or (n, dim), got {a.shape}")


def draw_moments(draws: np.ndarray, inflate: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """The draws' mean and ``inflate`` times their covariance (symmetrized, with a tiny ridge
    so it is positive definite)."""
    if not inflate > 0:
        raise InputError(f"covariance inflation must be positive, got {inflate}")
    x = as_draw_matrix(draws)
    if x.shape[0] < x.shape[1] + 2:
        raise InputError(f"need more than dim+1 = {x.shape[1] + 1} draws, got {x.shape[0]}")
    cov = np.atleast_2d(np.cov(x, rowvar=False))
    cov = 0.5 * (cov + cov.T) + 1e-12 * np.trace(cov) / x.shape[1] * np.eye(x.shape[1])
    return x.mean(axis=0), inflate * cov


def gaussian_from_draws(draws: np.ndarray, inflate: float = 1.0) -> GaussianTarget:
    """N(mean, inflate * cov) of the draws: a normalized density (log Z = 0)."""
    return GaussianTarget(*draw_moments(draws, inflate))


def find_mode(target: Target, x0: np.ndarray, *, max_iter: int = 2000) -> np.ndarray:
    """A local maximum of the target's log density by L-BFGS from ``x0``."""

    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        lp, g = target.log_density_gradient(x)
        if not np.isfinite(lp):
            return 1e300, np.zeros_like(x)
        return -lp, -g

    res = optimize.minimize(
        fun, np.asarray(x0, float), jac=True, method="L-BFGS-B",
        options={"maxiter": max_iter, "gtol": 1e-8},
    )
    if not np.all(np.isfinite(res.x)):
        raise EstimationError("mode search diverged: the log density may be unbounded")
    return res.x


def hessian_fd(target: Target, x: np.ndarray, rel_step: float = 1e-5) -> np.ndarray:
    """Hessian of the log density by central differences of the gradient (symmetrized)."""
    x = np.asarray(x, dtype=float)
    d = x.size
    h = rel_step * np.maximum(1.0, np.abs(x))
    hess = np.empty((d, d))
    for i in range(d):
        e = np.zeros(d)
        e[i] = h[i]
        gp = target.log_density_gradient(x + e)[1]
        gm = target.log_density_gradient(x - e)[1]
        hess[:, i] = (gp - gm) / (2 * h[i])
    return 0.5 * (hess + hess.T)


def laplace_base(target: Target, x0: np.ndarray) -> tuple[GaussianTarget, float]:
    """Laplace approximation at the mode found from ``x0``.

    Returns the normalized Gaussian N(mode, -H^{-1}) and the Laplace estimate of log Z,
    ``log p(mode) + d/2 log 2π - 1/2 log det(-H)``.
    """
    mode = find_mode(target, x0)
    neg_h = -hessian_fd(target, mode)
    try:
        chol = np.linalg.cholesky(neg_h)
    except np.linalg.LinAlgError as exc:
        raise EstimationError("Hessian at the mode is not negative definite") from exc
    cov = np.linalg.inv(neg_h)
    d = mode.size
    log_z = target.log_density(mode) + 0.5 * d * np.log(2 * np.pi) - np.sum(np.log(np.diag(chol)))
    return GaussianTarget(mode, 0.5 * (cov + cov.T)), float(log_z)
