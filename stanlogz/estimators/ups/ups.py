"""Unbiased path sampling (UPS; Rischard, Jacob & Pillai 2018) for log normalizing-constant ratios.

One replicate draws ``lambda ~ q`` (piecewise uniform on a grid), runs lag-1 coupled chains on
``pi_lambda`` and returns ``H_{k:m}(dU/dlambda) / q(lambda)``, an unbiased estimate of
``log Z_1 - log Z_0``. The mean of independent replicates has an i.i.d. standard error and CI.

Tuning (paper §2.4.3): on a lambda grid, pilot meeting times give ``k_lambda`` (a quantile) and
``m_lambda`` (eq. 11: equal expected cost); optionally unbiased pilot moments re-centre the initial
distribution and rescale the proposal per lambda; pilot estimates of the second moment ``m2``
give ``q ∝ sqrt(m2)`` piecewise uniform (eq. 10). Off-grid lambdas use linearly interpolated
tuning tables.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from ..._util import deadline
from ..._util.gpd import KHAT_HEAVY
from ..._util.seeds import Stream, stream
from ...densities.fits import as_draw_matrix, gaussian_from_draws, laplace_base
from ...densities.target import Target
from ...errors import EstimationError, InputError
from ...mcmc.paths import GeometricPath, LambdaPath, base_to_target_path, two_posterior_path
from ...parallel import as_seed_sequence
from ..base import EvidenceResult
from ..common import pareto_k
from ..options import UpsOptions, UpsPathOptions
from .ups_chains import (
    ChainTask,
    _KernelConfig,
    _run_tasks,
    replicate_tasks,
    run_replicates,
    run_replicates_in_time,
)
from .ups_tuning import (
    InitSpec,
    UPSTuning,
    _init_tables,
    _psd_cov,
    cost_equalizing_km,
    make_grid,
    q_from_sqrt_m2,
)

# run_replicates: re-exported for stanlogz.crossval.refit.unbiased
__all__ = ["UPSResult", "UPSTuning", "log_ratio", "make_grid", "q_from_sqrt_m2",
           "replicate_tail_k", "replicate_tasks", "run_replicates", "run_replicates_in_time",
           "tail_warnings", "ups",
           "ups_estimate"]

# stages of the computation; each has its own named stream of the seed
_STAGE_PILOT, _STAGE_MOMENTS, _STAGE_REPILOT, _STAGE_M2, _STAGE_REPLICATES = (
    Stream.UPS_PILOT, Stream.UPS_MOMENTS, Stream.UPS_REPILOT, Stream.UPS_M2,
    Stream.UPS_REPLICATES)


@dataclass
class UPSResult:
    """UPS estimate of ``log Z_1 - log Z_0`` from independent unbiased replicates."""

    estimate: float
    se: float
    ci: tuple[float, float]
    ci_level: float
    replicates: np.ndarray
    lambdas: np.ndarray
    meeting_times: np.ndarray
    k: np.ndarray
    m: np.ndarray
    tuning: UPSTuning
    n_evals: int  # path evaluations by the replicates (one = each end point evaluated once)
    n_evals_tuning: int
    seconds: float
    kernel: str
    warnings: list[str] = field(default_factory=list)
    kernel_config: Any = None  # the coupled kernel's settings (for :func:`replicate_tasks`)
    tail_k: float = float("nan")  # Pareto k-hat of the replicates' deviations (heavy tails)
    #: what the run's time budget ended ({"replicates": {"done", "asked"}}), None if nothing
    budget_stop: dict[str, Any] | None = None

    def meeting_summary(self) -> dict[str, float]:
        """Quantiles and mean of the replicates' meeting times."""
        t = self.meeting_times
        return {
            "mean": float(t.mean()),
            "median": float(np.median(t)),
            "q99": float(np.quantile(t, 0.99)),
            "max": float(t.max()),
            "frac_over_k": float(np.mean(t > self.k)),
        }

    def summary(self) -> dict[str, Any]:
        """A JSON-friendly summary (no per-replicate arrays)."""
        return {
            "estimate": self.estimate,
            "se": self.se,
            "ci": list(self.ci),
            "ci_level": self.ci_level,
            "n_replicates": int(self.replicates.size),
            "tail_k": self.tail_k,
            "kernel": self.kernel,
            "meeting_times": self.meeting_summary(),
            "grid": self.tuning.grid.tolist(),
            "k_grid": self.tuning.k.tolist(),
            "m_grid": self.tuning.m.tolist(),
            "n_evals": self.n_evals,
            "n_evals_tuning": self.n_evals_tuning,
            "seconds": self.seconds,
        }


