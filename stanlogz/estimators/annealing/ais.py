"""Annealed importance sampling (AIS) and reverse AIS along a geometric path.

AIS (Neal 2001) starts K independent chains at exact base draws and anneals them to the target
through T distributions f_β with HMC transitions; the log-mean-exp of the chains' weights is a
stochastic *lower* bound on log Z. Reverse AIS (Grosse, Ghahramani & Adams 2015) runs the same
chains backwards from exact posterior samples; the harmonic combination of its weights is a
stochastic *upper* bound on log Z. Chains run in parallel with per-chain seeds
(:mod:`stanlogz.parallel`), so results do not depend on the number of workers.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..._util import deadline
from ..._util.seeds import Stream, stream, stream_rng
from ...densities.fits import as_draw_matrix, gaussian_from_draws
from ...densities.target import Target
from ...errors import EstimationError, InputError
from ...mcmc.annealing import (
    AnnealingPath,
    HMCTuning,
    annealed_transition,
    annealed_transitions,
    tune_hmc,
)
from ...mcmc.hmc import draw_randomness
from ...mcmc.schedules import adaptive_schedule, make_schedule
from ...parallel import as_seed_sequence, run_parallel, task_generators
from ..base import EvidenceResult
from ..common import autocorr_time, log_mean_exp
from ..options import AnnealOptions

# Weight ESS below this share of the chains: the log-mean-exp rests on a few chains (in the
# benchmark, a lower bound with ESS 3 of 16 overshot log Z by 0.7 nat at a spread of 0.5).
LOW_ESS_FRACTION = 0.25


@dataclass
class AISResult:
    """Outcome of (reverse) AIS: the bound, its spread and per-chain weights.

    ``log_z`` is a stochastic lower bound (``bound="lower"``, forward AIS) or upper bound
    (``bound="upper"``, reverse AIS from exact posterior samples). ``log_z_se`` is the spread of
    the bound (delta method on the weights), the error of the bound, not of log Z.
    ``log_weights`` are per chain: log of an unbiased estimate of Z/Z_base (forward) or of
    Z_base/Z (reverse).

    ``spread`` says what ``log_z_se`` covers. Forward chains start at independent base draws.
    Reverse chains that share an exact sample start at successive states of one β=1 chain from
    it, so their weights form a stationary series in start order; ``log_z_se`` is then the
    series' standard error (``start_tau``: its integrated autocorrelation time, at least 1), which
    includes the start's share of the variance as far as that chain moves away from the sample,
    and ``spread_given_starts`` the iid formula. With ``spread_starts=0`` the chains share the
    sample itself and the spread is conditional on it.
    """

    log_z: float
    log_z_se: float
    log_weights: np.ndarray
    direction: str
    bound: str
    n_temps: int
    schedule: str
    ess: float
    acceptance: float
    n_divergent: int
    n_evals: int
    seconds: float
    final_positions: np.ndarray
    tuning: HMCTuning
    warnings: list[str] = field(default_factory=list)
    spread: str = "independent chains"
    start_tau: float = 1.0
    spread_given_starts: float | None = None
    start_spacing: int = 0

    @property
    def n_chains(self) -> int:
        return int(self.log_weights.size)

    @property
    def df(self) -> float:
        """Degrees of freedom of ``log_z_se``: effective chains (chains / start_tau) minus 1."""
        return max(1.0, self.n_chains / max(self.start_tau, 1.0) - 1.0)

    def diagnostics(self) -> dict[str, Any]:
        """JSON-friendly diagnostics."""
        return {
            "bound": f"stochastic {self.bound} bound",
            "direction": self.direction,
            "n_chains": self.n_chains,
            "n_temps": self.n_temps,
            "schedule": self.schedule,
            "ess": self.ess,
            "log_weight_sd": float(np.std(self.log_weights, ddof=1)) if self.n_chains > 1 else 0.0,
            "log_weights": self.log_weights.tolist(),
            "acceptance": self.acceptance,
            "n_divergent": self.n_divergent,
            "tuning": self.tuning.to_dict(),
            "spread": self.spread,
            "start_tau": self.start_tau,
            "spread_given_starts": self.spread_given_starts,
            "start_spacing": self.start_spacing,
            "df": self.df,
        }

    def to_evidence(self, method: str, n_draws: int = 0) -> EvidenceResult:
        """As an :class:`EvidenceResult` (``log_z_se`` = spread of the bound)."""
        return EvidenceResult(
            method=method, log_z=self.log_z, log_z_se=self.log_z_se, n_draws=n_draws,
            n_evals=self.n_evals, seconds=self.seconds, diagnostics=self.diagnostics(),
            warnings=list(self.warnings), log_z_df=self.df,
        )


def log_mean_exp_with_se(log_w: np.ndarray) -> tuple[float, float, float]:
    """log-mean-exp of ``log_w``, its delta-method standard error and the weights' ESS."""
    log_w = np.asarray(log_w, dtype=float)
    k = log_w.size
    if k == 0 or not np.any(np.isfinite(log_w)):
        return -np.inf, np.inf, 0.0
    lme = log_mean_exp(log_w)
    w = np.exp(log_w - np.max(log_w))
    ess = float(w.sum() ** 2 / np.sum(w**2))
    # Var(log mean w) ≈ Var(w) / (K mean(w)^2).
    se = float(np.std(w, ddof=1) / (np.sqrt(k) * np.mean(w))) if k > 1 else np.inf
    return lme, se, ess


