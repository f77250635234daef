"""The PSIS values of the moderate k̂ band, corrected by exact refits of a random sample of
them (a stratified difference estimator, as subsampling LOO's; Magnusson et al. 2019).

Below the k̂ threshold PSIS values are kept, but where the ratios' tail is near the edge of a
finite variance they are each a little too high, and many such values add up. On posteriordb's
radon_county_intercept (85 county intercepts, 2–6 houses in most counties: leaving a house out
of a county of n moves its intercept, a ratio tail of index about 1/n), over 40 sets of 4000
exact posterior draws the ~250 PSIS values with k̂ 0.2–0.7 were together +0.64 nats above their
exact values (sd 0.32), against a Monte Carlo se of the whole total of about 0.47; the
half-sample bias estimate (:func:`~stanlogz.crossval.elpd.psis.half_bias`), which counts
k̂ > 0.5 only, saw a fifth of it. The corpus coverage table (docs/benchmarks.md) had radon at
mean z +1.55 over 20 seeds.

The band, k̂ in [``STRATA[0]``, threshold], is split into strata by k̂ (``STRATA``); in each,
``m_h = min(n_h, STRATUM_REFITS)`` values drawn at random without replacement are refit
exactly (their exact values replace them, as the self-check's refits do; a value moment
matched below the threshold is in the band with its matched value), and each of the other
``n_h − m_h`` values gets the stratum's mean difference d̄_h = mean(exact − PSIS) added. The
band's sum is then unbiased for the exact sum (over the random samples, whatever the draws),
and its error is the samples' means':

    se² = Σ_h n_h² (1 − m_h / n_h) s_h² / m_h,      s_h² the sample variance of exact − PSIS,

which is added to the total's Monte Carlo se; the unsampled values' PSIS se and bias estimate
stay in it. (The draws' error common to the band cancels in the differences, so they could
leave; but PSIS's errors at k̂ near 0.5 are heavy-tailed, a sample of 10 can miss the few
large ones and its s_h² then understates its error: replayed with them left out, |z| > 4 in
0.2% of runs, and one live radon run, seed 4, reached z +4.1; with them kept, none in 450.)

It runs only where it matters and is affordable: where the band's estimated bias
(:func:`band_bias`: each value's pointwise mc se times the share ``BIAS_RATES`` gives its k̂,
summed) exceeds ``MATERIAL`` × the Monte Carlo se the total claims without it, and the refits'
estimated cost is at most ``BAND_SECONDS`` (and the time budget's rest; an explicit
``verify=K`` lifts the first limit). Where it matters but costs more, the values stay PSIS's
and that estimated bias joins mcse_elpd_loo as an error (``BandCorrection.bias``), with a
warning: a wider error bar rather than a correction. ``verify=0`` turns it off with the
self-check. Coverage: ``benchmarks/band_replay.py``, ``benchmarks/band_bias_coverage.py``
(docs/benchmarks.md).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..._util import deadline as run_budget
from ..._util.progress import duration
from ...errors import InputError, Route
from ..fixups.fixups import FixedPoint

#: The band's strata by k̂ (the top one ends at the threshold): PSIS's error grows with k̂, so
#: the differences within a stratum spread less than over the band and the sample of each
#: stratum estimates its own mean (a stratified difference estimator).
STRATA = (0.2, 0.3, 0.5)
#: The lowest k̂ of the band.
BAND_LOW = STRATA[0]
#: The values of one stratum refit at most (all of them when there are no more).
STRATUM_REFITS = 10
#: PSIS's upward bias of one value as a share of its pointwise mc se, by k̂ (the share from each
#: edge up to the next; the last to the threshold): measured with exact posterior draws on two
#: programs whose exact LOO is known, a conjugate hierarchical normal (200 data sets) and
#: radon_county_intercept (20 sets); shares 0.18/0.13, 0.19/0.21, 0.23/0.27, 0.41/0.28 and
#: 0.72/0.99 per stratum, the larger taken (``benchmarks/band_bias_coverage.py --rates``). The
#: share grows with k̂: a flat 0.24 (radon's whole band) read a band near the threshold 2.3 times
#: too low ...
BIAS_RATES = ((0.2, 0.18), (0.3, 0.21), (0.4, 0.27), (0.5, 0.41), (0.6, 0.99))
#: ... and the band is corrected only where that much bias would be material: more than this
#: share of the Monte Carlo se the total claims without it.
MATERIAL = 0.5
#: The refits' estimated seconds at most (one sampling run each); beyond, the band is left
#: as PSIS gives it and the result says so.
BAND_SECONDS = 300.0


def band_bias(mcse_i: np.ndarray, khat_i: np.ndarray) -> float:
    """PSIS's estimated upward bias summed over band values of pointwise mc se ``mcse_i`` and
    k̂ ``khat_i``: Σ share(k̂_i) × mcse_i, the share from ``BIAS_RATES`` (0 below its first
    edge)."""
    mc = np.asarray(mcse_i, dtype=float).ravel()
    k = np.asarray(khat_i, dtype=float).ravel()
    edges = np.array([e for e, _ in BIAS_RATES])
    shares = np.concatenate([[0.0], [r for _, r in BIAS_RATES]])
    return float(np.sum(shares[np.searchsorted(edges, k, side="right")] * mc))


#: ``refit(indices)``: exact values of the 0-based observations, and notes of those that fail.
Refit = Callable[[np.ndarray], tuple[list[FixedPoint], list[str]]]


@dataclass
class BandCorrection:
    """What the band's difference estimator did (``LooResult.band``; ``to_dict`` in JSON)."""

    status: str  # "corrected", "refit" (every band value refit), "skipped"
    low: float
    high: float
    n: int  # PSIS values in the band
    sampled: list[int] = field(default_factory=list)  # 0-based, refit exactly
    unsampled: list[int] = field(default_factory=list)  # 0-based, corrected by d̄
    #: per stratum: k̂ range, values, sampled, mean of exact − PSIS over its sample
    strata: list[dict[str, Any]] = field(default_factory=list)
    shifts: dict[int, float] = field(default_factory=dict)  # 0-based: added to elpd_i
    correction: float = 0.0  # added in total to the unsampled values: Σ (n_h − m_h) d̄_h
    se: float = 0.0  # the sampling se of the correction
    #: "skipped": the estimated upward bias of the values left as PSIS gives them
    #: (:func:`band_bias`), in mcse_elpd_loo as an error; 0 where unknown
    bias: float = 0.0
    seconds: float = 0.0
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly dict (observations numbered from 1)."""
        return {"status": self.status, "khat_low": self.low, "khat_high": self.high,
                "n": self.n, "sampled": [i + 1 for i in self.sampled],
                "n_unsampled": len(self.unsampled), "strata": self.strata,
                "correction": self.correction, "se": self.se, "bias": self.bias,
                "seconds": self.seconds,
                "note": self.note}


def difference_estimate(diff: np.ndarray, n: int) -> tuple[float, float]:
    """The difference estimator of Σ (exact − PSIS) over the ``n − m`` unsampled values of a
    band of ``n``, from the ``m`` sampled differences ``diff`` (a simple random sample without
    replacement): ``((n − m) d̄, se)`` with se² = n² (1 − m/n) s² / m (0 when m = n).

    Raises
    ------
    InputError
        Fewer than 2 differences (no variance) while some values are unsampled, or m > n.
    """
    diff = np.asarray(diff, dtype=float).ravel()
    m = diff.size
    if m > n or m < 1:
        raise InputError(f"a sample of {m} difference(s) from a band of {n} values")
    if m == n:
        return 0.0, 0.0
    if m < 2:
        raise InputError("the band's difference estimator needs at least 2 sampled values")
    s2 = float(np.var(diff, ddof=1))
    return (n - m) * float(diff.mean()), n * math.sqrt((1.0 - m / n) * s2 / m)


#: The fix-up whose values stay in the band: moment matching below the threshold (``fix="auto"``
#: matches the values whose k̂ may read low, :func:`~.loo.mm_band_floor`) is an importance
#: sampling estimate too, and on radon_county_intercept it left the band's values higher than
#: PSIS had (+1.18 nats in all at seed 1, z +2.9, when they were taken out of the band).
ESTIMATES = ("mm",)


def band_members(obs: np.ndarray, khat: np.ndarray, fixed: Sequence[FixedPoint],
                 low: float, high: float) -> np.ndarray:
    """The observations (0-based) with ``low`` <= k̂ <= ``high`` whose values are still
    importance sampling estimates: PSIS's, or a fix-up of ``ESTIMATES`` (not a refit)."""
    done = {f.index for f in fixed if f.method not in ESTIMATES}
    keep = [int(o) for o, k in zip(obs, khat, strict=True)
            if np.isfinite(k) and low <= k <= high and int(o) not in done]
    return np.array(keep, dtype=int)