def _path_options(options: UpsPathOptions | None, keywords: dict[str, Any]) -> UpsPathOptions:
    """``options`` (default :class:`UpsPathOptions`) with ``keywords`` replacing single options."""
    if options is None:
        return UpsPathOptions.parse(keywords)
    if not isinstance(options, UpsPathOptions):
        raise InputError(f"ups options must be UpsPathOptions, got {type(options).__name__}")
    if isinstance(options, UpsOptions) and (options.base, options.inflate) != ("gaussian", 1.0):
        raise InputError("options base and inflate choose the path of ups_estimate "
                         "(evidence method 'ups'); ups() is given its path")
    return options.updated(keywords)


def _stage_seed(ss: np.random.SeedSequence, stage: Stream) -> np.random.SeedSequence:
    return stream(ss, stage)


# ---------------------------------------------------------------------------------------------
# public API


def ups(
    path: LambdaPath,
    options: UpsPathOptions | None = None,
    *,
    seed: int | np.random.SeedSequence | None = None,
    init: InitSpec = None,
    **keywords: Any,
) -> UPSResult:
    """Unbiased path-sampling estimate of ``log Z_1 - log Z_0`` along ``path``.

    ``options`` (a frozen, validated :class:`~stanlogz.estimators.options.UpsPathOptions`; an
    :class:`~stanlogz.estimators.options.UpsOptions` with the default base works too) holds
    every setting below; keyword ``keywords`` of the same names replace single options (an
    unknown name is an InputError naming it). ``init``: the chains' initial distribution
    N(mean, cov) (an object with ``.mean``/``.cov`` or ``lam -> (mean, cov)``; default the path's
    normalized start ``p0``). ``proposal_cov``: RWMH proposal covariance (array or
    ``lam -> array``; default ``proposal_scale² cov / dim``). ``k``/``m`` fix H_{k:m}'s integers
    for all lambda and skip the meeting-time pilot; otherwise ``n_pilot`` meeting times per grid
    point give them (few pilots give noisy k and moments, hence heavy-tailed replicates).
    ``adapt`` re-fits the initial distribution and proposal to pilot moments of each pi_lambda.
    ``q``: ``"tuned"`` (∝ sqrt(m2), eq. 10) or ``"uniform"``. ``ci``: ``"t"`` or ``"normal"``
    interval.

    Parameters
    ----------
    path : LambdaPath
        The path π_λ from λ = 0 to 1 (e.g. a :class:`~stanlogz.mcmc.paths.GeometricPath`
        between two targets, or a :class:`~stanlogz.mcmc.paths.FunctionPath`).
    options : UpsPathOptions, optional
        All settings at once (``n_replicates``, ``kernel``, ``grid``, ``proposal_cov``,
        ``coupling``, ``k``/``m``, ``n_pilot``, ``adapt``, ``q``, ``ci``, ``n_workers``, ...).
    seed : int or SeedSequence, optional
        Random seed; the replicates' streams are spawned from it.
    init : object with ``.mean``/``.cov``, or callable, optional
        The chains' initial distribution N(mean, cov), or ``lam -> (mean, cov)``.
    **keywords
        Single options of ``options`` by name.

    Returns
    -------
    UPSResult
        ``estimate`` of log Z_1 − log Z_0 with its ``se`` and ``ci`` (from the independent
        ``replicates``), each replicate's ``lambdas``, ``meeting_times``, ``k`` and ``m``, the
        cost (``n_evals``, ``n_evals_tuning``) and ``warnings`` (e.g. heavy-tailed replicates).

    Raises
    ------
    InputError
        An unknown option name or an invalid option value (e.g. only one of ``k`` and ``m``).

    See Also
    --------
    stanlogz.log_ratio : UPS between two posteriors, from their draws.
    stanlogz.evidence : ``method="ups"`` estimates log Z of a Stan program.

    Examples
    --------
    The geometric path between two Gaussian densities whose log Z differ by −1.5:

    >>> import numpy as np, stanlogz
    >>> from stanlogz.densities.gaussian import GaussianTarget
    >>> from stanlogz.mcmc.paths import GeometricPath
    >>> p0 = GaussianTarget(np.array([0.0]), np.array([[1.0]]), log_z=1.0)
    >>> p1 = GaussianTarget(np.array([0.5]), np.array([[0.5]]), log_z=-0.5)
    >>> r = stanlogz.ups(GeometricPath(p0, p1), seed=4, n_replicates=40, n_pilot=10, grid=4,
    ...                  n_workers=1)
    >>> r.replicates.shape, bool(r.ci[0] < r.estimate < r.ci[1])
    ((40,), True)
    >>> bool(abs(r.estimate - (-1.5)) < 5 * r.se)  # a t-test on 40 replicates: P(fail) < 1e-4
    True
    """
    t_start = time.perf_counter()
    o = _path_options(options, keywords)
    n_replicates, kernel, grid, proposal_cov = o.n_replicates, o.kernel, o.grid, o.proposal_cov
    proposal_scale, k, m, n_pilot, adapt = o.proposal_scale, o.k, o.m, o.n_pilot, o.adapt
    ci_level, n_workers = o.ci_level, o.n_workers
    n_m2 = n_pilot if o.n_m2 is None else int(o.n_m2)
    cfg = _KernelConfig(kernel, o.coupling, o.hmc_step_size, int(o.hmc_n_steps), float(o.omega),
                        o.max_iter)
    ss = as_seed_sequence(seed)
    lam_grid = make_grid(grid)
    n_grid = lam_grid.size
    means, covs, pcovs = _init_tables(path, lam_grid, init, proposal_cov, proposal_scale)
    tuning_evals = 0

    def pilot(mode: str, stage: int, n: int, k_t: np.ndarray, m_t: np.ndarray) -> list:
        nonlocal tuning_evals
        tasks = [
            ChainTask(mode, path, float(lam_grid[l]), means[l], covs[l], pcovs[l],
                      int(k_t[l]), int(m_t[l]), cfg)
            for l in range(n_grid)
            for _ in range(n)
        ]
        out = _run_tasks(tasks, _stage_seed(ss, stage), n_workers)
        tuning_evals += sum(o[3] for o in out)
        return [out[l * n:(l + 1) * n] for l in range(n_grid)]

    zeros = np.zeros(n_grid, dtype=int)
    taus = np.zeros((n_grid, 0))
    if k is None:
        res = pilot("tau", _STAGE_PILOT, n_pilot, zeros, zeros)
        taus = np.array([[o[1] for o in r] for r in res], dtype=float)
        k_grid, m_grid = cost_equalizing_km(taus, o.quantile, o.k_factor, o.m_factor)
    else:
        k_grid, m_grid = np.full(n_grid, int(k)), np.full(n_grid, int(m))
    if adapt:
        res = pilot("moments", _STAGE_MOMENTS, n_pilot, k_grid, m_grid)
        d = path.dim
        for l in range(n_grid):
            mom = np.mean([o[0] for o in res[l]], axis=0)
            mean = mom[:d]
            cov = _psd_cov(mom[d:].reshape(d, d) - np.outer(mean, mean), covs[l])
            means[l], covs[l] = mean, cov
            if proposal_cov is None:
                pcovs[l] = proposal_scale**2 * cov / d
        if k is None:
            res = pilot("tau", _STAGE_REPILOT, n_pilot, zeros, zeros)
            taus = np.array([[o[1] for o in r] for r in res], dtype=float)
            k_grid, m_grid = cost_equalizing_km(taus, o.quantile, o.k_factor, o.m_factor)
    if o.q == "tuned":
        res = pilot("E", _STAGE_M2, n_m2, k_grid, m_grid)
        est = np.array([[o[0] for o in r] for r in res], dtype=float)
        sqrt_m2 = np.sqrt(np.mean(est**2, axis=1))
        pilot_E = est.mean(axis=1)
    else:
        sqrt_m2 = np.ones(n_grid)
        pilot_E = np.full(n_grid, np.nan)
    tuning = UPSTuning(
        grid=lam_grid, k=k_grid, m=m_grid, means=means, covs=covs, proposal_covs=pcovs,
        pilot_meeting_times=taus, sqrt_m2=sqrt_m2, pilot_E=pilot_E,
        q_mass=q_from_sqrt_m2(lam_grid, sqrt_m2), n_evals=tuning_evals,
    )

    # lambdas come from one generator so that they too are independent of the worker count
    lam_rng = np.random.default_rng(_stage_seed(ss, Stream.UPS_LAMBDAS))
    lams = np.array([tuning.sample_q(lam_rng) for _ in range(n_replicates)])
    tasks = replicate_tasks(path, tuning, lams, cfg)
    ks, ms = [t.k for t in tasks], [t.m for t in tasks]
    budget_stop, asked = None, n_replicates
    if deadline.remaining() is None:
        out = _run_tasks(tasks, _stage_seed(ss, _STAGE_REPLICATES), n_workers)
    else:  # the replicates the budget leaves time for: a prefix of the seeded order
        out = run_replicates_in_time(lambda i, j: tasks[i:j], len(tasks),
                                     _stage_seed(ss, _STAGE_REPLICATES), n_workers,
                                     what="UPS's replicates")
        if len(out) < asked:
            budget_stop = {"replicates": {"done": len(out), "asked": asked}}
            n_replicates, lams = len(out), lams[:len(out)]
            ks, ms = ks[:n_replicates], ms[:n_replicates]
    e_hat = np.array([o[0] for o in out], dtype=float)
    reps = e_hat / tuning.q_density(lams)
    est, se = float(reps.mean()), float(reps.std(ddof=1) / math.sqrt(n_replicates))
    z = float(stats.t.ppf(0.5 + ci_level / 2, n_replicates - 1) if o.ci == "t"
         else stats.norm.ppf(0.5 + ci_level / 2))
    k_arr, m_arr = np.array(ks), np.array(ms)
    taus_rep = np.array([o[1] for o in out], dtype=int)
    warns = []
    if np.mean(taus_rep > k_arr) > 0.05:
        warns.append(
            "over 5% of replicates met after k: estimates stay unbiased but are noisier; "
            "raise k_factor or improve the proposal"
        )
    if budget_stop is not None:
        warns.append(f"the time budget ended the replicates: {n_replicates} of {asked} done "
                     "(the first ones of the seeded order); the estimate and its interval are "
                     "theirs")
    if n_replicates < 30:
        warns.append("fewer than 30 replicates: the CI relies on near-normal replicates")
    if not np.all(np.isfinite(reps)):
        raise EstimationError("non-finite UPS replicates; the path or kernel is unstable")
    tail_k = replicate_tail_k(reps)
    warns += tail_warnings(tail_k)
    return UPSResult(
        estimate=est, se=se, ci=(est - z * se, est + z * se), ci_level=ci_level,
        replicates=reps, lambdas=lams, meeting_times=taus_rep, k=k_arr, m=m_arr, tuning=tuning,
        n_evals=int(sum(o[3] for o in out)), n_evals_tuning=tuning_evals,
        seconds=time.perf_counter() - t_start, kernel=kernel, warnings=warns,
        kernel_config=cfg, tail_k=tail_k, budget_stop=budget_stop,
    )


