"""Random-walk Metropolis–Hastings with Gaussian proposals.

The proposal is ``x + scale @ z`` with ``z ~ N(0, I)``; ``scale`` is a standard deviation (scalar),
a vector of per-coordinate standard deviations, or a lower-triangular Cholesky factor of the
proposal covariance (see :func:`scale_from_cov`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from scipy.linalg import solve_triangular

from ..errors import InputError

LogDensity = Callable[[np.ndarray], float]


class RWMHState(NamedTuple):
    """Position with its log density (so a rejected move costs nothing)."""

    position: np.ndarray
    log_density: float


class RWMHInfo(NamedTuple):
    accepted: bool
    acceptance_prob: float


def scale_from_cov(cov: np.ndarray | float, dim: int) -> np.ndarray:
    """Proposal scale (Cholesky factor, or std vector for a diagonal) for covariance ``cov``."""
    c = np.asarray(cov, dtype=float)
    if c.ndim == 0:
        return np.full(dim, np.sqrt(float(c)))
    if c.ndim == 1:
        if c.shape != (dim,) or np.any(c <= 0):
            raise InputError(f"diagonal proposal covariance must be {dim} positive values")
        return np.sqrt(c)
    if c.shape != (dim, dim):
        raise InputError(f"proposal covariance must be {dim}x{dim}, got {c.shape}")
    try:
        return np.linalg.cholesky(0.5 * (c + c.T))
    except np.linalg.LinAlgError as exc:
        raise InputError("proposal covariance is not positive definite") from exc


def apply_scale(scale: np.ndarray, z: np.ndarray) -> np.ndarray:
    """``scale @ z`` for a Cholesky factor, ``scale * z`` for a std vector or scalar."""
    s = np.asarray(scale, dtype=float)
    return s @ z if s.ndim == 2 else s * z


def solve_scale(scale: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``scale^{-1} v`` (the whitened version of a displacement ``v``)."""
    s = np.asarray(scale, dtype=float)
    if s.ndim == 2:
        return solve_triangular(s, v, lower=True)
    return v / s


def init(position: np.ndarray, logdensity_fn: LogDensity) -> RWMHState:
    """State at ``position``."""
    x = np.array(position, dtype=float)
    return RWMHState(x, float(logdensity_fn(x)))


def transition(
    state: RWMHState, proposal: np.ndarray, log_u: float, logdensity_fn: LogDensity
) -> tuple[RWMHState, RWMHInfo]:
    """Accept or reject ``proposal`` with ``log_u`` = log U(0,1); deterministic in its arguments."""
    lp = float(logdensity_fn(proposal))
    if not np.isfinite(lp):
        return state, RWMHInfo(False, 0.0)
    delta = lp - state.log_density
    prob = float(np.exp(min(0.0, delta)))
    if log_u < delta:
        return RWMHState(np.asarray(proposal, dtype=float), lp), RWMHInfo(True, prob)
    return state, RWMHInfo(False, prob)


def step(
    rng: np.random.Generator, state: RWMHState, logdensity_fn: LogDensity, scale: np.ndarray
) -> tuple[RWMHState, RWMHInfo]:
    """One RWMH transition, drawing its randomness from ``rng``."""
    z = rng.standard_normal(state.position.shape)
    proposal = state.position + apply_scale(scale, z)
    log_u = float(np.log(rng.uniform()))
    return transition(state, proposal, log_u, logdensity_fn)
