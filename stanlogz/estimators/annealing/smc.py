"""Adaptive-tempering sequential Monte Carlo (SMC) for log Z.

N particles start at exact draws of a Gaussian base q fitted to the posterior draws and move
along the geometric path f_β ∝ q^{1−β} p̃^β (Del Moral, Doucet & Jasra 2006). At each step the
particles are reweighted by f_β'/f_β = exp((β'−β)(log p̃ − log q)), the mean of those
incremental weights multiplies the running estimate of Z/Z_q, the particles are resampled
(systematic) and moved by HMC transitions that leave f_β' invariant. The next β' is found by
bisection so that the incremental weights keep a chosen effective sample size (Jasra et al.
2011).

With a fixed schedule the product of the mean incremental weights is an *unbiased* estimate of
Z/Z_q; choosing the β from the same particles makes it only consistent. So a pilot run chooses
the schedule and ``n_runs`` independent runs use it: each run's Ẑ is unbiased, and log Z with
its standard error comes from the runs' log Ẑ under the lognormal CLT (:func:`lognormal_log_z`)
— independent replicates, which also run in parallel. Runs of the same schedule backwards from
posterior draws (:mod:`.bracket`) give an upper bound beside the forward runs' lower one.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from ..._util.seeds import Stream, stream, stream_rng
from ...densities.fits import as_draw_matrix, gaussian_from_draws
from ...densities.target import Target
from ...errors import EstimationError, InputError
from ...mcmc.annealing import AnnealingPath, HMCTuning, move_in_turn, tune_hmc
from ...parallel import as_seed_sequence, run_parallel
from ..base import EvidenceResult
from ..common import log_mean_exp
from .ais import DEFAULT_INFLATE, log_mean_exp_with_se
from .bracket import bracket, reverse_runs
from .particles import next_beta, systematic_resample

# More tempering steps than this means the path is (numerically) too long for the particles.
MAX_STEPS = 10_000


@dataclass
class _RunTask:
    path: AnnealingPath
    betas: np.ndarray | None  # None: adapt (the pilot)
    tuning: HMCTuning
    n_particles: int
    hmc_steps: int
    n_moves: int
    ess_fraction: float
    rounds: np.ndarray | None = None  # rounds of n_moves per step; None: adapt (the pilot)
    max_rounds: int = 1


@dataclass
class _RunOut:
    log_z: float  # log of the run's estimate of Z/Z_q
    betas: np.ndarray
    n_evals: int
    n_accepted: int
    n_moves: int
    rounds: np.ndarray | None = None
    lag_corr: float = 0.0  # the pilot's largest correlation left after its last round


#: The pilot moves the particles in rounds of ``n_moves`` until the correlation of their log
#: ratio log p~ - log q before and after the moves is below this (particles that lag behind
#: f_beta make a run's estimate typically low: unbiased only through rare high runs).
DECORRELATED = 0.1

#: The pilot's least number of particles: the sd of a correlation of N pairs is about
#: 1/sqrt(N), 0.09 for 128, so fewer could stop the rounds below DECORRELATED by chance.
PILOT_PARTICLES = 128
#: The largest number of parameters at which the forward se's coverage has been measured
#: (docs/features/smc-standard-error.md: 102 with the current defaults, 252 with the earlier
#: ones); above it a warning says so.
MEASURED_DIM = 252


def _smc_run(task: _RunTask, rng: np.random.Generator) -> _RunOut:
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return _run(task, rng)


def _run(task: _RunTask, rng: np.random.Generator) -> _RunOut:
    path = task.path
    pts = path.evaluate_many(path.sample_base(rng, task.n_particles))
    n_evals, n_acc, n_moves = task.n_particles, 0, 0
    beta, log_z, betas = 0.0, 0.0, [0.0]
    rounds: list[int] = []
    worst = 0.0
    while beta < 1.0:
        r = pts.log_ratio
        if task.betas is None:
            new = next_beta(r, beta, task.ess_fraction)
            if len(betas) > MAX_STEPS:
                raise EstimationError(f"SMC needed more than {MAX_STEPS} tempering steps: the "
                                      "base is too far from the posterior")
        else:
            new = float(task.betas[len(betas)])
        lw = (new - beta) * np.where(np.isfinite(r), r, -np.inf)
        if not np.any(np.isfinite(lw)):
            return _RunOut(-math.inf, np.array(betas + [new]), n_evals, n_acc, n_moves,
                           np.array(rounds, dtype=int), worst)
        log_z += log_mean_exp(lw)
        beta = new
        betas.append(beta)
        if beta >= 1.0:
            break
        pts = pts.rows(systematic_resample(lw, rng))
        eps, inv_metric = task.tuning.at(beta)
        start = pts.log_ratio
        fixed = None if task.rounds is None else int(task.rounds[len(betas) - 2])
        done = 0
        while True:
            pts, info = move_in_turn(path, beta, pts, rng, eps, inv_metric, task.hmc_steps,
                                     task.n_moves)
            n_evals += int(info.n_evals.sum())
            n_moves += task.n_particles * task.n_moves
            n_acc += int(info.accepted.sum())
            done += 1
            if fixed is not None:
                if done >= fixed:
                    break
                continue
            corr = _correlation(start, pts.log_ratio)
            if corr < DECORRELATED or done >= task.max_rounds:
                worst = max(worst, corr)
                break
        rounds.append(done)
    return _RunOut(float(log_z), np.array(betas), n_evals, n_acc, n_moves,
                   np.array(rounds, dtype=int), worst)


def _correlation(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson correlation of two vectors (0 when either is constant or not finite)."""
    ok = np.isfinite(a) & np.isfinite(b)
    if ok.sum() < 3 or np.std(a[ok]) == 0 or np.std(b[ok]) == 0:
        return 0.0
    return float(np.corrcoef(a[ok], b[ok])[0, 1])


