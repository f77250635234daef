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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from ..densities.fits import as_draw_matrix, gaussian_from_draws, laplace_base
from ..densities.target import Target
from ..errors import EstimationError, InputError
from ..mcmc.couplings import CoupledKernel, hmc_kernel, rwmh_kernel
from ..mcmc.paths import GeometricPath, Path, base_to_target_path, two_posterior_path
from ..mcmc.rwmh import scale_from_cov
from ..mcmc.unbiased import DEFAULT_MAX_ITER, h_estimate, sample_coupled_chains
from ..parallel import SeedLike, as_seed_sequence, child_sequence, run_parallel
from .base import EvidenceResult
from .common import pareto_k

InitSpec = Any  # an object with .mean and .cov, or a callable lam -> (mean, cov)
CovSpec = np.ndarray | float | Callable[[float], np.ndarray] | None

# stages of the computation; each has its own child of SeedSequence(seed)
_STAGE_PILOT, _STAGE_MOMENTS, _STAGE_REPILOT, _STAGE_M2, _STAGE_REPLICATES = range(5)


@dataclass
class UPSTuning:
    """Tuning tables over the lambda grid (index l = 0..L) and the proposal q(lambda)."""

    grid: np.ndarray
    k: np.ndarray
    m: np.ndarray
    means: np.ndarray
    covs: np.ndarray
    proposal_covs: np.ndarray
    pilot_meeting_times: np.ndarray  # (L+1, n_pilot); empty when k, m were given
    sqrt_m2: np.ndarray
    pilot_E: np.ndarray  # pilot means of the unbiased estimates of E(lambda) on the grid
    q_mass: np.ndarray  # probability of each interval [grid[l], grid[l+1]]
    n_evals: int = 0

    def q_density(self, lam: np.ndarray | float) -> np.ndarray:
        """Density of q at ``lam`` (right-continuous; 1 at lam = 1 belongs to the last interval)."""
        lam = np.asarray(lam, dtype=float)
        idx = np.clip(np.searchsorted(self.grid, lam, side="right") - 1, 0, self.grid.size - 2)
        return self.q_mass[idx] / np.diff(self.grid)[idx]

    def sample_q(self, rng: np.random.Generator) -> float:
        """One lambda from q: an interval by its mass, then uniform within it."""
        l = int(rng.choice(self.q_mass.size, p=self.q_mass))
        return float(rng.uniform(self.grid[l], self.grid[l + 1]))


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


# ---------------------------------------------------------------------------------------------
# workers (top-level so that process pools can pickle them)


