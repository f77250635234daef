"""log p(y_i | y₋ᵢ, θ) of any Stan program by normalizing its density over y_i numerically, for
programs whose density is not quadratic in y_i (GARCH volatility recursions, hidden Markov
models, non-Gaussian likelihoods with lags) and for integer observations.

With p̃(u) the program's full density (every constant kept) at a draw θ with y_i replaced by u,

    log p(y_i | y₋ᵢ, θ) = log p̃(y_i) − log ∫ p̃(u) du      (continuous y_i),
    log p(y_i | y₋ᵢ, θ) = log p̃(y_i) − log Σ_u p̃(u)        (integer y_i).

Every node u is one data instance of the compiled program evaluated at all S draws, so the nodes
are shared by the draws. Continuous y_i (:mod:`.conditional_integral`): the declared range of
y_i (found from the values the program refuses) is mapped to the real line and integrated by
the trapezoid rule, the step halved until two levels agree to ``TOL`` for every draw, with one
more piece around every far point where the density is not negligible (a second mode beyond a
deep trough). Integer y_i: the sum runs outward from the observed value to a declared bound
when it lies within ``MAX_TERMS // 2`` values (a zero-inflated count's spike at 0 is summed, not
cut off at the trough before it), else until the terms are negligible and falling and no far
point holds a term that is not. The reported error is an estimate, not a proven bound: the
disagreement of the last two quadrature levels plus the tails beyond open ends extrapolated
geometrically from the last two terms (nothing at an end reached at a declared bound).
Where neither applies (the program refuses other values of y_i, the integrand does not fall off,
the quadrature does not converge) :class:`NoConditional` says why.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import special

from ..._util import deadline
from ..._util.arrays import even_rows
from ..._util.threads import n_threads
from ...errors import OverBudget, StanlogzError
from ...stan.program import StanProgram, with_every_constant, with_field
from .conditional import is_integer_valued, response_field
from .conditional_integral import BATCH, IntegralMixin, NoConditional
from .conditional_nodes import DROP, geometric_tail, negligible
from .conditional_search import SearchRecord
from .observations import Observations
from .pointwise import run_all

#: Most terms of one sum (integer y_i), both sides together.
MAX_TERMS = 4000
#: Draws below which the nodes are evaluated without threads.
SERIAL_BELOW = 16
#: How far (in units of the data's spread) a declared bound is looked for.
FAR = 1e8
#: Draws at which the density is timed before a pass (:meth:`QuadratureLogLik.calibrate`),
#: many and few.
CALIBRATE_DRAWS = 1000
CALIBRATE_FEW = 3


@dataclass
class _Grid:
    """The last observation's final nodes (reused by moment matching's repeated calls)."""

    i: int
    v: np.ndarray
    step: float
    extra: dict[str, Any] = field(default_factory=dict)


class QuadratureLogLik(IntegralMixin):
    """log p(y_i | y₋ᵢ, θ) of one program and data set at any unconstrained draws, by
    quadrature over y_i (continuous) or a sum over its support (integer); ``error[i]`` estimates
    the absolute log error of observation i's last column (max over draws; see the module
    docstring for what it covers), ``nodes[i]`` counts its density instances, ``support[i]``
    is the summed range and ``open_ends[i]`` its ends not at a declared bound (integer y),
    ``pieces[i]`` the separated modes integrated (continuous y)."""

    def __init__(self, model: StanProgram, data: Mapping[str, Any], obs: Observations,
                 response: str | None = None) -> None:
        self.model, self.data, self.obs = model, dict(data), obs
        self.response = response_field(self.data, obs, response, getattr(model, "code", None))
        y = np.asarray(self.data[self.response])
        if y.ndim != 1:
            err = NoConditional(f"{model.name}: {self.response} has several values per "
                                "observation; the normalization handles one value each")
            err.several_values = True  # routes.py names K-fold over whole observations first
            raise err
        self.discrete = is_integer_valued(model, self.data, self.response)
        self.y = y.astype(int) if self.discrete else y.astype(float)
        spread = float(np.std(self.y)) if y.size > 1 else 0.0
        self.spread = spread if spread > 0 else max(1.0, float(np.max(np.abs(self.y))))
        self.error = np.zeros(obs.n)
        self.nodes = np.zeros(obs.n, dtype=int)
        self.support: dict[int, tuple[float, float]] = {}
        self.open_ends = np.zeros(obs.n, dtype=int)  # sum ends not at a declared bound
        self.pieces = np.ones(obs.n, dtype=int)  # quadrature pieces (separated modes)
        self.probes: dict[int, int] = {}  # far points evaluated
        self.search: dict[int, SearchRecord] = {}  # what the far-mode search probed
        self._cands: tuple[int, np.ndarray] | None = None  # far_candidates of one observation
        self._timing: list[tuple[float, float, int]] = []  # (build s, evaluate s, draws)
        self._call_cost: tuple[float, float] | None = None  # (per call, per draw) s: calibrate
        # the instances' program and propto flag (with_every_constant; set at the first build)
        self._base: Any = None
        self._propto = False
        self._base_lock = threading.Lock()
        self._bounds: tuple[float | None, float | None] | None = None
        self._grid: _Grid | None = None
        self._inst: dict[float, Any] = {}

    # ------------------------------------------------------------ data instances

    def _label(self, i: int) -> str:
        return f"{self.response}[{i + 1}]"

    def _new_grid(self, i: int, segments: list[Any]) -> _Grid:
        return _Grid(i, np.zeros(0), 0.0, extra={"segments": segments})

    def _build(self, i: int, u: float) -> Any:
        """The data instance with y_i = ``u`` of the program with every constant (called
        with ``self._propto``)."""
        arr = self.y.tolist()
        arr[i] = int(u) if self.discrete else float(u)
        return with_field(self._instances_base(), self.data, self.response, arr)

    def _instances_base(self) -> Any:
        """The program the data instances are built from (set once; called before the
        callers' ``except StanlogzError``, so that a backend that cannot keep the constants
        says so instead of reading as a refused value)."""
        with self._base_lock:
            if self._base is None:
                self._base, self._propto = with_every_constant(self.model)
        return self._base

    def _accepts(self, i: int, u: float) -> bool:
        self._instances_base()
        try:
            self._build(i, u)
        except StanlogzError:
            return False
        return True

    def _eval(self, i: int, us: np.ndarray, unc: np.ndarray, keep: bool = False
              ) -> np.ndarray:
        """``(S, len(us))`` log densities with y_i = each of ``us`` (threads over nodes);
        ``keep`` holds the instances for the next call on the same observation."""
        self._instances_base()
        def one(u: float) -> np.ndarray:
            deadline.check_spent(f"the conditional log-likelihood of {self._label(i)}")
            t0 = time.perf_counter()
            inst = self._inst.get(u)
            if inst is None:
                try:
                    inst = self._build(i, u)
                except StanlogzError as exc:
                    raise NoConditional(
                        f"{self.model.name} refuses {self._label(i)} = {u:.6g} inside its "
                        f"declared range ({str(exc).splitlines()[0][:120]}), so y_i cannot be "
                        "varied to normalize the density") from None
                if keep:
                    self._inst[u] = inst
            t1 = time.perf_counter()
            out = inst.log_density_many(unc, propto=self._propto)
            self._timing.append((t1 - t0, time.perf_counter() - t1, unc.shape[0]))
            return np.where(np.isfinite(out), out, -np.inf)

        us = [float(u) for u in np.asarray(us).ravel()]
        # threads over nodes; one call per draw (a path sampler's) is cheaper serially
        threads = min(n_threads(), len(us)) if unc.shape[0] >= SERIAL_BELOW else 1
        if threads <= 1:
            cols = [one(u) for u in us]
        else:
            with ThreadPoolExecutor(threads) as pool:
                cols = list(pool.map(one, us))
        return np.column_stack(cols) if cols else np.empty((unc.shape[0], 0))

    def bounds(self, i: int) -> tuple[float | None, float | None]:
        """The declared range of y_i: the values the program accepts (None: unbounded), found
        by bisection between the observed value and the first refused one (kept for the other
        observations after a two-instance check)."""
        if self._bounds is not None and self._bounds_hold(i, self._bounds):
            return self._bounds
        self._bounds = (self._edge(i, -1), self._edge(i, 1))
        return self._bounds

    def _bounds_hold(self, i: int, b: tuple[float | None, float | None]) -> bool:
        eps = 1 if self.discrete else 1e-9 * self.spread
        for d, e in ((-1, b[0]), (1, b[1])):
            if e is None:
                if not self._accepts(i, self.y[i] + d * (FAR * self.spread
                                                        if not self.discrete else 10**8)):
                    return False
            elif (d * (e - self.y[i]) < 0 or not self._accepts(i, e)
                  or self._accepts(i, e + d * eps)):
                return False
        return True

    def _edge(self, i: int, d: int) -> float | None:
        y0 = self.y[i]
        if self.discrete:
            far: float = 10**8
            if self._accepts(i, y0 + d * far):
                return None
            lo, hi = 0, int(far)  # distances: lo accepted, hi refused
            while hi - lo > 1:
                mid = (lo + hi) // 2
                lo, hi = (mid, hi) if self._accepts(i, y0 + d * mid) else (lo, mid)
            return y0 + d * lo
        scale = max(self.spread, abs(float(y0)))
        far = FAR * scale
        if self._accepts(i, y0 + d * far):
            return None
        hi = far  # refused; halve until accepted (or down to rounding: y0 on the bound)
        while hi > 1e-14 * scale and not self._accepts(i, y0 + d * 0.5 * hi):
            hi *= 0.5
        lo = 0.5 * hi if hi > 1e-14 * scale else 0.0
        while hi - lo > 1e-13 * max(hi, 1e-300) and lo > 0:
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if self._accepts(i, y0 + d * mid) else (lo, mid)
        edge = y0 + d * lo
        # a round bound (0, 1, a data value printed short) found a few ulps inside
        for cand in (round(edge), float(f"{edge:.10g}")):
            if d * (cand - edge) > 0 and abs(cand - edge) <= 1e-9 * scale \
                    and self._accepts(i, cand):
                return float(cand)
        return edge

    def seconds(self, n_nodes: float, n_draws: int) -> float:
        """Expected wall time of ``n_nodes`` instances evaluated at ``n_draws`` draws each,
        from the timings so far (threads over the nodes): an instance's build plus a call's
        cost, split by :meth:`calibrate` into a part that does not grow with the draws and a
        part per draw (before it, all of it counts per draw)."""
        if not self._timing:
            return 0.0
        t = np.array(self._timing)
        build = float(np.mean(t[:, 0]))
        if self._call_cost is not None:
            per_call, per_draw = self._call_cost
        else:
            per_call, per_draw = 0.0, float(np.sum(t[:, 1]) / max(np.sum(t[:, 2]), 1))
        return (n_nodes * (build + per_call + n_draws * per_draw)
                / min(n_threads(), max(int(n_nodes), 1)))

    def calibrate(self, unc: np.ndarray) -> None:
        """Time the program's density at a few and at ``CALIBRATE_DRAWS`` of the draws ``unc``
        (twice each, alternating, the faster kept), for :meth:`seconds`' cost of a call
        (fixed) and of a draw: the trials at a few draws alone read the fixed cost as a cost
        per draw (the interpreter's ~15 ms per call and 44 us per draw on a hidden Markov
        model of 100 steps made the expected pass 77 times too long)."""
        unc = np.asarray(unc, dtype=float).reshape(-1, self.model.dim)
        m = min(unc.shape[0], CALIBRATE_DRAWS)
        if m <= CALIBRATE_FEW:
            return
        few, many = unc[even_rows(unc.shape[0], CALIBRATE_FEW)], unc[even_rows(unc.shape[0], m)]
        self._instances_base()
        best = [np.inf, np.inf]
        for _ in range(2):
            for j, rows in enumerate((few, many)):
                try:  # a new instance each time: its first call's own cost counts (a node's)
                    inst = self._build(0, self.y[0])
                except StanlogzError:
                    return
                t0 = time.perf_counter()
                inst.log_density_many(rows, propto=self._propto)
                best[j] = min(best[j], time.perf_counter() - t0)
        per_draw = max(0.0, (best[1] - best[0]) / (m - CALIBRATE_FEW))
        self._call_cost = (max(0.0, best[0] - CALIBRATE_FEW * per_draw), per_draw)

    # ------------------------------------------------------------ columns

    def column(self, i: int, unc: np.ndarray) -> np.ndarray:
        """log p(y_i | y₋ᵢ, θ) at unconstrained draws ``unc`` ``(S, dim)``."""
        unc = np.ascontiguousarray(np.asarray(unc, dtype=float).reshape(-1, self.model.dim))
        if self._grid is None or self._grid.i != i:
            self._inst.clear()
            self._grid = None
        lo, hi = self.bounds(i)
        if lo is not None and hi is not None and hi - lo <= 0:
            raise NoConditional(f"{self.model.name} accepts no other value of {self._label(i)} "
                                "than the observed one, so y_i has no conditional "
                                "distribution to normalize")
        num = self.model.log_density_many(unc)
        log_norm = (self._sum(i, unc, lo, hi) if self.discrete
                    else self._integral(i, unc, lo, hi))
        return num - log_norm

    # integer y_i ------------------------------------------------------

    def _sum(self, i: int, unc: np.ndarray, lo: float | None, hi: float | None
             ) -> np.ndarray:
        """log Σ_u p̃(u) over the support, outward from the observed value: to a declared bound
        within ``MAX_TERMS // 2`` values whatever the terms do there (a spike at 0 beyond a
        trough), else until the terms are negligible and falling and no far point
        (:func:`~.conditional_nodes.far_points`) holds a term that is not."""
        y0 = int(self.y[i])
        reach = {d: b is not None and abs(b - y0) <= MAX_TERMS // 2 for d, b in ((-1, lo),
                                                                                (1, hi))}
        g = self._grid
        if g is not None:
            us = np.arange(int(g.v[0]), int(g.v[-1]) + 1)
            vals = self._eval(i, us, unc, keep=True)
            closed = (lo is not None and us[0] <= lo, hi is not None and us[-1] >= hi)
            tails = self._tails(vals, *closed)
            if (tails is not None and (closed[0] or not reach[-1])
                    and (closed[1] or not reach[1])
                    and not self._far_terms(i, unc, us, vals, lo, hi)):
                return self._finish_sum(i, vals, us, tails, closed)
        parts = {0: self._eval(i, np.array([y0]), unc)}
        ends, target = {-1: y0, 1: y0}, {-1: y0, 1: y0}
        done = {d: (lo is not None and y0 <= lo) if d < 0 else (hi is not None and y0 >= hi)
                for d in (-1, 1)}
        while True:
            while not all(done.values()):
                for d in (-1, 1):
                    if not done[d]:
                        done[d] = self._extend(i, unc, parts, ends, d, lo if d < 0 else hi,
                                               target[d], reach[d])
            us = np.arange(ends[-1], ends[1] + 1)
            vals = self._ordered(parts)
            far = self._far_terms(i, unc, us, vals, lo, hi)
            if not far:
                break
            for u in far:  # sum on past the far term, then until negligible again
                d = 1 if u > y0 else -1
                if abs(u - y0) > MAX_TERMS // 2:
                    raise NoConditional(
                        f"{self.model.name}: p({self._label(i)} | rest) has a far mode at "
                        f"{u:.0f}, beyond the {MAX_TERMS // 2} values a sum may take on a side")
                target[d] = int(u) if d * (u - target[d]) > 0 else target[d]
                done[d] = False
        closed = (lo is not None and ends[-1] <= lo, hi is not None and ends[1] >= hi)
        tails = self._tails(vals, *closed)
        self._grid = _Grid(i, us.astype(float), 1.0)
        return self._finish_sum(i, vals, us, tails if tails is not None else (0.0, 0.0), closed)

    def _extend(self, i: int, unc: np.ndarray, parts: dict[int, np.ndarray],
                ends: dict[int, int], d: int, stop: float | None, target: int, to_bound: bool
                ) -> bool:
        """One block of terms on side ``d``; whether that side is done (at its bound, or past
        ``target`` with negligible falling terms and no bound to reach)."""
        y0 = int(self.y[i])
        us = ends[d] + d * np.arange(1, BATCH * 2 + 1)
        if stop is not None:
            us = us[d * (us - stop) <= 0]
        parts[d * (abs(ends[d] - y0) + 1)] = self._eval(i, us, unc)
        ends[d] = int(us[-1])
        if stop is not None and ends[d] == stop:
            return True
        seq = self._ordered(parts)
        m = np.max(seq, axis=1, keepdims=True)
        side = seq[:, :2] if d < 0 else seq[:, -2:][:, ::-1]
        done = not to_bound and d * (ends[d] - target) >= 0 and negligible(side, m)
        if abs(ends[d] - y0) > MAX_TERMS // 2 and not done:
            raise NoConditional(
                f"{self.model.name}: the terms of the sum over {self._label(i)} do not "
                f"become negligible within {MAX_TERMS // 2} values of the observed one "
                "(support unbounded and heavy)")
        return done

    def _far_terms(self, i: int, unc: np.ndarray, us: np.ndarray, vals: np.ndarray,
                   lo: float | None, hi: float | None) -> list[float]:
        """Far points outside the summed range ``us`` whose term is not negligible (within
        ``DROP`` nats of the largest summed term) at some draw."""
        pts = self.far_candidates(i, unc, lo, hi)
        pts = pts[(pts < us[0]) | (pts > us[-1])]
        if pts.size == 0:
            return []
        f = self._probe(i, pts, unc)
        m = np.max(vals, axis=1, keepdims=True)
        return [float(u) for u, hit in zip(pts, np.any(f > m - DROP, axis=0), strict=True)
                if hit]

    def _probe(self, i: int, us: np.ndarray, unc: np.ndarray) -> np.ndarray:
        """``(S, len(us))`` log densities at probe values (-inf where refused)."""
        out = np.full((unc.shape[0], len(us)), -np.inf)

        def one(j: int) -> None:
            try:
                out[:, j] = self._eval(i, np.array([us[j]]), unc)[:, 0]
            except OverBudget:  # the time budget ended: not a probe with no mass
                raise
            except StanlogzError:  # includes NoConditional: a refused probe holds no mass
                pass

        run_all(one, range(len(us)), unc.shape[0])
        self.probes[i] = self.probes.get(i, 0) + len(us)
        return out

    @staticmethod
    def _ordered(parts: dict[int, np.ndarray]) -> np.ndarray:
        """Blocks keyed by signed offset (left blocks reversed) joined in increasing u."""
        left = [parts[k][:, ::-1] for k in sorted(parts) if k < 0]  # farthest block first
        right = [parts[k] for k in sorted(parts) if k > 0]
        return np.concatenate([*left, parts[0], *right], axis=1)

    def _finish_sum(self, i: int, vals: np.ndarray, us: np.ndarray,
                    tails: tuple[np.ndarray | float, np.ndarray | float],
                    closed: tuple[bool, bool]) -> np.ndarray:
        out = special.logsumexp(vals, axis=1)
        err = (np.asarray(tails[0]) + np.asarray(tails[1]))
        self.error[i] = float(np.max(err))
        self.nodes[i] = us.size
        self.support[i] = (float(us[0]), float(us[-1]))
        self.open_ends[i] = 2 - int(closed[0]) - int(closed[1])
        return out

    def _tails(self, vals: np.ndarray, closed_lo: bool, closed_hi: bool
               ) -> tuple[np.ndarray, np.ndarray] | None:
        """Relative geometric estimates of the mass beyond each end (0 at a declared bound);
        None when an open end is not negligible and falling."""
        total = special.logsumexp(vals, axis=1)
        m = np.max(vals, axis=1, keepdims=True)
        out = []
        for closed, side in ((closed_lo, vals[:, :2]), (closed_hi, vals[:, -2:][:, ::-1])):
            if closed:
                out.append(np.zeros(vals.shape[0]))
                continue
            if side.shape[1] < 2 or not negligible(side, m):
                return None
            out.append(np.exp(geometric_tail(side) - total))
        return out[0], out[1]
