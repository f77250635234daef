"""The statistical tests of LOO's self-check (:mod:`.verify`): what decides that the error bars
of the values still estimated from the draws fail, given their exact refits.

The family-wise false-alarm rate, 5% (``VERIFY_ALPHA``), is split by Bonferroni's union bound:

* stage 1, on the K values checked (2.5%): the two-sided max over points at 1.25%
  (:func:`~stanlogz.crossval.observations.checked.critical_z`) and the one-sided test of the
  checked PSIS values' sum at 1.25%
  (:func:`~stanlogz.crossval.observations.checked.one_sided_critical`: PSIS's bias in the
  heavy-tailed band is upward; the critical value holds whatever part of the claimed error is
  an estimated bias). The sum's claimed error is the joint Monte Carlo se of those values from
  their summed draw influence (values from the same draws are correlated, on a one-parameter
  model nearly ±1), their estimated biases summed as the total's are, and the refits' joint
  se (:func:`~stanlogz.crossval.fixups.fixups.fixed_variance`: evidence-difference refits
  share a log Z).
* stage 2 (2.5%), only when stage 1 passed but hints (:func:`hints`: the sum's z above
  ``HINT_SUM`` or a point's |z| above ``HINT_Z``) and refitting every other value is cheap:
  every value left on the draws is refit and their total is tested two-sided against the
  error bar the answer claims for it (:func:`total_z`, the total's own formula restricted to
  them). This is what catches a bias spread thinly over many values at low k̂ (issue 44's case
  1 with σ = 0.5, whose tail index is 0.8 at every observation while k̂ reads 0.3–0.7): no few
  points show it, their total does.

Whatever the hint rule, stage 2 fails a right answer with probability at most 2.5% (its test is
valid unconditionally, so also on the event that it runs), and the two stages together at most
5%.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from ..elpd.psis import total_mcse
from ..fixups.fixups import FixedPoint, fixed_variance
from ..observations.checked import (
    VERIFY_ALPHA,
    CheckedPoint,
    Verification,
    critical_z,
    one_sided_critical,
    z_score,
)

#: Stage 1's share of the family-wise false-alarm rate: the max test's ...
MAX_ALPHA = VERIFY_ALPHA / 4
#: ... and the sum test's.
SUM_ALPHA = VERIFY_ALPHA / 4
#: Stage 2's (the total of every value left on the draws, refit).
TOTAL_ALPHA = VERIFY_ALPHA - MAX_ALPHA - SUM_ALPHA
#: Stage 1 hints at a failure when the sum's z exceeds this ...
HINT_SUM = 1.0
#: ... or a point's |z| this.
HINT_Z = 2.0

#: The draw influence ``(m, S)`` of the PSIS values of the given observations (0-based).
Influence = Callable[[np.ndarray], np.ndarray]


def claimed_sum_se(cands: Sequence[object], refs: dict[int, FixedPoint],
                   influence: Influence | None, chains: int) -> float:
    """The error the answer claims for Σ estimate − Σ exact over ``cands``
    (:class:`~.verify.Candidate`): the PSIS values' joint mc se from their summed draw
    influence and their biases summed (as the total's), the other values' mc se as
    independent (as the total's fixed values), and the refits' joint se. Without
    ``influence`` every value counts as independent with its own mc se."""
    psis = [c for c in cands if c.route == "psis"] if influence is not None else []
    other = [c for c in cands if c not in psis]
    mc = 0.0
    if psis:
        g = influence(np.array([c.index for c in psis], dtype=int))
        mc = total_mcse(np.sum(np.atleast_2d(g), axis=0), chains)
    bias = float(sum(c.bias for c in psis))
    var = mc**2 + bias**2 + sum(c.mcse**2 for c in other)
    return math.sqrt(var + fixed_variance([refs[c.index] for c in cands]))


def sum_z(cands: Sequence[object], refs: dict[int, FixedPoint], influence: Influence | None,
          chains: int = 1) -> float:
    """(Σ estimate − Σ exact) / :func:`claimed_sum_se`."""
    d = float(sum(c.estimate - refs[c.index].elpd for c in cands))
    return z_score(d, claimed_sum_se(cands, refs, influence, chains), 0.0, 0.0)


def record(c: object, ref: FixedPoint, crit: float, why: str) -> CheckedPoint:
    """The checked value ``c`` (:class:`~.verify.Candidate`) against its refit."""
    z = z_score(c.estimate, c.mcse, ref.elpd, ref.mcse)
    return CheckedPoint(c.index, c.route, c.estimate, c.mcse, ref.elpd, ref.mcse, z,
                        bool(abs(z) <= crit), reference_route=ref.method, khat=c.khat, why=why)


def judge(done: Sequence[tuple[object, str]], refs: dict[int, FixedPoint],
          influence: Influence | None = None, chains: int = 1) -> Verification:
    """Stage 1 (module docstring) on the checked values ``done`` (candidate, why chosen)
    against their exact refits ``refs`` (by observation): a ``"passed"`` Verification whose
    ``failed`` points and ``sum_failed`` say what failed.

    Parameters
    ----------
    done : sequence of (Candidate, str)
        The values checked and why each was chosen.
    refs : dict of int to FixedPoint
        The exact value of each observation checked (0-based).
    influence : callable, optional
        The draw influence of PSIS values (:data:`Influence`); without it, no sum test.
    chains : int, default 1
        The chains of the draws.

    Returns
    -------
    Verification
    """
    crit = critical_z(len(done), MAX_ALPHA)
    ver = Verification("passed", [record(c, refs[c.index], crit, why) for c, why in done], crit)
    psis = [c for c, _ in done if c.route == "psis"]
    if influence is not None and psis:
        ver.sum_points = [c.index for c in psis]
        ver.sum_z = sum_z(psis, refs, influence, chains)
        ver.sum_critical = one_sided_critical(SUM_ALPHA)
    return ver


def hints(ver: Verification) -> bool:
    """Whether a passed stage 1 calls for stage 2 (module docstring)."""
    big = any(abs(p.z) > HINT_Z for p in ver.points if p.why != "repair")
    return big or (bool(ver.sum_points) and ver.sum_z > HINT_SUM)


def total_test(ver: Verification, cands: Sequence[object], refs: dict[int, FixedPoint],
               influence: Influence | None, chains: int) -> None:
    """Stage 2 on every candidate (all refit, ``refs``): the z of their total against the
    error the answer claims for it, two-sided at ``TOTAL_ALPHA``; written into ``ver``."""
    ver.total_points = [c.index for c in cands]
    ver.total_z = sum_z(cands, refs, influence, chains)
    ver.total_critical = critical_z(1, TOTAL_ALPHA)


def what_failed(ver: Verification, told: Callable[[Sequence[object]], str]) -> str:
    """What failed, as the warnings say it (``told`` names the failed points)."""
    out = []
    far = [p for p in ver.failed if not math.isnan(p.z)]
    if far:
        out.append(f"observation(s) {told(far)} are further from their exact refits "
                   f"than their Monte Carlo se allows (|z| > {ver.critical_z:.2f})")
    if na := [p for p in ver.failed if math.isnan(p.z)]:
        out.append(f"observation(s) {told(na)} could not be checked: their exact refits "
                   "have no Monte Carlo se (a refit's chains disagree: see the warnings)")
    if ver.sum_failed and math.isnan(ver.sum_z):  # a refit without a se: named above
        out.append(f"so the sum of the PSIS values of observation(s) "
                   f"{', '.join(str(i + 1) for i in ver.sum_points)} could not be tested "
                   "either")
    elif ver.sum_failed:
        out.append(f"the PSIS values of observation(s) "
                   f"{', '.join(str(i + 1) for i in ver.sum_points)} are together higher than "
                   f"their exact refits by z = {ver.sum_z:+.1f} of their joint error "
                   f"(one-sided, > {ver.sum_critical:.2f})")
    if ver.total_failed:
        out.append(f"the {len(ver.total_points)} values estimated from the draws, all refit "
                   f"after the first points hinted at a failure, are off in total by "
                   f"z = {ver.total_z:+.1f} of the error the answer claims for them "
                   f"(|z| > {ver.total_critical:.2f})")
    return "; ".join(out)
