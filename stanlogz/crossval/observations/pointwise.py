"""Pointwise log-likelihood log p(y_i | θ) of a Stan program at posterior draws.

Two sources:

* ``"log_lik"``: the program's ``log_lik`` generated quantity (Stan's convention), one entry per
  observation;
* ``"difference"``: the program's own density with every constant kept, on small data instances
  of the same compiled library: ℓ_i(θ) = log p̃(θ; {y_i}) − log p̃(θ; ∅), with ∅ the data with no
  observation (or, when the program refuses zero observations, ℓ_i = log p̃(θ; {y_r, y_i}) −
  log p̃(θ; {y_r}) for a reference observation r). Each instance holds one or two observations,
  so all N columns at S draws cost O(N·S) density terms, evaluated in blocks on threads, and at
  most one instance per thread is alive at a time.

The difference is log p(y_i | θ) only when the observations are conditionally independent given
θ, nothing else depends on the data (no transformed data computed from several observations, no
prior scaled by N) and no constraint depends on the data. :meth:`PointwiseLogLik.check` verifies
what can be verified on a few draws — the same unconstrained dimension and the same constrained
parameters in every instance, and Σ_i ℓ_i(θ) = log p̃(θ; y) − log p̃(θ; ∅) — and refuses with a
one-line reason naming the violated condition.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ..._util import deadline
from ..._util.arrays import even_rows
from ..._util.threads import n_threads
from ...errors import BackendUnsupported, DataError, InputError, Route, StanlogzError
from ...stan.program import StanProgram
from .clock import PassClock, PassState
from .observations import Observations
from .solver import SOLVER_SUM_ABS, SUM_RTOL, calls_solver

LOG_LIK_SOURCES = ("auto", "log_lik", "difference", "conditional", "integrated")

#: Most observations a baseline instance may need (programs that declare int<lower=r> N).
MAX_REFERENCE = 3

#: The points at which a baseline instance's density is checked against the whole data's
#: (:meth:`PointwiseLogLik._rejected_everywhere`): the first ``BASE_CHECK_POINTS`` of the
#: origin and ``BASE_CANDIDATES - 1`` uniform(-2, 2) ones (seeded, Stan's initial range)
#: where the whole data's density is finite (posteriordb sir: a quarter of them).
BASE_CHECK_POINTS = 3
BASE_CANDIDATES = 32
BASE_CHECK_SEED = 20261203

#: Memory for one block of log-likelihood columns (draws x observations x 8 bytes); PSIS makes
#: about ten temporary copies of a block, so this bounds the extra memory to a few hundred MB.
CHUNK_BYTES = 32 * 2**20


def index_blocks(index: np.ndarray, n_draws: int, chunk_bytes: int = CHUNK_BYTES
                 ) -> Iterator[np.ndarray]:
    """Consecutive pieces of ``index`` whose ``(n_draws, len(piece))`` float blocks take at most
    ``chunk_bytes`` (one observation at the least)."""
    width = max(1, min(index.size, chunk_bytes // (8 * max(n_draws, 1))))
    for a in range(0, index.size, width):
        yield index[a:a + width]


def column_chunks(source: Any, unc: np.ndarray, chunk_bytes: int = CHUNK_BYTES,
                  index: Sequence[int] | np.ndarray | None = None
                  ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """``(index, source.columns(index, unc))`` blocks over the observations ``index`` (default
    all) of a pointwise source with ``model.dim``, ``obs.n`` and ``columns``."""
    unc = np.asarray(unc, dtype=float).reshape(-1, source.model.dim)
    index = np.arange(source.obs.n) if index is None else np.asarray(index, dtype=int)
    for idx in index_blocks(index, unc.shape[0], chunk_bytes):
        yield idx, source.columns(idx, unc)


def log_lik_columns(names: list[str]) -> list[int]:
    """Indices of ``log_lik.1, log_lik.2, ...`` (a vector or 1-D array GQ) in ``names``."""
    cols = {n: j for j, n in enumerate(names) if n.startswith("log_lik.")}
    out = []
    for i in range(1, len(cols) + 1):
        if f"log_lik.{i}" not in cols:
            raise InputError("log_lik must be a vector or a 1-D array with one entry per "
                             "observation")
        out.append(cols[f"log_lik.{i}"])
    return out


def has_log_lik(model: StanProgram) -> bool:
    """Whether the program has a ``log_lik`` generated quantity."""
    return any(n == "log_lik" or n.startswith("log_lik.")
               for n in model.param_names(include_tp=True, include_gq=True))


def run_all(fn: Callable[[Any], None], items: Iterable[Any], n_draws: int,
            serial_below: int = 16) -> None:
    """``fn(item)`` for every item, on ``n_threads()`` threads (the native density calls
    release the GIL) unless there are fewer than ``serial_below`` draws per call, where the
    threads cost more than they save."""
    items = list(items)
    threads = min(n_threads(), len(items)) if n_draws >= serial_below else 1
    if threads <= 1:
        for it in items:
            fn(it)
        return
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(fn, items))


class _Slicer:
    """Data instances holding a few observations, with the observation arrays cut once."""

    def __init__(self, data: Mapping[str, Any], obs: Observations) -> None:
        self.obs = obs
        self.rest = {k: v for k, v in data.items() if k not in obs.fields}
        self.arrays = {f: np.asarray(data[f]) for f in obs.fields}

    def data(self, index: Sequence[int]) -> dict[str, Any]:
        out = dict(self.rest)
        idx = np.asarray(index, dtype=int)
        for f, arr in self.arrays.items():
            out[f] = arr[idx].tolist()
        out[self.obs.size_name] = int(idx.size)
        return out


class PointwiseLogLik(PassState):
    """``log p(y_i | θ)`` for the observations of one program and data set, at any draws.

    The density-difference pass evaluates the whole program once per observation and draw;
    with ``progress`` set (by :func:`~.conditional_source.start_pass`) the full pass reports
    the observations done and the time left (:class:`~.clock.PassClock`: nothing for a pass
    of a few seconds)."""

    def __init__(self, model: StanProgram, data: Mapping[str, Any], obs: Observations,
                 source: str = "auto") -> None:
        if source not in LOG_LIK_SOURCES:
            raise InputError(f"log-likelihood source must be one of {', '.join(LOG_LIK_SOURCES)}, "
                             f"got {source!r}")
        if source in ("conditional", "integrated"):
            raise InputError(f"the {source} log-likelihood is built by "
                             "stanlogz.crossval.elpd.routes.pointwise_source")
        if source == "auto":
            source = "log_lik" if has_log_lik(model) else "difference"
        self.model, self.data, self.obs, self.source = model, dict(data), obs, source
        self._minus: dict[int, Any] = {}
        self._slicer = _Slicer(self.data, obs)
        self._bases: tuple[Any, ...] | None = None
        self._refs: list[list[int]] = [[]]
        self.checked = False
        #: the largest gap of the last check's sum test, in nats and as a share of the
        #: scale (None: that test did not run)
        self.gap: tuple[float, float] | None = None
        self._batch_failed = False  # the batched path (.batched) off for this pass
        self._batch_measured = False
        if source == "log_lik":
            if not has_log_lik(model):
                raise InputError(f"{model.name} has no log_lik generated quantity; use the "
                                 "'difference' source")
            names = model.param_names(include_tp=True, include_gq=True)
            self._cols = log_lik_columns(names)
            if len(self._cols) != obs.n:
                raise InputError(f"log_lik has {len(self._cols)} entries but there are "
                                 f"{obs.n} observations ({obs.size_name} = {obs.n})")

    # ------------------------------------------------------------ data instances

    def _instance(self, index: Sequence[int]) -> Any:
        """The program with only the observations ``index``; a wrong dimension is refused."""
        try:
            m = self.model.with_data(self._slicer.data(index))
        except DataError as exc:
            raise DataError(f"{self.model.name} rejects data with {len(index)} observation(s), "
                            f"which the density-difference log-likelihood needs: {exc}") from None
        if m.dim != self.model.dim:
            raise InputError(
                f"{self.model.name} has parameters per observation ({self.model.dim} "
                f"unconstrained with {self.obs.n} observations, {m.dim} with {len(index)}): "
                "its pointwise log-likelihood needs a log_lik generated quantity, or "
                "cross-validation over groups")
        return m

    def bases(self) -> tuple[Any, ...]:
        """The baseline instances: ``(empty,)``, or, when the program refuses fewer than r
        observations, ``(first r, next r)`` (r <= MAX_REFERENCE); :meth:`references` lists
        their observations."""
        if self._bases is None:
            last: DataError | None = None
            for r in range(0, MAX_REFERENCE + 1):
                refs = [list(range(r))] if r == 0 else [list(range(r)), list(range(r, 2 * r))]
                if r and 2 * r >= self.obs.n:
                    break
                try:
                    bases = tuple(self._instance(ref) for ref in refs)
                except DataError as exc:
                    last = exc
                    continue
                if r == 0 and self._rejected_everywhere(bases):  # the empty data only:
                    # a baseline of r observations rejected (the sd of one value is 0) is the
                    # program's dependence on the data, which the check must see
                    last = DataError(f"{self.model.name} rejects the density of data with "
                                     f"{r} observation(s) at every point where the whole "
                                     "data's is finite")
                    continue
                self._bases, self._refs = bases, refs
                break
            if self._bases is None:
                raise DataError(f"{last}") if last else InputError(
                    f"too few observations ({self.obs.n}) for the density-difference "
                    "log-likelihood of this program; add a log_lik generated quantity")
        return self._bases

    def _rejected_everywhere(self, bases: tuple[Any, ...]) -> bool:
        """Whether the program rejects the density of one of the baseline instances ``bases``
        (an error, or a value not finite) at every one of ``BASE_CHECK_POINTS`` points where
        the whole data's density is finite: its data load accepts them, its model block does
        not (an ODE over no output times: posteriordb sir, Lotka-Volterra; a ``reject`` where
        N is 0). The next baseline, with more observations, then serves (the values are the
        same). False where fewer than ``BASE_CHECK_POINTS - 1`` points have a finite density
        (the check at the draws decides). Only the empty baseline is asked: a program that
        rejects data of one observation depends on the data beyond its terms (a standardized
        outcome), and the check refuses it."""
        rng = np.random.default_rng(BASE_CHECK_SEED)
        points = np.vstack([np.zeros(self.model.dim),
                            rng.uniform(-2, 2, (BASE_CANDIDATES - 1, self.model.dim))])
        finite: list[np.ndarray] = []
        for x in points:  # the first BASE_CHECK_POINTS where the whole data's is finite
            if len(finite) == BASE_CHECK_POINTS:
                break
            if np.isfinite(_density_or_nan(self.model, x)):
                finite.append(x)
        return len(finite) >= BASE_CHECK_POINTS - 1 and any(
            not any(np.isfinite(_density_or_nan(b, x)) for x in finite) for b in bases)

    def references(self) -> list[list[int]]:
        """Observations of each baseline instance (``[[]]`` for the empty one)."""
        self.bases()
        return self._refs

    def _pair(self, i: int) -> tuple[list[int], int]:
        """Observations of the instance for ℓ_i and which baseline it subtracts."""
        refs = self.references()
        # in the data's order: a program may need it (an ODE's output times must increase)
        if i not in refs[0]:
            return sorted([*refs[0], i]), 0
        return sorted([*refs[1], i]), 1

    def held_out_model(self, i: int) -> Any:
        """The program with observation ``i`` left out (same library, new data)."""
        if i not in self._minus:
            m = self.model.with_data(self.obs.without(self.data, [i]))
            if m.dim != self.model.dim:
                raise InputError(
                    f"leaving out an observation changes the number of parameters of "
                    f"{self.model.name} ({self.model.dim} -> {m.dim}): per-observation "
                    "parameters need cross-validation over groups, not single observations")
            self._minus[i] = m
        return self._minus[i]

    # ------------------------------------------------------------ evaluation

    def columns(self, index: Sequence[int] | np.ndarray, unc: np.ndarray) -> np.ndarray:
        """``(S, len(index))`` log p(y_i | θ_s) for the observations ``index`` at unconstrained
        draws ``unc`` ``(S, dim)``."""
        unc = np.ascontiguousarray(np.asarray(unc, dtype=float).reshape(-1, self.model.dim))
        index = [int(i) for i in np.asarray(index, dtype=int).ravel()]
        if self.source == "log_lik":
            return self._gq_columns(np.asarray(index, dtype=int), unc)
        from .batched import batched_columns

        batched = batched_columns(self, index, unc)
        if batched is not None:
            return batched
        return self.per_call_columns(index, unc)

    def per_call_columns(self, index: Sequence[int], unc: np.ndarray) -> np.ndarray:
        """:meth:`columns` of the density difference one instance per observation and one
        call per draw (the path the batched one is checked and timed against)."""
        unc = np.ascontiguousarray(np.asarray(unc, dtype=float).reshape(-1, self.model.dim))
        index = [int(i) for i in np.asarray(index, dtype=int).ravel()]
        base_lp = [b.log_density_many(unc) for b in self.bases()]
        out = np.empty((unc.shape[0], len(index)))
        clock = self._clock

        def block(js: range) -> None:
            for j in js:
                if clock is not None and clock.stopped:
                    return  # an anytime pass stopped at the budget: the rest is estimated
                obs, b = self._pair(index[j])
                with np.errstate(invalid="ignore"):  # inf - inf: the check reports it
                    out[:, j] = self._instance(obs).log_density_many(unc) - base_lp[b]
                if clock is not None:
                    clock.update(obs=(index[j],))

        threads = min(n_threads(), max(1, len(index) // 8))
        size = -(-len(index) // threads) if index else 1
        blocks = [range(a, min(a + size, len(index))) for a in range(0, len(index), size)]
        if threads == 1:
            for r in blocks:
                block(r)
        else:
            with ThreadPoolExecutor(threads) as pool:
                list(pool.map(block, blocks))
        return out

    def column(self, i: int, unc: np.ndarray) -> np.ndarray:
        """log p(y_i | θ) at unconstrained draws ``unc`` ``(S, dim)``."""
        return self.columns([i], unc)[:, 0]

    def chunks(self, unc: np.ndarray, constrained: np.ndarray | None = None,
               names: list[str] | None = None, chunk_bytes: int = CHUNK_BYTES,
               index: Sequence[int] | np.ndarray | None = None
               ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """``(index, (S, len(index)) block)`` over the observations ``index`` (default all),
        each block at most ``chunk_bytes``; ``constrained`` draws with ``names`` that hold
        ``log_lik`` are used as they are."""
        unc = np.asarray(unc, dtype=float).reshape(-1, self.model.dim)
        s = unc.shape[0]
        index = np.arange(self.obs.n) if index is None else np.asarray(index, dtype=int)
        given = self._given_log_lik(s, constrained, names)  # (values, their log_lik columns)
        if given is None and self.source == "log_lik":
            # One constrain pass serves every block (the GQs are computed once per draw).
            values = np.empty((s, self.obs.n))
            values[:, index] = self._gq_columns(index, unc)
            given = (values, np.arange(self.obs.n))
        if given is None and (self.progress or deadline.remaining() is not None):
            self._clock = PassClock(self.progress, index.size,
                                    "density-difference log-likelihood",
                                    draws=self.draw_shape, refit_seconds=self.refit_seconds,
                                    anytime=self.anytime, checked=self.budget_checked,
                                    thin=self.anytime_thin)
        try:
            for idx in index_blocks(index, s, chunk_bytes):
                if given is not None:
                    yield idx, given[0][:, given[1][idx]]
                    continue
                block = self.columns(idx, unc)
                clock = self._clock
                if clock is not None and clock.stopped:  # the observations done, then no more
                    idx, block = clock.trim(idx, block)
                    if idx.size:
                        yield idx, block
                    return
                yield idx, block
        finally:
            if self._clock is not None:
                self._clock.close()
                self.last_clock, self._clock = self._clock, None

    def _gq_columns(self, index: np.ndarray, unc: np.ndarray, block_bytes: int = CHUNK_BYTES
                    ) -> np.ndarray:
        """log_lik columns ``index`` from the generated quantities, constrained in blocks of
        draws so that all quantities of a block fit in ``block_bytes``."""
        cols = [self._cols[i] for i in index]
        width = self.model.param_num(include_tp=True, include_gq=True)
        step = max(1, block_bytes // (8 * max(width, 1)))
        out = np.empty((unc.shape[0], len(cols)))
        for a in range(0, unc.shape[0], step):
            gq = self.model.constrain_many(unc[a:a + step], include_tp=True, include_gq=True,
                                           seed=1)
            out[a:a + step] = gq[:, cols]
        return out

    def matrix(self, unc: np.ndarray, constrained: np.ndarray | None = None,
               names: list[str] | None = None) -> np.ndarray:
        """``(S, N)`` matrix of log p(y_i | θ_s) at unconstrained draws ``unc`` ``(S, dim)``;
        ``constrained`` draws with ``names`` that hold ``log_lik`` are used as they are."""
        return np.concatenate([b for _, b in self.chunks(unc, constrained, names,
                                                         chunk_bytes=2**62)], axis=1)

    def _given_log_lik(self, s: int, constrained: np.ndarray | None, names: list[str] | None
                       ) -> tuple[np.ndarray, np.ndarray] | None:
        """The draws' constrained values ``(S, width)`` and the column of each observation's
        log_lik in them (no copy), when the draws carry ``log_lik``."""
        if self.source != "log_lik" or constrained is None or names is None or not any(
                n.startswith("log_lik.") for n in names):
            return None
        cols = log_lik_columns(list(names))
        if len(cols) != self.obs.n:
            raise InputError(f"the draws' log_lik has {len(cols)} entries but there are "
                             f"{self.obs.n} observations")
        return np.asarray(constrained, dtype=float).reshape(s, -1), np.asarray(cols)

    # ------------------------------------------------------------ validity

    def check(self, unc: np.ndarray, ll: np.ndarray | None = None) -> None:
        """Refuse (InputError, one line) when the density difference is not the pointwise
        log-likelihood at the draws ``unc`` ``(k, dim)``; ``ll`` are their ``(k, N)`` values
        when already computed. A no-op for the ``log_lik`` source."""
        if self.source != "difference":
            return
        self.gap = None  # set by the sum's test below, not by an earlier refusal
        unc = np.asarray(unc, dtype=float).reshape(-1, self.model.dim)
        if ll is None:
            ll = self.columns(range(self.obs.n), unc)
        self._check_constraints(unc)
        full = self.model.log_density_many(unc)
        bases = self.bases()
        lp0 = bases[0].log_density_many(unc)
        # Σ_{i ∉ R} ℓ_i = lp(y) − lp(y_R) for the first baseline's observations R (R = ∅ for
        # the empty one).
        outside = np.setdiff1d(np.arange(self.obs.n), self.references()[0])
        total = ll[:, outside].sum(axis=1)
        want = full - lp0
        scale = 1.0 + np.abs(full) + np.abs(ll).sum(axis=1) + self.obs.n * np.abs(lp0)
        with np.errstate(invalid="ignore"):  # inf - inf: NaN, which is bad too
            gap = np.abs(total - want)
            allowed = SUM_RTOL * scale
            if self.solver:  # its terms carry the solver's error: within SOLVER_SUM_ABS
                allowed = np.maximum(allowed, SOLVER_SUM_ABS)
            bad = ~(gap <= allowed)
            finite = np.isfinite(gap) & np.isfinite(scale)  # the gaps a number measures
            self.gap = ((float(np.max(gap[finite])), float(np.max((gap / scale)[finite])))
                        if finite.any() else (float("inf"), float("inf")))
        # a term not finite is bad whatever the sum: an infinite scale would pass it
        bad |= ~np.all(np.isfinite(ll), axis=1) | ~np.isfinite(want)
        if np.any(bad):
            s = int(np.argmax(bad))
            raise InputError(
                f"{self.model.name}: the density difference is not a pointwise "
                f"log-likelihood (at a posterior draw the {self.obs.n} per-observation terms "
                f"sum to {total[s]:.6g}, the full-data difference is {want[s]:.6g}): the data "
                "enter beyond independent likelihood terms (transformed data from several "
                "observations, a prior depending on N, or dependent observations); add a "
                "log_lik generated quantity")
        self.checked = True

    @functools.cached_property
    def solver(self) -> bool:
        """Whether the program calls a numerical solver: its terms carry the solver's error."""
        return calls_solver(getattr(self.model, "code", None))

    def notes(self) -> list[str]:
        """What the check accepted beyond rounding: a solver's error in the terms' sum."""
        if not (self.checked and self.solver and self.gap is not None
                and self.gap[1] > SUM_RTOL):  # beyond rounding
            return []
        return [f"the density difference's terms sum to the whole data's difference within "
                f"{self.gap[0]:.1e} at the draws checked (the numerical solver's error; up to "
                f"{SOLVER_SUM_ABS:g} accepted)"]

    def _check_constraints(self, unc: np.ndarray) -> None:
        """The constrained parameters agree between the full data and the small instances."""
        want = self.model.constrain_many(unc, include_tp=False, include_gq=False, seed=1)
        probe = [self.bases()[0], self._instance(self._pair(self.obs.n - 1)[0])]
        for inst in probe:
            got = inst.constrain_many(unc, include_tp=False, include_gq=False, seed=1)
            if not np.allclose(got, want, rtol=1e-10, atol=1e-12):
                raise InputError(
                    f"{self.model.name}: a parameter constraint depends on the data (the same "
                    "unconstrained draw gives other parameter values with fewer observations), "
                    "so the density difference is not a pointwise log-likelihood; add a "
                    "log_lik generated quantity")

    def compare_log_lik(self, unc: np.ndarray, n_obs: int = 5) -> str | None:
        """For the ``log_lik`` source: a warning when the generated quantity disagrees with the
        density difference at the draws ``unc`` on a few observations (None when they agree
        or the difference cannot be formed)."""
        if self.source != "log_lik":
            return None
        unc = np.asarray(unc, dtype=float).reshape(-1, self.model.dim)
        idx = even_rows(self.obs.n, n_obs)
        diff = PointwiseLogLik(self.model, self.data, self.obs, "difference")
        try:
            other = diff.columns(idx, unc)
            diff._check_constraints(unc)
        except (InputError, DataError):
            return None
        mine = self.columns(idx, unc)
        gap = np.abs(mine - other)
        if np.max(gap) <= 1e-6 * (1.0 + np.max(np.abs(other))):
            return None
        j = int(np.argmax(np.max(gap, axis=0)))
        return (f"the log_lik generated quantity differs from the program's density difference "
                f"by up to {np.max(gap):.3g} at observation {idx[j] + 1}: if log_lik drops "
                "constants (_lupmf/_lupdf) or another likelihood is meant, elpd_loo is off; "
                f"use {Route(options={'log_lik': 'difference'})} to use the density itself")


def _density_or_nan(model: Any, x: np.ndarray) -> float:
    """``model``'s log density at the unconstrained point ``x``; NaN where the program fails
    there (a backend or the time budget is not the program's answer: raised)."""
    try:
        return float(model.log_density_many(x[None, :])[0])
    except (BackendUnsupported, deadline.OverBudget, deadline.BudgetSpent):
        raise
    except StanlogzError:
        return float("nan")
