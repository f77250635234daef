"""Geometric annealing paths f_β ∝ q^{1-β} p̃^β between a base q and a target p̃.

The base is a density we can start from exactly: a normalized, exactly sampleable density
(a Gaussian from draws, a Laplace approximation, a flow), or — for the prior→posterior path —
the prior, given either as a sampleable density or as a prior target plus exact prior draws.
On the prior path f_β = prior × likelihood^β, since the target is prior × likelihood.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from .._util import deadline
from ..densities.target import Target, log_density_gradient_many
from ..errors import InputError
from . import hmc


def _geometric(base: Any, target: Any, beta: float) -> Any:
    """(1 − β) base + β target, exactly an endpoint's value at β = 0 or 1 (where the other
    may be infinite)."""
    if beta == 0.0:
        return base
    if beta == 1.0:
        return target
    return (1.0 - beta) * base + beta * target


class PathPoint(NamedTuple):
    """Base and target log densities and gradients at one position."""

    position: np.ndarray
    log_base: float
    grad_base: np.ndarray
    log_target: float
    grad_target: np.ndarray

    def log_f(self, beta: float) -> float:
        """log f_β at this position."""
        return _geometric(self.log_base, self.log_target, beta)

    def grad_f(self, beta: float) -> np.ndarray:
        """Gradient of log f_β at this position."""
        return _geometric(self.grad_base, self.grad_target, beta)

    @property
    def log_ratio(self) -> float:
        """log p̃ − log q: the AIS weight increment per unit of β."""
        if not (np.isfinite(self.log_target) and np.isfinite(self.log_base)):
            return -np.inf
        return self.log_target - self.log_base


class PathBatch(NamedTuple):
    """:class:`PathPoint` of K chains at once (rows: chains)."""

    position: np.ndarray
    log_base: np.ndarray
    grad_base: np.ndarray
    log_target: np.ndarray
    grad_target: np.ndarray

    @classmethod
    def of(cls, points: list[PathPoint]) -> PathBatch:
        """The batch of ``points``."""
        return cls(*(np.array([getattr(p, f) for p in points], dtype=float)
                     for f in cls._fields))

    def rows(self, idx: np.ndarray) -> PathBatch:
        """The chains ``idx`` (copies)."""
        return PathBatch(*(a[idx] for a in self))

    def set_rows(self, idx: np.ndarray, other: PathBatch) -> None:
        """Replace the chains ``idx`` by ``other``'s rows, in place."""
        for a, b in zip(self, other, strict=True):
            a[idx] = b

    def log_f(self, beta: float) -> np.ndarray:
        """log f_β of every chain (as :meth:`PathPoint.log_f`)."""
        return _geometric(self.log_base, self.log_target, beta)

    def grad_f(self, beta: float) -> np.ndarray:
        """Gradients of log f_β (as :meth:`PathPoint.grad_f`)."""
        return _geometric(self.grad_base, self.grad_target, beta)

    @property
    def log_ratio(self) -> np.ndarray:
        """log p̃ − log q of every chain (−inf where either is not finite)."""
        ok = np.isfinite(self.log_target) & np.isfinite(self.log_base)
        with np.errstate(invalid="ignore"):
            return np.where(ok, self.log_target - self.log_base, -np.inf)


@dataclass
class AnnealingPath:
    """The path from ``base`` (log normalizer ``base_log_z``) to ``target``.

    ``base_draws`` are exact draws from the normalized base, shaped ``(n, dim)``; they are needed
    only when ``base`` cannot ``sample`` itself (e.g. a prior Stan program plus draws from a
    simulation program). ``base_log_z`` is 0 for a normalized base.
    """

    base: Target
    target: Target
    base_log_z: float = 0.0
    base_draws: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.base.dim != self.target.dim:
            raise InputError(
                f"base has dimension {self.base.dim} but the target has {self.target.dim}"
            )
        if self.base_draws is not None:
            d = np.atleast_2d(np.asarray(self.base_draws, dtype=float))
            if d.shape[1] != self.dim:
                raise InputError(f"base draws must have {self.dim} columns, got {d.shape[1]}")
            self.base_draws = d
        elif not callable(getattr(self.base, "sample", None)):
            raise InputError("the base cannot be sampled: give exact base draws (base_draws)")

    @property
    def dim(self) -> int:
        return self.target.dim

    def evaluate(self, x: np.ndarray) -> PathPoint:
        """Both endpoint log densities and gradients at ``x`` (two gradient evaluations)."""
        x = np.asarray(x, dtype=float)
        lq, gq = self.base.log_density_gradient(x)
        lp, gp = self.target.log_density_gradient(x)
        return PathPoint(x, float(lq), np.asarray(gq, float), float(lp), np.asarray(gp, float))

    def evaluate_many(self, xs: np.ndarray) -> PathBatch:
        """:meth:`evaluate` at every row of ``xs``, one batched call per endpoint."""
        xs = np.atleast_2d(np.asarray(xs, dtype=float))
        lq, gq = log_density_gradient_many(self.base, xs)
        lp, gp = log_density_gradient_many(self.target, xs)
        return PathBatch(xs.copy(), lq, gq, lp, gp)

    def sample_base(self, rng: np.random.Generator, n: int, *, independent: bool = False
                    ) -> np.ndarray:
        """``n`` exact base draws: sampled, or picked at random from ``base_draws`` without
        replacement (with replacement beyond the pool's size, unless ``independent``: then a pool
        smaller than ``n`` is an error, since repeated draws are not independent)."""
        if self.base_draws is not None:
            pool = self.base_draws.shape[0]
            if independent and n > pool:
                raise InputError(f"{n} independent base draws were asked of a pool of {pool} "
                                 "exact base draws: give at least as many base draws as chains")
            idx = rng.choice(pool, size=n, replace=n > pool)
            return self.base_draws[idx].copy()
        return np.atleast_2d(self.base.sample(rng, n))  # type: ignore[attr-defined]