def start_order_tau(log_w: np.ndarray, groups: list[np.ndarray]) -> float:
    """Integrated autocorrelation time of the normalized weights w/mean(w) along the start order
    (``groups``: chain indices per shared exact sample, in the order their starts were taken):
    :func:`~stanlogz.estimators.common.autocorr_time` of each group's series, averaged with the
    groups' sizes as weights; at least 1, at most the chains."""
    log_w = np.asarray(log_w, dtype=float)
    if not np.all(np.isfinite(log_w)) or log_w.size < 3:
        return 1.0
    u = np.exp(log_w - np.max(log_w))
    u = u / u.mean()
    sizes = np.array([len(g) for g in groups], dtype=float)
    taus = np.array([autocorr_time(u[np.asarray(g, dtype=int)]) for g in groups])
    tau = float(np.sum(sizes * taus) / np.sum(sizes))
    return float(min(max(tau, 1.0), log_w.size))


# Below this many target gradient evaluations in all chains, parallel workers cost more than
# they save (process start-up is ~0.1 s), so the chains run serially.
_PARALLEL_MIN_EVALS = 50_000

#: Chains moved together, one batched density call per leapfrog step for all of them: a flow's
#: gradient at 8 rows costs 1.6 times one row's (88-D, 8 layers: 0.69 against 0.43 ms). Fixed,
#: not set by the workers, so that results do not depend on them (a batched matrix product may
#: round a row differently by the batch's size).
CHAIN_BLOCK = 8


@dataclass
class _BlockTask:
    """Chains annealed in lockstep: their starts (None: a base draw) and generators."""

    path: AnnealingPath
    betas: np.ndarray
    tuning: HMCTuning
    n_leapfrog: int
    n_transitions: int
    jitter: float
    starts: list[np.ndarray | None]
    rngs: list[np.random.Generator]
    #: the run's time budget (:func:`stanlogz._util.deadline.ambient`), checked at every
    #: temperature wherever the chains run
    budget: dict[str, float] | None = None


@dataclass
class _ChainOut:
    log_w: float
    position: np.ndarray
    n_accepted: int
    n_moves: int
    n_divergent: int
    n_evals: int


def _run_block(task: _BlockTask, _rng: np.random.Generator) -> list[_ChainOut]:
    """Annealing chains along ``task.betas`` (increasing: forward; decreasing: reverse), each
    on its own generator, so a chain's moves do not depend on the block it runs in."""
    # Divergent leapfrog trajectories overflow; the kernel rejects them, so no warnings.
    with np.errstate(over="ignore", invalid="ignore"), deadline.carried(task.budget):
        return _chains(task)


