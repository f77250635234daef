"""Shared pieces of the Bayes-factor tools: a program with its data and its prior density,
Monte Carlo standard errors of means and log-means of draws, and power-scaled targets.

The prior density comes from an ``lprior`` quantity, the zero-observation instance, the
``log_lik`` quantity or one-observation instances (:mod:`.prior_density`); the log-likelihood of a
draw is the difference log p(y, θ) − log p(θ) (Jacobians included in both).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import logsumexp

from .. import arviz_compat
from .._util.seeds import Stream, stream_int_seed
from ..crossval.observations.observations import Observations, load_observed
from ..draws import Draws, sample
from ..stan.program import ProgramLike, StanProgram
from ..stan.settings import NutsArgs
from .prior_density import PriorDensity, find_prior, khat, sample_prior


@dataclass
class Program:
    """A program bound to its data, its observations and its prior density."""

    model: StanProgram
    prior: PriorDensity
    data: dict[str, Any]
    observations: Observations

    @property
    def name(self) -> str:
        return str(self.model.name)

    def log_prior(self, x: np.ndarray) -> np.ndarray:
        """log p(θ) on the constrained scale (no Jacobian) at unconstrained rows ``x``."""
        return self.prior.log_prior(x)

    def log_jacobian(self, x: np.ndarray) -> np.ndarray:
        """log |dθ/dx| of the constraining transform at unconstrained rows ``x``."""
        return self.prior.log_jacobian(x)

    def log_lik(self, x: np.ndarray) -> np.ndarray:
        """log p(y | θ) = log p(y, θ) − log p(θ) at unconstrained rows ``x``."""
        x = np.atleast_2d(x)
        return self.model.log_density_many(x) - self.prior.log_density_many(x)

    def sample_prior(self, settings: NutsArgs, anchor: np.ndarray, *, seed: Any = None,
                     progress: Any = None) -> Draws:
        """Prior draws (:func:`.prior_density.sample_prior`; ``anchor``: posterior draws)."""
        return sample_prior(self.prior, settings, anchor, seed=seed, progress=progress)


def load_program(model: ProgramLike, data: Any, obs: str | None = None, *, seed: int | None = None,
                 progress: Any = None, backend: str | None = None) -> Program:
    """``model`` (a path or StanModel) with ``data``, its observations and its prior density
    (InputError naming every route to the prior when none works)."""
    m, data_dict, observations = load_observed(model, data, obs, seed=seed,
                                               progress=progress, backend=backend)
    prior = find_prior(m, data_dict, observations, seed=stream_int_seed(seed, Stream.PROBE))
    return Program(m, prior, data_dict, observations)


def posterior_and_prior(model: ProgramLike, data: Any, obs: str | None, settings: NutsArgs, *,
                        seed: int | None = None, progress: Any = None
                        ) -> tuple[Program, Draws, Draws]:
    """The program (:func:`load_program`), its posterior draws (seed stream ``NUTS``) and its
    prior draws (stream ``PRIOR_NUTS``, started from the posterior's)."""
    prog = load_program(model, data, obs, seed=seed, progress=progress,
                        backend=settings.backend)
    if progress is not None:
        progress(f"sampling the posterior and the prior of {prog.name}")
    d_post = sample(prog.model, settings, seed=stream_int_seed(seed, Stream.NUTS),
                    progress=progress)
    d_prior = prog.sample_prior(settings, d_post.flat_unconstrained(),
                                seed=stream_int_seed(seed, Stream.PRIOR_NUTS),
                                progress=progress)
    return prog, d_post, d_prior


def _ess(values: np.ndarray) -> float:
    """ESS for the mean of ``values`` ``(chains, n)``; the number of draws for one chain."""
    v = np.asarray(values, dtype=float)
    chains, n = v.shape
    if np.ptp(v) == 0:
        return float(chains * n)
    if chains == 1:
        # one chain: ArviZ needs chains; split it in two
        half = n // 2
        v = np.stack([v[0, :half], v[0, half:2 * half]])
    ess = float(arviz_compat.ess_mean(v[:, :, None])[0])
    return ess if math.isfinite(ess) and ess > 0 else float(v.size)


def mean_se(values: np.ndarray) -> tuple[float, float]:
    """Mean of draws ``(chains, n)`` and its Monte Carlo se (sd / sqrt(ESS))."""
    v = np.asarray(values, dtype=float)
    return float(v.mean()), float(v.std(ddof=1) / math.sqrt(_ess(v)))


def linearized_se(influence: np.ndarray) -> float:
    """Monte Carlo se of an estimate whose first-order error is the mean of the per-draw
    ``influence`` ``(chains, n)`` (delta method with the MCMC ESS of the influence)."""
    return mean_se(influence)[1]


def log_mean_exp_se(log_w: np.ndarray) -> tuple[float, float, float]:
    """log mean exp(``log_w``) over draws ``(chains, n)``, its delta-method se and the k̂ of
    the weights."""
    lw = np.asarray(log_w, dtype=float)
    value = float(logsumexp(lw) - math.log(lw.size))
    w = np.exp(lw - value)  # weights over their mean
    return value, linearized_se(w), khat(lw)


def chains_of(x: np.ndarray, chains: int) -> np.ndarray:
    """Flat per-draw values ``(S,)`` (chain-major) as ``(chains, S / chains)``."""
    return np.asarray(x, dtype=float).reshape(chains, -1)


def value_se(value: float, se: float) -> dict[str, float]:
    """``{"value": .., "se": ..}`` with plain floats."""
    return {"value": float(value), "se": float(se)}