def prior_path(
    prior: Target, target: Target, prior_draws: np.ndarray | None = None, prior_log_z: float = 0.0
) -> AnnealingPath:
    """The prior→posterior path: f_β = prior × likelihood^β.

    ``prior`` is the prior's log density on the same unconstrained space as ``target`` (e.g. the
    same Stan program with the observations removed); it must integrate to ``exp(prior_log_z)``
    (0 for a proper prior written with normalized densities). Without ``sample`` on ``prior``,
    ``prior_draws`` must hold exact prior draws.
    """
    return AnnealingPath(prior, target, base_log_z=prior_log_z, base_draws=prior_draws)


class AnnealedTarget:
    """f_β ∝ q^{1−β} p̃^β as a plain :class:`~stanlogz.densities.target.Target` (for generic
    samplers).

    :meth:`log_density_gradient` also stores the endpoint values of its last call in
    :attr:`last`, so a sampler can reuse them for the AIS weight.
    """

    def __init__(self, path: AnnealingPath, beta: float) -> None:
        if not 0.0 <= beta <= 1.0:
            raise InputError(f"beta must lie in [0, 1], got {beta}")
        self.path = path
        self.beta = float(beta)
        self.last: PathPoint | None = None
        self.n_target_evals = 0

    @property
    def dim(self) -> int:
        return self.path.dim

    def log_density_gradient(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        pt = self.path.evaluate(x)
        self.n_target_evals += 1
        self.last = pt
        return pt.log_f(self.beta), pt.grad_f(self.beta)

    def log_density(self, x: np.ndarray) -> float:
        return self.log_density_gradient(x)[0]


@dataclass
class HMCTuning:
    """Step size and diagonal inverse metric of the HMC kernel as functions of β.

    Values are given on a grid of β and interpolated linearly in log space between grid points.
    ``log_ratio_sd`` (optional, from a pilot) is the spread of log p̃ − log q under f_β at each
    grid β; it sets the spacing of the ``"adaptive"`` schedule.
    """

    betas: np.ndarray
    step_sizes: np.ndarray
    inv_metrics: np.ndarray  # (len(betas), dim)
    log_ratio_sd: np.ndarray | None = None

    @classmethod
    def constant(cls, step_size: float, inv_metric: np.ndarray | float, dim: int) -> HMCTuning:
        """The same step size and metric at every β (e.g. inherited from NUTS adaptation)."""
        m = np.broadcast_to(np.asarray(inv_metric, dtype=float), (dim,))
        if not step_size > 0 or np.any(m <= 0):
            raise InputError("step size and inverse metric must be positive")
        return cls(np.array([0.0, 1.0]), np.array([step_size, step_size]), np.vstack([m, m]))

    @classmethod
    def from_endpoints(
        cls,
        base_var: np.ndarray,
        post_var: np.ndarray,
        step_size: float,
        n_grid: int = 9,
    ) -> HMCTuning:
        """Tuning inherited from NUTS adaptation: ``step_size`` and metric ``post_var`` at β=1.

        At β the metric is the variance of the geometric mixture of two Gaussians with
        variances ``base_var`` and ``post_var``, 1/((1−β)/v_q + β/v_p); the step size is kept.
        """
        vq = np.asarray(base_var, dtype=float)
        vp = np.asarray(post_var, dtype=float)
        if vq.shape != vp.shape or vq.ndim != 1 or np.any(vq <= 0) or np.any(vp <= 0):
            raise InputError("base and posterior variances must be positive vectors of one size")
        if not step_size > 0:
            raise InputError(f"step size must be positive, got {step_size}")
        betas = np.linspace(0.0, 1.0, max(2, int(n_grid))) ** 2  # denser near β=0
        metrics = np.array([1.0 / ((1 - b) / vq + b / vp) for b in betas])
        return cls(betas, np.full(betas.size, float(step_size)), metrics)

    def at(self, beta: float) -> tuple[float, np.ndarray]:
        """Step size and inverse metric at ``beta``."""
        b = self.betas
        if b.size == 1:
            return float(self.step_sizes[0]), self.inv_metrics[0].copy()
        i = int(np.clip(np.searchsorted(b, beta, side="right") - 1, 0, b.size - 2))
        w = float(np.clip((beta - b[i]) / (b[i + 1] - b[i]), 0.0, 1.0))
        eps = self.step_sizes[i] ** (1 - w) * self.step_sizes[i + 1] ** w
        m = self.inv_metrics[i] ** (1 - w) * self.inv_metrics[i + 1] ** w
        return float(eps), m

    def to_dict(self) -> dict[str, list | None]:
        return {
            "betas": self.betas.tolist(),
            "step_sizes": self.step_sizes.tolist(),
            "inv_metric_mean": self.inv_metrics.mean(axis=1).tolist(),
            "log_ratio_sd": None if self.log_ratio_sd is None else self.log_ratio_sd.tolist(),
        }


def annealed_transition(
    path: AnnealingPath,
    beta: float,
    point: PathPoint,
    rng: np.random.Generator,
    step_size: float,
    inv_metric: np.ndarray,
    n_leapfrog: int,
) -> tuple[PathPoint, hmc.HMCInfo, int]:
    """One HMC transition leaving f_β invariant; returns the new point, info and target evals."""
    ann = AnnealedTarget(path, beta)
    state = hmc.HMCState(point.position, point.log_f(beta), point.grad_f(beta))
    new, info = hmc.step(rng, state, ann.log_density_gradient, step_size, n_leapfrog, inv_metric)
    if info.accepted:
        # The last evaluation of the leapfrog trajectory is the accepted end point, whose
        # endpoint values are kept so the next AIS weight increment costs nothing.
        assert ann.last is not None and ann.last.position is new.position
        point = ann.last
    return point, info, ann.n_target_evals


def annealed_transitions(
    path: AnnealingPath,
    beta: float,
    batch: PathBatch,
    noise: np.ndarray,
    log_u: np.ndarray,
    step_size: np.ndarray | float,
    inv_metric: np.ndarray,
    n_leapfrog: int,
) -> tuple[PathBatch, hmc.HMCInfoMany]:
    """:func:`annealed_transition` of every chain of ``batch`` in lockstep, each with its row of
    ``noise`` and ``log_u`` (:func:`~stanlogz.mcmc.hmc.draw_randomness`): one batched density
    call per leapfrog step. Returns the new batch and the per-chain info (with evaluations)."""
    # each chain's last evaluation; only accepted chains' rows are read, and those were all
    # evaluated
    last = PathBatch(*(np.empty_like(a) for a in batch))

    def many(xs: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ev = path.evaluate_many(xs)
        last.set_rows(rows, ev)
        return ev.log_f(beta), ev.grad_f(beta)

    _, _, _, info = hmc.transition_many(batch.position, batch.log_f(beta), batch.grad_f(beta),
                                        noise, log_u, many, step_size, n_leapfrog, inv_metric)
    # An accepted chain's last evaluation is its end point: its endpoint values are kept, so the
    # next AIS weight increment costs nothing.
    new = PathBatch(*(a.copy() for a in batch))
    acc = np.flatnonzero(info.accepted)
    new.set_rows(acc, last.rows(acc))
    return new, info


def move_in_turn(
    path: AnnealingPath,
    beta: float,
    batch: PathBatch,
    rng: np.random.Generator,
    step_size: float,
    inv_metric: np.ndarray,
    n_leapfrog: int,
    n_moves: int = 1,
) -> tuple[PathBatch, hmc.HMCInfoMany]:
    """``n_moves`` HMC transitions of each chain of ``batch``, all chains batched, with the
    randomness one generator gives when the chains are moved in turn (chain 0's moves, then
    chain 1's, ...): the moves of a loop of :func:`annealed_transition` over the chains, one
    batched density call per leapfrog step instead of one per chain. The info sums the
    moves: accepted counts, evaluations, divergences; the last move's acceptance probability
    and energy error."""
    k, dim = batch.position.shape
    draws = [[hmc.draw_randomness(rng, dim, step_size) for _ in range(n_moves)]
             for _ in range(k)]
    accepted = np.zeros(k, dtype=int)
    n_evals = np.zeros(k, dtype=int)
    divergent = np.zeros(k, dtype=int)
    info = None
    for j in range(n_moves):
        batch, info = annealed_transitions(
            path, beta, batch, np.array([d[j][1] for d in draws]).reshape(k, dim),
            np.array([d[j][2] for d in draws]), step_size, inv_metric, n_leapfrog)
        accepted += info.accepted
        n_evals += info.n_evals
        divergent += info.divergent
    if info is None:
        zero = np.zeros(k)
        return batch, hmc.HMCInfoMany(accepted, zero, zero, divergent, n_evals)
    return batch, hmc.HMCInfoMany(accepted, info.acceptance_prob, info.energy_error, divergent,
                                  n_evals)


# Log-spaced near β=0: with a base far from the target, log p̃ − log q spreads over thousands of
# nats under the base and over a few under the target, so f_β changes fastest at small β.
DEFAULT_TUNING_GRID = (0.0, 1e-4, 1e-3, 0.01, 0.05, 0.2, 0.5, 1.0)


def tune_hmc(
    path: AnnealingPath,
    rng: np.random.Generator,
    *,
    grid: tuple[float, ...] | np.ndarray = DEFAULT_TUNING_GRID,
    n_leapfrog: int = 10,
    n_chains: int = 4,
    n_iter: int = 80,
    target_accept: float = 0.75,
) -> tuple[HMCTuning, int]:
    """Step size and diagonal metric per β from a short pilot on a grid of β.

    Pilot chains start from exact base draws and are annealed along the grid; at each grid β
    the step size is adapted by dual averaging and the metric set to the (regularized) variance
    of the pilot draws; the spread of log p̃ − log q over the pilot draws is recorded for the
    adaptive schedule. Returns the tuning and the target gradient evaluations it spent.
    """
    with np.errstate(over="ignore", invalid="ignore"):  # divergences are rejected, not errors
        return _tune(path, rng, grid, n_leapfrog, n_chains, n_iter, target_accept)


def _tune(path: AnnealingPath, rng: np.random.Generator, grid: tuple[float, ...] | np.ndarray,
          n_leapfrog: int, n_chains: int, n_iter: int, target_accept: float
          ) -> tuple[HMCTuning, int]:
    grid = np.unique(np.clip(np.asarray(grid, dtype=float), 0.0, 1.0))
    if grid.size < 1:
        raise InputError("the tuning grid needs at least one β")
    dim = path.dim
    init = path.sample_base(rng, max(200, 2 * dim))
    inv_metric = np.maximum(init.var(axis=0), 1e-12)
    points = path.evaluate_many(init[:n_chains])
    n_evals = points.position.shape[0]
    step = 0.5 * dim ** -0.25
    steps, metrics, sds = [], [], []
    half = max(1, n_iter // 2)
    for beta in grid:
        deadline.check_spent("the annealing's tuning")  # the run's time budget
        for phase in range(2):
            da = hmc.DualAveraging(step, target_accept)
            draws, ratios = [], []
            for it in range(half):
                eps = float(np.exp(da.log_eps))
                points, info = move_in_turn(path, beta, points, rng, eps, inv_metric,
                                            n_leapfrog)
                n_evals += int(info.n_evals.sum())
                if it >= half // 2:
                    draws.extend(points.position)
                    ratios.extend(points.log_ratio)
                da.update(float(np.mean(info.acceptance_prob)))
            step = da.final
            if phase == 0:
                # Regularized toward a small constant as Stan does, with n pilot draws.
                d = np.array(draws)
                n = d.shape[0]
                var = d.var(axis=0) if n > 1 else inv_metric
                scale = np.median(var) if np.all(np.isfinite(var)) else 1.0
                new_metric = n / (n + 5.0) * var + 1e-3 * scale * 5.0 / (n + 5.0)
                if np.all(np.isfinite(new_metric)) and np.all(new_metric > 0):
                    inv_metric = new_metric
        steps.append(step)
        metrics.append(inv_metric.copy())
        r = np.asarray(ratios, dtype=float)
        r = r[np.isfinite(r)]
        sds.append(float(r.std()) if r.size > 1 else np.nan)
    if grid[0] > 0.0:
        grid = np.concatenate([[0.0], grid])
        steps.insert(0, steps[0])
        metrics.insert(0, metrics[0])
        sds.insert(0, sds[0])
    if grid[-1] < 1.0:
        grid = np.concatenate([grid, [1.0]])
        steps.append(steps[-1])
        metrics.append(metrics[-1])
        sds.append(sds[-1])
    return HMCTuning(grid, np.array(steps), np.array(metrics), np.array(sds)), n_evals