def _chains(task: _BlockTask) -> list[_ChainOut]:
    path, betas, rngs = task.path, task.betas, task.rngs
    k = len(rngs)
    x0 = np.array([path.sample_base(rng, 1)[0] if x is None else x
                   for x, rng in zip(task.starts, rngs, strict=True)])
    pts = path.evaluate_many(x0)
    n_evals, n_acc = np.ones(k, dtype=int), np.zeros(k, dtype=int)
    n_moves, n_div = np.zeros(k, dtype=int), np.zeros(k, dtype=int)
    log_w = np.zeros(k)
    live = np.ones(k, dtype=bool)  # a chain whose weight is not finite stops
    for t in range(1, betas.size):
        d_beta = betas[t] - betas[t - 1]
        r = pts.log_ratio
        log_w[live] += np.where(np.isfinite(r), d_beta * r, -np.inf if d_beta > 0 else np.inf
                                )[live]
        live &= np.isfinite(log_w)
        if t == betas.size - 1 or not live.any():
            break
        if task.budget is not None:
            deadline.check_spent("an annealing chain")
        eps, inv_metric = task.tuning.at(betas[t])
        for _ in range(task.n_transitions):
            rows = np.flatnonzero(live)
            moves = [draw_randomness(rngs[i], path.dim, eps, task.jitter) for i in rows]
            new, info = annealed_transitions(
                path, betas[t], pts.rows(rows), np.array([m[1] for m in moves]),
                np.array([m[2] for m in moves]), np.array([m[0] for m in moves]), inv_metric,
                task.n_leapfrog)
            pts.set_rows(rows, new)
            n_evals[rows] += info.n_evals
            n_moves[rows] += 1
            n_acc[rows] += info.accepted
            n_div[rows] += info.divergent
    return [_ChainOut(float(log_w[i]), pts.position[i], int(n_acc[i]), int(n_moves[i]),
                      int(n_div[i]), int(n_evals[i])) for i in range(k)]


def _options(options: AnnealOptions | None, keywords: dict[str, Any]) -> AnnealOptions:
    """``options`` (default :class:`AnnealOptions`) with ``keywords`` replacing single options:
    one-line errors for bad options, before any pilot work is spent."""
    if options is None:
        return AnnealOptions.parse(keywords)
    if not isinstance(options, AnnealOptions):
        raise InputError(f"annealing options must be AnnealOptions, got {type(options).__name__}")
    return options.updated(keywords)


def _prepare(path: AnnealingPath, o: AnnealOptions, *, seed: np.random.SeedSequence,
             tuning: HMCTuning | None) -> tuple[np.ndarray, HMCTuning, int]:
    """Schedule and tuning (a pilot when ``tuning`` is None) and the pilot's evaluations."""
    tune_evals = 0
    if tuning is None:
        tuning, tune_evals = tune_hmc(path, stream_rng(seed, Stream.HMC_TUNING),
                                      n_leapfrog=o.hmc_steps)
    if isinstance(o.schedule, str) and o.schedule == "adaptive":
        if tuning.log_ratio_sd is None:  # e.g. tuning inherited from NUTS: no pilot spreads
            betas = make_schedule("sigmoid", o.n_temps)
        else:
            betas = adaptive_schedule(o.n_temps, tuning.betas, tuning.log_ratio_sd)
    else:
        betas = make_schedule(o.schedule, o.n_temps)
    return betas, tuning, tune_evals


def _anneal(path: AnnealingPath, betas: np.ndarray, starts: list[np.ndarray | None],
            o: AnnealOptions, *, seed: int | np.random.SeedSequence | None,
            tuning: HMCTuning) -> list[_ChainOut]:
    budget = deadline.ambient()
    rngs = task_generators(stream(seed, Stream.WORKERS), len(starts))
    blocks = [_BlockTask(path, betas, tuning, o.hmc_steps, o.transitions_per_temp, o.jitter,
                         starts[i:i + CHAIN_BLOCK], rngs[i:i + CHAIN_BLOCK], budget)
              for i in range(0, len(starts), CHAIN_BLOCK)]
    work = len(starts) * betas.size * o.hmc_steps * o.transitions_per_temp
    n_workers = o.n_workers
    if n_workers is None and work < _PARALLEL_MIN_EVALS:
        n_workers = 1
    outs = run_parallel(_run_block, blocks, stream(seed, Stream.WORKERS), n_workers=n_workers,
                        backend=o.backend)
    return [c for block in outs for c in block]