def smc(
    target: Target,
    base: Target,
    *,
    n_particles: int = 64,
    n_runs: int = 16,
    pilot_particles: int | None = None,
    ess_fraction: float = 0.5,
    hmc_steps: int = 10,
    n_moves: int = 2,
    base_log_z: float = 0.0,
    base_draws: np.ndarray | None = None,
    tuning: HMCTuning | None = None,
    betas: np.ndarray | None = None,
    rounds: np.ndarray | None = None,
    max_rounds: int = 8,
    seed: int | np.random.SeedSequence | None = None,
    n_workers: int | None = None,
    backend: str = "auto",
) -> dict[str, Any]:
    """Adaptive-tempering SMC from ``base`` (normalized up to ``base_log_z``) to ``target``.

    A pilot run picks the schedule and, per step, how many rounds of ``n_moves`` HMC moves
    (at most ``max_rounds``) decorrelate the particles' log ratio (below
    :data:`DECORRELATED`), with ``pilot_particles`` particles (default
    ``max(n_particles, PILOT_PARTICLES)``: the correlation of fewer particles is too noisy to
    judge); or give ``betas`` (and ``rounds``, default one per step).
    ``n_runs`` independent runs with that schedule give unbiased estimates of Z. Returns log Z,
    its se, the per-run log Z, the schedule, the rounds, the pilot's largest correlation left
    (``lag_corr``) and cost counters.
    """
    if n_particles < 2 or n_runs < 2:
        raise InputError("SMC needs n_particles >= 2 and n_runs >= 2 (the se comes from runs)")
    if not 0 < ess_fraction < 1:
        raise InputError(f"ess_fraction must lie strictly between 0 and 1, got {ess_fraction}")
    if hmc_steps < 1 or n_moves < 1:
        raise InputError("hmc_steps and n_moves must be >= 1")
    ss = as_seed_sequence(seed)
    path = AnnealingPath(base, target, base_log_z=base_log_z, base_draws=base_draws)
    tune_evals = 0
    if tuning is None:
        tuning, tune_evals = tune_hmc(path, stream_rng(ss, Stream.HMC_TUNING),
                                      n_leapfrog=hmc_steps)
    pilot_evals, lag = 0, math.nan
    if betas is None:
        n_pilot = max(n_particles, PILOT_PARTICLES) if pilot_particles is None else int(
            pilot_particles)
        pilot = _smc_run(_RunTask(path, None, tuning, max(n_pilot, 2), hmc_steps, n_moves,
                                  ess_fraction, None, max(1, int(max_rounds))),
                         stream_rng(ss, Stream.ANNEAL_PILOT))
        betas, pilot_evals, lag = pilot.betas, pilot.n_evals, pilot.lag_corr
        rounds = pilot.rounds
    else:
        betas = np.asarray(betas, dtype=float)
        if betas[0] != 0.0 or betas[-1] != 1.0 or np.any(np.diff(betas) <= 0):
            raise InputError("an explicit schedule must increase strictly from exactly 0 to 1")
    steps = max(0, betas.size - 2)  # moves follow every step but the last
    rounds = (np.ones(steps, dtype=int) if rounds is None or len(rounds) < steps
              else np.asarray(rounds, dtype=int))
    task = _RunTask(path, betas, tuning, n_particles, hmc_steps, n_moves, ess_fraction, rounds)
    outs = run_parallel(_smc_run, [task] * n_runs, stream(ss, Stream.WORKERS), n_workers=n_workers,
                        backend=backend)
    run_log_z = np.array([o.log_z for o in outs])
    lme, se, ess = log_mean_exp_with_se(run_log_z)
    n_mv = sum(o.n_moves for o in outs)
    return {
        "log_z": base_log_z + lme, "log_z_se": se, "run_log_z": run_log_z + base_log_z,
        "run_ess": ess, "betas": betas, "tuning": tuning, "rounds": rounds, "lag_corr": lag,
        "acceptance": sum(o.n_accepted for o in outs) / n_mv if n_mv else math.nan,
        "n_evals": int(sum(o.n_evals for o in outs) + tune_evals + pilot_evals),
    }


