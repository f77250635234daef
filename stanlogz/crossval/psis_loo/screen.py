"""Which observations a budget-stopped pass of a costly pointwise source takes with certainty:
those whose density difference lies far from the rest.

A conditional pass can cost seconds an observation (a hidden Markov model's
quadrature: 3.4 s on 400 draws), so that when the time budget ends it no approximation of the
observations left fits, and elpd_loo is N times the mean of the m done. Its se counts the
spread of those m: a rare class of outlying observations that a sample of 20 misses (ten of
200, missed a third of the time) leaves the estimate far off with a small se
(``benchmarks/anytime_few_coverage.py``: ±2 se covered 0.66 at m = 20). The program's density
difference log p(y) − log p(y₋ᵢ) is not each observation's conditional log-likelihood there
(the source was refused for that), but it costs one data instance per observation: on
``SUBSAMPLE_APPROX_DRAWS`` thinned draws it shows which observations lie far from the others
before the pass starts. Those (at most ``CERTAIN_MAX``) are visited first and taken with
certainty; the rest stays a simple random sample of the others, so the estimator is the
stratified one of :func:`~.subsample.subsample_estimates` and unbiased whatever the screen
picks. The screen only chooses the certain stratum; it never enters the estimate. An
integrated source (one latent per observation) is not screened: its approximation on thinned
draws fits, and the density difference conditional on the latents is heavy where the
integrated values are not, so that it would flag the wrong ones."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..._util import deadline
from ..._util.arrays import even_rows
from ...draws import Draws
from ...errors import StanlogzError
from ..elpd.psis import LOGLIK_VAR_HEAVY, psis_loo
from ..observations.clock import ANYTIME_MIN, SUBSAMPLE_APPROX_DRAWS

#: Tukey's far-out fences: a screened value below Q1 − 3 IQR or above Q3 + 3 IQR is far
#: from the rest.
FAR_IQR = 3.0
#: The most observations the screen takes with certainty (as the anytime pass's certain
#: stratum, ``anytime.CERTAIN_MAX``; and at most half of those beyond the ``ANYTIME_MIN`` an
#: estimate needs, :func:`most_screened`): the farthest where more are flagged (the elpd_i of
#: a normal model are skewed, and Tukey's fences flag about 2.5% of them).
SCREEN_MAX = 20


def far_out(values: np.ndarray) -> np.ndarray:
    """Which ``values`` lie beyond Tukey's far-out fences (``FAR_IQR`` IQRs past a
    quartile)."""
    q1, q3 = np.percentile(values, [25, 75])
    if not q3 - q1 > 1e-9 * max(abs(q1), abs(q3), 1.0):  # no spread to measure by: none
        return np.zeros(values.shape, dtype=bool)
    spread = FAR_IQR * (q3 - q1)
    return (values < q1 - spread) | (values > q3 + spread)


def screened(pw: Any, d: Draws, r_eff: float, progress: Any = None,
             priced: Callable[[Any], bool] = lambda pw: True) -> np.ndarray:
    """The observations (sorted indices) whose density difference on ``SUBSAMPLE_APPROX_DRAWS``
    thinned draws of ``d`` is far out or heavy (:func:`pick`), chosen once per source (a pass
    run again on fewer draws keeps them); empty where ``pw`` has no ``proxy`` (a
    density-difference source the program builds), where ``priced(pw)`` says it is not
    needed (the conditional pass completes by its price) or does not fit the run's time
    budget, or where the screen's pass fails or outlasts it (nothing is kept then: a pass run
    again on fewer draws asks again)."""
    proxy = getattr(pw, "proxy", None)
    n = pw.obs.n
    if proxy is None or most_screened(n) < 1:
        return np.zeros(0, dtype=int)
    if getattr(pw, "screened", None) is None:
        if not priced(pw):
            return np.zeros(0, dtype=int)
        pw.screened = _screen(proxy, n, d, r_eff, progress)
    return pw.screened


def most_screened(n: int) -> int:
    """The most of ``n`` observations the screen takes: ``SCREEN_MAX``, and half of those
    beyond the ``ANYTIME_MIN`` a random part needs."""
    return min(SCREEN_MAX, (n - ANYTIME_MIN) // 2)


def pick(values: np.ndarray, var: np.ndarray | None = None) -> np.ndarray:
    """The observations (sorted indices) whose screened ``values`` are far out
    (:func:`far_out`) or whose log-likelihood variance ``var`` is above
    ``LOGLIK_VAR_HEAVY``: at most :func:`most_screened`, the heavy ones first, then the
    farthest from the median in IQRs (any set fixed before the pass serves as the certain
    stratum)."""
    heavy = np.zeros(values.shape, dtype=bool) if var is None else var > LOGLIK_VAR_HEAVY
    flagged = far_out(values) | heavy
    most = most_screened(values.size)
    if not flagged.any() or most < 1:
        return np.zeros(0, dtype=int)
    q1, med, q3 = np.percentile(values, [25, 50, 75])
    distance = np.abs(values - med) / max(q3 - q1, 1e-12) + np.where(heavy, np.inf, 0.0)
    order = np.argsort(-distance[flagged], kind="stable")
    return np.sort(np.flatnonzero(flagged)[order[:most]])


def _screen(proxy: Any, n: int, d: Draws, r_eff: float, progress: Any) -> np.ndarray:
    """:func:`screened`'s pass of ``proxy`` over the ``n`` observations and its pick."""
    unc = d.flat_unconstrained()
    unc = unc[even_rows(unc.shape[0], SUBSAMPLE_APPROX_DRAWS)]
    values, var = np.full(n, np.nan), np.zeros(n)
    try:
        for idx, block in proxy.chunks(unc):
            one = psis_loo(block, r_eff)
            values[idx] = one.elpd_i
            if one.var_i is not None:
                var[idx] = one.var_i
    except (deadline.OverBudget, StanlogzError):  # no screen: the plain random sample
        return np.zeros(0, dtype=int)
    if not np.isfinite(values).all():
        return np.zeros(0, dtype=int)
    picked = pick(values, var)
    if progress and picked.size:
        progress(f"{picked.size} observation(s) whose density difference on "
                 f"{unc.shape[0]} thinned draws lies far from the rest are computed first and "
                 f"taken with certainty: {', '.join(str(i + 1) for i in picked)}")
    return picked