def _result(
    outs: list[_ChainOut], *, reverse: bool, path: AnnealingPath, betas: np.ndarray,
    schedule: str | np.ndarray, tuning: HMCTuning, tune_evals: int, seconds: float,
    start_groups: list[np.ndarray] | None = None, spacing: int = 0,
) -> AISResult:
    log_w = np.array([o.log_w for o in outs])
    lme, se, ess = log_mean_exp_with_se(log_w)
    spread, tau, se_given = "independent chains", 1.0, None
    shared = start_groups is not None and max(len(g) for g in start_groups) > 1
    if shared and spacing < 1:
        spread, se_given = "conditional on the shared exact sample(s)", se
    elif shared:
        assert start_groups is not None
        tau = start_order_tau(log_w, start_groups)
        spread, se_given = "chains along a beta=1 chain from each exact sample (series se)", se
        se = se * math.sqrt(tau)
    if reverse:
        log_z = path.base_log_z - lme
        bound, direction = "upper", "reverse"
    else:
        log_z = path.base_log_z + lme
        bound, direction = "lower", "forward"
    n_moves = sum(o.n_moves for o in outs)
    acceptance = sum(o.n_accepted for o in outs) / n_moves if n_moves else float("nan")
    warnings = []
    if not np.isfinite(log_z):
        raise EstimationError(f"{direction} AIS: every chain has weight zero or infinite")
    if ess < LOW_ESS_FRACTION * log_w.size:
        warnings.append(f"{direction} AIS: weight ESS {ess:.1f} of {log_w.size} chains; "
                        "the bound and its spread are carried by a few chains and may be off "
                        "by more than the spread: increase the chains or temperatures")
    if n_moves and acceptance < 0.3:
        warnings.append(f"{direction} AIS: HMC acceptance {acceptance:.2f} is low; "
                        "increase hmc_steps or give a better base")
    if tau > 2.0:
        warnings.append(f"{direction} AIS: chains started along one chain from the same exact "
                        f"sample have correlated weights (autocorrelation time {tau:.1f}); the "
                        "spread is widened for it: give more exact samples or a larger "
                        "spread_starts")
    return AISResult(
        log_z=float(log_z), log_z_se=se, log_weights=log_w, direction=direction, bound=bound,
        n_temps=int(betas.size), schedule=schedule if isinstance(schedule, str) else "explicit",
        ess=ess, acceptance=float(acceptance),
        n_divergent=sum(o.n_divergent for o in outs),
        n_evals=int(sum(o.n_evals for o in outs) + tune_evals), seconds=seconds,
        final_positions=np.array([o.position for o in outs]), tuning=tuning, warnings=warnings,
        spread=spread, start_tau=tau, spread_given_starts=se_given,
        start_spacing=spacing if shared else 0,
    )


