"""The units of work of unbiased path sampling: one replicate (or pilot run) is a pair of lag-1
coupled chains on pi_lambda run to their meeting time, with the kernel built per lambda;
replicates run in parallel, each with its own generator."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from ..._util import deadline
from ..._util.progress import duration
from ..._util.seeds import SeedLike, as_seed_sequence
from ...errors import BudgetSpent
from ...mcmc.couplings import CoupledKernel, HMCMixture, hmc_kernel, rwmh_kernel
from ...mcmc.paths import LambdaPath
from ...mcmc.rwmh import scale_from_cov
from ...mcmc.unbiased import DEFAULT_MAX_ITER, h_estimate, sample_coupled_chains
from ...parallel import default_workers, run_parallel, task_generators
from .ups_tuning import UPSTuning, _interp, _nearest_max


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


class ChainTask(NamedTuple):
    """One coupled-chain run on pi_lambda: ``mode`` ("tau": meeting time only; "moments": the
    unbiased first two moments; "E": the unbiased E_lambda[dU/dlambda]), the path and lambda,
    the Gaussian the chains start from (``mean``, ``cov``), the proposal covariance, the
    truncation times ``k`` <= ``m`` and the kernel settings."""

    mode: str
    path: LambdaPath
    lam: float
    mean: np.ndarray
    cov: np.ndarray
    prop_cov: np.ndarray
    k: int
    m: int
    cfg: _KernelConfig


def _build_kernel(
    path: LambdaPath, lam: float, cov: np.ndarray, prop_cov: np.ndarray, cfg: _KernelConfig
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
    return hmc_kernel(g, HMCMixture(step, cfg.n_steps, inv_metric, scale, cfg.omega)), [g], cache


def _moment_h(x: np.ndarray) -> np.ndarray:
    return np.concatenate([x, np.outer(x, x).ravel()])


def _chain_task(task: ChainTask, rng: np.random.Generator) -> tuple[Any, int, int, int]:
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
    """The tasks' results; under a run's time budget a task whose turn comes after it is spent
    is not started, and the run is :class:`~stanlogz.errors.BudgetSpent` (the tuning's pilot
    runs: nothing is estimable without all of them)."""
    if deadline.remaining() is None:
        return run_parallel(_chain_task, tasks, seed, n_workers=n_workers)
    out = _run_in_time(tasks, seed, 0, n_workers)
    if any(o is None for o in out):
        raise deadline.spent("the coupled chains' tuning runs")
    return out


def _run_in_time(tasks: Sequence[ChainTask], seed: SeedLike, first: int,
                 n_workers: int | None) -> list:
    """The results of ``tasks`` (tasks ``first``.. of a seeded run: each with the generator
    :func:`run_parallel` gives that index), None for each whose turn came after the run's
    time budget was spent."""
    gens = task_generators(seed, first + len(tasks))[first:]
    return run_parallel(_chain_task_in_time, list(zip(tasks, gens, strict=True)), 0,
                        n_workers=n_workers)


def replicate_tasks(path: LambdaPath, tuning: UPSTuning, lams: Sequence[float] | np.ndarray,
                    cfg: _KernelConfig) -> list[ChainTask]:
    """One coupled-chain task per lambda on ``path`` with ``tuning``'s k, m, initial
    distributions and proposals (for :func:`run_replicates`). ``path`` may differ from the one
    tuned on (e.g. another cross-validation split): the estimates stay unbiased."""
    grid = tuning.grid
    tasks = []
    for lam in lams:
        kk = _nearest_max(grid, tuning.k, lam)
        mm = max(kk, _nearest_max(grid, tuning.m, lam))
        tasks.append(ChainTask(
            "E", path, float(lam), _interp(grid, tuning.means, lam),
            _interp(grid, tuning.covs, lam), _interp(grid, tuning.proposal_covs, lam), kk, mm, cfg,
        ))
    return tasks


def _chain_task_in_time(unit: tuple[ChainTask, np.random.Generator], _rng: Any
                        ) -> tuple[Any, int, int, int] | None:
    """:func:`_chain_task` with the unit's own generator, or None when the run's time budget
    is spent before it starts (the budget travels to worker processes and cluster units)."""
    left = deadline.remaining()
    return None if left is not None and left <= 0 else _chain_task(*unit)


#: The margin on a block of replicates priced at the rate of those before it.
BLOCK_MARGIN = 1.5
#: The fewest replicates a time budget may leave (fewer asked: all of them). Below 30 the t
#: interval of heavy-tailed replicates undercovers: cv under a budget, normal_mean, covered
#: 0.80 of 15 runs with 2-29 replicates (one z -9.9 at 10) and 0.96 of 117 with 30 or more
#: (benchmarks/anytime_commands.py, docs/features/time-budget.md).
MIN_BUDGET_REPLICATES = 30


def _check_enough_replicates(done: int, asked: int, what: str, before: float, took: float
                             ) -> None:
    """:class:`~stanlogz.errors.BudgetSpent` when the time budget left fewer than
    :data:`MIN_BUDGET_REPLICATES` replicates (or fewer than all, where fewer were asked). Its
    route is the budget the run's ``before`` seconds and that many replicates at the rate of
    those done (``took`` seconds) need, with a third more; twice the budget when none was."""
    need = min(asked, MIN_BUDGET_REPLICATES)
    if done >= need:
        return
    total = deadline.budget_seconds() or 0.0
    seconds = 2 * total if done == 0 else 1.33 * (before + BLOCK_MARGIN * need * took / done)
    route = deadline.as_option(max(seconds, total + 1))
    raise BudgetSpent(f"the time budget of {duration(total)} ran out during {what} ({done} of "
                      f"{asked} done; an interval needs {need}: fewer heavy-tailed replicates "
                      f"make it too narrow); run with {route}", routes=route)


def run_replicates_in_time(make: Callable[[int, int], list[ChainTask]], n: int,
                           seed: SeedLike, n_workers: int | None = None, *,
                           what: str = "the replicates") -> list[tuple[float, int, int, int]]:
    """:func:`run_replicates` of the tasks ``make(i, j)`` builds for replicates ``i..j-1`` of
    ``n``, under the run's time budget: in blocks (the first two per worker, then doubling),
    each built and started only when it fits at the rate of those before it (with
    :data:`BLOCK_MARGIN`), so that neither building nor sending tasks outlasts the budget.
    The results are the longest run of replicates done from the first, each with the
    generator :func:`run_replicates` gives it (the same values): a prefix in task order, not
    whichever finished first, which would favour the replicates whose chains met early.
    Fewer than :data:`MIN_BUDGET_REPLICATES` done (``what``) is
    :class:`~stanlogz.errors.BudgetSpent` with a route that fits."""
    workers = default_workers() if n_workers is None else int(n_workers)
    size, out, rate = 2 * workers, [], None
    start, before = deadline.clock(), deadline.elapsed()
    while len(out) < n:
        left = deadline.remaining()
        if left is not None and rate is not None:
            size = min(size, int(left / (BLOCK_MARGIN * rate)))
        if size < 1 or (left is not None and left <= 0):
            break
        i, t0 = len(out), deadline.clock()
        got = _run_in_time(make(i, min(n, i + size)), seed, i, n_workers)
        done = next((k for k, o in enumerate(got) if o is None), len(got))
        out += got[:done]
        if done < len(got):
            break
        rate = (deadline.clock() - t0) / max(done, 1)
        size *= 2
    _check_enough_replicates(len(out), n, what, before, deadline.clock() - start)
    return out


def run_replicates(tasks: Sequence[ChainTask], seed: SeedLike, n_workers: int | None = None
                   ) -> list[tuple[float, int, int, int]]:
    """Run :func:`replicate_tasks`' tasks: per task the unbiased estimate of E_lambda[dU/dlambda],
    the meeting time, the iterations and the path evaluations."""
    return _run_tasks(tasks, as_seed_sequence(seed), n_workers)
