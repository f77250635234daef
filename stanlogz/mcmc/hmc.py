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