def ais(
    target: Target,
    base: Target,
    options: AnnealOptions | None = None,
    *,
    seed: int | np.random.SeedSequence | None = None,
    tuning: HMCTuning | None = None,
    base_draws: np.ndarray | None = None,
    base_log_z: float = 0.0,
    **keywords: Any,
) -> AISResult:
    """Forward AIS from ``base`` to ``target``: a stochastic lower bound on log Z.

    ``options`` (a frozen, validated :class:`~stanlogz.estimators.options.AnnealOptions`)
    holds the chains, temperatures, schedule, kernel and parallel settings; keyword
    ``keywords`` of the same names (``n_chains``, ``n_temps``, ``schedule``, ``n_workers``,
    ``hmc_steps``, ``transitions_per_temp``, ``jitter``, ``backend``) replace single options (an
    unknown name is an InputError naming it). ``base`` is normalized up to ``base_log_z`` and
    sampleable (``sample``) or accompanied by exact ``base_draws`` (prior→posterior path: base =
    prior target, draws = prior draws). ``tuning`` (step size and metric per β) defaults to a
    short pilot; ``hmc_steps`` is the number of leapfrog steps per HMC transition, whose step
    size is jittered by ±``jitter``. ``schedule`` is a name of
    :data:`~stanlogz.mcmc.schedules.SCHEDULES` or explicit β; ``"adaptive"`` spaces β by the
    pilot's spreads of the log ratio (sigmoid when ``tuning`` has none).

    Parameters
    ----------
    target : Target
        The unnormalized density whose log Z is bounded.
    base : Target
        The normalized start of the path (log Z = ``base_log_z``), sampleable or with
        ``base_draws``.
    options : AnnealOptions, optional
        All annealing settings at once.
    seed : int or SeedSequence, optional
        Random seed (pilot and chains).
    tuning : HMCTuning, optional
        HMC step size and metric per β (default: a short pilot).
    base_draws : ndarray, optional
        Exact draws of ``base``, one row per draw (when it has no ``sample``).
    base_log_z : float, default 0.0
        log Z of ``base``.
    **keywords
        Single options of ``options`` by name (``n_chains``, ``n_temps``, ``schedule``,
        ``n_workers``, ``hmc_steps``, ``transitions_per_temp``, ``jitter``, ``backend``).

    Returns
    -------
    AISResult
        ``log_z`` (``bound="lower"``) with its spread ``log_z_se``, the per-chain
        ``log_weights``, their ``ess``, the sampler's ``acceptance`` and ``n_divergent``, and
        the cost ``n_evals``.

    Raises
    ------
    InputError
        Options that are not an ``AnnealOptions``, an unknown option name or an invalid
        value.

    See Also
    --------
    stanlogz.reverse_ais : the matching upper bound from exact posterior samples.
    stanlogz.run_testbed : both bounds on data simulated from a Stan program.

    Examples
    --------
    From a wide Gaussian base to a Gaussian target whose log Z is −3:

    >>> import numpy as np, stanlogz
    >>> from stanlogz.densities.gaussian import GaussianTarget
    >>> base = GaussianTarget(np.zeros(2), 4.0 * np.eye(2))
    >>> post = GaussianTarget(np.array([1.0, -0.5]), 0.25 * np.eye(2), log_z=-3.0)
    >>> lo = stanlogz.ais(post, base, n_chains=16, n_temps=100, seed=1, n_workers=1)
    >>> lo.bound, lo.log_weights.shape
    ('lower', (16,))
    >>> bool(lo.log_z < -3.0 + 6 * lo.log_z_se)  # a stochastic lower bound (P > 1 - 1e-4)
    True
    """
    o = _options(options, keywords)
    t0 = time.perf_counter()
    path = AnnealingPath(base, target, base_log_z=base_log_z, base_draws=base_draws)
    ss = as_seed_sequence(seed)
    betas, tuning, tune_evals = _prepare(path, o, seed=ss, tuning=tuning)
    outs = _anneal(path, betas, _forward_starts(path, o.n_chains, ss), o, seed=ss, tuning=tuning)
    return _result(outs, reverse=False, path=path, betas=betas, schedule=o.schedule,
                   tuning=tuning, tune_evals=tune_evals, seconds=time.perf_counter() - t0)


def _forward_starts(path: AnnealingPath, n_chains: int, seed: np.random.SeedSequence
                    ) -> list[np.ndarray | None]:
    """Independent exact base draws to start the forward chains: from a pool of base draws,
    ``n_chains`` distinct ones (a start shared by two chains would make their weights dependent
    and the spread too small); a sampleable base is sampled by each chain itself (None)."""
    if path.base_draws is None:
        return [None] * n_chains
    rng = stream_rng(seed, Stream.ANNEAL_STARTS)
    return list(path.sample_base(rng, n_chains, independent=True))


