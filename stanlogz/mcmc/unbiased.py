"""Unbiased MCMC with couplings (Jacob, O'Leary & Atchadé 2020; Rischard et al. 2018, eq. 6).

Lag-1 coupled chains: ``X_0, Y_0`` from the initial distribution, ``X_1 ~ P(X_0, .)``, then
``(X_{t+1}, Y_t) ~ Pbar((X_t, Y_{t-1}), .)``. The meeting time is
``tau = min{t >= 1: X_t = Y_{t-1}}`` and the chains are run to ``max(m, tau)``. For a test
function ``h``,

``H_{k:m} = 1/(m-k+1) sum_{n=k}^{m} h(X_n)
          + sum_{n=k+1}^{tau-1} min(1, (n-k)/(m-k+1)) (h(X_n) - h(Y_{n-1}))``

has expectation exactly ``E_pi[h]``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from ..errors import EstimationError, InputError
from .couplings import CoupledKernel

DEFAULT_MAX_ITER = 100_000


class CoupledChains(NamedTuple):
    """Positions ``xs[t] = X_t`` (t = 0..T) and ``ys[t] = Y_t`` (t = 0..tau-1), and ``tau``."""

    xs: np.ndarray
    ys: np.ndarray
    meeting_time: int

    @property
    def iterations(self) -> int:
        """T = max(m, tau): the number of transitions of the X chain."""
        return self.xs.shape[0] - 1

    @property
    def cost(self) -> int:
        """Kernel applications: ``tau - 1`` coupled (two each) plus ``max(m, tau)`` for X alone."""
        return (self.meeting_time - 1) + self.iterations


def _check_km(k: int, m: int) -> None:
    if k < 0 or m < k:
        raise InputError(f"need 0 <= k <= m, got k={k}, m={m}")


def sample_coupled_chains(
    rng: np.random.Generator,
    kernel: CoupledKernel,
    x0: np.ndarray,
    y0: np.ndarray,
    m: int = 0,
    max_iter: int = DEFAULT_MAX_ITER,
) -> CoupledChains:
    """Run lag-1 coupled chains from ``(x0, y0)`` until they meet and for at least ``m`` steps.

    Raises :class:`EstimationError` if they have not met after ``max_iter`` iterations.
    """
    sx = kernel.init(x0)
    sy = kernel.init(y0)
    xs = [sx.position]
    ys = [sy.position]
    sx = kernel.step(rng, sx)
    xs.append(sx.position)
    tau = 1 if np.array_equal(sx.position, sy.position) else -1
    t = 1
    while tau < 0:
        if t >= max_iter:
            raise EstimationError(
                f"coupled chains did not meet within max_iter={max_iter} iterations; raise "
                "max_iter or improve the initial distribution/proposal"
            )
        sx, sy = kernel.coupled_step(rng, sx, sy)
        t += 1
        xs.append(sx.position)
        ys.append(sy.position)
        if np.array_equal(sx.position, sy.position):
            tau = t
    while t < m:
        sx = kernel.step(rng, sx)
        t += 1
        xs.append(sx.position)
    return CoupledChains(np.array(xs), np.array(ys), tau)


def meeting_time(
    rng: np.random.Generator,
    kernel: CoupledKernel,
    x0: np.ndarray,
    y0: np.ndarray,
    max_iter: int = DEFAULT_MAX_ITER,
) -> int:
    """The meeting time ``tau`` of lag-1 coupled chains started at ``(x0, y0)``."""
    return sample_coupled_chains(rng, kernel, x0, y0, 0, max_iter).meeting_time


def h_estimate(
    chains: CoupledChains, h: Callable[[np.ndarray], Any], k: int, m: int
) -> np.ndarray | float:
    """The unbiased estimator ``H_{k:m}(h)`` (eq. 6) from coupled chains run to ``>= m`` steps.

    ``h`` maps a position to a float or an array; the result has the same shape.
    """
    _check_km(k, m)
    if chains.iterations < m:
        raise InputError(f"chains were run for {chains.iterations} < m = {m} iterations")
    tau = chains.meeting_time
    span = m - k + 1
    # h(X_n) for n = k .. max(m, tau - 1), each evaluated once (both sums use n in k+1 .. m).
    hx = [np.asarray(h(chains.xs[n]), dtype=float) for n in range(k, max(m, tau - 1) + 1)]
    total = sum(hx[:span]) / span
    for n in range(k + 1, tau):
        w = min(1.0, (n - k) / span)
        total = total + w * (hx[n - k] - np.asarray(h(chains.ys[n - 1]), dtype=float))
    return float(total) if np.ndim(total) == 0 else total


def unbiased_estimate(
    rng: np.random.Generator,
    kernel: CoupledKernel,
    sample_init: Callable[[np.random.Generator], np.ndarray],
    h: Callable[[np.ndarray], Any],
    k: int,
    m: int,
    max_iter: int = DEFAULT_MAX_ITER,
) -> tuple[np.ndarray | float, CoupledChains]:
    """One unbiased estimate ``H_{k:m}(h)`` of ``E_pi[h]`` with its coupled chains."""
    _check_km(k, m)
    x0 = sample_init(rng)
    y0 = sample_init(rng)
    chains = sample_coupled_chains(rng, kernel, x0, y0, m, max_iter)
    return h_estimate(chains, h, k, m), chains