class _Counted:
    """Counts calls of a path function at fixed lambda."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.n = 0

    def __call__(self, x: np.ndarray) -> Any:
        self.n += 1
        return self.fn(x)


@dataclass(frozen=True)
class _KernelConfig:
    kind: str = "rwmh"
    coupling: str = "reflection"
    step_size: float | None = None
    n_steps: int = 10
    omega: float = 0.1
    max_iter: int = DEFAULT_MAX_ITER


def _build_kernel(
    path: Path, lam: float, cov: np.ndarray, prop_cov: np.ndarray, cfg: _KernelConfig
) -> tuple[CoupledKernel, list[_Counted], dict[bytes, float]]:
    """Kernel on pi_lambda, its evaluation counters, and a cache of dU/dlambda at visited points
    (filled when the path computes it alongside U, as :class:`GeometricPath` does)."""
    d = path.dim
    scale = scale_from_cov(prop_cov, d)
    cache: dict[bytes, float] = {}
    if cfg.kind == "rwmh":
        both = getattr(path, "U_and_dU_dlam", None)
        if both is None:
            f = _Counted(lambda x: path.U(lam, x))
        else:
            def u(x: np.ndarray) -> float:
                val, du = both(lam, x)
                cache[x.tobytes()] = du
                return val

            f = _Counted(u)
        return rwmh_kernel(f, scale, cfg.coupling), [f], cache
    both_g = getattr(path, "grad_x_and_dU_dlam", None)
    if both_g is None:
        g = _Counted(lambda x: path.grad_x(lam, x))
    else:
        def ug(x: np.ndarray) -> tuple[float, np.ndarray]:
            val, grad, du = both_g(lam, x)
            cache[x.tobytes()] = du
            return val, grad

        g = _Counted(ug)
    step = cfg.step_size if cfg.step_size is not None else 0.5 * d**-0.25
    inv_metric = np.clip(np.diag(cov), 1e-300, None)
    return hmc_kernel(g, step, cfg.n_steps, inv_metric, scale, cfg.omega), [g], cache


def _moment_h(x: np.ndarray) -> np.ndarray:
    return np.concatenate([x, np.outer(x, x).ravel()])


def _chain_task(task: tuple, rng: np.random.Generator) -> tuple[Any, int, int, int]:
    """One coupled-chain run: returns (estimate or None, meeting time, iterations, evaluations)."""
    mode, path, lam, mean, cov, prop_cov, k, m, cfg = task
    kernel, counters, cache = _build_kernel(path, lam, cov, prop_cov, cfg)
    chol = np.linalg.cholesky(cov)
    x0 = mean + chol @ rng.standard_normal(mean.size)
    y0 = mean + chol @ rng.standard_normal(mean.size)
    chains = sample_coupled_chains(rng, kernel, x0, y0, m if mode != "tau" else 0, cfg.max_iter)
    value: Any = None
    if mode == "moments":
        value = h_estimate(chains, _moment_h, k, m)
    elif mode == "E":
        miss = _Counted(lambda x: path.dU_dlam(lam, x))

        def h(x: np.ndarray) -> float:
            du = cache.get(x.tobytes())
            return miss(x) if du is None else du

        value = h_estimate(chains, h, k, m)
        counters.append(miss)
    return value, chains.meeting_time, chains.iterations, sum(c.n for c in counters)


def _run_tasks(tasks: Sequence[Any], seed: np.random.SeedSequence, n_workers: int | None) -> list:
    return run_parallel(_chain_task, tasks, seed, n_workers=n_workers)


# ---------------------------------------------------------------------------------------------
# tuning helpers


def make_grid(grid: int | str | Sequence[float] = 10) -> np.ndarray:
    """Lambda grid: ``L`` → l/L; ``"log"``/``"log:L"`` → 0 and exp(-L + l), l = 0..L; or a list."""
    if isinstance(grid, str):
        name, _, n = grid.partition(":")
        if name != "log":
            raise InputError(f"grid must be an int, 'log', 'log:L' or a sequence, got {grid!r}")
        L = int(n) if n else 10
        return np.concatenate([[0.0], np.exp(-L + np.arange(L + 1.0))])
    if isinstance(grid, int | np.integer):
        if grid < 1:
            raise InputError(f"grid needs at least one interval, got {grid}")
        return np.linspace(0.0, 1.0, int(grid) + 1)
    g = np.asarray(grid, dtype=float)
    if g.ndim != 1 or g.size < 2 or g[0] != 0.0 or g[-1] != 1.0 or np.any(np.diff(g) <= 0):
        raise InputError("an explicit grid must increase strictly from 0 to 1")
    return g


def cost_equalizing_km(
    taus: np.ndarray, quantile: float = 0.99, k_factor: float = 1.0, m_factor: float = 5.0
) -> tuple[np.ndarray, np.ndarray]:
    """``k_l`` = k_factor × quantile of meeting times; ``m_l`` by eq. 11 (equal expected cost)."""
    taus = np.asarray(taus, dtype=float)
    k = np.ceil(k_factor * np.quantile(taus, quantile, axis=1)).astype(int)
    k = np.maximum(k, 1)
    tbar = taus.mean(axis=1)
    m = np.ceil(m_factor * k.max() + tbar.max() - tbar).astype(int)
    return k, np.maximum(m, k)


def q_from_sqrt_m2(grid: np.ndarray, sqrt_m2: np.ndarray, floor: float = 0.01) -> np.ndarray:
    """Interval masses of the piecewise-uniform q ∝ sqrt(m2) (eq. 10).

    ``sqrt_m2`` is floored at ``floor`` × its maximum so that q stays positive on all of [0, 1].
    """
    s = np.asarray(sqrt_m2, dtype=float)
    if not np.all(np.isfinite(s)):
        raise EstimationError("non-finite second-moment estimates; the path or kernel is unstable")
    top = s.max()
    s = np.maximum(s, floor * top) if top > 0 else np.ones_like(s)
    w = np.diff(grid) * 0.5 * (s[:-1] + s[1:])
    return w / w.sum()


def _psd_cov(cov: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    c = 0.5 * (cov + cov.T)
    vals, vecs = np.linalg.eigh(c)
    if not np.all(np.isfinite(vals)) or vals.max() <= 0:
        return fallback
    vals = np.maximum(vals, 1e-6 * vals.max())
    return (vecs * vals) @ vecs.T


def _interp(grid: np.ndarray, table: np.ndarray, lam: float) -> np.ndarray:
    i = int(np.clip(np.searchsorted(grid, lam, side="right") - 1, 0, grid.size - 2))
    w = (lam - grid[i]) / (grid[i + 1] - grid[i])
    return (1.0 - w) * table[i] + w * table[i + 1]


def _nearest_max(grid: np.ndarray, table: np.ndarray, lam: float) -> int:
    i = int(np.clip(np.searchsorted(grid, lam, side="right") - 1, 0, grid.size - 2))
    return int(max(table[i], table[i + 1]))


def _stage_seed(ss: np.random.SeedSequence, stage: int) -> np.random.SeedSequence:
    return child_sequence(ss, 1000 + stage)


def _init_tables(
    path: Path, grid: np.ndarray, init: InitSpec, proposal_cov: CovSpec, proposal_scale: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    d = path.dim
    if init is None:
        p0 = getattr(path, "p0", None)
        if p0 is None or not hasattr(p0, "mean") or not hasattr(p0, "cov"):
            raise InputError("give init (a Gaussian with .mean/.cov or lam -> (mean, cov))")
        init = p0
    means, covs, pcovs = [], [], []
    for lam in grid:
        if callable(init) and not hasattr(init, "mean"):
            mean, cov = init(float(lam))
        else:
            mean, cov = init.mean, init.cov
        mean = np.atleast_1d(np.asarray(mean, dtype=float))
        cov = np.atleast_2d(np.asarray(cov, dtype=float))
        if mean.shape != (d,) or cov.shape != (d, d):
            raise InputError(f"initial mean/cov must have shapes ({d},) and ({d},{d})")
        if proposal_cov is None:
            pc = proposal_scale**2 * cov / d
        elif callable(proposal_cov):
            pc = np.asarray(proposal_cov(float(lam)), dtype=float)
        else:
            pc = np.asarray(proposal_cov, dtype=float)
        pc = np.atleast_2d(pc) if np.ndim(pc) == 2 else np.diag(np.broadcast_to(pc, (d,)))
        means.append(mean)
        covs.append(cov)
        pcovs.append(pc)
    return np.array(means), np.array(covs), np.array(pcovs)


# ---------------------------------------------------------------------------------------------
# public API


def ups(
    path: Path,
    *,
    n_replicates: int = 100,
    seed: int | np.random.SeedSequence | None = None,
    kernel: str = "rwmh",
    n_workers: int | None = None,
    grid: int | str | Sequence[float] = 10,
    init: InitSpec = None,
    proposal_cov: CovSpec = None,
    proposal_scale: float = 1.0,
    coupling: str = "reflection",
    k: int | None = None,
    m: int | None = None,
    n_pilot: int = 100,
    quantile: float = 0.99,
    k_factor: float = 1.0,
    m_factor: float = 5.0,
    adapt: bool = True,
    q: str = "tuned",
    n_m2: int | None = None,
    hmc_step_size: float | None = None,
    hmc_n_steps: int = 10,
    omega: float = 0.1,
    max_iter: int = DEFAULT_MAX_ITER,
    ci_level: float = 0.95,
    ci: str = "t",
) -> UPSResult:
    """Unbiased path-sampling estimate of ``log Z_1 - log Z_0`` along ``path``.

    ``init``: the chains' initial distribution N(mean, cov) (an object with ``.mean``/``.cov`` or
    ``lam -> (mean, cov)``; default the path's normalized start ``p0``). ``proposal_cov``: RWMH
    proposal covariance (array or ``lam -> array``; default ``proposal_scale² cov / dim``).
    ``k``/``m`` fix H_{k:m}'s integers for all lambda and skip the meeting-time pilot; otherwise
    ``n_pilot`` meeting times per grid point give them (few pilots give noisy k and moments,
    hence heavy-tailed replicates). ``adapt`` re-fits the initial distribution
    and proposal to pilot moments of each pi_lambda. ``q``: ``"tuned"`` (∝ sqrt(m2), eq. 10) or
    ``"uniform"``. ``ci``: ``"t"`` or ``"normal"`` interval.
    """
    t_start = time.perf_counter()
    if kernel not in ("rwmh", "hmc"):
        raise InputError(f"kernel must be 'rwmh' or 'hmc', got {kernel!r}")
    if q not in ("tuned", "uniform"):
        raise InputError(f"q must be 'tuned' or 'uniform', got {q!r}")
    if ci not in ("t", "normal"):
        raise InputError(f"ci must be 't' or 'normal', got {ci!r}")
    if n_replicates < 2:
        raise InputError(f"need n_replicates >= 2 for a standard error, got {n_replicates}")
    if (k is None) != (m is None):
        raise InputError("give both k and m, or neither")
    if not 0.0 < ci_level < 1.0:
        raise InputError(f"ci_level must be in (0, 1), got {ci_level}")
    if n_pilot < 2:
        raise InputError(f"n_pilot must be >= 2, got {n_pilot}")
    if not 0.0 < quantile <= 1.0:
        raise InputError(f"quantile must be in (0, 1], got {quantile}")
    if not proposal_scale > 0:
        raise InputError(f"proposal_scale must be positive, got {proposal_scale}")
    n_m2 = n_pilot if n_m2 is None else int(n_m2)
    cfg = _KernelConfig(kernel, coupling, hmc_step_size, int(hmc_n_steps), float(omega), max_iter)
    ss = as_seed_sequence(seed)
    lam_grid = make_grid(grid)
    n_grid = lam_grid.size
    means, covs, pcovs = _init_tables(path, lam_grid, init, proposal_cov, proposal_scale)
    tuning_evals = 0

    def pilot(mode: str, stage: int, n: int, k_t: np.ndarray, m_t: np.ndarray) -> list:
        nonlocal tuning_evals
        tasks = [
            (mode, path, float(lam_grid[l]), means[l], covs[l], pcovs[l],
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
        k_grid, m_grid = cost_equalizing_km(taus, quantile, k_factor, m_factor)
    else:
        k_grid, m_grid = np.full(n_grid, int(k)), np.full(n_grid, int(m))
        if not 0 <= k_grid[0] <= m_grid[0]:
            raise InputError(f"need 0 <= k <= m, got k={k}, m={m}")
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
            k_grid, m_grid = cost_equalizing_km(taus, quantile, k_factor, m_factor)
    if q == "tuned":
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
    lam_rng = np.random.default_rng(_stage_seed(ss, _STAGE_REPLICATES + 1))
    lams = np.array([tuning.sample_q(lam_rng) for _ in range(n_replicates)])
    tasks = replicate_tasks(path, tuning, lams, cfg)
    ks, ms = [t[6] for t in tasks], [t[7] for t in tasks]
    out = _run_tasks(tasks, _stage_seed(ss, _STAGE_REPLICATES), n_workers)
    e_hat = np.array([o[0] for o in out], dtype=float)
    reps = e_hat / tuning.q_density(lams)
    est, se = float(reps.mean()), float(reps.std(ddof=1) / math.sqrt(n_replicates))
    z = float(stats.t.ppf(0.5 + ci_level / 2, n_replicates - 1) if ci == "t"
         else stats.norm.ppf(0.5 + ci_level / 2))
    k_arr, m_arr = np.array(ks), np.array(ms)
    taus_rep = np.array([o[1] for o in out], dtype=int)
    warns = []
    if np.mean(taus_rep > k_arr) > 0.05:
        warns.append(
            "over 5% of replicates met after k: estimates stay unbiased but are noisier; "
            "raise k_factor or improve the proposal"
        )
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
        kernel_config=cfg, tail_k=tail_k,
    )


def replicate_tail_k(reps: np.ndarray) -> float:
    """Pareto k-hat of the replicates' absolute deviations from their median (NaN for fewer
    than 20): above 0.5 their variance may be infinite, and a CLT interval unreliable."""
    dev = np.abs(np.asarray(reps, dtype=float) - np.median(reps))
    dev = dev[dev > 0]
    return pareto_k(np.log(dev)) if dev.size >= 20 else float("nan")


def tail_warnings(tail_k: float) -> list[str]:
    """The warning for heavy-tailed replicates, if ``tail_k`` says so."""
    if np.isfinite(tail_k) and tail_k > 0.5:
        return [f"the replicates are heavy-tailed (Pareto k-hat {tail_k:.2f} > 0.5): their "
                "variance may be infinite and the CI unreliable; use kernel='hmc', a base "
                "closer to the target or a path with lighter-tailed dU/dlambda"]
    return []


def replicate_tasks(path: Path, tuning: UPSTuning, lams: Sequence[float] | np.ndarray,
                    cfg: _KernelConfig) -> list[tuple]:
    """One coupled-chain task per lambda on ``path`` with ``tuning``'s k, m, initial
    distributions and proposals (for :func:`run_replicates`). ``path`` may differ from the one
    tuned on (e.g. another cross-validation split): the estimates stay unbiased."""
    grid = tuning.grid
    tasks = []
    for lam in lams:
        kk = _nearest_max(grid, tuning.k, lam)
        mm = max(kk, _nearest_max(grid, tuning.m, lam))
        tasks.append((
            "E", path, float(lam), _interp(grid, tuning.means, lam),
            _interp(grid, tuning.covs, lam), _interp(grid, tuning.proposal_covs, lam), kk, mm, cfg,
        ))
    return tasks


def run_replicates(tasks: Sequence[tuple], seed: SeedLike, n_workers: int | None = None
                   ) -> list[tuple[float, int, int, int]]:
    """Run :func:`replicate_tasks`' tasks: per task the unbiased estimate of E_lambda[dU/dlambda],
    the meeting time, the iterations and the path evaluations."""
    return _run_tasks(tasks, as_seed_sequence(seed), n_workers)


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
        diagnostics={**res.summary(), "base": base, "_ups": res},
        warnings=list(res.warnings),
    )
