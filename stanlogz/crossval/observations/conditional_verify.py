"""A self-check of the conditional route (issue 44): log p(y_i | y₋ᵢ, θ) of a few observations
at a few draws normalized again by brute force, independently of the route's quadrature, sum,
Gaussian closed form and far-mode search, and compared with the route's value.

The brute force integrates the program's density over the whole range of y_i on a fixed, dense
grid, with no search and no cut-off: a continuous y_i on the substitution u = y_i + s·tan(v) (a
declared bound b: u = b ± s·tan(v), v in (0, π/2); two bounds: u = lo + (hi − lo)(1 − cos v)/2;
the node on a single bound counts half), s the data's sd, by the trapezoid rule in v on 2^10
nodes doubled until two levels agree to 1e-8 (at most ``nodes``), so that the grid reaches
every finite value and resolves a mode of width w at distance D from y_i when s·(π/nodes)·(1 +
D²/s²) ≲ w (2^14 nodes, w = s: D up to about 70 s); its own error is the two levels'
disagreement. A narrow far mode that no node of the first levels touches leaves them agreeing:
the check's reach is that of the levels it ran. An integer y_i is summed over every value
within ``nodes // 16`` of y_i (to the declared bounds when they are nearer). Where the two
differ by more than the route's error estimate plus twice the reference's plus 1e-6, the
observation fails: :func:`self_check` then says which and by how much, and the caller makes the
total's Monte Carlo se NA with that reason (the error bar does not hold when a value is wrong
by more than its claimed error). It is not repaired: a failure shows that the route's search
misses part of the density, which every observation's values share (case 2's old search was
off at every observation), so replacing the checked observations' values by their brute-force
ones would leave the others wrong; the brute force at every observation and draw costs
N·S / (k·16) times the check (its cost is in the reason). loo's ``verify`` sets the
observations checked (``K_OBS`` under ``"auto"``; 0 turns the check off)."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special

from ..._util import deadline
from ..._util.progress import duration
from ...errors import InputError, OverBudget, StanlogzError, option

#: Most nodes of the brute-force grid (per observation, evaluated at the checked draws).
NODES = 2**14
#: Nodes of its first level (doubled until two levels agree).
START = 2**10
#: Observations checked by the self-check at the end of a pass.
K_OBS = 2
#: Draws checked per observation.
K_DRAWS = 16
#: Disagreement (log units) beyond the two error estimates that fails an observation.
SLACK = 1e-6
#: A reference whose own error estimate exceeds this is not resolved: it confirms nothing.
REF_RESOLVED = 1e-4


@dataclass
class VerifyRecord:
    """One observation checked: ``index`` (0-based), the route's ``estimate`` and the brute
    force's ``reference`` at the draw where they differ most, the largest ``discrepancy``
    over the draws checked (log units), the ``allowed`` one (the route's error estimate plus
    the reference's plus ``SLACK``), the reference's own ``reference_error``, the route's
    ``method``, and whether it ``passed`` (an unresolved reference passes: it confirms
    nothing; ``resolved`` says so)."""

    index: int
    estimate: float
    reference: float
    discrepancy: float
    allowed: float
    reference_error: float
    method: str
    passed: bool
    resolved: bool


def _nodes(t: np.ndarray, y0: float, s: float, lo: float | None, hi: float | None
           ) -> tuple[np.ndarray, np.ndarray]:
    """u(t) and log du/dt of the substitution (module docstring) at t in (0, 1)."""
    if lo is not None and hi is not None:
        v = math.pi * t
        return lo + 0.5 * (hi - lo) * (1 - np.cos(v)), np.log(0.5 * math.pi * (hi - lo)
                                                              * np.sin(v))
    if lo is None and hi is None:
        v = math.pi * (t - 0.5)
        return y0 + s * np.tan(v), math.log(math.pi * s) - 2 * np.log(np.cos(v))
    v = 0.5 * math.pi * t
    b, d = (lo, 1.0) if lo is not None else (hi, -1.0)
    return b + d * s * np.tan(v), math.log(0.5 * math.pi * s) - 2 * np.log(np.cos(v))


def reference(src: Any, i: int, unc: np.ndarray, nodes: int = NODES
              ) -> tuple[np.ndarray, np.ndarray]:
    """log p(y_i | y₋ᵢ, θ) at draws ``unc`` by brute force (module docstring), and its error
    estimate per draw: the trapezoid rule in t on 2^10 nodes, doubled until it agrees with the
    level before to 1e-8 at every draw or reaches ``nodes``; the estimate is that agreement."""
    quad = src.quad
    y0 = float(quad.y[i])
    lo, hi = quad.bounds(i)
    num = src.model.log_density_many(unc)
    if quad.discrete:
        half = nodes // 16
        a = int(lo) if lo is not None and y0 - lo <= half else int(y0) - half
        b = int(hi) if hi is not None and hi - y0 <= half else int(y0) + half
        vals = quad._probe(i, np.arange(a, b + 1), unc)
        total = special.logsumexp(vals, axis=1)
        err = np.zeros(unc.shape[0])  # the last term at each open end, relative
        for col, closed in ((0, lo is not None and a <= lo), (-1, hi is not None and b >= hi)):
            if not closed:
                err += np.exp(vals[:, col] - total)
        return num - total, np.where(np.isfinite(total), err, np.inf)
    n = min(START, nodes)
    t = np.arange(1, n) / n
    u, jac = _nodes(t, y0, quad.spread, lo, hi)
    vals = quad._probe(i, u, unc) + jac[None, :]
    if (lo is None) != (hi is None):  # the end at the bound, where du/dt is finite: half weight
        b = lo if lo is not None else hi
        edge = quad._probe(i, np.array([b]), unc) + math.log(0.25 * math.pi * quad.spread)
        vals = np.concatenate([vals, edge], axis=1)
    prev = special.logsumexp(vals, axis=1) - math.log(n)
    while True:
        t_new = (2 * np.arange(n) + 1) / (2 * n)  # the midpoints: level 2n
        u, jac = _nodes(t_new, y0, quad.spread, lo, hi)
        new = quad._probe(i, u, unc) + jac[None, :]
        n *= 2
        cur = np.logaddexp(special.logsumexp(vals, axis=1), special.logsumexp(new, axis=1)) \
            - math.log(n)
        vals = np.concatenate([vals, new], axis=1)
        with np.errstate(invalid="ignore"):
            err = np.abs(cur - prev)
        err = np.where(np.isfinite(err), err, np.inf)
        if np.max(err) <= 1e-8 or n >= nodes:
            return num - cur, err
        prev = cur


def latents_integrated(src: Any, i: int) -> bool:
    """Whether the route's value of observation ``i`` has the observation's own latents
    integrated out (p(y_i | y₋ᵢ, θ without z_i)): a brute force over y_i alone holds z_i at the
    draw, a different quantity, so such values are not checked here (the integrated route's
    Gaussian fit is checked far from the mode as it is computed)."""
    cl = getattr(src, "cl", None)
    return bool(cl is not None and cl.latents[i].size and cl.integrated[i])


def pick(src: Any, k: int, rng: np.random.Generator) -> list[int]:
    """``k`` observations: the one with the largest error estimate, then one at random from
    each route used not yet picked (Gaussian closed form, quadrature, sum), then at random."""
    n = src.obs.n
    done = np.flatnonzero(src.method != "")
    pool = done if done.size else np.arange(n)
    pool = np.array([j for j in pool if not latents_integrated(src, int(j))], dtype=int)
    if not pool.size:
        return []
    out = [int(pool[np.argmax(src.quad.error[pool])])]
    for m in dict.fromkeys(src.method[pool]):
        left = [int(j) for j in pool if src.method[j] == m and j not in out]
        if left and len(out) < k:
            out.append(int(rng.choice(left)))
    rest = [int(j) for j in pool if j not in out]
    while len(out) < k and rest:
        out.append(rest.pop(int(rng.integers(len(rest)))))
    return out[:k]


def verify_conditional(src: Any, unc: np.ndarray, k: int = K_OBS, n_draws: int = K_DRAWS,
                       seed: int | None = 0, index: Sequence[int] | None = None, nodes: int = NODES
                       ) -> list[VerifyRecord]:
    """Check the conditional route's log p(y_i | y₋ᵢ, θ) against brute force.

    Parameters
    ----------
    src : NonFactorizedSource
        The conditional source of the pass (after it, so that its methods and error
        estimates are known).
    unc : ndarray
        The run's unconstrained draws ``(S, dim)``.
    k : int
        Observations checked (:func:`pick`) when ``index`` is not given.
    n_draws : int
        Draws checked, at random (``seed``).
    seed : int
        Seed of the choice of observations and draws.
    index : sequence of int, optional
        The observations (0-based) to check instead.
    nodes : int
        Nodes of the brute-force grid (values each side for an integer y_i).

    Returns
    -------
    list of VerifyRecord
        One per observation checked.
    """
    if not hasattr(src, "quad") or not hasattr(src, "column"):
        raise InputError("verify_conditional needs the conditional source of a pass "
                         "(NonFactorizedSource)")
    unc = np.asarray(unc, dtype=float).reshape(-1, src.model.dim)
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.choice(unc.shape[0], size=min(n_draws, unc.shape[0]), replace=False))
    at = unc[rows]
    obs = list(index) if index is not None else pick(src, k, rng)
    out = []
    for i in obs:
        est = src.column(i, at)
        err = 0.0 if src.method[i] == "gaussian" else float(src.quad.error[i])
        ref, ref_err = reference(src, i, at, nodes)
        diff = np.abs(est - ref)
        diff = np.where(np.isfinite(diff), diff, np.inf)
        j = int(np.argmax(diff))
        r_err = float(np.max(ref_err))
        allowed = err + 2 * r_err + SLACK
        resolved = r_err <= REF_RESOLVED
        out.append(VerifyRecord(int(i), float(est[j]), float(ref[j]), float(diff[j]), allowed,
                                r_err, str(src.method[i]), bool(diff[j] <= allowed or
                                                                not resolved), resolved))
    return out


def self_check(pw: Any, unc: np.ndarray, seed: int | None = 0, k: int | None = K_OBS
               ) -> tuple[list[str], str | None]:
    """The check at the end of a pass of the conditional route: (notes, reason) where reason
    (None when every observation passed) says why the total's Monte Carlo se is NA. Sources
    other than the conditional one are not checked here. ``k``: the observations checked
    (loo's ``verify``: 0 turns the check off, None, ``verify="auto"``, is ``K_OBS``)."""
    k = K_OBS if k is None else int(k)
    if k <= 0 or getattr(pw, "source", None) != "conditional" or not hasattr(pw, "quad"):
        return [], None
    left = deadline.remaining()
    if left is not None and left <= 0:  # the pass used the run's budget (AR(5) under load:
        # its brute force at 16 draws took 11 s past it, checking nothing on the way)
        return [("self-check of the conditional route not done: the pass used the time "
                 f"budget (a longer {option('time_budget')} runs it)")], None
    n_draws = min(K_DRAWS, np.asarray(unc).reshape(-1, pw.model.dim).shape[0])
    need = k * pw.quad.seconds(2 * START, n_draws)  # its first two levels, at least, priced
    # from the pass's own timings
    if left is not None and need > left:  # priced before it starts: not begun, then cut
        return [(f"self-check of the conditional route not done: it needs about "
                 f"{duration(need)} and {duration(left)} of the time budget is left (a longer "
                 f"{option('time_budget')} runs it)")], None
    t0 = time.perf_counter()
    try:
        recs = verify_conditional(pw, unc, k=k, seed=seed)
    except OverBudget:  # the budget ended during the brute force: nothing was checked
        return [("self-check of the conditional route not done: the time budget ended during "
                 f"its brute force (a longer {option('time_budget')} runs it)")], None
    except StanlogzError as exc:  # the brute force could not evaluate the program
        return [f"self-check of the conditional route not done: {str(exc).splitlines()[0]}"], None
    label = pw.quad._label
    if not recs:  # every value has its latents integrated out: nothing this check can redo
        return [("self-check of the conditional route not done: every observation's latents "
                 "are integrated out, and a brute force over y_i alone would hold them at the "
                 "draw")], None
    what = ", ".join(f"{label(r.index)} ({r.method})" for r in recs)
    bad = [r for r in recs if not r.passed]
    unresolved = [r for r in recs if not r.resolved]
    how = (f"summed over every value within {NODES // 16} of y_i" if pw.quad.discrete else
           f"the trapezoid rule over the whole range, {START} nodes doubled until two levels "
           f"agree, at most {NODES}")
    notes = [f"self-check of the conditional route: {what} normalized again by brute force "
             f"({how}) at {K_DRAWS} draws: "
             + ("agree within the error estimates" if not bad else
                f"{len(bad)} disagree")
             + (f" ({len(unresolved)} reference(s) not resolved, confirming nothing)"
                if unresolved else "")]
    if not bad:
        return notes, None
    detail = "; ".join(f"{label(r.index)} off by {r.discrepancy:.3g} nats (route "
                       f"{r.estimate:.6g}, brute force {r.reference:.6g}, allowed "
                       f"{r.allowed:.1g})" for r in bad)
    per_value = (time.perf_counter() - t0) / max(len(recs) * min(K_DRAWS, unc.shape[0]), 1)
    cost = per_value * pw.obs.n * np.asarray(unc).reshape(-1, pw.model.dim).shape[0]
    reason = (f"the self-check of the conditional route failed: {detail}; the pointwise values "
              "are wrong by more than their error estimates, so the total has no Monte Carlo "
              "se. Not repaired: the failed values show that the route's search misses part of "
              "the density, which every observation's values share, so replacing the checked "
              "ones alone would leave the rest wrong, and the brute force at every observation "
              f"and draw would take about {duration(cost)} (use kfold or lfo, which refit)")
    return [*notes, reason], reason
