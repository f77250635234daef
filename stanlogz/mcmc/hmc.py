"""Hamiltonian Monte Carlo with a diagonal metric and a fixed number of leapfrog steps."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

LogDensityGrad = Callable[[np.ndarray], tuple[float, np.ndarray]]


class HMCState(NamedTuple):
    """Position with its log density and gradient (so a rejected move costs nothing)."""

    position: np.ndarray
    log_density: float
    grad: np.ndarray


class HMCInfo(NamedTuple):
    accepted: bool
    acceptance_prob: float
    energy_error: float
    divergent: bool


def init(position: np.ndarray, logdensity_grad_fn: LogDensityGrad) -> HMCState:
    """State at ``position``."""
    x = np.array(position, dtype=float)
    lp, g = logdensity_grad_fn(x)
    return HMCState(x, float(lp), np.asarray(g, dtype=float))


class DualAveraging:
    """Nesterov dual averaging of the log step size toward a target acceptance (Hoffman &
    Gelman 2014, with Stan's constants γ = 0.05, t0 = 10, κ = 0.75): :meth:`update` after each
    warmup iteration gives the next step size, :attr:`final` the one to sample with. The one
    home of step-size adaptation (annealing's tuning, the mixture fix-up's HMC)."""

    def __init__(self, step_size: float, target: float) -> None:
        self.mu = np.log(10.0 * step_size)
        self.target = target
        self.h_bar = 0.0
        self.log_eps = np.log(step_size)
        self.log_eps_bar = np.log(step_size)
        self.t = 0

    def update(self, accept_prob: float) -> float:
        """One more iteration with mean acceptance ``accept_prob``: the next step size."""
        self.t += 1
        eta = 1.0 / (self.t + 10.0)
        self.h_bar = (1 - eta) * self.h_bar + eta * (self.target - accept_prob)
        self.log_eps = self.mu - np.sqrt(self.t) / 0.05 * self.h_bar
        w = self.t ** -0.75
        self.log_eps_bar = w * self.log_eps + (1 - w) * self.log_eps_bar
        return float(np.exp(self.log_eps))

    @property
    def final(self) -> float:
        """The step size after adaptation (the iterates' weighted average)."""
        return float(np.exp(self.log_eps_bar))


def leapfrog(
    state: HMCState,
    momentum: np.ndarray,
    logdensity_grad_fn: LogDensityGrad,
    step_size: float,
    n_steps: int,
    inv_metric: np.ndarray,
) -> tuple[HMCState, np.ndarray]:
    """``n_steps`` leapfrog steps from ``state`` with ``momentum``; returns the end state."""
    x = state.position.copy()
    p = momentum + 0.5 * step_size * state.grad
    lp, g = state.log_density, state.grad
    for i in range(n_steps):
        x = x + step_size * inv_metric * p
        lp, g = logdensity_grad_fn(x)
        if not np.isfinite(lp):
            return HMCState(x, -np.inf, np.asarray(g, dtype=float)), p
        if i < n_steps - 1:
            p = p + step_size * g
    p = p + 0.5 * step_size * g
    return HMCState(x, float(lp), np.asarray(g, dtype=float)), p


def transition(
    state: HMCState,
    noise: np.ndarray,
    log_u: float,
    logdensity_grad_fn: LogDensityGrad,
    step_size: float,
    n_steps: int,
    inv_metric: np.ndarray,
    divergence_threshold: float = 1000.0,
) -> tuple[HMCState, HMCInfo]:
    """One HMC transition given its randomness: ``noise`` ~ N(0, I) and ``log_u`` = log U(0,1).

    Deterministic in its arguments, so two chains fed the same ``noise`` and ``log_u`` are coupled
    with common random numbers.
    """
    inv_metric = np.broadcast_to(np.asarray(inv_metric, dtype=float), state.position.shape)
    momentum = noise / np.sqrt(inv_metric)
    h0 = -state.log_density + 0.5 * np.sum(inv_metric * momentum**2)
    new, p = leapfrog(state, momentum, logdensity_grad_fn, step_size, n_steps, inv_metric)
    h1 = np.inf
    if np.isfinite(new.log_density):
        h1 = -new.log_density + 0.5 * np.sum(inv_metric * p**2)
    delta = h0 - h1
    if not np.isfinite(delta):
        delta = -np.inf
    accept_prob = float(np.exp(min(0.0, delta)))
    divergent = bool(-delta > divergence_threshold)
    if log_u < delta:
        return new, HMCInfo(True, accept_prob, float(-delta), divergent)
    return state, HMCInfo(False, accept_prob, float(-delta), divergent)


def step(
    rng: np.random.Generator,
    state: HMCState,
    logdensity_grad_fn: LogDensityGrad,
    step_size: float,
    n_steps: int,
    inv_metric: np.ndarray | float = 1.0,
) -> tuple[HMCState, HMCInfo]:
    """One HMC transition, drawing its randomness from ``rng``."""
    noise = rng.standard_normal(state.position.shape)
    log_u = float(np.log(rng.uniform()))
    return transition(state, noise, log_u, logdensity_grad_fn, step_size, n_steps, inv_metric)


#: ``fn(xs, rows)``: log densities ``(n,)`` and gradients ``(n, dim)`` at the rows of ``xs``,
#: which are the chains ``rows`` of a batch (for a caller that keeps per-chain values).
LogDensityGradMany = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


class HMCInfoMany(NamedTuple):
    """Per-chain :class:`HMCInfo` of :func:`transition_many`, plus each chain's evaluations."""

    accepted: np.ndarray
    acceptance_prob: np.ndarray
    energy_error: np.ndarray
    divergent: np.ndarray
    n_evals: np.ndarray


def transition_many(
    position: np.ndarray,
    log_density: np.ndarray,
    grad: np.ndarray,
    noise: np.ndarray,
    log_u: np.ndarray,
    logdensity_grad_many: LogDensityGradMany,
    step_size: np.ndarray | float,
    n_steps: int,
    inv_metric: np.ndarray | float,
    divergence_threshold: float = 1000.0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, HMCInfoMany]:
    """:func:`transition` of K chains in lockstep: one density call per leapfrog step for all
    of them (rows: chains; ``step_size`` per chain or one).

    Each chain's result is that of :func:`transition` with its row's ``noise`` and ``log_u``:
    a chain whose trajectory reaches a non-finite density stops there (its later steps are not
    evaluated) and is rejected. Returns the new positions, log densities, gradients and info.
    """
    x0 = np.asarray(position, dtype=float)
    k, dim = x0.shape
    lp0 = np.asarray(log_density, dtype=float)
    g0 = np.asarray(grad, dtype=float)
    eps = np.broadcast_to(np.asarray(step_size, dtype=float), (k,))[:, None]
    inv_metric = np.broadcast_to(np.asarray(inv_metric, dtype=float), (dim,))
    momentum = noise / np.sqrt(inv_metric)
    h0 = -lp0 + 0.5 * np.sum(inv_metric * momentum**2, axis=1)
    x, p = x0.copy(), momentum + 0.5 * eps * g0
    lp, g = lp0.copy(), g0.copy()
    live = np.ones(k, dtype=bool)
    n_evals = np.zeros(k, dtype=int)
    for i in range(n_steps):
        rows = np.flatnonzero(live)
        if rows.size == 0:
            break
        x[rows] += eps[rows] * inv_metric * p[rows]
        lpr, gr = logdensity_grad_many(x[rows], rows)
        n_evals[rows] += 1
        lp[rows], g[rows] = lpr, gr
        bad = ~np.isfinite(lpr)
        lp[rows[bad]] = -np.inf
        live[rows[bad]] = False
        ok = rows[~bad]
        if i < n_steps - 1:
            p[ok] += eps[ok] * g[ok]
    p[live] += 0.5 * eps[live] * g[live]
    h1 = np.full(k, np.inf)
    h1[live] = -lp[live] + 0.5 * np.sum(inv_metric * p[live] ** 2, axis=1)
    with np.errstate(invalid="ignore"):
        delta = h0 - h1
    delta[~np.isfinite(delta)] = -np.inf
    accept_prob = np.exp(np.minimum(0.0, delta))
    accepted = np.asarray(log_u, dtype=float) < delta
    info = HMCInfoMany(accepted, accept_prob, -delta, -delta > divergence_threshold, n_evals)
    keep = ~accepted
    x[keep], lp[keep], g[keep] = x0[keep], lp0[keep], g0[keep]
    return x, lp, g, info


def draw_randomness(rng: np.random.Generator, dim: int, step_size: float, jitter: float = 0.0
                    ) -> tuple[float, np.ndarray, float]:
    """One transition's randomness from ``rng`` in :func:`step`'s order (after a jittered step
    size when ``jitter``): step size, momentum noise and log U, so a chain moved in a batch by
    :func:`transition_many` makes the moves :func:`step` would make from the same ``rng``."""
    eps = step_size * rng.uniform(1 - jitter, 1 + jitter) if jitter else step_size
    noise = rng.standard_normal(dim)
    return eps, noise, float(np.log(rng.uniform()))
