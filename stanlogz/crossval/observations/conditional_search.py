"""The far-mode search of the conditional route (issue 44): where, away from the observed value,
p(y_i | y₋ᵢ, θ) may hold a second mode beyond a trough too deep for the outward quadrature or
sum to cross.

Two parts, both deterministic. A scale-free ladder of probes ``y_i ± spread · 2^k`` (k = 0..20,
``spread`` the data's sd: from one spread out to a million) joins the fixed far points of
:func:`~.conditional_nodes.far_points` (declared bounds, 0, multiples of y_i, the data's
quartiles). A probe landing on a narrow far mode is luck; a probe landing in its basin of
attraction is not (a mixture component's basin reaches from the trough before it to the next
one, a factor of 2 in distance at the least for modes that matter). So from every probe (and
from y_i) Newton steps climb the mean over a few draws of the density (each draw's divided by
its value at y_i), with the curvature and slope from finite differences and backtracking where
a step does not climb; the points where the climbs end, merged when within three local sds, are
the modes found. Each far mode is then handed to the callers as one more far point, where they
evaluate the density at every draw, together with the fixed far points and the rungs that are
neither hopeless at the search draws (within ``RUNG_DROP`` nats, their distance counted) nor in
the main mode's Gaussian tail there.

The program is a black box: its separate terms (each factor in which y_i appears) cannot be
evaluated one by one, so the modes climbed are those of the whole conditional. A mode whose
basin holds no probe (narrower than the gap between two rungs of the ladder and walled in by
troughs on both sides) stays unseen; :class:`SearchRecord` says what was probed so that the
notes can say it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy import special

#: Rungs of the ladder: y_i ± spread · 2^k for k = 0..LADDER - 1.
LADDER = 21
#: Draws (spread evenly over the run) at which the climbs evaluate the density.
SEARCH_DRAWS = 12
#: Most Newton steps per climb.
MAX_STEPS = 16
#: Nats above the main mode's Gaussian tail that a start must be to be climbed.
TAIL_MARGIN = 1.0
#: Most far modes kept (the highest).
MAX_MODES = 8
#: Rungs whose mean density at the search draws, times their distance in spreads, is this many
#: nats below y_i's are not evaluated again at every draw (their climbs have been run).
RUNG_DROP = 80.0


@dataclass
class SearchRecord:
    """What the far-mode search of one observation probed: ``n_probes`` starting points
    between ``reach[0]`` and ``reach[1]``, ``evaluations`` density instances evaluated at
    ``draws`` draws by the climbs, and the far ``modes`` found (values of y_i)."""

    n_probes: int
    reach: tuple[float, float]
    draws: int
    evaluations: int = 0
    modes: list[float] = field(default_factory=list)


def ladder(y0: float, spread: float, lo: float | None, hi: float | None) -> np.ndarray:
    """The rungs ``y0 ± spread · 2^k`` (k = 0..LADDER − 1) inside [lo, hi]."""
    k = spread * 2.0 ** np.arange(LADDER)
    out = np.concatenate([y0 - k[::-1], y0 + k])
    keep = np.isfinite(out)
    if lo is not None:
        keep &= out >= lo
    if hi is not None:
        keep &= out <= hi
    return out[keep]


def search_rows(n_draws: int) -> np.ndarray:
    """The draws (rows) the climbs use: ``SEARCH_DRAWS`` spread evenly over the run."""
    return np.unique(np.linspace(0, n_draws - 1, min(n_draws, SEARCH_DRAWS)).round().astype(int))


def climb(f: Callable[[np.ndarray], np.ndarray], starts: np.ndarray, y0: float, spread: float,
          lo: float | None, hi: float | None) -> tuple[list[float], int, np.ndarray]:
    """The far modes reached by Newton climbs from ``starts`` on the draws' mean density, the
    number of density instances evaluated, and the mean log density at ``starts`` relative to
    ``y0`` (where each climb began; −inf where no higher than the main mode's Gaussian tail).

    ``f(us)`` is the ``(R, len(us))`` log density at R draws (−inf where refused). The climb
    from ``y0`` runs first and reaches the main mode; a climb whose next step heads within
    three local sds of it (or of another climb's target) stops there, and a start no more than
    ``TAIL_MARGIN`` nats above the main mode's Gaussian tail is not climbed (a probe in that
    tail costs one evaluation)."""
    f0 = f(np.array([y0]))[:, 0]
    n_eval = 1

    last: list[np.ndarray] = []  # the per-draw values of the last call

    def mean_density(us: np.ndarray) -> np.ndarray:
        nonlocal n_eval
        n_eval += us.size
        if us.size == 0:
            return np.zeros(0)
        with np.errstate(invalid="ignore"):
            v = f(us) - f0[:, None]
        v = np.where(np.isfinite(v), v, -np.inf)
        last[:] = [v]
        return special.logsumexp(v, axis=0) - math.log(v.shape[0])

    st = _Climbs(np.concatenate([[y0], np.asarray(starts, dtype=float)]), y0, spread, lo, hi)
    st.fu[0] = 0.0
    st.active[0] = True
    for _ in range(MAX_STEPS):  # the main mode
        if not st.active[0]:
            break
        st.step(np.array([0]), mean_density)
    main_u = st.u[0]
    main_w = st.sd[0] if np.isfinite(st.sd[0]) else 1e-3 * spread
    rest = np.arange(1, st.u.size)
    st.fu[rest] = mean_density(st.u[rest])
    at_start = st.fu[rest].copy()
    st.active[rest] = np.isfinite(st.fu[rest])
    v_starts = last[0] if rest.size else np.zeros((f0.size, 0))
    h = 0.25 * spread
    mean_density(np.array([y0 - h, y0 + h]))
    tail = _in_tail(v_starts, last[0], st.u[rest], y0, h)
    at_start[tail] = -np.inf  # in the main mode's Gaussian tail: nothing to look at there
    st.active[rest] &= ~tail
    st.fu[rest[tail]] = -np.inf
    for _ in range(MAX_STEPS):
        j = np.flatnonzero(st.active)
        if j.size == 0:
            break
        st.step(j, mean_density, main_u, main_w)
    return _separated(st.u, st.fu, st.sd, spread), n_eval, at_start


def _in_tail(v: np.ndarray, side: np.ndarray, us: np.ndarray, y0: float, h: float
             ) -> np.ndarray:
    """Which of ``us`` (log densities ``v`` relative to y0's, per draw) are, at every draw, no
    more than ``TAIL_MARGIN`` nats (plus 1e-3 of the drop, for rounding) above that draw's
    quadratic through y0 and y0 ± h (``side``, relative): a start there leads back to the main
    mode (none is when a draw's quadratic is not concave)."""
    with np.errstate(invalid="ignore"):  # a side at -inf at some draw: not concave there
        g = (side[:, 1] - side[:, 0]) / (2 * h)
        c = (side[:, 1] + side[:, 0]) / h**2
    if not np.all(np.isfinite(c) & (c < 0)):
        return np.zeros(us.size, dtype=bool)
    x = us[None, :] - y0
    with np.errstate(invalid="ignore", over="ignore"):
        pred = g[:, None] * x + 0.5 * c[:, None] * x**2
        return np.all(~(v > pred + TAIL_MARGIN + 1e-3 * np.abs(pred)), axis=0)


class _Climbs:
    """The state of the climbs: positions ``u``, mean log density ``fu`` there, step caps
    ``scale``, finite-difference offsets ``delta``, local sds ``sd`` (NaN where convex) and
    which are still ``active``."""

    def __init__(self, u: np.ndarray, y0: float, spread: float, lo: float | None,
                 hi: float | None) -> None:
        self.u, self.y0, self.spread, self.lo, self.hi = u, y0, spread, lo, hi
        self.scale = np.maximum(np.abs(u - y0), spread)
        self.delta = 1e-4 * self.scale
        self.sd = np.full(u.size, np.nan)
        self.fu = np.full(u.size, -np.inf)
        self.active = np.zeros(u.size, dtype=bool)

    def step(self, j: np.ndarray, fn: Callable[[np.ndarray], np.ndarray],
             main_u: float | None = None, main_w: float = 0.0) -> None:
        """One Newton step (finite differences, backtracking) of the climbs ``j``; with
        ``main_u``, climbs heading within three local sds of the main mode or of another
        climb's target stop before the step is evaluated."""
        lo, hi, d = self.lo, self.hi, self.delta[j]
        side = fn(np.concatenate([_inside(self.u[j] - d, lo, hi), _inside(self.u[j] + d, lo, hi)]))
        fm, fp = side[:j.size], side[j.size:]
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            g = (fp - fm) / (2 * d)
            h = (fp - 2 * self.fu[j] + fm) / d**2
            newton = np.where(np.isfinite(h) & (h < 0), -g / h,
                              np.sign(g) * 0.5 * self.scale[j])
            local = np.where(h < 0, 1.0 / np.sqrt(-h), np.nan)
        step = np.clip(np.nan_to_num(newton), -2 * self.scale[j], 2 * self.scale[j])
        prop = _inside(self.u[j] + step, lo, hi, self.u[j])
        self.sd[j] = local
        width = np.maximum(np.nan_to_num(local, nan=0.0), main_w)
        stop = (np.abs(step) <= 1e-3 * np.nan_to_num(local, nan=0.0)) | ~np.isfinite(g) \
            | (self.scale[j] < 1e-9 * max(self.spread, abs(self.y0)))
        drop = np.zeros(j.size, dtype=bool)  # heading where another climb goes: no far mode
        if main_u is not None:
            drop = ~stop & (np.abs(prop - main_u) <= 3 * width)
            order = np.argsort(-self.fu[j])  # of climbs heading to one place, the highest goes on
            for a, ka in enumerate(order):
                if stop[ka] or drop[ka]:
                    continue
                for kb in order[a + 1:]:
                    if not (stop[kb] or drop[kb]) and \
                            abs(prop[kb] - prop[ka]) <= 3 * max(width[ka], width[kb]):
                        drop[kb] = True
            self.fu[j[drop]] = -np.inf
            stop |= drop
        go = ~stop
        jg = j[go]
        fprop = fn(prop[go])
        up = fprop > self.fu[jg]
        self.u[jg] = np.where(up, prop[go], self.u[jg])
        self.fu[jg] = np.where(up, fprop, self.fu[jg])
        self.scale[jg] = np.where(up, self.scale[jg], 0.25 * self.scale[jg])
        self.delta[j] = np.where(np.isfinite(local), np.minimum(d, 0.1 * local), d)
        self.active[j[stop]] = False


def _inside(u: np.ndarray, lo: float | None, hi: float | None,
            prev: np.ndarray | None = None) -> np.ndarray:
    """``u`` moved inside (lo, hi): halfway from ``prev`` to the bound when given, else onto
    the bound."""
    out = np.array(u, dtype=float)
    for b, below in ((lo, True), (hi, False)):
        if b is None:
            continue
        bad = out < b if below else out > b
        if prev is not None:
            out[bad] = 0.5 * (prev[bad] + b)
        else:
            out[bad] = b
    return out


def _separated(u: np.ndarray, fu: np.ndarray, sd: np.ndarray, spread: float) -> list[float]:
    """The ends of the climbs (the first is the main mode's) merged within three local sds,
    the main one and those that merge with it left out, highest first."""
    width = np.where(np.isfinite(sd), sd, 1e-3 * spread)
    ok = np.isfinite(fu)
    main_u, main_w = u[0], width[0]
    keep: list[tuple[float, float, float]] = []  # (u, f, width)
    for j in np.argsort(-np.where(ok, fu, -np.inf)):
        if not ok[j] or j == 0 or abs(u[j] - main_u) <= 3 * max(width[j], main_w):
            continue
        if any(abs(u[j] - m) <= 3 * max(width[j], w) for m, _, w in keep):
            continue
        keep.append((float(u[j]), float(fu[j]), float(width[j])))
    return [m for m, _, _ in keep[:MAX_MODES]]


def search_note(records: dict[int, SearchRecord], label: Callable[[int], str], spread: float,
                discrete: bool) -> str | None:
    """One line saying what the far-mode search probed over the observations ``records``
    (None when none was searched): the probes and their range, the climbs and the modes
    found, not a claim that nothing is there."""
    if not records:
        return None
    recs = list(records.values())
    lo, hi = min(r.reach[0] for r in recs), max(r.reach[1] for r in recs)
    n_probes = max(r.n_probes for r in recs)
    what = (f"far modes of p(y_i | y_-i, theta) looked for in {len(recs)} observation(s) at up "
            f"to {n_probes} probes each over {lo:.3g}..{hi:.3g} (declared bounds, 0, multiples "
            f"of y_i, the data's quartiles, y_i ± {spread:.3g}·2^k for k = 0..{LADDER - 1})")
    if discrete:
        return what + "; terms there summed where not negligible"
    found = {i: r.modes for i, r in records.items() if r.modes}
    evals = int(np.mean([r.evaluations for r in recs]))
    draws = max(r.draws for r in recs)
    climbs = (f", each followed uphill by Newton steps on the mean density of {draws} draws "
              f"(~{evals} evaluations per observation)")
    if not found:
        return what + climbs + ": no far mode found (one away from every probe's basin would "\
            "stay unseen)"
    i, modes = next(iter(found.items()))
    return (what + climbs + f": far modes found in {len(found)} observation(s) (e.g. "
            f"{label(i)} at {', '.join(f'{m:.4g}' for m in modes[:3])}), each evaluated at "
            "every draw and integrated where not negligible")