#: The runs' sd of log Ẑ above which more particles are used (var log Ẑ falls like 1/particles),
#: the sd aimed at when growing, and the sd above which no se is given.
GROW_SD, AIM_SD, REFUSE_SD = 1.0, 0.5, 1.5


def lognormal_log_z(run_log_z: np.ndarray) -> tuple[float, float]:
    """log Z and its se from independent runs' log Ẑ under SMC's lognormal CLT.

    For many particles log Ẑ is normal with variance σ² (Bérard, Del Moral & Doucet 2014),
    and E Ẑ = Z makes its mean log Z − σ²/2; so log Z = mean + s²/2, with the variance of the
    mean (s²/k) plus that of s²/2 (s⁴/(2(k−1)) for normal runs).
    """
    r = np.asarray(run_log_z, dtype=float)
    k = r.size
    s2 = float(np.var(r, ddof=1))
    return float(np.mean(r) + 0.5 * s2), math.sqrt(s2 / k + s2 * s2 / (2 * (k - 1)))


def t_calibrated(se: float, k: int) -> float:
    """``se`` of a mean of ``k`` runs widened by t_{k−1}(0.975) / z(0.975), so that ±1.96 of it
    is the Student-t 95% interval: with k runs the se itself is uncertain, and ±2 raw se cover
    only 0.914 of t_7 errors (8 runs) — an se is read as ±2 se for 95% (docs/error-bars.md)."""
    return se * float(stats.t.ppf(0.975, k - 1) / stats.norm.ppf(0.975))


def forward_log_z(run_log_z: np.ndarray) -> tuple[float, float, list[str]]:
    """log Z, its se and warnings from the forward runs' log Ẑ (the value ``smc`` reports).

    :func:`lognormal_log_z`, its se :func:`t_calibrated` for the k runs (±1.96 se is the
    t_{k−1} 95% interval); no se (NaN) when the runs spread by more than ``REFUSE_SD``
    nats (Ẑ is then carried by rare runs), and at least the runs' sd when the mean of their
    Ẑ rests on one or two of them (weight ESS below half the runs); an infinite se when a
    run ended with zero weight.
    """
    runs = np.asarray(run_log_z, dtype=float)
    k = runs.size
    lme, _, ess = log_mean_exp_with_se(runs)
    if not np.all(np.isfinite(runs)):
        return lme, math.inf, ["SMC: a forward run ended with zero weight; no finite se"]
    log_z, se = lognormal_log_z(runs)
    run_sd = float(np.std(runs, ddof=1))
    if not run_sd <= REFUSE_SD:
        return log_z, math.nan, [
            f"SMC: the runs' log Z still spread by {run_sd:.2f} nats: Z is then carried by "
            "rare runs and the mean of a few runs falls short of it by an unknown amount, so "
            "no standard error is given; use more particles (max_particles, n_particles) or "
            "gbs"]
    se = t_calibrated(se, k)
    if ess < 0.5 * k:
        # The mean of Z is carried by one or two runs, so it is known no better than a single
        # run: the se is at least the runs' spread in log Z.
        return log_z, max(se, run_sd), [
            f"SMC: the runs' estimates of Z are dominated by a few (ESS {ess:.1f} of {k}), so "
            f"the se is widened to the spread of single runs ({run_sd:.2f} nats): use more "
            "particles (n_particles) or runs, or gbs"]
    return log_z, se, []


