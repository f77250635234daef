"""The records of a self-check: a few pointwise values of a cross-validation recomputed by an
independent route, each with the z of its difference against the error bars both claim
(:class:`CheckedPoint`), and the check's outcome (:class:`Verification`). LOO's self-check
(:mod:`~stanlogz.crossval.psis_loo.verify`) and the conditional route's brute-force check fill
the same records, so a result, its table and its JSON show them one way.

The decision (:func:`critical_z`): a point fails when |z| exceeds the two-sided normal quantile
at level ``alpha / m`` for ``m`` points checked (Bonferroni), so that when every error bar is
right the chance that any point of the check fails is at most ``alpha``. The normal tail, not a
t bound: both standard errors come from thousands of draws (their own relative error is a few
percent), so the degrees of freedom a t bound would need are in the hundreds or more and its
quantile is the normal one; the false-alarm rate measured in ``benchmarks/loo_verify.py``
(docs/features/self-check.md) is the check of that choice.

LOO's self-check adds a one-sided test of the checked PSIS values' sum
(:func:`one_sided_critical`): PSIS's bias in the heavy-tailed band is upward, several points a
little too high each are what the Bonferroni max misses. A claimed error that includes an
estimated bias b as a root-mean-square one, sqrt(σ² + b²), makes a one-sided normal tail too
small: with d ~ N(b, σ²) the chance that d exceeds c·sqrt(σ² + b²) peaks at b ≈ 0.6 σ, 1.8 times
the tail at b = 0 for c = 1.96. The critical value is the one whose worst case over b/σ is the
level; the two-sided tail's worst case is at b = 0 (checked in the tests), so Bonferroni's
normal quantile holds there as it is.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any

from scipy import optimize, stats

#: Family-wise false-alarm rate of a self-check when every error bar is right.
VERIFY_ALPHA = 0.05


def critical_z(m: int, alpha: float = VERIFY_ALPHA) -> float:
    """The |z| above which a checked point fails: the two-sided normal quantile at level
    ``alpha / m`` (Bonferroni over ``m`` points).

    Parameters
    ----------
    m : int
        The number of points checked (at least 1).
    alpha : float, default VERIFY_ALPHA
        The family-wise false-alarm rate.

    Returns
    -------
    float
        The critical |z| (1.96 for one point at 0.05, 2.39 for three).
    """
    return float(stats.norm.isf(alpha / (2 * max(int(m), 1))))


@functools.lru_cache(maxsize=16)
def one_sided_critical(alpha: float) -> float:
    """The z above which a one-sided test at level ``alpha`` fails whatever part of the claimed
    error is an estimated bias (module docstring): the c with max over r ≥ 0 of
    P(N(r, 1) > c·sqrt(1 + r²)) = ``alpha`` (2.20 at 0.025, 2.45 at 0.0125, against the
    plain 1.96 and 2.24).

    Parameters
    ----------
    alpha : float
        The level, in (0, 0.5).

    Returns
    -------
    float
        The critical z.
    """
    def worst(c: float) -> float:
        res = optimize.minimize_scalar(lambda r: -stats.norm.sf(c * math.hypot(1.0, r) - r),
                                       bounds=(0.0, 10.0), method="bounded",
                                       options={"xatol": 1e-8})
        return max(-float(res.fun), float(stats.norm.sf(c)))
    lo = float(stats.norm.isf(alpha))
    return float(optimize.brentq(lambda c: worst(c) - alpha, lo, lo + 3.0, xtol=1e-10))


def z_score(estimate: float, mcse: float, reference: float, reference_se: float) -> float:
    """(estimate − reference) / sqrt(mcse² + reference_se²): the difference in units of the
    two claimed errors (the routes are independent, so their variances add); ±inf when both
    errors are zero and the values differ, 0 when they agree exactly; NaN (no check, so no
    pass) when either error is NA."""
    d = float(estimate) - float(reference)
    s = math.hypot(float(mcse), float(reference_se))
    if math.isnan(s):
        return float("nan")
    if s > 0:
        return d / s
    return 0.0 if d == 0 else math.copysign(math.inf, d)


@dataclass
class CheckedPoint:
    """One pointwise value recomputed by an independent route.

    Attributes
    ----------
    index : int
        The observation, 0-based.
    route : str
        How the checked value was computed (``"psis"``, ``"mm"``, ``"conditional"``, ...).
    estimate, mcse : float
        The checked value and the Monte Carlo se it claims (for PSIS: its se and its estimated
        bias, combined as the total's Monte Carlo se combines them).
    reference, reference_se : float
        The independent value and its own Monte Carlo se.
    reference_route : str
        How the reference was computed (``"exact"``, ``"bridge"``, ``"quadrature"``, ...).
    z : float
        (estimate − reference) / sqrt(mcse² + reference_se²).
    passed : bool
        |z| at most the check's critical value.
    khat : float
        The Pareto k̂ of the checked value (NaN where it has none).
    why : str
        Why it was chosen (``"worst k-hat"``, ``"k-hat band"``, ``"most informative"``,
        ``"random"``).
    """

    index: int
    route: str
    estimate: float
    mcse: float
    reference: float
    reference_se: float
    z: float
    passed: bool
    reference_route: str = ""
    khat: float = float("nan")
    why: str = ""

    @property
    def z_text(self) -> str:
        """``z = +1.2`` as the notes print it, ``z NA`` where either se is NA (such a point
        cannot pass)."""
        return "z NA" if math.isnan(self.z) else f"z = {self.z:+.1f}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly dict (observation numbered from 1)."""
        return {"observation": self.index + 1, "route": self.route, "estimate": self.estimate,
                "mcse": self.mcse, "reference": self.reference,
                "reference_se": self.reference_se, "reference_route": self.reference_route,
                "z": _finite(self.z), "passed": self.passed, "khat": _finite(self.khat),
                "why": self.why}


@dataclass
class Verification:
    """A self-check's outcome.

    Attributes
    ----------
    status : str
        ``"passed"``; ``"repaired"`` (a point failed and the values it stands for were
        recomputed, the totals include them); ``"withheld"`` (a point failed and the Monte
        Carlo se of the total is withheld, NaN); ``"skipped"`` (not run: ``note`` says why).
    points : list of CheckedPoint
        The points checked.
    critical_z : float
        The |z| above which a point fails.
    alpha : float
        The family-wise false-alarm rate the critical value holds.
    seconds : float
        What the check cost (its refits, and a repair's: ``repair_seconds`` of them).
    share : float
        ``seconds`` as a share of the whole run.
    note : str
        One line: what the check found or why it did not run, and what to run.
    repaired : list of int
        Observations (0-based) recomputed because a point failed, beyond the points checked.
    elpd_before : float
        The total before the check (differs from the answer when a failure was repaired).
    sum_points : list of int
        Observations (0-based) whose checked PSIS values the one-sided sum test adds (empty:
        no sum test).
    sum_z, sum_critical : float
        The sum test's z (Σ estimate − Σ reference over its claimed error: the joint Monte
        Carlo se of the PSIS values from their summed draw influence, their estimated bias and
        the references' se) and the z above which it fails.
    total_points : list of int
        Observations (0-based) whose values a second stage refit and tested in total (empty:
        no second stage); ``total_z``, ``total_critical`` its z and critical |z|.
    """

    status: str
    points: list[CheckedPoint] = field(default_factory=list)
    critical_z: float = float("nan")
    alpha: float = VERIFY_ALPHA
    seconds: float = 0.0
    share: float = 0.0
    note: str = ""
    repaired: list[int] = field(default_factory=list)
    elpd_before: float = float("nan")
    repair_seconds: float = 0.0
    sum_points: list[int] = field(default_factory=list)
    sum_z: float = float("nan")
    sum_critical: float = float("nan")
    total_points: list[int] = field(default_factory=list)
    total_z: float = float("nan")
    total_critical: float = float("nan")

    @property
    def total_failed(self) -> bool:
        """Whether the second stage's test of the total failed."""
        return bool(self.total_points) and not abs(self.total_z) <= self.total_critical

    @property
    def sum_failed(self) -> bool:
        """Whether the one-sided sum test failed (the checked PSIS values too high together)."""
        return bool(self.sum_points) and not self.sum_z <= self.sum_critical

    @property
    def failed(self) -> list[CheckedPoint]:
        """The points whose |z| exceeds the critical value (a repair's values, ``why``
        "repair", and a second stage's, "total", are compared but not tested one by one)."""
        return [p for p in self.points if not p.passed and p.why not in ("repair", "total")]

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly dict."""
        return {"status": self.status, "points": [p.to_dict() for p in self.points],
                "critical_z": _finite(self.critical_z), "alpha": self.alpha,
                "seconds": self.seconds, "repair_seconds": self.repair_seconds,
                "share": self.share, "note": self.note,
                "repaired": [i + 1 for i in self.repaired],
                "elpd_before": _finite(self.elpd_before),
                "sum_test": None if not self.sum_points else {
                    "observations": [i + 1 for i in self.sum_points], "z": _finite(self.sum_z),
                    "critical_z": _finite(self.sum_critical), "passed": not self.sum_failed},
                "total_test": None if not self.total_points else {
                    "observations": [i + 1 for i in self.total_points],
                    "z": _finite(self.total_z), "critical_z": _finite(self.total_critical),
                    "passed": not self.total_failed}}

    def rows(self) -> list[list[Any]]:
        """One table row per point: observation, k̂, route, estimate, its mc se, reference, its
        se, z, pass/FAIL."""
        def r(x: float, digits: int) -> Any:  # NA as loo prints it
            return "NA" if math.isnan(x) else round(x, digits)

        return [[p.index + 1, round(p.khat, 2), p.route, round(p.estimate, 3), r(p.mcse, 3),
                 round(p.reference, 3), r(p.reference_se, 3), r(p.z, 2),
                 "pass" if p.passed else "FAIL"] for p in self.points]

    #: the header of :meth:`rows`
    HEADER = ("obs", "k-hat", "route", "estimate", "mc se", "reference", "ref se", "z", "")


def _finite(x: float) -> float | None:
    """``x``, or None for NaN or inf (JSON has neither)."""
    return float(x) if math.isfinite(x) else None
