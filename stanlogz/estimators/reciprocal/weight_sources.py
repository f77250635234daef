"""Sources of unbiased importance weights of Z for the 1/Z estimators in :mod:`.reciprocal`.

A source is any callable ``(rng, n) -> array of n log-weights``, each the log of an unbiased
estimate of Z. Shipped here: importance sampling with a proposal fitted to draws (a Gaussian or
the Gaussianizing flow), AIS from such a proposal (stanlogz's own AIS, tuned once), and an
adapter for callables that return weights rather than log-weights (e.g. discrete models).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..._util.seeds import drawn_sequence
from ...densities.fits import as_draw_matrix, gaussian_from_draws
from ...densities.student_t import student_t_from_draws
from ...densities.target import SampleableDensity, Target, log_density_many
from ...errors import InputError
from ...mcmc.annealing import AnnealingPath, HMCTuning, tune_hmc
from ..annealing.ais import ais

PROPOSALS = ("gaussian", "t", "flow")


def fit_proposal(draws: np.ndarray, kind: str = "gaussian", *, inflate: float = 1.5,
                 seed: int | None = None) -> SampleableDensity:
    """A normalized, sampleable proposal fitted to ``draws`` (chains, n, dim) or (n, dim):
    a Gaussian with covariance times ``inflate``, a multivariate t (10 degrees of freedom,
    the same mean and covariance: :mod:`stanlogz.densities.student_t`), or the Gaussianizing
    flow."""
    x = as_draw_matrix(draws)
    if kind == "gaussian":
        return gaussian_from_draws(x, inflate=inflate)
    if kind == "t":
        return student_t_from_draws(x, inflate=inflate)
    if kind == "flow":
        from ...flows.gaussianize import GaussianizingFlow

        return GaussianizingFlow.fit(x, rng=seed)
    raise InputError(f"unknown proposal {kind!r}; one of {', '.join(PROPOSALS)}")


class ImportanceWeights:
    """log w = log p*(x) - log q(x) at x ~ q: ``target`` is p* (a Target, e.g. a StanModel on
    its unconstrained space), ``proposal`` a normalized sampleable density q."""

    def __init__(self, target: Target, proposal: SampleableDensity) -> None:
        if target.dim != proposal.dim:
            raise InputError(f"proposal has dimension {proposal.dim}, the target {target.dim}")
        self.target = target
        self.proposal = proposal

    def __call__(self, rng: np.random.Generator, n: int) -> np.ndarray:
        x = np.atleast_2d(self.proposal.sample(rng, n))
        lq = np.asarray(self.proposal.log_density_many(x), dtype=float)
        lp = log_density_many(self.target, x)
        with np.errstate(invalid="ignore"):
            return np.where(np.isneginf(lp), -np.inf, lp - lq)


class AISWeights:
    """Forward-AIS weights from the normalized ``base`` to ``target`` (each chain's weight is an
    unbiased estimate of Z): ``n_temps`` temperatures on a fixed schedule, HMC tuned once."""

    def __init__(self, target: Target, base: SampleableDensity, *, n_temps: int = 10,
                 schedule: str = "sigmoid", hmc_steps: int = 5, tuning: HMCTuning | None = None,
                 seed: int | None = None) -> None:
        if n_temps < 2:
            raise InputError(f"AIS needs n_temps >= 2, got {n_temps}")
        self.target, self.base = target, base
        self.n_temps, self.schedule, self.hmc_steps = int(n_temps), schedule, int(hmc_steps)
        if tuning is None:
            tuning, _ = tune_hmc(AnnealingPath(base, target), np.random.default_rng(seed),
                                 n_leapfrog=hmc_steps, n_iter=40)
        self.tuning = tuning

    def __call__(self, rng: np.random.Generator, n: int) -> np.ndarray:
        seed = drawn_sequence(rng)
        res = ais(self.target, self.base, n_chains=n, n_temps=self.n_temps,
                  schedule=self.schedule, seed=seed, n_workers=1, hmc_steps=self.hmc_steps,
                  tuning=self.tuning, backend="serial")
        return np.asarray(res.log_weights, dtype=float)


def from_weights(fn: Callable[[np.random.Generator, int], Any]) -> Callable[
        [np.random.Generator, int], np.ndarray]:
    """A log-weight source from a callable returning ``n`` non-negative weights."""

    def source(rng: np.random.Generator, n: int) -> np.ndarray:
        w = np.asarray(fn(rng, n), dtype=float)
        if np.any(w < 0):
            raise InputError("importance weights must be >= 0; got a negative weight")
        with np.errstate(divide="ignore"):
            return np.log(w)

    return source