def _bounds(forward: np.ndarray, reverse: np.ndarray) -> tuple[dict[str, Any], list[str]]:
    """Diagnostics and warnings of the forward/reverse bracket (:func:`bracket`)."""
    if not (np.all(np.isfinite(reverse)) and np.all(np.isfinite(forward))):
        return {"reverse_run_log_z": reverse.tolist()}, [
            "SMC: a run (forward, or back from the posterior draws) ended with zero weight, "
            "so no bounds are given"]
    b = bracket(forward, reverse)
    info = {"reverse_run_log_z": reverse.tolist(), "lower_bound": b.lower,
            "lower_bound_se": b.lower_se, "upper_bound": b.upper, "upper_bound_se": b.upper_se,
            "bracket_gap": b.gap, "bounds_consistent": b.consistent,
            "bracket_interval": list(b.interval(0.95, forward.size - 1)),
            "bounds": "stochastic bounds: E lower_bound <= log Z always; E upper_bound >= log Z "
                      "if the posterior draws are exact (means of the forward / reverse runs' "
                      "log Z, each with its Monte Carlo se); bracket_interval: each bound moved "
                      "out by its t quantile times its se, covering log Z with probability "
                      ">= 0.95 if the draws are exact"}
    if b.consistent:
        return info, []
    return info, [f"SMC: runs back from the posterior draws end {-b.gap:.2f} nats below the "
                  "runs from the base, which cannot happen for exact posterior draws: the "
                  "upper bound does not hold; check the draws (R-hat, divergences)"]