def replicate_tail_k(reps: np.ndarray) -> float:
    """Pareto k-hat of the replicates' absolute deviations from their median (NaN for fewer
    than 20): above 0.5 their variance may be infinite, and a CLT interval unreliable."""
    dev = np.abs(np.asarray(reps, dtype=float) - np.median(reps))
    dev = dev[dev > 0]
    return pareto_k(np.log(dev)) if dev.size >= 20 else float("nan")


def tail_warnings(tail_k: float) -> list[str]:
    """The warning for heavy-tailed replicates, if ``tail_k`` says so."""
    if np.isfinite(tail_k) and tail_k > KHAT_HEAVY:
        return [f"the replicates are heavy-tailed (Pareto k-hat {tail_k:.2f} > {KHAT_HEAVY}): "
                "their variance may be infinite and the CI unreliable; use kernel='hmc', a base "
                "closer to the target or a path with lighter-tailed dU/dlambda"]
    return []


def log_ratio(
    target0: Target,
    target1: Target,
    *,
    draws0: np.ndarray | None = None,
    draws1: np.ndarray | None = None,
    init0: Any = None,
    init1: Any = None,
    **options: Any,
) -> UPSResult:
    """UPS estimate of ``log Z(target1) - log Z(target0)`` along the two-posterior geometric path.

    Each end needs posterior draws (``draws0``/``draws1``) or a Gaussian initial distribution
    (``init0``/``init1`` with ``.mean``/``.cov``); the chains at lambda start from the moment
    interpolation of the two. Other options go to :func:`ups`.

    Parameters
    ----------
    target0, target1 : Target
        The two unnormalized densities on the same space (e.g. two posteriors of one
        program's parameters given different data).
    draws0, draws1 : ndarray, optional
        Draws from each, one row per draw (their mean and covariance start the chains).
    init0, init1 : object with ``.mean``/``.cov``, optional
        A Gaussian initial distribution for each end instead of its draws.
    **options
        Options of :func:`ups` (``n_replicates``, ``grid``, ``seed``, ``n_workers``, ...).

    Returns
    -------
    UPSResult
        ``estimate`` of log Z(target1) − log Z(target0), with ``se``, ``ci`` and the
        ``replicates``.

    Raises
    ------
    InputError
        An end with neither draws nor ``init``, draws whose dimension is not the targets', or
        an invalid option.

    See Also
    --------
    stanlogz.ups : unbiased path sampling along any path.
    stanlogz.compare : log Bayes factors of two Stan programs.

    Examples
    --------
    Two Gaussian "posteriors" whose log Z differ by −1.5, from exact draws of each:

    >>> import numpy as np, stanlogz
    >>> from stanlogz.densities.gaussian import GaussianTarget
    >>> t0 = GaussianTarget(np.array([0.0]), np.array([[1.0]]), log_z=1.0)
    >>> t1 = GaussianTarget(np.array([0.5]), np.array([[0.5]]), log_z=-0.5)
    >>> rng = np.random.default_rng(2)
    >>> r = stanlogz.log_ratio(t0, t1, draws0=t0.sample(rng, 200), draws1=t1.sample(rng, 200),
    ...                        seed=4, n_replicates=40, n_pilot=10, grid=4, n_workers=1)
    >>> r.replicates.shape
    (40,)
    >>> bool(abs(r.estimate - (-1.5)) < 5 * r.se)  # a t-test on 40 replicates: P(fail) < 1e-4
    True
    """
    g0 = _end_gaussian(draws0, init0, "0")
    g1 = _end_gaussian(draws1, init1, "1")
    path = two_posterior_path(target0, target1)
    if g0.mean.size != path.dim:
        raise InputError(f"draws/init have dimension {g0.mean.size}, targets {path.dim}")

    def init(lam: float) -> tuple[np.ndarray, np.ndarray]:
        return (1 - lam) * g0.mean + lam * g1.mean, (1 - lam) * g0.cov + lam * g1.cov

    return ups(path, init=init, **options)


