"""Reverse SMC: the forward tempering schedule run backwards from posterior draws.

Forward SMC's Ẑ is unbiased for Z, so the mean of its runs' log Ẑ lies *below* log Z; when the
HMC moves cannot keep the particles at f_β, that shortfall is carried by rare high runs that a
handful of runs never shows, and the runs' spread understates the error. Started at draws from
the posterior and tempered back to the base, the same kind of run gives an unbiased estimate of
Z_q/Z, so its log Z lies *above* the truth (Grosse, Ghahramani & Adams 2015 for AIS). The two
directions bracket log Z (:func:`bracket`): a conservative interval when the draws are exact,
and a check on the forward estimate that the forward runs' own spread cannot give.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from ...errors import InputError
from ...mcmc.annealing import AnnealingPath, HMCTuning, move_in_turn
from ...parallel import run_parallel
from ..common import log_mean_exp
from .particles import systematic_resample


@dataclass
class _ReverseTask:
    path: AnnealingPath
    betas: np.ndarray
    tuning: HMCTuning
    rounds: np.ndarray
    starts: np.ndarray  # this run's own part of the pool of posterior draws
    n_particles: int
    hmc_steps: int
    n_moves: int


def split_pool(n_draws: int, n_runs: int) -> list[np.ndarray]:
    """Indices of ``n_runs`` disjoint, contiguous parts of a pool of ``n_draws`` posterior
    draws (sizes differ by at most one), one per reverse run.

    Runs that start from a shared pool share its luck: their spread misses the pool's share of
    the variance (with 400 draws the upper bound's sd was 3.8 times its se, issue 44). Runs
    from disjoint parts of independent draws are independent, so their spread is the whole
    error. Contiguous parts keep an MCMC chain's neighbouring (correlated) draws in one run.
    """
    if n_runs < 1 or n_draws < n_runs:
        raise InputError(f"{n_draws} posterior draws cannot start {n_runs} reverse runs from "
                         "disjoint parts: give at least one draw per run")
    return np.array_split(np.arange(n_draws), n_runs)


def start_indices(n_starts: int, n_particles: int, rng: np.random.Generator) -> np.ndarray:
    """Which of a run's ``n_starts`` draws start its ``n_particles`` particles: every draw
    ``n_particles // n_starts`` times, then distinct ones at random for the rest. Each particle
    is an exact posterior draw (marginally), which is all the run's unbiasedness needs."""
    reps, extra = divmod(n_particles, n_starts)
    return np.concatenate([np.tile(np.arange(n_starts), reps),
                           rng.choice(n_starts, size=extra, replace=False)]).astype(int)


def _reverse_run(task: _ReverseTask, rng: np.random.Generator) -> float:
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        path, betas = task.path, task.betas
        idx = start_indices(task.starts.shape[0], task.n_particles, rng)
        starts = np.unique(idx)
        at = path.evaluate_many(task.starts[starts])
        pts = at.rows(np.searchsorted(starts, idx))
        log_inv = 0.0  # log of the run's estimate of Z_q / Z
        for m in range(betas.size - 1, 0, -1):
            r = pts.log_ratio
            lw = (betas[m - 1] - betas[m]) * np.where(np.isfinite(r), r, np.inf)
            if not np.any(np.isfinite(lw)):
                return math.inf
            log_inv += log_mean_exp(lw)
            if m == 1:
                break
            beta = float(betas[m - 1])
            pts = pts.rows(systematic_resample(lw, rng))
            eps, inv_metric = task.tuning.at(beta)
            for _ in range(int(task.rounds[m - 2])):
                pts, _info = move_in_turn(path, beta, pts, rng, eps, inv_metric,
                                          task.hmc_steps, task.n_moves)
        return -float(log_inv)


def reverse_runs(
    path: AnnealingPath,
    betas: np.ndarray,
    tuning: HMCTuning,
    rounds: np.ndarray,
    posterior_draws: np.ndarray,
    *,
    n_particles: int,
    n_runs: int,
    hmc_steps: int,
    n_moves: int,
    seed: int | np.random.SeedSequence | None,
    n_workers: int | None = None,
    backend: str = "auto",
) -> np.ndarray:
    """``n_runs`` independent reverse runs' log Z (each minus the log of an unbiased estimate
    of Z_q/Z, so high on average), plus the path's ``base_log_z``. ``posterior_draws`` must
    not have been used to build the path's base (that biases the runs low). Each run starts
    from its own part of them (:func:`split_pool`), so the runs are independent given the
    path: their spread counts the draws' share of the error. Fewer draws than runs is an
    InputError."""
    steps = max(0, betas.size - 2)
    rounds = np.asarray(rounds if rounds is not None and len(rounds) >= steps
                        else np.ones(steps, dtype=int), dtype=int)
    pool = np.atleast_2d(np.asarray(posterior_draws, float))
    tasks = [_ReverseTask(path, np.asarray(betas, float), tuning, rounds, pool[part],
                          n_particles, hmc_steps, n_moves)
             for part in split_pool(pool.shape[0], n_runs)]
    out = run_parallel(_reverse_run, tasks, seed, n_workers=n_workers, backend=backend)
    return np.asarray(out, dtype=float) + path.base_log_z


#: One-sided false-alarm rate of :attr:`Bracket.consistent` for exact draws (Welch t test of
#: upper − lower < 0; its expectation is >= 0, so the rate is at most this).
FALSE_ALARM = 0.01


@dataclass(frozen=True)
class Bracket:
    """The bounds on log Z from forward and reverse SMC runs (:func:`bracket`).

    ``lower``: the mean of the forward runs' log Ẑ, below log Z in expectation whatever the
    moves (Jensen on E Ẑ = Z). ``upper``: the mean of the reverse runs' log Ẑ, above log Z in
    expectation *if the reverse runs start at exact posterior draws* (Grosse, Ghahramani &
    Adams 2015); with approximate draws it may fall below. ``lower_se``/``upper_se``: the
    Monte Carlo se of each mean (runs' sd / sqrt(runs)); ``lower_runs``/``upper_runs``: the
    runs behind each. ``consistent``: False when the upper bound lies below the lower by more
    than a one-sided Welch t test at level :data:`FALSE_ALARM` allows, which for independent
    runs from exact draws happens with probability at most that.
    """

    lower: float
    upper: float
    lower_se: float
    upper_se: float
    lower_runs: int = 8
    upper_runs: int = 8

    @property
    def joint_se(self) -> float:
        """se of ``upper − lower`` (independent runs)."""
        return math.hypot(self.lower_se, self.upper_se)

    @property
    def welch_df(self) -> float:
        """Welch–Satterthwaite degrees of freedom of ``joint_se``."""
        a, b = self.lower_se**2, self.upper_se**2
        den = a * a / max(self.lower_runs - 1, 1) + b * b / max(self.upper_runs - 1, 1)
        return (a + b) ** 2 / den if den > 0 else math.inf

    @property
    def consistent(self) -> bool:
        """Whether ``upper − lower`` passes the one-sided Welch t test at :data:`FALSE_ALARM`
        (its expectation is >= 0 for exact draws)."""
        q = float(stats.t.isf(FALSE_ALARM, self.welch_df))
        return self.upper - self.lower >= -q * self.joint_se

    @property
    def gap(self) -> float:
        """``upper − lower``."""
        return self.upper - self.lower

    def interval(self, level: float = 0.95, df: float | None = None) -> tuple[float, float]:
        """A conservative interval for log Z: each bound moved outwards by its one-sided
        (1 − level)/2 quantile (Student-t with ``df``, normal when None) times its se. Since
        E lower <= log Z <= E upper, each end misses with probability at most (1 − level)/2
        when the runs' mean is near normal, so the interval covers with probability at least
        ``level`` — for exact posterior draws (the upper end needs them)."""
        p = 0.5 + 0.5 * level
        q = float(stats.norm.ppf(p) if df is None else stats.t.ppf(p, df))
        return self.lower - q * self.lower_se, self.upper + q * self.upper_se


def bracket(forward_runs: np.ndarray, reverse_runs: np.ndarray) -> Bracket:
    """The two stochastic bounds on log Z from the forward and reverse runs' log Ẑ."""
    f = np.asarray(forward_runs, float)
    r = np.asarray(reverse_runs, float)
    return Bracket(float(np.mean(f)), float(np.mean(r)),
                   float(np.std(f, ddof=1) / math.sqrt(f.size)),
                   float(np.std(r, ddof=1) / math.sqrt(r.size)), f.size, r.size)
