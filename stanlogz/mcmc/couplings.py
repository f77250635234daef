"""Couplings of MCMC kernels that make two chains meet exactly (Jacob, O'Leary & Atchadé 2020).

* :func:`maximal_coupling` — any two distributions that can be sampled and evaluated;
* :func:`gaussian_maximal_coupling`, :func:`reflection_maximal_coupling` — two Gaussians
  ``N(mu1, S)``, ``N(mu2, S)`` with a common covariance ``S = scale scale^T``;
* :func:`coupled_rwmh_step` — RWMH with coupled proposals and a common acceptance uniform;
* :func:`coupled_hmc_step` — HMC with common random numbers, mixed with probability ``omega`` with
  a reflection-maximally coupled RWMH step so that the chains can meet exactly (Heng & Jacob
  2019); the kernel's settings are one :class:`HMCMixture`.

Each coupled step leaves each chain's marginal law equal to that of the uncoupled kernel, and once
the two states are equal they stay equal. :class:`CoupledKernel` bundles ``init``/``step``/
``coupled_step`` for :mod:`stanlogz.mcmc.unbiased`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from ..errors import InputError
from . import hmc, rwmh
from .rwmh import apply_scale, solve_scale

LogDensity = Callable[[np.ndarray], float]
LogDensityGrad = Callable[[np.ndarray], tuple[float, np.ndarray]]


def maximal_coupling(
    rng: np.random.Generator,
    sample_p: Callable[[np.random.Generator], np.ndarray],
    logpdf_p: Callable[[np.ndarray], float],
    sample_q: Callable[[np.random.Generator], np.ndarray],
    logpdf_q: Callable[[np.ndarray], float],
    max_tries: int = 100_000,
) -> tuple[np.ndarray, np.ndarray, bool]:
    """A draw ``(X, Y, X == Y)`` with ``X ~ p``, ``Y ~ q`` and ``P(X = Y) = 1 - TV(p, q)``."""
    x = sample_p(rng)
    if np.log(rng.uniform()) + logpdf_p(x) <= logpdf_q(x):
        return x, x, True
    for _ in range(max_tries):
        y = sample_q(rng)
        if np.log(rng.uniform()) + logpdf_q(y) > logpdf_p(y):
            return x, y, False
    raise InputError("maximal coupling rejection loop did not terminate: p and q nearly equal?")


def gaussian_maximal_coupling(
    rng: np.random.Generator, mu1: np.ndarray, mu2: np.ndarray, scale: np.ndarray
) -> tuple[np.ndarray, np.ndarray, bool]:
    """Maximal coupling of ``N(mu1, S)`` and ``N(mu2, S)``, ``S = scale scale^T``."""
    z = solve_scale(scale, mu1 - mu2)  # whitened offset: x = mu1 + L a  <=>  x = mu2 + L (a + z)
    a = rng.standard_normal(mu1.shape)
    x = mu1 + apply_scale(scale, a)
    if np.log(rng.uniform()) <= 0.5 * (a @ a) - 0.5 * ((a + z) @ (a + z)):
        return x, x, True
    while True:
        b = rng.standard_normal(mu1.shape)
        if np.log(rng.uniform()) > 0.5 * (b @ b) - 0.5 * ((b - z) @ (b - z)):
            return x, mu2 + apply_scale(scale, b), False


def reflection_maximal_coupling(
    rng: np.random.Generator, mu1: np.ndarray, mu2: np.ndarray, scale: np.ndarray
) -> tuple[np.ndarray, np.ndarray, bool]:
    """Reflection-maximal coupling of ``N(mu1, S)`` and ``N(mu2, S)``, ``S = scale scale^T``.

    Equal draws with maximal probability; otherwise the second is the first reflected in the
    hyperplane orthogonal to ``mu1 - mu2`` (in whitened coordinates).
    """
    z = solve_scale(scale, mu1 - mu2)
    a = rng.standard_normal(mu1.shape)
    x = mu1 + apply_scale(scale, a)
    nz = float(np.sqrt(z @ z))
    if nz == 0.0:
        return x, x.copy(), True
    if np.log(rng.uniform()) <= 0.5 * (a @ a) - 0.5 * ((a + z) @ (a + z)):
        return x, x, True
    e = z / nz
    b = a - 2.0 * (e @ a) * e
    return x, mu2 + apply_scale(scale, b), False


_PROPOSAL_COUPLINGS = {
    "maximal": gaussian_maximal_coupling,
    "reflection": reflection_maximal_coupling,
}


def _proposal_coupling(name: str) -> Callable[..., tuple[np.ndarray, np.ndarray, bool]]:
    if name not in _PROPOSAL_COUPLINGS:
        raise InputError(f"unknown coupling {name!r}; choose 'maximal' or 'reflection'")
    return _PROPOSAL_COUPLINGS[name]


def coupled_rwmh_step(
    rng: np.random.Generator,
    state_x: rwmh.RWMHState,
    state_y: rwmh.RWMHState,
    logdensity_fn: LogDensity,
    scale: np.ndarray,
    coupling: str = "reflection",
) -> tuple[rwmh.RWMHState, rwmh.RWMHState]:
    """One coupled RWMH transition: coupled proposals, common acceptance uniform."""
    couple = _proposal_coupling(coupling)
    if np.array_equal(state_x.position, state_y.position):
        new, _ = rwmh.step(rng, state_x, logdensity_fn, scale)
        return new, new
    px, py, same = couple(rng, state_x.position, state_y.position, scale)
    log_u = float(np.log(rng.uniform()))
    if same:  # one evaluation serves both chains
        return _accept_both(state_x, state_y, px, float(logdensity_fn(px)), log_u)
    nx, _ = rwmh.transition(state_x, px, log_u, logdensity_fn)
    ny, _ = rwmh.transition(state_y, py, log_u, logdensity_fn)
    return nx, ny


def _accept(state: Any, proposal: np.ndarray, lp: float, log_u: float, grad: Any = None) -> Any:
    """MH accept/reject of a proposal with known log density (RWMH or HMC state)."""
    if np.isfinite(lp) and log_u < lp - state.log_density:
        if grad is None:
            return rwmh.RWMHState(proposal, lp)
        return hmc.HMCState(proposal, lp, grad)
    return state


def _accept_both(state_x: Any, state_y: Any, proposal: np.ndarray, lp: float, log_u: float,
                 grad: Any = None) -> tuple[Any, Any]:
    """Both chains' accept/reject of one common proposal with a common uniform; when both
    accept, they return the very same state (the chains have met)."""
    nx = _accept(state_x, proposal, lp, log_u, grad)
    ny = _accept(state_y, proposal, lp, log_u, grad)
    if nx is not state_x and ny is not state_y:
        return nx, nx
    return nx, ny


@dataclass(frozen=True, eq=False)
class HMCMixture:
    """Settings of the HMC/RWMH mixture kernel: HMC with ``n_steps`` leapfrog steps of size
    ``step_size`` and inverse metric ``inv_metric``, replaced with probability ``omega`` by an
    RWMH step with proposal scale ``rwmh_scale``. ``omega`` outside (0, 1] raises
    :class:`~stanlogz.InputError`."""

    step_size: float
    n_steps: int
    inv_metric: np.ndarray | float
    rwmh_scale: np.ndarray
    omega: float = 0.1

    def __post_init__(self) -> None:
        if not 0.0 < self.omega <= 1.0:
            raise InputError(f"omega must be in (0, 1], got {self.omega}")


def hmc_mixture_step(
    rng: np.random.Generator,
    state: hmc.HMCState,
    logdensity_grad_fn: LogDensityGrad,
    mix: HMCMixture,
) -> hmc.HMCState:
    """The uncoupled mixture kernel: RWMH with probability ``mix.omega``, HMC otherwise."""
    if rng.uniform() < mix.omega:
        noise = rng.standard_normal(state.position.shape)
        prop = state.position + apply_scale(mix.rwmh_scale, noise)
        log_u = float(np.log(rng.uniform()))
        lp, g = logdensity_grad_fn(prop)
        return _accept(state, prop, float(lp), log_u, np.asarray(g, dtype=float))
    new, _ = hmc.step(rng, state, logdensity_grad_fn, mix.step_size, mix.n_steps,
                      mix.inv_metric)
    return new


def coupled_hmc_step(
    rng: np.random.Generator,
    state_x: hmc.HMCState,
    state_y: hmc.HMCState,
    logdensity_grad_fn: LogDensityGrad,
    mix: HMCMixture,
) -> tuple[hmc.HMCState, hmc.HMCState]:
    """Coupled mixture kernel: common-random-number HMC, or (prob. ``mix.omega``) coupled
    RWMH."""
    if np.array_equal(state_x.position, state_y.position):
        new = hmc_mixture_step(rng, state_x, logdensity_grad_fn, mix)
        return new, new
    if rng.uniform() < mix.omega:
        px, py, same = reflection_maximal_coupling(
            rng, state_x.position, state_y.position, mix.rwmh_scale
        )
        log_u = float(np.log(rng.uniform()))
        lx, gx = logdensity_grad_fn(px)
        gx = np.asarray(gx, dtype=float)
        if same:
            return _accept_both(state_x, state_y, px, float(lx), log_u, gx)
        nx = _accept(state_x, px, float(lx), log_u, gx)
        ly, gy = logdensity_grad_fn(py)
        return nx, _accept(state_y, py, float(ly), log_u, np.asarray(gy, dtype=float))
    noise = rng.standard_normal(state_x.position.shape)
    log_u = float(np.log(rng.uniform()))
    args = (logdensity_grad_fn, mix.step_size, mix.n_steps, mix.inv_metric)
    nx, _ = hmc.transition(state_x, noise, log_u, *args)
    ny, _ = hmc.transition(state_y, noise, log_u, *args)
    return nx, ny


class CoupledKernel(NamedTuple):
    """A Markov kernel and a coupling of it with itself, with states that carry ``.position``."""

    init: Callable[[np.ndarray], Any]
    step: Callable[[np.random.Generator, Any], Any]
    coupled_step: Callable[[np.random.Generator, Any, Any], tuple[Any, Any]]


def rwmh_kernel(
    logdensity_fn: LogDensity, scale: np.ndarray, coupling: str = "reflection"
) -> CoupledKernel:
    """Coupled RWMH with proposal scale ``scale`` (see :mod:`stanlogz.mcmc.rwmh`)."""
    _proposal_coupling(coupling)
    return CoupledKernel(
        init=lambda x: rwmh.init(x, logdensity_fn),
        step=lambda rng, s: rwmh.step(rng, s, logdensity_fn, scale)[0],
        coupled_step=lambda rng, sx, sy: coupled_rwmh_step(
            rng, sx, sy, logdensity_fn, scale, coupling
        ),
    )


def hmc_kernel(logdensity_grad_fn: LogDensityGrad, mix: HMCMixture) -> CoupledKernel:
    """Coupled HMC (common random numbers) mixed with coupled RWMH with probability
    ``mix.omega`` (:class:`HMCMixture`)."""
    return CoupledKernel(
        init=lambda x: hmc.init(x, logdensity_grad_fn),
        step=lambda rng, s: hmc_mixture_step(rng, s, logdensity_grad_fn, mix),
        coupled_step=lambda rng, sx, sy: coupled_hmc_step(rng, sx, sy, logdensity_grad_fn, mix),
    )
