"""Reverse SMC: the forward tempering schedule run backwards from posterior draws.

Forward SMC's Ẑ is unbiased for Z, so the mean of its runs' log Ẑ lies *below* log Z; when the
HMC moves cannot keep the particles at f_β, that shortfall is carried by rare high runs that a
handful of runs never shows, and the runs' spread understates the error. Started at draws from
the posterior and tempered back to the base, the same kind of run gives an unbiased estimate of
Z_q/Z, so its log Z lies *above* the truth (Grosse, Ghahramani & Adams 2015 for AIS). The two
directions sandwich log Z: their gap measures the error that the forward spread cannot.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...mcmc.annealing import AnnealingPath, HMCTuning, annealed_transition
from ...parallel import run_parallel
from ..common import log_mean_exp


@dataclass
class _ReverseTask:
    path: AnnealingPath
    betas: np.ndarray
    tuning: HMCTuning
    rounds: np.ndarray
    starts: np.ndarray
    n_particles: int
    hmc_steps: int
    n_moves: int


def _reverse_run(task: _ReverseTask, rng: np.random.Generator) -> float:
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        path, betas = task.path, task.betas
        pool = task.starts.shape[0]
        idx = rng.choice(pool, size=task.n_particles, replace=task.n_particles > pool)
        pts = [path.evaluate(task.starts[i]) for i in idx]
        log_inv = 0.0  # log of the run's estimate of Z_q / Z
        for m in range(betas.size - 1, 0, -1):
            r = np.array([pt.log_ratio for pt in pts])
            lw = (betas[m - 1] - betas[m]) * np.where(np.isfinite(r), r, np.inf)
            if not np.any(np.isfinite(lw)):
                return math.inf
            log_inv += log_mean_exp(lw)
            if m == 1:
                break
            beta = float(betas[m - 1])
            pts = [pts[i] for i in _resample(lw, rng)]
            eps, inv_metric = task.tuning.at(beta)
            for _ in range(int(task.rounds[m - 2])):
                for k in range(len(pts)):
                    for _ in range(task.n_moves):
                        pts[k], _info, _n = annealed_transition(path, beta, pts[k], rng, eps,
                                                                inv_metric, task.hmc_steps)
        return -float(log_inv)


def _resample(log_w: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    from .smc import systematic_resample  # the forward module imports this one

    return systematic_resample(np.where(np.isfinite(log_w), log_w, -np.inf), rng)


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
    not have been used to build the path's base (that biases the runs low)."""
    steps = max(0, betas.size - 2)
    rounds = np.asarray(rounds if rounds is not None and len(rounds) >= steps
                        else np.ones(steps, dtype=int), dtype=int)
    task = _ReverseTask(path, np.asarray(betas, float), tuning, rounds,
                        np.atleast_2d(np.asarray(posterior_draws, float)), n_particles,
                        hmc_steps, n_moves)
    out = run_parallel(_reverse_run, [task] * n_runs, seed, n_workers=n_workers,
                       backend=backend)
    return np.asarray(out, dtype=float) + path.base_log_z


def sandwich(forward_runs: np.ndarray, reverse_runs: np.ndarray
             ) -> tuple[float, float, float, float, bool]:
    """log Z, its se, the two bounds and whether they are consistent, from the runs' log Z.

    The mean of the forward runs' log Ẑ is a stochastic lower bound on log Z and the mean of
    the reverse runs' an upper bound (Jensen, whatever the runs' distribution). log Z is the
    middle of the two and its se holds half their distance and the Monte Carlo se of each
    mean, so ±2 se spans both bounds. Bounds that cross by more than twice their joint se
    contradict the sandwich (the draws are then not from the posterior): no se (NaN).
    """
    f = np.asarray(forward_runs, float)
    r = np.asarray(reverse_runs, float)
    lo, hi = float(np.mean(f)), float(np.mean(r))
    se_lo = float(np.std(f, ddof=1) / math.sqrt(f.size))
    se_hi = float(np.std(r, ddof=1) / math.sqrt(r.size))
    joint = math.sqrt(se_lo * se_lo + se_hi * se_hi)
    consistent = hi - lo >= -2.0 * joint
    half = 0.5 * max(hi - lo, 0.0)
    se = math.sqrt(half * half + 0.25 * joint * joint) if consistent else math.nan
    return 0.5 * (lo + hi), se, lo, hi, consistent
