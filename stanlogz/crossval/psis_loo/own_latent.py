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

import time
from dataclasses import dataclass, field

import numpy as np

from ..._util import deadline
from ..._util.progress import duration
from ...errors import Route
from ..observations.pointwise import PointwiseLogLik

#: Parameters stepped along per block of the probe (its rows: a block of steps at a time).
PROBE_BLOCK = 64
#: Seconds the probe may take whatever the run so far took ...
PROBE_SECONDS = 10.0
#: ... or this share of the run so far, where that is longer: the probe is priced from its
#: first block (a step along each parameter costs one draw of the pointwise pass; about
#: dim / draws of the pass in all) and not run where it would take longer.
PROBE_SHARE = 0.25
#: Observations refit exactly whatever their refits cost; more are refit where their refits
#: fit in the time ``fix="auto"`` starts on its own (``loo._own_refits_fit``), else flagged.
MAX_OWN_REFITS = 10


@dataclass
class OwnProbe:
    """What the probe found: ``own`` maps each observation (0-based) that alone moves a
    parameter to that parameter's position; ``note`` says why it did not run to the end
    (priced out), else None."""

    own: dict[int, int] = field(default_factory=dict)
    note: str | None = None


def probe_allowance(elapsed: float) -> float:
    """Seconds the probe may take after a run of ``elapsed`` seconds: ``PROBE_SECONDS`` or
    ``PROBE_SHARE`` of the run, whichever is longer, within half the time budget left."""
    allowed = max(PROBE_SECONDS, PROBE_SHARE * elapsed)
    left = deadline.remaining()
    return allowed if left is None else min(allowed, 0.5 * left)


def own_parameter_observations(pw: PointwiseLogLik, unc: np.ndarray, index: np.ndarray,
                               elapsed: float = 0.0) -> OwnProbe:
    """The observations (0-based, among ``index``) whose log-likelihood is the only one that
    moves when one unconstrained parameter moves, each with that parameter's position.

    One central point of the draws ``unc`` (S, dim) and one step of one posterior sd along each
    parameter, ``PROBE_BLOCK`` steps at a time: a parameter moves the observations whose
    log p(y_i | θ) changes by more than rounding (on the density-difference route past one
    block of parameters, the gradient of each ℓ_i there: :func:`_gradient_probe`). Only the
    density-difference and ``log_lik`` routes are probed (their pointwise values cost one
    density each); the conditional and integrated routes integrate the observation's own
    latents already. The probe is priced from its first block against
    :func:`probe_allowance` (``elapsed``: the run's seconds so far); priced out, it stops
    with a note and nothing found.
    """
    if pw.source not in ("difference", "log_lik") or index.size < 2:
        return OwnProbe()
    dim = unc.shape[1]
    centre = unc[int(np.argmin(np.sum((unc - np.median(unc, axis=0)) ** 2, axis=1)))]
    if pw.source == "difference" and dim >= PROBE_BLOCK \
            and hasattr(pw.model, "log_density_gradient"):  # one block of steps: cheaper
        return _gradient_probe(pw, centre, index, probe_allowance(elapsed))
    sd = unc.std(axis=0)
    step = np.where(sd > 0, sd, 1.0)
    allowed, t0 = probe_allowance(elapsed), time.perf_counter()
    # not a step of the pass: its clock neither counts it nor, stopped by a budget, cuts it short
    clock, pw._clock = getattr(pw, "_clock", None), None
    out: dict[int, int] = {}
    try:
        base = None
        for a in range(0, dim, PROBE_BLOCK):
            b = min(dim, a + PROBE_BLOCK)
            rows = np.repeat(centre[None, :], b - a, axis=0)
            rows[np.arange(b - a), np.arange(a, b)] += step[a:b]
            if base is None:
                rows = np.vstack([centre, rows])
            ll = pw.columns(index, rows)  # (rows, len(index))
            if base is None:
                base, ll = ll[0], ll[1:]
            moved = np.abs(ll - base) > 1e-8 * (1.0 + np.abs(base))
            for c in np.nonzero(moved.sum(axis=1) == 1)[0]:
                out.setdefault(int(index[int(np.argmax(moved[c]))]), a + int(c))
            spent = time.perf_counter() - t0
            if b < dim and spent * dim / b > allowed:
                return OwnProbe(note=_priced_out(dim, spent * dim / b, allowed))
    finally:
        pw._clock = clock
    return OwnProbe(out)


def _gradient_probe(pw: PointwiseLogLik, centre: np.ndarray, index: np.ndarray,
                    allowed: float) -> OwnProbe:
    """The density-difference route's probe: the gradient of ℓ_i = log p(y_i | θ) at
    ``centre``, one per observation (the gradient of its instance's density less the
    baseline's), whose non-zero entries are the parameters it moves. N gradients instead of
    (dim + 1) × N densities: past a few hundred parameters the steps of the ``log_lik``
    route's probe would cost more than the pass. Priced from its first ``PROBE_BLOCK``
    observations."""
    t0, dim = time.perf_counter(), centre.size
    base = [b.log_density_gradient(centre)[1] for b in pw.bases()]
    tol = [1e-8 * (1.0 + np.abs(g)) for g in base]
    count = np.zeros(dim, dtype=int)
    first = np.full(dim, -1)
    for j, i in enumerate(index):
        obs, b = pw._pair(int(i))
        with np.errstate(invalid="ignore"):  # a rejected point: NaN, moves nothing
            moved = np.abs(pw._instance(obs).log_density_gradient(centre)[1] - base[b]) > tol[b]
        first[moved & (count == 0)] = int(i)
        count += moved
        if j + 1 == PROBE_BLOCK and j + 1 < index.size:
            need = (time.perf_counter() - t0) * index.size / (j + 1)
            if need > allowed:
                return OwnProbe(note=_priced_out(dim, need, allowed))
    out: dict[int, int] = {}
    for c in np.nonzero(count == 1)[0]:
        out.setdefault(int(first[c]), int(c))
    return OwnProbe(out)


def _priced_out(dim: int, need: float, allowed: float) -> str:
    """The note of a probe not run to the end: what was not looked for, and the way out."""
    return (f"observations that alone move a parameter were not looked for among the {dim} "
            f"parameters (about {duration(need)}, over the {duration(allowed)} allowed): where "
            "one exists (a group of one, a latent per observation) its PSIS value may be off "
            "far beyond its Monte Carlo se; "
            f"kfold has no such blind spot ({Route('kfold', {'group': ...})})")


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
