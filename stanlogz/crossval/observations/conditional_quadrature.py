"""log p(y_i | y₋ᵢ, θ) of any Stan program by normalizing its density over y_i numerically, for
programs whose density is not quadratic in y_i (GARCH volatility recursions, hidden Markov
models, non-Gaussian likelihoods with lags) and for integer observations.

With p̃(u) the program's full density (every constant kept) at a draw θ with y_i replaced by u,

    log p(y_i | y₋ᵢ, θ) = log p̃(y_i) − log ∫ p̃(u) du      (continuous y_i),
    log p(y_i | y₋ᵢ, θ) = log p̃(y_i) − log Σ_u p̃(u)        (integer y_i).

Every node u is one data instance of the compiled program evaluated at all S draws, so the nodes
are shared by the draws. Continuous y_i: the declared range of y_i (found from the values the
program refuses) is mapped to the real line (u = y_i + s·sinh v unbounded, a log map for one
bound, a logit map for two, s the median conditional scale from the curvature at y_i), the
trapezoid rule in v (geometrically convergent for smooth integrands decaying at both ends) runs
on a grid extended until every draw's integrand is ``DROP`` nats below its maximum and falling,
and the step is halved until two successive levels agree to ``TOL`` for every draw; the reported
error bound is that disagreement (the error of the coarser level) plus a geometric bound on the
truncated tails. Integer y_i: the sum runs outward from the observed value to the declared
bounds or until the terms are negligible, with a geometric bound on the truncated tail.
Where neither applies (the program refuses other values of y_i, the integrand does not fall off,
the quadrature does not converge) :class:`NoConditional` says why.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import special

from ...errors import InputError, StanlogzError
from ...stan.program import StanProgram
from .conditional import is_integer_valued, response_field
from .observations import Observations
from .pointwise import n_threads

#: Largest relative disagreement of two quadrature levels (≈ log-unit error) accepted per draw.
TOL = 1e-5
#: Nats below a draw's maximum where its integrand counts as negligible (e^-40 ≈ 4e-18).
DROP = 40.0
#: Most nodes of one quadrature (continuous) and terms of one sum (integer).
MAX_NODES = 4097
MAX_TERMS = 4000  # both sides together
#: Nodes evaluated per step of the outward search.
BATCH = 8
#: Draws below which the nodes are evaluated without threads.
SERIAL_BELOW = 16
#: How far (in units of the data's spread) a declared bound is looked for.
FAR = 1e8


class NoConditional(InputError):
    """The program's density cannot be normalized over the held-out data value (it refuses
    other values, is not integrable over them, or the quadrature does not converge)."""


@dataclass
class _Map:
    """u(v) of the declared range of y_i onto the real line, and log du/dv."""

    lo: float | None
    hi: float | None
    c: float
    s: float

    def u(self, v: np.ndarray) -> np.ndarray:
        if self.lo is None and self.hi is None:
            return self.c + self.s * np.sinh(v)
        if self.hi is None:
            return self.lo + np.exp(v)
        if self.lo is None:
            return self.hi - np.exp(v)
        return self.lo + (self.hi - self.lo) * special.expit(v)

    def log_jac(self, v: np.ndarray) -> np.ndarray:
        if self.lo is None and self.hi is None:
            return math.log(self.s) + np.logaddexp(v, -v) - math.log(2.0)
        if self.lo is None or self.hi is None:
            return np.asarray(v, dtype=float)
        return (math.log(self.hi - self.lo) - np.logaddexp(0.0, -v) - np.logaddexp(0.0, v))

    def v(self, u: float) -> float:
        if self.lo is None and self.hi is None:
            return math.asinh((u - self.c) / self.s)
        if self.hi is None:
            return math.log(u - self.lo)
        if self.lo is None:
            return math.log(self.hi - u)
        p = (u - self.lo) / (self.hi - self.lo)
        return math.log(p) - math.log1p(-p)


@dataclass
class _Grid:
    """The last observation's final nodes (reused by moment matching's repeated calls)."""

    i: int
    v: np.ndarray
    step: float
    extra: dict[str, Any] = field(default_factory=dict)


class QuadratureLogLik:
    """log p(y_i | y₋ᵢ, θ) of one program and data set at any unconstrained draws, by
    quadrature over y_i (continuous) or a sum over its support (integer); ``error[i]`` bounds
    the absolute log error of observation i's last column (max over draws), ``nodes[i]``
    counts its density instances, ``support[i]`` is the summed range (integer y)."""

    def __init__(self, model: StanProgram, data: Mapping[str, Any], obs: Observations,
                 response: str | None = None) -> None:
        self.model, self.data, self.obs = model, dict(data), obs
        self.response = response_field(self.data, obs, response, getattr(model, "code", None))
        y = np.asarray(self.data[self.response])
        if y.ndim != 1:
            raise NoConditional(f"{model.name}: {self.response} has several values per "
                                "observation; the normalization handles one value each")
        self.discrete = is_integer_valued(model, self.data, self.response)
        self.y = y.astype(int) if self.discrete else y.astype(float)
        spread = float(np.std(self.y)) if y.size > 1 else 0.0
        self.spread = spread if spread > 0 else max(1.0, float(np.max(np.abs(self.y))))
        self.error = np.zeros(obs.n)
        self.nodes = np.zeros(obs.n, dtype=int)
        self.support: dict[int, tuple[float, float]] = {}
        self._timing: list[tuple[float, float, int]] = []  # (build s, evaluate s, draws)
        self._bounds: tuple[float | None, float | None] | None = None
        self._grid: _Grid | None = None
        self._inst: dict[float, Any] = {}

    # ------------------------------------------------------------ data instances

    def _label(self, i: int) -> str:
        return f"{self.response}[{i + 1}]"

    def _build(self, i: int, u: float) -> Any:
        arr = self.y.tolist()
        arr[i] = int(u) if self.discrete else float(u)
        return self.model.with_data({**self.data, self.response: arr})

    def _accepts(self, i: int, u: float) -> bool:
        try:
            self._build(i, u)
        except StanlogzError:
            return False
        return True

    def _eval(self, i: int, us: np.ndarray, unc: np.ndarray, keep: bool = False
              ) -> np.ndarray:
        """``(S, len(us))`` log densities with y_i = each of ``us`` (threads over nodes);
        ``keep`` holds the instances for the next call on the same observation."""
        def one(u: float) -> np.ndarray:
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
            out = inst.log_density_many(unc)
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
        from the timings so far (threads over the nodes)."""
        if not self._timing:
            return 0.0
        t = np.array(self._timing)
        build = float(np.mean(t[:, 0]))
        per_draw = float(np.sum(t[:, 1]) / max(np.sum(t[:, 2]), 1))
        return n_nodes * (build + n_draws * per_draw) / min(n_threads(), max(int(n_nodes), 1))

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
        """log Σ_u p̃(u) over the support, outward from the observed value."""
        y0 = int(self.y[i])
        g = self._grid
        if g is not None:
            us = np.arange(int(g.v[0]), int(g.v[-1]) + 1)
            vals = self._eval(i, us, unc, keep=True)
            tails = self._tails(vals, lo is not None and us[0] <= lo,
                                hi is not None and us[-1] >= hi)
            if tails is not None:
                return self._finish_sum(i, vals, us, tails)
        parts = {0: self._eval(i, np.array([y0]), unc)}
        ends = {-1: y0, 1: y0}
        done = {d: (lo is not None and y0 <= lo) if d < 0 else (hi is not None and y0 >= hi)
                for d in (-1, 1)}
        while not all(done.values()):
            for d in (-1, 1):
                if done[d]:
                    continue
                stop = lo if d < 0 else hi
                k = np.arange(1, BATCH * 2 + 1)
                us = ends[d] + d * k
                if stop is not None:
                    us = us[d * (us - stop) <= 0]
                parts[d * (abs(ends[d] - y0) + 1)] = self._eval(i, us, unc)
                ends[d] = int(us[-1])
                seq = self._ordered(parts)
                m = np.max(seq, axis=1, keepdims=True)
                side = seq[:, :2] if d < 0 else seq[:, -2:][:, ::-1]
                done[d] = bool((stop is not None and ends[d] == stop)
                               or _negligible(side, m))
                if abs(ends[d] - y0) > MAX_TERMS // 2 and not done[d]:
                    raise NoConditional(
                        f"{self.model.name}: the terms of the sum over {self._label(i)} do not "
                        f"become negligible within {MAX_TERMS // 2} values of the observed one "
                        "(support unbounded and heavy)")
        us = np.arange(ends[-1], ends[1] + 1)
        vals = self._ordered(parts)
        tails = self._tails(vals, lo is not None and ends[-1] <= lo,
                            hi is not None and ends[1] >= hi)
        self._grid = _Grid(i, us.astype(float), 1.0)
        return self._finish_sum(i, vals, us, tails if tails is not None else (0.0, 0.0))

    @staticmethod
    def _ordered(parts: dict[int, np.ndarray]) -> np.ndarray:
        """Blocks keyed by signed offset (left blocks reversed) joined in increasing u."""
        left = [parts[k][:, ::-1] for k in sorted(parts) if k < 0]  # farthest block first
        right = [parts[k] for k in sorted(parts) if k > 0]
        return np.concatenate([*left, parts[0], *right], axis=1)

    def _finish_sum(self, i: int, vals: np.ndarray, us: np.ndarray,
                    tails: tuple[np.ndarray | float, np.ndarray | float]) -> np.ndarray:
        out = special.logsumexp(vals, axis=1)
        err = (np.asarray(tails[0]) + np.asarray(tails[1]))
        self.error[i] = float(np.max(err))
        self.nodes[i] = us.size
        self.support[i] = (float(us[0]), float(us[-1]))
        return out

    def _tails(self, vals: np.ndarray, closed_lo: bool, closed_hi: bool
               ) -> tuple[np.ndarray, np.ndarray] | None:
        """Relative geometric bounds on the mass beyond each end (0 at a declared bound);
        None when an open end is not negligible and falling."""
        total = special.logsumexp(vals, axis=1)
        m = np.max(vals, axis=1, keepdims=True)
        out = []
        for closed, side in ((closed_lo, vals[:, :2]), (closed_hi, vals[:, -2:][:, ::-1])):
            if closed:
                out.append(np.zeros(vals.shape[0]))
                continue
            if side.shape[1] < 2 or not _negligible(side, m):
                return None
            out.append(np.exp(_geometric_tail(side) - total))
        return out[0], out[1]

    # continuous y_i ---------------------------------------------------

    def _map(self, i: int, unc: np.ndarray, lo: float | None, hi: float | None) -> _Map:
        """The map onto the real line, its scale from the median curvature at y_i."""
        y0 = float(self.y[i])
        h = 1e-3 * self.spread
        room = min(y0 - lo if lo is not None else math.inf, hi - y0 if hi is not None
                   else math.inf)
        s = 0.25 * self.spread
        if room > 2 * h:
            f = self._eval(i, np.array([y0 - h, y0 + h]), unc)
            f0 = self.model.log_density_many(unc)
            curv = (f[:, 0] - 2 * f0 + f[:, 1]) / h**2
            good = np.isfinite(curv) & (curv < 0)
            if np.any(good):
                s = float(np.median(1.0 / np.sqrt(-curv[good])))
        if lo is not None and hi is not None:
            s = min(s, hi - lo)
        return _Map(lo, hi, y0, s)

    def _integral(self, i: int, unc: np.ndarray, lo: float | None, hi: float | None
                  ) -> np.ndarray:
        """log ∫ p̃(u) du over the declared range of y_i, per draw."""
        g = self._grid
        if g is not None:
            mp = g.extra["map"]
            vals = self._g(i, mp, g.v, unc, keep=True)
            got = self._levels_agree(vals, g.step)
            if got is not None and self._open_ends(vals):
                return self._finish(i, got, vals, g.step)
        mp = self._map(i, unc, lo, hi)
        y0 = float(self.y[i])
        inside = (lo is None or y0 > lo) and (hi is None or y0 < hi)
        if inside:
            vc = mp.v(y0)
        else:  # the observed value on a declared bound
            vc = 0.0 if lo is not None and hi is not None else math.log(mp.s)
        jac = math.exp(float(mp.log_jac(np.array(vc))))
        step = min(0.5, 0.5 * mp.s / jac) if jac > 0 else 0.5
        v, vals = self._bracket(i, mp, vc, step, unc)
        prev = special.logsumexp(vals, axis=1) + math.log(step)
        while True:
            mids = 0.5 * (v[:-1] + v[1:])
            new = self._g(i, mp, mids, unc)
            both = np.empty((vals.shape[0], v.size + mids.size))
            both[:, 0::2], both[:, 1::2] = vals, new
            grid = np.empty(v.size + mids.size)
            grid[0::2], grid[1::2] = v, mids
            v, vals, step = grid, both, 0.5 * step
            cur = special.logsumexp(vals, axis=1) + math.log(step)
            if np.max(np.abs(np.expm1(prev - cur))) <= TOL:
                break
            if v.size > MAX_NODES:
                raise NoConditional(
                    f"{self.model.name}: the integral over {self._label(i)} is not resolved by "
                    f"quadrature on {v.size} nodes (relative disagreement "
                    f"{np.max(np.abs(np.expm1(prev - cur))):.2g})")
            prev = cur
        self._grid = _Grid(i, v, step, extra={"map": mp})
        return self._finish(i, (cur, np.abs(np.expm1(prev - cur))), vals, step)

    def _g(self, i: int, mp: _Map, v: np.ndarray, unc: np.ndarray, keep: bool = False
           ) -> np.ndarray:
        """Integrand in v: log p̃(u(v)) + log du/dv, ``(S, len(v))``."""
        return self._eval(i, mp.u(v), unc, keep=keep) + mp.log_jac(v)[None, :]

    def _bracket(self, i: int, mp: _Map, vc: float, step: float, unc: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
        """Coarse nodes vc + k·step extended on each side until every draw's integrand is
        negligible and falling there."""
        ks = {0: self._g(i, mp, np.array([vc]), unc)}
        reach = {-1: 0, 1: 0}
        done = {-1: False, 1: False}
        while not all(done.values()):
            for d in (-1, 1):
                if done[d]:
                    continue
                k = reach[d] + d * np.arange(1, BATCH + 1)
                vals = self._g(i, mp, vc + k * step, unc)
                for j, kk in enumerate(k):
                    ks[int(kk)] = vals[:, j:j + 1]
                reach[d] = int(k[-1])
                order = sorted(ks)
                allv = np.concatenate([ks[q] for q in order], axis=1)
                m = np.max(allv, axis=1, keepdims=True)
                side = allv[:, :2] if d < 0 else allv[:, -2:][:, ::-1]
                done[d] = _negligible(side, m)
                if not done[d] and abs(reach[d]) * step > 400:
                    raise NoConditional(
                        f"{self.model.name}: the density does not fall off in {self._label(i)} "
                        "(p(y_i | y_-i, theta) is improper or too heavy-tailed to normalize)")
        order = sorted(ks)
        v, vals = vc + np.array(order) * step, np.concatenate([ks[q] for q in order], axis=1)
        a, b = _trim(vals, order.index(0))
        return v[a:b], vals[:, a:b]

    def _levels_agree(self, vals: np.ndarray, step: float
                      ) -> tuple[np.ndarray, np.ndarray] | None:
        """(log integral, relative disagreement with the every-other-node rule) when it is
        within TOL for every draw."""
        if vals.shape[1] < 5 or vals.shape[1] % 2 == 0:
            return None
        cur = special.logsumexp(vals, axis=1) + math.log(step)
        half = special.logsumexp(vals[:, 0::2], axis=1) + math.log(2 * step)
        rel = np.abs(np.expm1(half - cur))
        return (cur, rel) if np.max(rel) <= TOL else None

    @staticmethod
    def _open_ends(vals: np.ndarray) -> bool:
        m = np.max(vals, axis=1, keepdims=True)
        return _negligible(vals[:, :2], m) and _negligible(vals[:, -2:][:, ::-1], m)

    def _finish(self, i: int, got: tuple[np.ndarray, np.ndarray], vals: np.ndarray,
                step: float) -> np.ndarray:
        cur, rel = got
        tail = (np.exp(_geometric_tail(vals[:, :2]) + math.log(step) - cur)
                + np.exp(_geometric_tail(vals[:, -2:][:, ::-1]) + math.log(step) - cur))
        self.error[i] = float(np.max(rel + tail))
        self.nodes[i] = vals.shape[1]
        return cur


def _trim(vals: np.ndarray, centre: int) -> tuple[int, int]:
    """The columns ``[a, b)`` of ``vals`` to keep: on each side, the outer nodes past the
    innermost pair that is negligible and falling, when every node beyond it is negligible
    too (the outward search overshoots by up to a batch)."""
    m = np.max(vals, axis=1, keepdims=True)
    low = vals < m - DROP
    a, b = 0, vals.shape[1]
    for j in range(centre - 1, 0, -1):
        if _negligible(vals[:, [j - 1, j]], m) and np.all(low[:, :j]):
            a = j - 1
            break
    for j in range(centre + 1, vals.shape[1] - 1):
        if _negligible(vals[:, [j + 1, j]], m) and np.all(low[:, j + 1:]):
            b = j + 2
            break
    return a, b


def _negligible(side: np.ndarray, m: np.ndarray) -> bool:
    """Whether the two outermost values ``side`` (outermost first, ``(S, 2)``) are below every
    draw's maximum ``m`` by DROP nats and falling outward."""
    if side.shape[1] < 2:
        return False
    out, inner = side[:, 0], side[:, 1]
    return bool(np.all((out < m[:, 0] - DROP) & (inner < m[:, 0] - DROP)
                       & ((out <= inner) | ~np.isfinite(out))))


def _geometric_tail(side: np.ndarray) -> np.ndarray:
    """log of a bound on the terms beyond the outermost value ``side[:, 0]`` if they keep
    falling at the last ratio (capped at 0.99)."""
    out, inner = side[:, 0], side[:, 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.clip(np.exp(np.nan_to_num(out - inner, nan=-np.inf)), 0.0, 0.99)
        return out + np.log(r) - np.log1p(-r)
