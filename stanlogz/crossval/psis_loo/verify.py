"""LOO's self-check (``loo(verify=K)``): after the answer, a few pointwise values
still estimated from the posterior draws (PSIS, or moment matching) are recomputed by exact
refits, and each difference is measured in units of the error bars both claim.

Which points (K of them): the worst Pareto k̂ among those in the band [0.5, threshold]
(PSIS's error bar is weakest there: its Monte Carlo se is estimated from heavy-tailed weights
and its bias grows), K − 2 others of the band at random, and one observation at random among
all (seeded); a moment-matched value counts with its k̂ after matching. Where the band leaves
two or more slots, the first of them goes to the most informative observation (the largest
posterior variance of log p(y_i | θ)): where its value rules out a far mode, the draws never
visit that mode and every k̂ reads fine, yet its PSIS value is off by the mode's log weight;
the exact refit's probe (:mod:`stanlogz.draws.modes`) finds the mode, and the refit's se,
and with it the total's, is NA. (The worst k̂ alone is
not the most telling: in case 1 of issue 44 the values at k̂ 0.65–0.70 were often within their
larger mc se while those at 0.45–0.6 were 4–9 of theirs off; with K = 3 the check missed 1 run
in 7, hence K = 4 by default.) Each z = (estimate − exact) / sqrt(mc se² + exact se²), the PSIS
value's mc se being its se and estimated bias combined as the total's Monte Carlo se combines
them.

The tests (:mod:`.verify_tests`): stage 1 on the K points, a two-sided Bonferroni max
over them and a one-sided test of the checked PSIS values' sum (PSIS's bias in the band is
upward); where stage 1 passes but hints at a failure and refitting every other value is cheap
(at most the run's own cost so far, ``STAGE_TWO_SHARE``, or ``VERIFY_FLOOR_SECONDS``, and at
most ``REPAIR_ALL_SECONDS``), stage 2 refits them all and tests their total against the error
bar the answer claims for it. At most a 5% chance that the check fails when every error bar
is right.

On a failure the checked values are replaced by their exact ones. Where refitting every other
value still estimated from the draws costs at most ``REPAIR_ALL_SECONDS``, all are refit (the
check has just shown that their error bars do not hold). Otherwise the repair steps down:
every value with k̂ at least the band's (or the lowest failed one's, if lower) is refit, as
``fix="exact", k_threshold=0.5`` would, together with the two values just below as checks of
that bound; while one of those fails, the repair goes on down to it. Where the fix-up takes no
refits (``fix="none"`` or ``"mm"``) or the refits would cost more than ``REPAIR_SECONDS`` (as
much as ``fix="auto"`` starts on its own) or the time budget's rest, the Monte Carlo se of
elpd_loo is withheld (NaN, loo's NA) with a warning that names the points, their z and what to
run. (Case 1 of issue 44 needed the step-down: its PSIS values at k̂ 0.4–0.5 were biased as
well, and refitting the band alone left the answer 4 of its mc se off in 3 runs of 5.)

``verify="auto"`` (the default) runs K = 4 where it is cheap: when the refits' estimated cost
(one sampling run of the program each) is at most half of the run so far, or under
``VERIFY_FLOOR_SECONDS``; otherwise a one-line note says it was skipped and how to ask for it.
The power and false-alarm rate are measured in ``benchmarks/loo_verify_power.py`` (record
and replay of the check's choices and tests) and ``benchmarks/loo_verify.py`` (live runs;
docs/features/self-check.md).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..._util import deadline as run_budget
from ..._util.gpd import KHAT_HEAVY
from ..._util.progress import duration
from ...draws import Draws
from ...errors import InputError, Route, option
from ..elpd.psis import PsisLoo, psis_loo
from ..fixups.fixups import FixedPoint
from ..observations.checked import CheckedPoint, Verification, critical_z
from ..observations.pointwise import PointwiseLogLik
from .verify_tests import (
    MAX_ALPHA,
    SUM_ALPHA,
    TOTAL_ALPHA,
    Influence,
    hints,
    judge,
    record,
    total_test,
    what_failed,
)

#: Points a ``verify="auto"`` check recomputes.
VERIFY_DEFAULT = 4
#: ``verify="auto"`` runs when the refits' estimated cost is at most this share of the run so
#: far ...
VERIFY_SHARE = 0.5
#: ... or at most this many seconds (a check that costs seconds is cheap whatever the share).
VERIFY_FLOOR_SECONDS = 10.0
#: Values estimated from the full posterior's draws, which the check may recompute (an exact
#: refit's value is what it would compare against).
CHECKABLE = ("psis", "mm", "mis")
#: Seconds of repair refits a failed check starts on its own (as ``fix="auto"``'s refits).
REPAIR_SECONDS = 600.0
#: Values just below a repair's k̂ bound refit as checks of the bound.
FRONTIER = 2
#: A repair refits every value left on the draws when that costs at most this many seconds
#: (case 1 of issue 44 had biased PSIS values down to k̂ 0.3, below what the step-down's
#: frontier checks caught in 1 run of 10).
REPAIR_ALL_SECONDS = 120.0
#: Stage 2 (a hint only, no failure yet) refits every value when that costs at most this share
#: of the run so far (or ``VERIFY_FLOOR_SECONDS``, and never more than ``REPAIR_ALL_SECONDS``):
#: on a regression of N = 300 that ran in 1 s, an absolute 120 s let a hint cost 40 s
STAGE_TWO_SHARE = 1.0
#: An environment variable that replaces ``verify="auto"``: ``0`` (off, e.g. in a test suite),
#: a number of points, or ``auto``.
ENV = "STANLOGZ_VERIFY"

__all__ = ["MAX_ALPHA", "SUM_ALPHA", "TOTAL_ALPHA", "Candidate", "candidates", "choose",
           "judge", "parse_verify", "self_check", "stage_two_fits"]

Refit = Callable[[np.ndarray, int], tuple[list[FixedPoint], list[str]]]


def parse_verify(verify: Any) -> int | None:
    """The number of points of ``verify`` (``"auto"``: None, decided by cost; an integer ≥ 0);
    ``"auto"`` reads ``STANLOGZ_VERIFY`` first, where it is set.

    Raises
    ------
    InputError
        Anything else.
    """
    if isinstance(verify, str) and verify.strip().lower() == "auto":
        env = os.environ.get(ENV, "").strip()
        return None if env in ("", "auto") else parse_verify(env)
    try:
        k = int(verify) if not isinstance(verify, bool | float) else None
    except (TypeError, ValueError):
        k = None
    if k is None or k < 0:
        raise InputError(f"verify must be 'auto' or a number of points >= 0, got {verify!r}")
    return k


@dataclass(frozen=True)
class Candidate:
    """A pointwise value the check may recompute: observation, its k̂, route, value and the
    mc se it claims."""

    index: int
    khat: float
    route: str
    estimate: float
    mcse: float
    bias: float = 0.0
    #: posterior variance of log p(y_i | θ) over the draws (p_waic_i; NaN where unknown)
    var: float = float("nan")


def candidates(ps: PsisLoo, index: np.ndarray, fixed: Sequence[FixedPoint],
               threshold: float) -> list[Candidate]:
    """The values still estimated from the draws and trusted (k̂ at most ``threshold``): PSIS
    values and moment-matched or mixture ones (with their k̂ after the fix-up)."""
    by = {f.index: f for f in fixed}
    out = []
    for j, o in enumerate(index):
        f = by.get(int(o))
        var = float("nan") if ps.var_i is None else float(ps.var_i[j])
        if f is None:
            k = float(ps.khat[j])
            bias = 0.0 if ps.bias_i is None else float(ps.bias_i[j])
            se = 0.0 if ps.mcse_i is None else float(ps.mcse_i[j])
            c = Candidate(int(o), k, "psis", float(ps.elpd_i[j]), float(np.hypot(se, bias)),
                          bias, var)
        elif f.method in CHECKABLE:
            k = f.khat if f.khat_after is None else float(f.khat_after)
            c = Candidate(int(o), k, f.method, f.elpd, f.mcse, var=var)
        else:
            continue
        if np.isfinite(c.khat) and c.khat <= threshold:
            out.append(c)
    return out


def choose(cands: Sequence[Candidate], k: int, rng: np.random.Generator
           ) -> list[tuple[Candidate, str]]:
    """Up to ``k`` candidates: the worst k̂ in the band, others of the band at random (all but
    the last slot), then the rest among all: where two or more slots are left, the first to
    the most informative observation (largest ``var``, p_waic_i: leaving it out moves the
    posterior most, and a region the draws never visit, a far mode its value rules out, opens
    there, where no k̂ can see it), the others at random."""
    band = sorted((c for c in cands if c.khat >= KHAT_HEAVY), key=lambda c: -c.khat)
    out: list[tuple[Candidate, str]] = []
    if band and k >= 1:
        out.append((band[0], "worst k-hat"))
        rest = band[1:]
        take = min(max(k - 2, 0), len(rest))
        for j in rng.permutation(len(rest))[:take]:
            out.append((rest[int(j)], "k-hat band"))
    taken = {c.index for c, _ in out}
    left = [c for c in cands if c.index not in taken]
    var = np.array([c.var for c in left])
    if k - len(out) >= 2 and np.isfinite(var).any():
        top = int(np.nanargmax(var))
        out.append((left.pop(top), "most informative"))
    for j in rng.permutation(len(left))[:max(k - len(out), 0)]:
        out.append((left[int(j)], "random"))
    return out


def self_check(verify: Any, cands: Sequence[Candidate], fixed: list[FixedPoint], refit: Refit,
               *, refit_seconds: float | None, elapsed: float, can_repair: bool,
               rng: np.random.Generator, progress: Any = None, replace: bool = True,
               influence: Influence | None = None, chains: int = 1
               ) -> tuple[list[FixedPoint], Verification | None]:
    """Run the self-check on ``cands`` and return the fixed points (with the checked and
    repaired values when a point failed) and the outcome.

    Parameters
    ----------
    verify : "auto" or int
        The number of points (0: off, None returned).
    cands : sequence of Candidate
        The values the check may recompute (:func:`candidates`).
    fixed : list of FixedPoint
        The fix-ups so far.
    refit : callable
        ``refit(indices, stage)``: exact values of the 0-based observations and the notes of
        any that could not be refit (stage 0 the check, 1, 2, ... a repair's rounds; each its
        own seed).
    refit_seconds : float or None
        The estimated seconds of one refit (one sampling run), None when unknown.
    elapsed : float
        Seconds of the run so far.
    can_repair : bool
        Whether the fix-up allows refits of the band after a failure.
    rng : numpy.random.Generator
        Chooses the random points.
    progress : callable, optional
        Called with one line per step.
    replace : bool, default True
        Whether a failure may replace values (``fix="none"``: no, the values stay PSIS's, as
        loo's; the Monte Carlo se is withheld).
    influence : callable, optional
        The draw influence of PSIS values (:data:`Influence`) for the sum test (none without).
    chains : int, default 1
        The chains of the draws (the sum's Monte Carlo se counts their autocorrelation).

    Returns
    -------
    (list of FixedPoint, Verification or None)
    """
    k = parse_verify(verify)
    auto = k is None
    k = VERIFY_DEFAULT if k is None else k
    if k == 0:
        return fixed, None
    picked = choose(cands, k, rng)
    if not picked:
        return fixed, Verification("skipped", note="self-check: no value left to check (every "
                                   "observation is exact or above the k-hat threshold)")
    cost = None if refit_seconds is None else len(picked) * refit_seconds
    skip = _skip_reason(cost, elapsed, len(picked), auto)
    if skip is not None:
        return fixed, Verification("skipped", note=skip)
    nums = ", ".join(str(c.index + 1) for c, _ in picked)
    if progress:
        progress(f"self-check: recomputing observation(s) {nums} by exact refits"
                 + ("" if cost is None else f" (about {duration(cost)})"))
    t0 = time.perf_counter()
    refs, notes = refit(np.array([c.index for c, _ in picked], dtype=int), 0)
    got = {f.index: f for f in refs}
    if not got:
        why = notes[0] if notes else "the refits returned nothing"
        return fixed, Verification("skipped", seconds=time.perf_counter() - t0,
                                   note=f"self-check: could not recompute observation(s) "
                                   f"{nums} ({why})")
    ver = judge([(c, why) for c, why in picked if c.index in got], got, influence, chains)
    crit = ver.critical_z
    if not ver.failed and not ver.sum_failed and replace and can_repair and hints(ver):
        fixed = _stage_two(ver, cands, fixed, got, refit, refit_seconds, elapsed, progress,
                           influence, chains)
        if ver.total_failed:
            ver.seconds = time.perf_counter() - t0
            return fixed, ver
    if not ver.failed and not ver.sum_failed:
        ver.seconds = time.perf_counter() - t0
        total = ("" if not ver.sum_points else
                 f"; the PSIS values' sum z = {ver.sum_z:+.1f} <= {ver.sum_critical:.2f}")
        if ver.total_points:
            total += (f"; the first points hinted at a failure, so all {len(ver.total_points)} "
                      f"values were refit: their total is within its error bar, z = "
                      f"{ver.total_z:+.1f}, and the values are kept")
        first = [p for p in ver.points if p.why != "total"]
        ver.note = (f"self-check: {len(first)} value(s) recomputed by exact refits agree "
                    f"with their error bars (|z| <= {crit:.2f}; "
                    f"{', '.join(f'{p.index + 1}: {p.z_text}' for p in first)}{total})")
        return fixed, ver
    if not replace:
        ver.status, ver.seconds = "withheld", time.perf_counter() - t0
        ver.note = (f"self-check: {what_failed(ver, _told)}; the values are kept as PSIS gives "
                    f"them ({Route(options={'fix': 'none'})}) and the Monte Carlo se of elpd_loo "
                    f"is withheld: recompute with {repair_advice(_low(ver))}")
        return fixed, ver
    fixed = [f for f in fixed if f.index not in got] + list(got.values())
    t1 = time.perf_counter()
    fixed, ver = _repair(ver, cands, fixed, refit, refit_seconds, can_repair, progress)
    ver.seconds, ver.repair_seconds = time.perf_counter() - t0, time.perf_counter() - t1
    return fixed, ver


def stage_two_fits(n_others: int, refit_seconds: float | None, elapsed: float,
                   left: float | None) -> bool:
    """Whether stage 2's refits of ``n_others`` values fit: at most ``STAGE_TWO_SHARE`` of the
    run so far (``elapsed`` seconds) or ``VERIFY_FLOOR_SECONDS``, at most
    ``REPAIR_ALL_SECONDS``, and within the time budget's rest ``left`` (None: no budget)."""
    limit = min(REPAIR_ALL_SECONDS, max(VERIFY_FLOOR_SECONDS, STAGE_TWO_SHARE * elapsed))
    return _refits_fit(n_others, refit_seconds, limit, left)


def _refits_fit(n: int, refit_seconds: float | None, limit: float, left: float | None) -> bool:
    """Whether ``n`` refits of ``refit_seconds`` each fit in ``limit`` seconds and in the time
    budget's rest ``left`` (None: no budget; 0: spent)."""
    if n <= 0 or refit_seconds is None:
        return False
    return n * refit_seconds <= min(limit, np.inf if left is None else left)


def _stage_two(ver: Verification, cands: Sequence[Candidate], fixed: list[FixedPoint],
               got: dict[int, FixedPoint], refit: Refit, refit_seconds: float | None,
               elapsed: float, progress: Any, influence: Influence | None, chains: int
               ) -> list[FixedPoint]:
    """Stage 2 (:mod:`.verify_tests`): refit every other candidate where that fits
    (:func:`stage_two_fits`) and test the total of all. On a failure every value is replaced
    by its refit (status "repaired"); otherwise the answer stays as it was."""
    others = [c for c in cands if c.index not in got]
    if not stage_two_fits(len(others), refit_seconds, elapsed, run_budget.remaining()):
        return fixed
    if progress:
        progress(f"self-check: the first points hint at a failure; refitting the other "
                 f"{len(others)} value(s) to test their total")
    more, _ = refit(np.array([c.index for c in others], dtype=int), 1)
    refs = {**got, **{f.index: f for f in more}}
    if len(refs) < len(cands):
        return fixed
    ver.points += [record(c, refs[c.index], ver.critical_z, "total") for c in others]
    total_test(ver, cands, refs, influence, chains)
    if not ver.total_failed:
        return fixed
    ver.status = "repaired"
    ver.repaired = [c.index for c in others]
    out = [f for f in fixed if f.index not in refs] + list(refs.values())
    ver.note = (f"self-check: {what_failed(ver, _told)}; their exact values replace them: "
                + _included(out))
    return out


def _skip_reason(cost: float | None, elapsed: float, n: int, auto: bool) -> str | None:
    """Why the check does not run (None: it runs): over the time budget's rest, or (auto) more
    than cheap, or of unknown cost."""
    ask = Route(options={"verify": n})
    left = run_budget.remaining()
    if cost is not None and left is not None and cost > left:
        return (f"self-check skipped: {n} refit(s) would take about {duration(cost)}, more than "
                f"the time budget has left ({duration(max(left, 0.0))})")
    if not auto:
        return None
    if cost is None:
        return (f"self-check skipped: the sampling time of these draws is unknown, so the cost "
                f"of {n} refit(s) is; {ask} runs it")
    if cost <= max(VERIFY_SHARE * elapsed, VERIFY_FLOOR_SECONDS):
        return None
    return (f"self-check skipped: {n} exact refit(s) would take about {duration(cost)}, "
            f"{cost / max(elapsed, 1e-9):.0%} of the run so far (it runs by itself up to "
            f"{VERIFY_SHARE:.0%} or {duration(VERIFY_FLOOR_SECONDS)}); {ask} runs it")


def _repair(ver: Verification, cands: Sequence[Candidate], fixed: list[FixedPoint],
            refit: Refit, refit_seconds: float | None, can_repair: bool, progress: Any
            ) -> tuple[list[FixedPoint], Verification]:
    """After a failure, step down: refit every value whose k̂ is at least the lowest failed
    one (and at least the band's), with the ``FRONTIER`` values just below as checks; while a
    frontier value fails, go on down to it. Withhold the total's mc se when the refits are not
    allowed, cost more than ``REPAIR_SECONDS``, or fail."""
    head = f"self-check: {what_failed(ver, _told)}; the exact values replace the checked ones"
    done = {p.index for p in ver.points}
    low = _low(ver)
    why, spent, stage = None, 0.0, 1
    left = run_budget.remaining()
    others = [c for c in cands if c.index not in done]
    # (a spent budget, left 0, is no budget's rest to fit in: not "no budget")
    whole = can_repair and _refits_fit(len(others), refit_seconds, REPAIR_ALL_SECONDS, left)
    if whole:  # cheap enough to leave no value on the draws whose error bars just failed
        low = min(low, min(c.khat for c in others))
    while True:
        rest = [c for c in cands if c.khat >= low and c.index not in done]
        front = sorted((c for c in cands if c.khat < low and c.index not in done),
                       key=lambda c: -c.khat)[:FRONTIER]
        todo = rest + front
        if not todo:
            break
        cost = None if refit_seconds is None else len(todo) * refit_seconds
        if not can_repair:
            why = f"the fix-up takes no refits ({option('fix')} none or mm)"
        elif cost is None:
            why = "the cost of the refits is unknown"
        elif spent + cost > REPAIR_SECONDS or (left is not None and spent + cost > left):
            why = (f"refitting the other {len(rest)} value(s) with k-hat above {low:.2f} would "
                   f"take about {duration(cost)}, more than the self-check starts on its own "
                   f"({duration(REPAIR_SECONDS)}) or the time budget has left")
        if why is not None:
            break
        if progress:
            progress(f"self-check: refitting {len(rest)} more observation(s) with k-hat "
                     f"above {low:.2f} and {len(front)} just below it: "
                     f"{', '.join(str(c.index + 1) for c in todo)}")
        more, notes = refit(np.array([c.index for c in todo], dtype=int), stage)
        spent, stage = spent + cost, stage + 1
        got = {f.index: f for f in more}
        fixed = [f for f in fixed if f.index not in got] + more
        ver.repaired += [c.index for c in todo if c.index in got]
        done |= set(got)
        crit = critical_z(max(len(front), 1), MAX_ALPHA)
        ver.points += [record(c, got[c.index], crit, "repair") for c in rest if c.index in got]
        checks = [record(c, got[c.index], crit, "frontier") for c in front if c.index in got]
        ver.points += checks
        if len(got) < len(todo):
            why = notes[0] if notes else "some refits failed"
            break
        failed = [p for p in checks if not p.passed]
        if not failed:
            break
        low = min(p.khat for p in failed)
    advice = repair_advice(low)
    if why is None:
        ver.status = "repaired"
        ver.note = (f"{head}, and the {len(ver.repaired)} other value(s) "
                    + ("estimated from the draws were refit too" if whole else
                       f"down to k-hat {low:.2f} were refit (as {advice} would; the values just "
                       "below agree with their refits)")
                    + ": " + _included(fixed))
    else:
        ver.status = "withheld"
        ver.note = (f"{head}; the Monte Carlo se of elpd_loo is withheld ({why}): recompute "
                    f"with {advice}")
    return fixed, ver


def _included(fixed: Sequence[FixedPoint]) -> str:
    """What the answer makes of the refit values: both elpd_loo and its Monte Carlo se include
    them, or, where a fixed value's se is NA (a refit whose chains disagree), elpd_loo does and
    its se is NA."""
    na = sorted(f.index + 1 for f in fixed if not np.isfinite(f.mcse))
    if not na:
        return "elpd_loo and its Monte Carlo se include them"
    return (f"elpd_loo includes them; its Monte Carlo se is NA: the refit(s) of observation(s) "
            f"{', '.join(map(str, na))} have none (see warnings)")


def _told(points: Sequence[CheckedPoint]) -> str:
    """The failed points as the warnings name them."""
    return ", ".join(f"{p.index + 1} ({p.z_text}, k-hat {p.khat:.2f})" for p in points)


def _low(ver: Verification) -> float:
    """The k̂ down to which a failure makes values suspect: the band's, or the lowest failed
    point's (a failed sum: the band's; the repair's frontier checks go on down)."""
    return min([KHAT_HEAVY, *(p.khat for p in ver.failed)])


def repair_advice(low: float) -> str:
    """The command that refits every value with k̂ from ``low`` up."""
    k = max(0.0, np.floor(10 * low) / 10)
    return str(Route(options={"fix": "exact", "k_threshold": float(f"{k:.1f}")}))


def pos_of(index: np.ndarray, o: int) -> int:
    """The position of observation ``o`` (0-based) in the pointwise arrays of ``index``."""
    return int(np.nonzero(np.asarray(index) == o)[0][0])


def influence_rows(ps: PsisLoo, pw: PointwiseLogLik, d: Draws, r_eff: float,
                   index: np.ndarray, obs: np.ndarray) -> np.ndarray:
    """The draw influence ``(m, S)`` of the PSIS values of observations ``obs`` (0-based) of
    the pass over ``index`` (:data:`Influence`)."""
    pos = [pos_of(index, int(o)) for o in obs]
    keep_influence(ps, pw, d, r_eff, pos)
    return np.array([ps.influence_i[j] for j in pos])


def keep_influence(ps: PsisLoo, pw: PointwiseLogLik, d: Draws, r_eff: float,
                   positions: list[int]) -> None:
    """The draw influence of the given positions, kept in ``ps`` where the pass did not keep
    it (values below its k̂ bound replaced after a self-check), so that the Monte Carlo se of
    the remaining PSIS values can leave them out."""
    missing = [j for j in positions if j not in ps.influence_i]
    unc = d.flat_unconstrained()
    for j in missing:
        one = psis_loo(pw.column(j, unc)[:, None], r_eff, chains=d.unconstrained.shape[0],
                       keep_above=-np.inf)
        ps.influence_i[j] = one.influence_i[0]