def correct_band(obs: np.ndarray, khat: np.ndarray, psis: np.ndarray,
                 fixed: list[FixedPoint], refit: Refit | None, *, threshold: float,
                 refit_seconds: float | None, rng: np.random.Generator | None,
                 psis_mcse: np.ndarray | None = None, claimed: float = 0.0,
                 forced: bool = False, progress: Any = None, no_refit: str | None = None
                 ) -> tuple[list[FixedPoint], BandCorrection | None]:
    """Refit a random sample of each stratum of the band's PSIS values and estimate the
    others' error from it.

    Parameters
    ----------
    obs : numpy.ndarray
        The observations (0-based) of the pointwise arrays.
    khat, psis : numpy.ndarray
        Their PSIS k̂ and elpd_i.
    fixed : list of FixedPoint
        The fix-ups so far: refit values are not in the band; moment-matched ones
        (``ESTIMATES``) stay in it with their matched values, which a refit of the sample
        replaces.
    refit : callable or None
        Exact values of 0-based observations (:data:`Refit`); None only with ``no_refit``.
    threshold : float
        The k̂ threshold (the band's top).
    refit_seconds : float or None
        The estimated seconds of one refit; None: unknown (skipped).
    rng : numpy.random.Generator or None
        Draws the samples (None only with ``no_refit``: nothing is drawn).
    psis_mcse : numpy.ndarray, optional
        The PSIS values' own mc se; with ``claimed``, the band is corrected only where
        their :func:`band_bias` over the band exceeds ``MATERIAL`` × ``claimed`` (None:
        always), and where the band is left as PSIS gives it, that bias of the values left is
        ``BandCorrection.bias``.
    claimed : float, default 0.0
        The Monte Carlo se the total claims without the correction.
    forced : bool, default False
        Asked for (``verify=K``): the refits' cost is limited by the time budget alone, not
        by ``BAND_SECONDS``.
    progress : callable, optional
        Called with one line.
    no_refit : str, optional
        Why no value can be refit (a fit without its program): the band is left as PSIS gives
        it, with this reason in its note, wherever it is material.

    Returns
    -------
    (list of FixedPoint, BandCorrection or None)
        The fixed points with the samples' refits; None when the band is empty.
    """
    edges = [e for e in STRATA if e < threshold] + [float(threshold)]
    parts = [band_members(obs, khat, fixed, lo, hi)
             for lo, hi in zip(edges, edges[1:], strict=False)]
    # a value on an inner edge belongs to the stratum above it
    parts = [np.setdiff1d(p, np.concatenate(parts[j + 1:] or [np.zeros(0, int)]))
             for j, p in enumerate(parts)]
    n = int(sum(p.size for p in parts))
    if n == 0:
        return fixed, None
    take = [min(p.size, STRATUM_REFITS) for p in parts]
    m = int(sum(take))
    top = f"k-hat {edges[0]}-{threshold:.2f}"
    bias = np.inf
    if psis_mcse is not None:
        at = {int(o): j for j, o in enumerate(obs)}

        def bias_of(members: Sequence[int]) -> float:
            j = [at[int(o)] for o in members]
            return band_bias(np.asarray(psis_mcse)[j], np.asarray(khat)[j])

        bias = bias_of([o for p in parts for o in p])
        if bias <= MATERIAL * claimed:
            return fixed, None
    # the band's estimates: PSIS's, or their moment-matched values
    pos = {int(o): j for j, o in enumerate(obs)}
    estimate = np.array(psis, dtype=float, copy=True)
    for f in fixed:
        if f.method in ESTIMATES and int(f.index) in pos:
            estimate[pos[int(f.index)]] = f.elpd
    out = BandCorrection("skipped", edges[0], float(threshold), n)
    cost = None if refit_seconds is None else m * refit_seconds
    left = run_budget.remaining()
    cap = min(np.inf if forced else BAND_SECONDS, np.inf if left is None else left)
    if no_refit is not None or cost is None or cost > cap:
        out.bias = bias if np.isfinite(bias) else 0.0
        out.note = (f"{n} PSIS value(s) with {top} are left as PSIS gives them, "
                    + _bias_words(out.bias) + ": "
                    + (no_refit if no_refit is not None else
                       "the cost of refitting a sample of them is unknown" if cost is None else
                       f"refitting {m} of them would take about {duration(cost)}, more than "
                       + (f"{duration(cap)}" if left is None or cap < left else
                          f"the time budget has left ({duration(max(cap, 0.0))})"))
                    + ("" if no_refit is not None else
                       f"; {Route(options={'verify': 4})} corrects them whatever the cost"))
        return fixed, out
    if rng is None or refit is None:
        raise InputError("the band's refits need a refit and the random stream that draws "
                         "their sample (or no_refit: why none can run)")
    samples = [np.sort(rng.choice(p, size=t, replace=False)) for p, t in zip(parts, take,
                                                                             strict=True)]
    if progress:
        progress(f"band {top}: refitting {m} of its {n} PSIS value(s) (about "
                 f"{duration(cost)})")
    t0 = time.perf_counter()
    got, notes = refit(np.concatenate(samples))
    ref = {f.index: f for f in got}
    out.seconds = time.perf_counter() - t0
    if len(ref) < m:  # a refit failed or the budget ended them: keep the exact values got
        out.sampled = sorted(ref)
        if np.isfinite(bias):
            out.bias = bias_of([o for p in parts for o in p if int(o) not in ref])
        out.note = (f"{n - len(ref)} PSIS value(s) with {top} are left as PSIS gives them, "
                    + _bias_words(out.bias) + f" ({len(ref)} of the {m} refits "
                    f"ran, their exact values kept): "
                    f"{notes[0] if notes else 'the refits stopped'}")
        return _replaced(fixed, ref), out
    var = 0.0
    for lo, hi, part, sample in zip(edges, edges[1:], parts, samples, strict=False):
        if part.size == 0:
            continue
        diff = np.array([ref[int(o)].elpd - estimate[pos[int(o)]] for o in sample])
        corr, se = difference_estimate(diff, int(part.size))
        rest = [int(o) for o in part if int(o) not in ref]
        out.shifts.update({o: float(diff.mean()) for o in rest})
        out.unsampled += rest
        out.correction += corr
        var += se**2
        out.strata.append({"khat": [lo, hi], "n": int(part.size), "m": int(sample.size),
                           "mean_difference": float(diff.mean()), "correction": corr,
                           "se": se})
    out.sampled = sorted(ref)
    out.se = math.sqrt(var)
    out.status = "corrected" if out.unsampled else "refit"
    out.note = (f"{n} PSIS value(s) with {top}: {m} refit exactly"
                + (f", the other {len(out.unsampled)} corrected by their k-hat stratum's mean "
                   f"difference, in total {out.correction:+.2f} (se {out.se:.2f}, in "
                   f"mcse_elpd_loo)" if out.unsampled else ""))
    return _replaced(fixed, ref), out


def _bias_words(bias: float) -> str:
    """How the note of a band left as PSIS gives it states its bias."""
    if bias > 0:
        return (f"their estimated upward bias, {bias:+.2f}, in mcse_elpd_loo as an error (not "
                "subtracted)")
    return "whose upward bias is not in mcse_elpd_loo (their pointwise mc se are unknown)"


def _replaced(fixed: list[FixedPoint], ref: dict[int, FixedPoint]) -> list[FixedPoint]:
    """``fixed`` with the band's refits ``ref`` in place of the estimates they replace."""
    return [f for f in fixed if f.index not in ref] + list(ref.values())
