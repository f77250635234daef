"""The continuous half of :class:`~.conditional_quadrature.QuadratureLogLik`: log ∫ p̃(u) du
over the declared range of y_i by the trapezoid rule in v on u = u(v) (:class:`~.conditional_nodes.
Map`), one piece per separated mode.

The first piece is centred on the observed value; after it converges, the density is looked up
at the far candidates (:meth:`IntegralMixin.far_candidates`: the far points of
:func:`~.conditional_nodes.far_points` and the far modes that Newton climbs from them reach,
:mod:`.conditional_search`), and where it is not negligible there
(a mixture component or a state far from y_i) the range is cut at the end of the piece's nodes
(where its integrand is ``DROP`` nats down) and the far side gets its own quadrature centred on
that point, so each mode is resolved on its own scale. The pieces meet at the cut, so nothing is
truncated there; what is reported is an estimate (levels' disagreement plus the tails
extrapolated geometrically), not a proven bound: a mode whose basin holds no far point and
beyond a trough deeper than ``DROP`` stays unseen.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special

from ...errors import NoConditional
from .conditional_nodes import DROP, Map, far_points, geometric_tail, negligible, trim
from .conditional_search import RUNG_DROP, SearchRecord, climb, search_rows

#: Relative disagreement of two quadrature levels (≈ log-unit error) accepted per draw.
TOL = 1e-5
#: Most nodes of one quadrature.
MAX_NODES = 4097
#: Nodes evaluated per step of the outward search.
BATCH = 8
#: Most pieces of the range of a continuous y_i (one per separated mode found).
MAX_SEGMENTS = 6


class IntegralMixin:
    """Quadrature over a continuous y_i; the host provides ``_eval``, ``_probe``, ``_label``,
    ``model``, ``y``, ``spread``, ``error``, ``nodes``, ``pieces`` and ``_grid``."""

    model: Any
    y: np.ndarray
    spread: float
    error: np.ndarray
    nodes: np.ndarray
    pieces: np.ndarray
    discrete: bool
    search: dict[int, SearchRecord]
    _grid: Any
    _cands: tuple[int, np.ndarray] | None

    def _eval(self, i: int, us: np.ndarray, unc: np.ndarray, keep: bool = False) -> np.ndarray:
        raise NotImplementedError

    def _probe(self, i: int, us: np.ndarray, unc: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _label(self, i: int) -> str:
        raise NotImplementedError

    def far_candidates(self, i: int, unc: np.ndarray, lo: float | None, hi: float | None
                       ) -> np.ndarray:
        """Where a far mode of observation ``i`` is looked for at every draw: the far points
        (:func:`~.conditional_nodes.far_points`, the ladder included) and, for a continuous
        y_i, the far modes that Newton climbs from them reach
        (:func:`~.conditional_search.climb`, at a few of the draws ``unc``); what was probed is
        kept in ``search[i]``. Kept for further calls on the same observation."""
        if self._cands is not None and self._cands[0] == i:
            return self._cands[1]
        y0 = float(self.y[i])
        pts = far_points(y0, self.y, self.spread, lo, hi, self.discrete)
        reach = (float(min(pts.min(), y0)), float(max(pts.max(), y0))) if pts.size else (y0, y0)
        rec = SearchRecord(int(pts.size), reach, 0)
        if not self.discrete and pts.size:
            rows = search_rows(unc.shape[0])
            modes, n, f = climb(lambda us: self._probe(i, us, unc[rows]), pts, y0, self.spread,
                                lo, hi)
            rec.draws, rec.evaluations, rec.modes = int(rows.size), n, modes
            fixed = far_points(y0, self.y, self.spread, lo, hi, False, rungs=False)
            live = f + np.log(np.maximum(np.abs(pts - y0) / self.spread, 1.0)) > -RUNG_DROP
            pts = np.unique(np.concatenate([fixed, pts[live], modes]))
        self.search[i] = rec
        self._cands = (i, pts)
        return pts

    def _map(self, i: int, unc: np.ndarray, lo: float | None, hi: float | None, c: float
             ) -> Map:
        """The map of (lo, hi) onto the real line around ``c``, its scale from the median
        curvature at ``c``."""
        h = 1e-3 * self.spread
        room = min(c - lo if lo is not None else math.inf, hi - c if hi is not None
                   else math.inf)
        s = 0.25 * self.spread
        if room > 2 * h:
            f = self._eval(i, np.array([c - h, c, c + h]), unc)
            curv = (f[:, 0] - 2 * f[:, 1] + f[:, 2]) / h**2
            good = np.isfinite(curv) & (curv < 0)
            if np.any(good):
                s = float(np.median(1.0 / np.sqrt(-curv[good])))
        if lo is not None and hi is not None:
            s = min(s, hi - lo)
        return Map(lo, hi, c, s)

    def _integral(self, i: int, unc: np.ndarray, lo: float | None, hi: float | None
                  ) -> np.ndarray:
        """log ∫ p̃(u) du over the declared range of y_i, per draw: one quadrature around
        y_i, and one more around each far point (:func:`~.conditional_nodes.far_points`)
        where the density is not negligible, on pieces of the range cut where the
        neighbouring piece's integrand is."""
        g = self._grid
        if g is not None:
            segs = [self._reuse(i, sg, unc) for sg in g.extra["segments"]]
            if all(sg is not None for sg in segs) and self._far_density(
                    i, unc, segs, lo, hi) is None:
                return self._combine(i, segs)
        pieces: list[tuple[float | None, float | None, float, _Segment | None]] = [
            (lo, hi, float(self.y[i]), None)]
        for _ in range(MAX_SEGMENTS):
            pieces = [(a, b, c, sg if sg is not None else self._segment(i, unc, a, b, c))
                      for a, b, c, sg in pieces]
            segs = [sg for *_, sg in pieces if sg is not None]
            u = self._far_density(i, unc, segs, lo, hi)
            if u is None:
                break
            k = next(j for j, (a, b, *_) in enumerate(pieces)  # u may be a declared bound
                     if (a is None or u >= a) and (b is None or u <= b))
            a, b, c, sg = pieces[k]
            assert sg is not None
            cut = sg.span[0] if u < sg.span[0] else sg.span[1]
            pieces[k:k + 1] = ([(a, cut, u, None), (cut, b, c, None)] if u < cut
                               else [(a, cut, c, None), (cut, b, u, None)])
        else:
            raise NoConditional(f"{self.model.name}: p({self._label(i)} | rest) has more than "
                                f"{MAX_SEGMENTS} separated modes")
        self._grid = self._new_grid(i, segs)
        return self._combine(i, segs)

    def _segment(self, i: int, unc: np.ndarray, lo: float | None, hi: float | None,
                 c: float) -> _Segment:
        """The quadrature over (lo, hi) around ``c``: nodes extended until negligible, the
        step halved until two levels agree."""
        mp = self._map(i, unc, lo, hi, c)
        if (lo is None or c > lo) and (hi is None or c < hi):
            vc = mp.v(c)
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
        return _Segment(mp, v, step, cur, np.abs(np.expm1(prev - cur)), vals)

    def _reuse(self, i: int, sg: _Segment, unc: np.ndarray) -> _Segment | None:
        """``sg``'s nodes at other draws when its levels still agree and its ends are still
        negligible there (None otherwise)."""
        vals = self._g(i, sg.mp, sg.v, unc, keep=True)
        got = self._levels_agree(vals, sg.step)
        if got is None or not self._open_ends(vals):
            return None
        return _Segment(sg.mp, sg.v, sg.step, got[0], got[1], vals)

    def _far_density(self, i: int, unc: np.ndarray, segs: list[_Segment],
                     lo: float | None, hi: float | None) -> float | None:
        """The far point outside every piece with the largest density relative to the
        integral so far, when that density times its distance from y_i (a generous width) is
        within ``DROP`` nats of the integral at some draw; None when there is none."""
        y0 = float(self.y[i])
        pts = self.far_candidates(i, unc, lo, hi)
        # covered: inside a piece's nodes, or a piece's centre (one on a bound that the nodes
        # approach but never reach)
        pts = np.array([u for u in pts if not any(sg.span[0] <= u <= sg.span[1] or u == sg.mp.c
                                                  for sg in segs)])
        if pts.size == 0:
            return None
        total = special.logsumexp(np.column_stack([sg.cur for sg in segs]), axis=1)
        width = np.maximum(np.abs(pts - y0), max(sg.mp.s for sg in segs))
        score = self._probe(i, pts, unc) + np.log(width)[None, :] - total[:, None]
        best = np.max(score, axis=0)
        j = int(np.argmax(best))
        return float(pts[j]) if best[j] > -DROP else None

    def _combine(self, i: int, segs: list[_Segment]) -> np.ndarray:
        """log of the pieces' total; the error estimate their mass-weighted errors."""
        cur = np.column_stack([sg.cur for sg in segs])
        total = special.logsumexp(cur, axis=1)
        err = sum(np.exp(sg.cur - total) * sg.error for sg in segs)
        self.error[i] = float(np.max(err))
        self.nodes[i] = sum(sg.v.size for sg in segs)
        self.pieces[i] = len(segs)
        return total

    def _g(self, i: int, mp: Map, v: np.ndarray, unc: np.ndarray, keep: bool = False
           ) -> np.ndarray:
        """Integrand in v: log p̃(u(v)) + log du/dv, ``(S, len(v))``."""
        return self._eval(i, mp.u(v), unc, keep=keep) + mp.log_jac(v)[None, :]

    def _bracket(self, i: int, mp: Map, vc: float, step: float, unc: np.ndarray
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
                done[d] = negligible(side, m)
                if not done[d] and abs(reach[d]) * step > 400:
                    raise NoConditional(
                        f"{self.model.name}: the density does not fall off in {self._label(i)} "
                        "(p(y_i | y_-i, theta) is improper or too heavy-tailed to normalize)")
        order = sorted(ks)
        v, vals = vc + np.array(order) * step, np.concatenate([ks[q] for q in order], axis=1)
        a, b = trim(vals, order.index(0))
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
        return negligible(vals[:, :2], m) and negligible(vals[:, -2:][:, ::-1], m)


@dataclass
class _Segment:
    """One piece's quadrature: map, nodes, step, log integral and relative error estimate
    (levels' disagreement plus the geometric tails) per draw, the integrand at the nodes."""

    mp: Map
    v: np.ndarray
    step: float
    cur: np.ndarray
    rel: np.ndarray
    vals: np.ndarray

    @property
    def error(self) -> np.ndarray:
        """Relative error estimate per draw."""
        tail = (np.exp(geometric_tail(self.vals[:, :2]) + math.log(self.step) - self.cur)
                + np.exp(geometric_tail(self.vals[:, -2:][:, ::-1]) + math.log(self.step)
                         - self.cur))
        return self.rel + tail

    @property
    def span(self) -> tuple[float, float]:
        """The values of y_i at the outermost nodes, in increasing order."""
        a, b = float(self.mp.u(self.v[:1])[0]), float(self.mp.u(self.v[-1:])[0])
        return min(a, b), max(a, b)