def smc_estimate(
    target: Target, draws: np.ndarray, *, seed: int | None = None, **options: Any
) -> EvidenceResult:
    """Registry adapter "smc": adaptive-tempering SMC from a Gaussian fitted to ``draws``
    (covariance inflated by ``inflate``). Other options are those of :func:`smc`.

    log Z and its se come from the forward runs' log Ẑ by :func:`forward_log_z` (the se
    carries the runs' t quantile, so no degrees of freedom are reported). When the
    runs' log Ẑ spread by more than ``GROW_SD`` nats the runs are repeated with more particles
    (same schedule), up to ``max_particles`` (default 8 times ``n_particles``); a spread still
    above ``REFUSE_SD`` gives no se (NaN) and a warning: Ẑ is then carried by rare runs.

    With ``reverse`` (default True) as many runs go back from the second half of the draws
    to a base fitted to the first half, each from its own disjoint part of that half
    (:func:`~.bracket.split_pool`: independent runs, whose spread counts the draws' error);
    ``diagnostics`` then hold the bracket
    ``lower_bound`` <= log Z <= ``upper_bound`` (:class:`~.bracket.Bracket`; the upper
    bound only for exact posterior draws), each with its Monte Carlo se. The bracket is
    reported beside log Z, not mixed into it: its middle was high in nearly every replicate
    of ``benchmarks/coverage_smc.py`` (the reverse runs' bound is the looser one).
    """
    t0 = time.perf_counter()
    inflate = float(options.pop("inflate", DEFAULT_INFLATE))
    n = int(options.pop("n_particles", 64))
    cap = options.pop("max_particles", None)
    cap = 8 * n if cap is None else max(int(cap), n)
    check_reverse = bool(options.pop("reverse", True))
    x = as_draw_matrix(draws)
    base = gaussian_from_draws(x, inflate=inflate)
    out = smc(target, base, seed=stream(seed, Stream.TEMPERED_FWD, 0), n_particles=n, **options)
    tried = [n]
    evals = int(out["n_evals"])
    while float(np.std(out["run_log_z"], ddof=1)) > GROW_SD and n < cap:
        sd = float(np.std(out["run_log_z"], ddof=1))
        n = min(cap, max(2 * n, math.ceil(n * (sd / AIM_SD) ** 2))) if np.isfinite(sd) else cap
        tried.append(n)
        out = smc(target, base, seed=stream(seed, Stream.TEMPERED_FWD, len(tried) - 1),
                  n_particles=n,
                  betas=out["betas"], tuning=out.get("tuning"), rounds=out.get("rounds"),
                  **options)
        evals += int(out["n_evals"])
    if not np.isfinite(out["log_z"]):
        raise EstimationError("SMC: every run ended with zero weight")
    runs = np.asarray(out["run_log_z"], dtype=float)
    k = runs.size
    run_sd = float(np.std(runs, ddof=1))
    log_z, se, warnings = forward_log_z(runs)
    if len(tried) > 1:
        warnings.insert(0, f"SMC: the runs' log Z spread by more than {GROW_SD:g} nat with "
                        f"{tried[0]} particles, so they were rerun with {n}")
    bounds: dict[str, Any] = {}
    # Runs back from the posterior must start at draws the base did not see (a base fitted to
    # its own starting points makes them look likelier under it than fresh draws, which biases
    # the reverse runs low): the reverse path's base is fitted to the first half of the draws
    # (the first chains) and its runs start at the second half.
    half = x.shape[0] // 2
    # Each reverse run starts from its own part of the second half (independent runs).
    need = max(x.shape[1] + 2, k)
    if check_reverse and half < need:
        check_reverse = False
        warnings.append(f"SMC: {x.shape[0]} draws are too few to run backwards (it needs "
                        f"2 x max(dim + 2, runs) = {2 * need}); no upper bound is given")
    if check_reverse:
        base_back = gaussian_from_draws(x[:half], inflate=inflate)
        rev = reverse_runs(AnnealingPath(base_back, target), out["betas"], out["tuning"],
                           out["rounds"], x[half:], n_particles=n, n_runs=k,
                           hmc_steps=int(options.get("hmc_steps", 10)),
                           n_moves=int(options.get("n_moves", 2)),
                           seed=stream(seed, Stream.TEMPERED_REV),
                           n_workers=options.get("n_workers"),
                           backend=options.get("backend", "auto"))
        evals += int(out["n_evals"])  # the reverse runs cost what the forward runs did
        bounds, more = _bounds(runs, rev)
        warnings.extend(more)
    lag = out.get("lag_corr", math.nan)
    if lag >= DECORRELATED:
        warnings.append(f"SMC: the particles' log ratio kept a correlation of {lag:.2f} across "
                        "a tempering step's moves (the most rounds allowed): particles that lag "
                        "behind the path make every run low, beyond the se; raise max_rounds or "
                        "n_moves, or use gbs")
    if out["acceptance"] < 0.3:
        warnings.append(f"SMC: HMC acceptance {out['acceptance']:.2f} is low; increase "
                        "hmc_steps or n_moves")
    if se > 0.5:
        warnings.append(f"large standard error ({se:.2f} nats): use more particles")
    if x.shape[1] > MEASURED_DIM:
        warnings.append(f"SMC: the coverage of its se is measured up to {MEASURED_DIM} "
                        f"parameters, not at {x.shape[1]} (particles that lag the path make "
                        "every run low, beyond the se): check log Z against the bracket "
                        "interval, or use gbs, whose se is measured up to 10,002")
    diagnostics = {
        "n_runs": k, "n_particles": n, "particles_tried": tried,
        "move_rounds": np.asarray(out.get("rounds", [])).tolist(),
        "lag_corr": out.get("lag_corr", math.nan),
        "n_temps": int(out["betas"].size), "betas": out["betas"].tolist(),
        "run_log_z": runs.tolist(), "run_log_z_sd": run_sd, "run_ess": out["run_ess"],
        "log_mean_exp": float(out["log_z"]), "delta_method_se": out["log_z_se"],
        "acceptance": out["acceptance"], "base": f"Gaussian from draws, covariance x{inflate:g}",
        "se": "independent forward runs, each unbiased for Z (schedule from a pilot): log Z = "
              "mean log Z + sd^2/2 under the lognormal CLT, se^2 = sd^2/k + sd^4/(2(k-1)), "
              "times t_{k-1}(0.975)/1.96 so that +-1.96 se is the t 95% interval",
        "se_untransformed": lognormal_log_z(runs)[1] if np.all(np.isfinite(runs)) else math.inf,
        **bounds,
    }
    return EvidenceResult(method="smc", log_z=float(log_z), log_z_se=se,
                          n_draws=x.shape[0], n_evals=evals,
                          seconds=time.perf_counter() - t0, diagnostics=diagnostics,
                          warnings=warnings)