def _end_gaussian(draws: np.ndarray | None, init: Any, which: str) -> Any:
    if init is not None:
        if not hasattr(init, "mean") or not hasattr(init, "cov"):
            raise InputError(f"init{which} needs .mean and .cov")
        return init
    if draws is None:
        raise InputError(f"give draws{which} or init{which} for end point {which}")
    return gaussian_from_draws(draws)


def ups_estimate(
    target: Target,
    draws: np.ndarray | None,
    *,
    seed: int | None = None,
    base: str = "gaussian",
    inflate: float = 1.0,
    adapt: bool = False,
    **options: Any,
) -> EvidenceResult:
    """Registry adapter: log Z of ``target`` by UPS along base → target (geometric path).

    ``base``: ``"gaussian"`` (moments of ``draws``, inflated by ``inflate``) or ``"laplace"`` (at
    the mode found from the draws' mean, or from 0 without draws). The base is normalized, so
    log Z = the estimated ratio. Chains start from the base at every lambda; per-lambda
    re-fitting (``adapt``) is off by default because the base already fits the posterior (on the
    benchmark logistic regression full per-lambda tuning cost 10x more for the same CI). Other
    options go to :func:`ups`.
    """
    t0 = time.perf_counter()
    n_draws = 0 if draws is None else int(as_draw_matrix(draws).shape[0])
    if base == "gaussian":
        if draws is None:
            raise InputError("base='gaussian' needs posterior draws; use base='laplace'")
        q0 = gaussian_from_draws(draws, inflate)
    elif base == "laplace":
        x0 = np.zeros(target.dim) if draws is None else as_draw_matrix(draws).mean(axis=0)
        q0, _ = laplace_base(target, x0)
    else:
        raise InputError(f"base must be 'gaussian' or 'laplace', got {base!r}")
    path: GeometricPath = base_to_target_path(q0, target)
    res = ups(path, seed=seed, adapt=adapt, **options)
    return EvidenceResult(
        method="ups",
        log_z=res.estimate,
        log_z_se=res.se,
        n_draws=n_draws,
        n_evals=res.n_evals + res.n_evals_tuning,
        seconds=time.perf_counter() - t0,
        diagnostics={**res.summary(), "base": base},
        warnings=list(res.warnings),
        log_z_df=int(res.replicates.size) - 1,
        detail=res, budget_stop=res.budget_stop,
    )
