"""Pieces of the numerical normalization over y_i (:mod:`.conditional_quadrature`): the map of
a range of y_i onto the real line, the tests of negligible ends, the geometric tail estimate,
and the far points where a second mode beyond a deep trough is looked for.

A sum or quadrature that runs outward from y_i and stops where the terms are ``DROP`` nats below
the maximum and falling cannot see a second mode beyond the trough (a zero-inflated count whose
spike at 0 lies 40 nats below the mode at y_i ≈ 100; a contamination component far away). No
finite number of evaluations proves that there is none; :func:`far_points` lists the places
where such modes sit in practice (the declared bounds, 0, multiples of y_i, the range of the
observed values, a scale-free ladder y_i ± spread·2^k), and the callers look there, draw by
draw, and at the modes that Newton climbs from those points reach
(:mod:`.conditional_search`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from .conditional_search import ladder

#: Nats below a draw's maximum where its integrand counts as negligible (e^-40 ≈ 4e-18).
DROP = 40.0
#: Multiples of y_i probed for far modes.
MULTIPLES = (-10.0, -1.0, 0.5, 2.0, 4.0, 10.0)
#: Decades of the data's spread probed on each side of y_i.
DECADES = (10.0, 1000.0)


@dataclass
class Map:
    """u(v) of a range (lo, hi) of y_i onto the real line, and log du/dv: u = c + s·sinh v
    without bounds, a log map for one bound, a logit map for two."""

    lo: float | None
    hi: float | None
    c: float
    s: float

    def u(self, v: np.ndarray) -> np.ndarray:
        """The value of y_i at ``v``."""
        if self.lo is None and self.hi is None:
            return self.c + self.s * np.sinh(v)
        if self.hi is None:
            return self.lo + np.exp(v)
        if self.lo is None:
            return self.hi - np.exp(v)
        return self.lo + (self.hi - self.lo) * special.expit(v)

    def log_jac(self, v: np.ndarray) -> np.ndarray:
        """log du/dv at ``v``."""
        if self.lo is None and self.hi is None:
            return math.log(self.s) + np.logaddexp(v, -v) - math.log(2.0)
        if self.lo is None or self.hi is None:
            return np.asarray(v, dtype=float)
        return (math.log(self.hi - self.lo) - np.logaddexp(0.0, -v) - np.logaddexp(0.0, v))

    def v(self, u: float) -> float:
        """The inverse map (``u`` strictly inside the range)."""
        if self.lo is None and self.hi is None:
            return math.asinh((u - self.c) / self.s)
        if self.hi is None:
            return math.log(u - self.lo)
        if self.lo is None:
            return math.log(self.hi - u)
        p = (u - self.lo) / (self.hi - self.lo)
        return math.log(p) - math.log1p(-p)


def far_points(y0: float, values: np.ndarray, spread: float, lo: float | None,
               hi: float | None, discrete: bool, rungs: bool = True) -> np.ndarray:
    """Sorted distinct values of y_i (other than ``y0``, inside [lo, hi]) where a far mode of
    p(y_i | y₋ᵢ, θ) is looked for: the declared bounds, 0, the ``MULTIPLES`` of ``y0``, the
    range and quartiles of the observed ``values``, ``y0`` ± ``DECADES`` × ``spread``, and the
    ladder ``y0 ± spread · 2^k`` (:func:`~.conditional_search.ladder`; left out when not
    ``rungs``; integers rounded)."""
    v = np.asarray(values, dtype=float)
    cands = [0.0, *(k * y0 for k in MULTIPLES), *np.quantile(v, [0.0, 0.25, 0.5, 0.75, 1.0]),
             *(y0 + d * k * spread for k in DECADES for d in (-1, 1))]
    cands += [b for b in (lo, hi) if b is not None]
    if rungs:
        cands += ladder(y0, spread, lo, hi).tolist()
    out = np.asarray(cands, dtype=float)
    if discrete:
        out = np.round(out)
    keep = np.isfinite(out) & (out != y0)
    if lo is not None:
        keep &= out >= lo
    if hi is not None:
        keep &= out <= hi
    return np.unique(out[keep])


def trim(vals: np.ndarray, centre: int) -> tuple[int, int]:
    """The columns ``[a, b)`` of ``vals`` to keep: on each side, the outer nodes past the
    innermost pair that is negligible and falling, when every node beyond it is negligible
    too (the outward search overshoots by up to a batch)."""
    m = np.max(vals, axis=1, keepdims=True)
    low = vals < m - DROP
    a, b = 0, vals.shape[1]
    for j in range(centre - 1, 0, -1):
        if negligible(vals[:, [j - 1, j]], m) and np.all(low[:, :j]):
            a = j - 1
            break
    for j in range(centre + 1, vals.shape[1] - 1):
        if negligible(vals[:, [j + 1, j]], m) and np.all(low[:, j + 1:]):
            b = j + 2
            break
    return a, b


def negligible(side: np.ndarray, m: np.ndarray) -> bool:
    """Whether the two outermost values ``side`` (outermost first, ``(S, 2)``) are below every
    draw's maximum ``m`` by DROP nats and falling outward."""
    if side.shape[1] < 2:
        return False
    out, inner = side[:, 0], side[:, 1]
    return bool(np.all((out < m[:, 0] - DROP) & (inner < m[:, 0] - DROP)
                       & ((out <= inner) | ~np.isfinite(out))))


def geometric_tail(side: np.ndarray) -> np.ndarray:
    """log of the terms beyond the outermost value ``side[:, 0]`` if they keep falling at the
    last ratio (capped at 0.99): an extrapolation, exact for a geometric tail, not a bound."""
    out, inner = side[:, 0], side[:, 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.clip(np.exp(np.nan_to_num(out - inner, nan=-np.inf)), 0.0, 0.99)
        return out + np.log(r) - np.log1p(-r)
