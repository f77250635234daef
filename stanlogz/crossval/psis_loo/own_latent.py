"""Observations that are the only ones a parameter's likelihood depends on (a county with one
house, a group of one): leaving such an observation out returns its parameter to the prior,
so the importance ratios 1 / p(y_i | θ) have the tail of that prior against a posterior the
observation alone narrowed, e.g. a Gaussian prior of variance P against a likelihood of
variance L has a ratio tail of index k = P / (P + L), near 1 for a wide prior. From a few
thousand draws PSIS's k̂ reads this tail far too light and its Monte Carlo se far too small.

Measured on posteriordb's radon_county_intercept (``benchmarks/corpus_coverage.py``): its
three one-house counties (alpha ~ normal(0, 10)) have true k ≈ 0.99, k̂ 0.58–0.84, and PSIS or
moment-matched values 1.1–1.7 nats above the exact ones with a Monte Carlo se under 0.08: the
total was 4.8 nats high, z ≈ +10, without a warning, and the self-check's four random points
did not land on them. Such observations are found here from the draws, not from k̂, and
:func:`~stanlogz.crossval.psis_loo.loo.loo` refits them exactly.
"""

from __future__ import annotations

import numpy as np

from ...errors import Route
from ..observations.pointwise import PointwiseLogLik

#: Parameters probed at most (one row of the pointwise log-likelihood per parameter, about
#: dim / draws of the pass's cost); a larger program is not probed.
MAX_PROBED = 400
#: Observations refit exactly whatever their refits cost; more are refit where their refits
#: fit in the time ``fix="auto"`` starts on its own (``loo._own_refits_fit``), else flagged.
MAX_OWN_REFITS = 10


def own_parameter_observations(pw: PointwiseLogLik, unc: np.ndarray,
                               index: np.ndarray) -> dict[int, int]:
    """The observations (0-based, among ``index``) whose log-likelihood is the only one that
    moves when one unconstrained parameter moves, each with that parameter's position.

    One central point of the draws ``unc`` (S, dim) and one step of one posterior sd along each
    parameter: a parameter moves the observations whose log p(y_i | θ) changes by more than
    rounding. Only the density-difference and ``log_lik`` routes are probed (their pointwise
    values cost one density each); the conditional and integrated routes integrate the
    observation's own latents already. Empty when not probed.
    """
    if pw.source not in ("difference", "log_lik") or unc.shape[1] > MAX_PROBED or index.size < 2:
        return {}
    centre = unc[int(np.argmin(np.sum((unc - np.median(unc, axis=0)) ** 2, axis=1)))]
    sd = unc.std(axis=0)
    rows = np.vstack([centre, centre + np.diag(np.where(sd > 0, sd, 1.0))])
    # not a step of the pass: its clock neither counts it nor, stopped by a budget, cuts it short
    clock, pw._clock = getattr(pw, "_clock", None), None
    try:
        ll = pw.columns(index, rows)  # (dim + 1, len(index))
    finally:
        pw._clock = clock
    moved = np.abs(ll[1:] - ll[0]) > 1e-8 * (1.0 + np.abs(ll[0]))
    out: dict[int, int] = {}
    for c in np.nonzero(moved.sum(axis=1) == 1)[0]:
        out.setdefault(int(index[int(np.argmax(moved[c]))]), int(c))
    return out


def own_parameter_note(own: dict[int, int], names: list[str], refit: bool) -> str:
    """The warning for observations with a parameter of their own: what was done about them."""
    obs = sorted(own)
    which = ", ".join(f"{i + 1} ({names[own[i]] if own[i] < len(names) else own[i]})"
                      for i in obs[:10])
    head = (f"{len(obs)} observation(s) are each the only one a parameter's likelihood depends "
            f"on: {which}{' ...' if len(obs) > 10 else ''}; leaving one out returns its "
            "parameter to its prior")
    if refit:
        return head + ", which the draws do not show: they were refit exactly"
    return (head + ", a tail PSIS's k-hat reads as lighter than it is: their values may be off "
            "far beyond their Monte Carlo se, so the total has none; refit them "
            f"({Route(options={'fix': 'exact', 'k_threshold': 0})}) or use kfold")
