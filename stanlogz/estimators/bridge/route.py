"""Which proposal gbs fits: a dense whitening where the draws are enough for one, else the
structured (diagonal plus low rank) whitening whose draws and memory grow with the dimension
only; how the draws split between fitting it and the bridge (halves, or unevenly where halves
are too small to fit it); and the flow's log weights computed in blocks, so that ``n_q`` flow
samples in ``d`` dimensions never sit in memory at once."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...densities.target import Target
from ...errors import InputError
from ...flows.gaussianize import GaussianizingFlow
from ...flows.selection import STRUCTURED_MIN_DRAWS
from ..common import dense_least, eval_log_density, split_halves, uneven_cut

PROPOSALS = ("auto", "dense", "structured")
#: The dense route's orientations correlate as rho = d / (d + ORIENTATION_C n_half): both carry
#: the two halves' discrepancy summed over the d coordinates, a share of each one's error that
#: grows with d / n (and is whole on the structured route, d > n). Measured on exact draws of
#: the hierarchical normal (4 x 1000, halves of 2,000; benchmarks/evidence_scaling.py
#: coverage): the orientations' errors correlated -0.03 at d = 10 and +0.10 at 102 (150
#: replicates each); 0.5 gives rho(102) = 0.09. At 1,002 (rho 0.50) the rule is conservative
#: on exact draws (docs/features/high-dim-evidence.md).
ORIENTATION_C = 0.5
#: flow samples drawn, mapped and evaluated per block
SAMPLE_BLOCK = 2048


@dataclass(frozen=True)
class Route:
    """The proposal gbs fits: ``structured`` or not, the fewest draws per half it needs, and why
    it was chosen (one line)."""

    structured: bool
    least: int
    reason: str


def choose_route(n_half: int, dim: int, proposal: str = "auto", validate: bool = True
                 ) -> Route:
    """The :class:`Route` for halves of ``n_half`` draws in ``dim`` dimensions; ``proposal``
    "auto" (dense where the draws are enough for it, or where it needs no more than the
    structured whitening), "dense" or "structured"."""
    if proposal not in PROPOSALS:
        raise InputError(f"proposal must be one of {', '.join(PROPOSALS)}, got {proposal!r}")
    need = dense_least(dim, validate)
    if proposal == "dense":
        return Route(False, need, "dense covariance (asked for)")
    if proposal == "structured":
        return Route(True, STRUCTURED_MIN_DRAWS, "diagonal plus low rank (asked for)")
    if n_half >= need or need <= STRUCTURED_MIN_DRAWS:
        return Route(False, need, f"dense covariance: each half has {n_half} draws, at least "
                                  f"the {need} it needs in {dim} dimensions")
    return Route(True, STRUCTURED_MIN_DRAWS,
                 f"diagonal plus low rank: each half has {n_half} draws, fewer than the {need} "
                 f"a dense covariance needs in {dim} dimensions")


def orientation_correlation(route: Route, dim: int, n_half: int) -> float:
    """The correlation the two orientations' errors are combined with: 1 on the structured
    route (more dimensions than draws), ``dim / (dim + ORIENTATION_C n_half)`` on the dense
    one (:data:`ORIENTATION_C`)."""
    if route.structured:
        return 1.0
    return dim / (dim + ORIENTATION_C * max(n_half, 1))


def flow_log_weights(target: Target, flow: GaussianizingFlow, rng: np.random.Generator,
                     n: int) -> tuple[np.ndarray, int]:
    """``log p - log q`` at ``n`` fresh flow samples, and how many had a non-finite log
    density; in blocks of :data:`SAMPLE_BLOCK` rows (the same samples as one call of
    ``flow.sample_with_log_density(rng, n)``: the normals are drawn row by row)."""
    out, bad = [], 0
    for a in range(0, n, SAMPLE_BLOCK):
        x, lq = flow.sample_with_log_density(rng, min(SAMPLE_BLOCK, n - a))
        lp, b = eval_log_density(target, x)
        out.append(lp - lq)
        bad += b
    return (np.concatenate(out) if out else np.zeros(0)), bad


def combine_orientations(estimates: list[float], ses: list[float],
                         correlated: bool | float = False) -> tuple[float, float, float]:
    """log Z, its standard error and the z-score of the difference from the estimates of one or
    two orientations (fit and bridge halves swapped).

    The two are nearly independent: when each se is right, Var(mean) = (se_a^2 + se_b^2) / 4,
    and in any case E (a - b)^2 = se_a^2 + se_b^2 + twice the variance each fit adds; the
    larger of the two estimates of Var(mean) keeps a fit-dependent error inside the error bar.
    ``correlated``, the correlation rho of the bridges' errors (True: 1), makes it
    Var(mean) = (se_a^2 + se_b^2 + 2 rho se_a se_b) / 4: both orientations carry the same sum
    over coordinates of the two halves' squared discrepancy, a share of their errors that grows
    with the dimension per draw (:func:`~.route.orientation_correlation`; at d = 3,002 the two
    halves' errors agreed in sign and size, the independent rule's RMS error / se was 1.2 over
    50 exact-draw replicates and its ±2 se covered 0.90; at d = 102 with a dense proposal, 1.1
    and 0.92).
    """
    if len(estimates) == 1:
        return float(estimates[0]), float(ses[0]), math.nan
    a, b = estimates
    comb = math.hypot(*ses)
    rho = min(max(float(correlated), 0.0), 1.0)
    se = 0.5 * max(math.sqrt(comb * comb + 2.0 * rho * ses[0] * ses[1]), abs(a - b))
    z = (b - a) / comb if comb > 0 else (0.0 if a == b else math.inf)
    return 0.5 * (a + b), se, z


def two_way_split(chains: np.ndarray, least: int, swap: bool = True
                  ) -> tuple[list[tuple[np.ndarray, np.ndarray]], str | None]:
    """gbs's (fit, bridge) pairs of ``chains`` ``(chains, n, dim)``: the two halves of every
    chain, both ways round with ``swap``; or, where the halves hold fewer than ``least`` draws
    in all, the first :func:`~stanlogz.estimators.common.uneven_cut` draws of each chain to fit
    and the rest to bridge, one way, with its warning (:func:`uneven_warning`; else None)."""
    n_chains, n_draws, dim = chains.shape
    cut = uneven_cut(n_chains, n_draws, least)
    if cut is not None:
        return ([(chains[:, :cut], chains[:, cut:])],
                uneven_warning(n_chains, n_draws, cut, least, dim))
    first, second = split_halves(chains, least)
    return ([(first, second), (second, first)] if swap else [(first, second)]), None


def uneven_warning(n_chains: int, n_draws: int, cut: int, least: int, dim: int) -> str:
    """The warning of an uneven split (:func:`~stanlogz.estimators.common.uneven_cut`)."""
    return (f"the draws ({n_chains} chains x {n_draws}) are too few for two halves of {least} "
            f"each in {dim} dimensions: the proposal is fit to the first {cut} of each chain "
            f"and the bridge runs on the other {n_draws - cut}, one orientation (no second half "
            "to compare it with); more draws narrow the error bar")