def reverse_ais(
    target: Target,
    base: Target,
    posterior_samples: np.ndarray,
    options: AnnealOptions | None = None,
    *,
    seed: int | np.random.SeedSequence | None = None,
    tuning: HMCTuning | None = None,
    base_draws: np.ndarray | None = None,
    base_log_z: float = 0.0,
    spread_starts: int = 10,
    **keywords: Any,
) -> AISResult:
    """Reverse AIS from ``posterior_samples`` back to ``base``: a stochastic upper bound on log Z.

    The bound holds when the samples are exact posterior draws (e.g. the parameters that
    simulated the data). With more samples than chains, evenly spaced ones are used; with fewer
    (e.g. one), each sample starts several chains, from states HMC transitions apart on a chain
    at β=1 from it (0: all from the sample itself). The spacing is at least ``spread_starts``
    and at least twice the integrated autocorrelation time of log p̃ − log q on a pilot chain at
    β=1 started from a base draw (so it does not depend on the samples). Every such state is
    still an exact posterior sample, so the bound holds; the spread is the standard error of the
    chains' weights as a series in start order (see :class:`AISResult`).
    Other arguments as for :func:`ais`.

    Parameters
    ----------
    target, base : Target
        As for :func:`ais`.
    posterior_samples : ndarray
        Exact draws of the normalized ``target``, one row per draw (one is enough).
    options : AnnealOptions, optional
        All annealing settings at once.
    seed : int or SeedSequence, optional
        Random seed.
    tuning : HMCTuning, optional
        HMC step size and metric per β (default: a short pilot).
    base_draws : ndarray, optional
        Exact draws of ``base`` (when it has no ``sample``).
    base_log_z : float, default 0.0
        log Z of ``base``.
    spread_starts : int, default 10
        The least number of HMC transitions between the starts of chains that share a sample.
    **keywords
        Single options of ``options`` by name, as for :func:`ais`.

    Returns
    -------
    AISResult
        ``log_z`` (``bound="upper"``) with its spread ``log_z_se`` (``spread``,
        ``start_tau`` and ``spread_given_starts`` say what it covers) and the per-chain
        ``log_weights``.

    Raises
    ------
    InputError
        Samples whose column count is not the target's dimension, a sample with zero target
        density, or an invalid option.

    See Also
    --------
    stanlogz.ais : the matching lower bound.
    stanlogz.run_testbed : both bounds on data simulated from a Stan program.

    Examples
    --------
    The upper bound for the Gaussian target of :func:`ais`'s example (log Z = −3), from 16
    exact draws of it:

    >>> import numpy as np, stanlogz
    >>> from stanlogz.densities.gaussian import GaussianTarget
    >>> base = GaussianTarget(np.zeros(2), 4.0 * np.eye(2))
    >>> post = GaussianTarget(np.array([1.0, -0.5]), 0.25 * np.eye(2), log_z=-3.0)
    >>> exact = post.sample(np.random.default_rng(0), 16)
    >>> hi = stanlogz.reverse_ais(post, base, exact, n_chains=16, n_temps=100, seed=2,
    ...                           n_workers=1)
    >>> hi.bound, hi.log_weights.shape
    ('upper', (16,))
    >>> bool(hi.log_z > -3.0 - 6 * hi.log_z_se)  # a stochastic upper bound (P > 1 - 1e-4)
    True
    """
    o = _options(options, keywords)
    n_chains, hmc_steps = o.n_chains, o.hmc_steps
    t0 = time.perf_counter()
    path = AnnealingPath(base, target, base_log_z=base_log_z, base_draws=base_draws)
    samples = np.asarray(posterior_samples, dtype=float)
    samples = samples[None, :] if samples.ndim == 1 else as_draw_matrix(samples)
    if samples.shape[1] != path.dim:
        raise InputError(f"posterior samples must have {path.dim} columns, got {samples.shape[1]}")
    if samples.shape[0] >= n_chains:
        idx = np.linspace(0, samples.shape[0] - 1, n_chains).round().astype(int)
    else:
        idx = np.arange(n_chains) % samples.shape[0]
    for i in np.unique(idx):
        if not np.isfinite(target.log_density(samples[i])):
            raise InputError(f"posterior sample {i} has zero target density")
    ss = as_seed_sequence(seed)
    betas, tuning, tune_evals = _prepare(path, o, seed=ss, tuning=tuning)
    spacing, pilot_evals = spread_starts, 0
    if spread_starts > 0 and np.bincount(idx).max() > 1:
        spacing, pilot_evals = _start_spacing(path, tuning, hmc_steps, spread_starts,
                                              stream_rng(ss, Stream.ANNEAL_SPACING))
    starts, spread_evals = _spread_starts(path, samples, idx, tuning, hmc_steps, spacing,
                                          stream_rng(ss, Stream.ANNEAL_STARTS))
    spread_evals += pilot_evals
    outs = _anneal(path, betas[::-1].copy(), starts, o, seed=ss, tuning=tuning)
    groups = [np.flatnonzero(idx == i) for i in np.unique(idx)]
    return _result(outs, reverse=True, path=path, betas=betas, schedule=o.schedule, tuning=tuning,
                   tune_evals=tune_evals + spread_evals, seconds=time.perf_counter() - t0,
                   start_groups=groups, spacing=spacing)


# Transitions of the pilot chain at β=1 that sets the spacing of reverse starts: the first half
# is burn-in from a base draw, the second half measures the autocorrelation.
START_PILOT = 200


