"""Exact normalizers for checking doubly-intractable samplers: the continuous spin chain.

The chain of L real spins with density p*(x | h, J) = exp(sum_i (-x_i^2/2 - x_i^4/4 + h x_i)
+ J sum_i x_i x_{i+1}) (``stan_models/examples/spin_chain_inner.stan``) has
Z(h, J) = phi^T (K diag phi)^(L-1) 1 with phi = quadrature weight x single-site factor and
K_ab = exp(J x_a x_b) on a grid: the transfer operator. The integrand is smooth and decays like
exp(-x^4/4), so the trapezoid rule on [-6, 6] is accurate to ~1e-12 with 400 points.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError

GRID_HALF_WIDTH = 6.0
GRID_POINTS = 400


def _grid(n: int = GRID_POINTS) -> tuple[np.ndarray, float]:
    x = np.linspace(-GRID_HALF_WIDTH, GRID_HALF_WIDTH, n)
    return x, float(x[1] - x[0])


def spin_chain_log_p(x: np.ndarray, h: float, J: float) -> np.ndarray:
    """log p*(x | h, J) for configurations ``x`` of shape (..., L)."""
    x = np.asarray(x, dtype=float)
    single = np.sum(-0.5 * x**2 - 0.25 * x**4 + h * x, axis=-1)
    return single + J * np.sum(x[..., :-1] * x[..., 1:], axis=-1)


def spin_chain_log_z(h: np.ndarray | float, J: float, L: int, n_grid: int = GRID_POINTS
                     ) -> np.ndarray:
    """log Z(h, J) of the L-spin chain for one coupling ``J`` and any array of fields ``h``."""
    if L < 2:
        raise InputError(f"the chain needs L >= 2 spins, got {L}")
    x, dx = _grid(n_grid)
    hs = np.atleast_1d(np.asarray(h, dtype=float))
    # phi[a, k]: quadrature weight times single-site factor at grid point a, field hs[k].
    log_phi = np.log(dx) - 0.5 * x**2 - 0.25 * x**4
    phi = np.exp(log_phi[:, None] + x[:, None] * hs[None, :])
    kernel = np.exp(J * np.outer(x, x))
    v = phi.copy()
    log_scale = np.zeros(hs.size)
    for _ in range(L - 1):
        v = phi * (kernel.T @ v)
        top = v.max(axis=0)
        v /= top
        log_scale += np.log(top)
    out = log_scale + np.log(v.sum(axis=0))
    return out.reshape(np.shape(h)) if np.ndim(h) else out[:1].reshape(())


def spin_chain_posterior(y: np.ndarray, h_grid: np.ndarray, J_grid: np.ndarray) -> np.ndarray:
    """Exact posterior of (h, J) under uniform priors on the grid's box: a (len(h_grid),
    len(J_grid)) array of probabilities summing to 1 (grid points weighted equally)."""
    y = np.asarray(y, dtype=float)
    lp = np.empty((h_grid.size, J_grid.size))
    for j, coupling in enumerate(J_grid):
        lp[:, j] = (spin_chain_log_p(y[None, :], h_grid[:, None], coupling)
                    - spin_chain_log_z(h_grid, coupling, y.size))
    p = np.exp(lp - lp.max())
    return p / p.sum()