def _start_spacing(path: AnnealingPath, tuning: HMCTuning, hmc_steps: int, minimum: int,
                   rng: np.random.Generator) -> tuple[int, int]:
    """Transitions between the starts of reverse chains that share an exact sample: at least
    ``minimum`` and twice the autocorrelation time of log p̃ − log q at β=1, measured on a chain
    from a base draw (independent of the exact samples, so the starts stay exact)."""
    eps, inv_metric = tuning.at(1.0)
    pt = path.evaluate(path.sample_base(rng, 1)[0])
    n_evals, ratios = 1, []
    with np.errstate(over="ignore", invalid="ignore"):  # divergences are rejected
        for i in range(START_PILOT):
            pt, _, n = annealed_transition(path, 1.0, pt, rng, eps, inv_metric, hmc_steps)
            n_evals += n
            if i >= START_PILOT // 2:
                ratios.append(pt.log_ratio)
    tau = autocorr_time(np.asarray(ratios))
    return max(int(minimum), math.ceil(2.0 * tau)), n_evals


def _spread_starts(
    path: AnnealingPath, samples: np.ndarray, idx: np.ndarray, tuning: HMCTuning,
    hmc_steps: int, spacing: int, rng: np.random.Generator,
) -> tuple[list[np.ndarray | None], int]:
    """Starting points of the reverse chains: ``samples[idx]``, where a sample starts several
    chains, its later copies replaced by states ``spacing`` HMC transitions apart on a chain at
    β=1 from it. Returns the starts and the evaluations spent."""
    starts: list[np.ndarray | None] = [samples[i].copy() for i in idx]
    if spacing < 1:
        return starts, 0
    eps, inv_metric = tuning.at(1.0)
    n_evals = 0
    with np.errstate(over="ignore", invalid="ignore"):  # divergences are rejected
        for i in np.unique(idx):
            ks = np.flatnonzero(idx == i)
            pt = path.evaluate(samples[i])
            n_evals += 1
            for k in ks[1:]:
                for _ in range(spacing):
                    pt, _, n = annealed_transition(path, 1.0, pt, rng, eps, inv_metric,
                                                   hmc_steps)
                    n_evals += n
                starts[k] = pt.position.copy()
    return starts, n_evals


# Covariance inflation of the Gaussian base fitted to posterior draws: a base a bit wider than
# the posterior keeps the early AIS weights light-tailed.
DEFAULT_INFLATE = 1.5


def ais_estimate(
    target: Target, draws: np.ndarray, *, seed: int | None = None, **options: Any
) -> EvidenceResult:
    """Registry adapter "ais": forward AIS from a Gaussian fitted to ``draws`` (inflated).

    The result is a stochastic lower bound on log Z; ``log_z_se`` is its spread over chains.
    Options are those of :func:`ais`, plus ``inflate`` (covariance factor of the base).
    """
    inflate = float(options.pop("inflate", DEFAULT_INFLATE))
    x = as_draw_matrix(draws)
    base = gaussian_from_draws(x, inflate=inflate)
    res = ais(target, base, seed=seed, **options)
    out = res.to_evidence("ais", n_draws=x.shape[0])
    out.diagnostics["base"] = f"Gaussian from draws, covariance x{inflate:g}"
    out.warnings.insert(0, "ais gives a stochastic lower bound on log Z; its se is the spread "
                           "of the bound, not the distance to log Z")
    return out


def rais_estimate(
    target: Target, draws: np.ndarray, *, seed: int | None = None, **options: Any
) -> EvidenceResult:
    """Registry adapter "rais": reverse AIS from ``draws`` toward a Gaussian fitted to them.

    A stochastic upper bound on log Z only if ``draws`` are exact posterior samples; with MCMC
    draws it is an approximation (said so in the warnings).
    """
    inflate = float(options.pop("inflate", DEFAULT_INFLATE))
    x = as_draw_matrix(draws)
    base = gaussian_from_draws(x, inflate=inflate)
    res = reverse_ais(target, base, x, seed=seed, **options)
    out = res.to_evidence("rais", n_draws=x.shape[0])
    out.diagnostics["base"] = f"Gaussian from draws, covariance x{inflate:g}"
    out.warnings.insert(0, "rais is a stochastic upper bound on log Z only if the draws are exact "
                           "posterior samples; MCMC draws make it approximate")
    return out
