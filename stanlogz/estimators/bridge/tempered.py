"""A tempered bridge: annealing both ways between a proposal fitted to the draws and the
posterior, for dimensions where a single bridge cannot overlap.

Forward AIS from the fitted proposal q (geometric path q^(1-β) p^β, HMC moves at every β) gives
a stochastic lower bound on log Z; reverse AIS from the posterior draws back to q gives an
(approximate, for MCMC draws) upper bound. log Z is the midpoint, and the standard error is half
the gap between the bounds and their combined spread added in quadrature: when the annealing is
long enough for the bounds to meet, the error bar shrinks with the spread; when it is not, the
bar still spans both bounds.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from ..._util import deadline
from ..._util.seeds import Stream, stream, stream_rng
from ...densities.target import CountingTarget, Target
from ...errors import BudgetSpent
from ...flows.gaussianize import GaussianizingFlow
from ...flows.selection import fit_validated_flow, min_fit_draws
from ...mcmc.annealing import AnnealingPath, tune_hmc
from ..annealing.ais import ais, reverse_ais
from ..base import EvidenceResult
from ..common import Seed, as_chains, min_draws, split_halves
from ..options import AnnealOptions


def sandwich(lower: float, lower_se: float, upper: float, upper_se: float
             ) -> tuple[float, float]:
    """Midpoint of a lower and an upper bound and an error bar covering both bounds' spread.

    The midpoint's error is its noise, 0.5 * hypot(lower_se, upper_se), plus a bias of at
    most half the expected gap, which the observed gap estimates: the two are added in
    quadrature. Taking the larger of them instead left the bias out where they were of a
    size: on 88-D Gaussians (16 chains, 200 temperatures, benchmarks/bridge_carriers.py) ±2 se
    covered 0.90 of 100 runs with the larger, 0.96 with the sum in quadrature."""
    return 0.5 * (lower + upper), 0.5 * math.hypot(math.hypot(lower_se, upper_se),
                                                    upper - lower)


GAP_ALARM_Z = 3.0  # bounds this many combined se apart (either way) are not noise
GAP_ALARM_NATS = 0.1  # ... and at least this far apart


def sandwich_warnings(lower: float, lower_se: float, upper: float, upper_se: float,
                      n_temps: int) -> list[str]:
    """Warnings when the bounds are apart beyond their noise, or inverted (upper < lower)."""
    gap, noise = upper - lower, math.hypot(lower_se, upper_se)
    if abs(gap) <= max(GAP_ALARM_Z * noise, GAP_ALARM_NATS):
        return []
    if gap > 0:
        return [f"the tempered bridge's bounds are {gap:.2f} nats apart ({gap / noise:.1f} se): "
                f"log Z lies between them; raise n_temps (now {n_temps}) to narrow them"]
    return [f"the tempered bridge's bounds are inverted (upper {upper:.3f} below lower "
            f"{lower:.3f} by {-gap / noise:.1f} se): the reverse chains did not start from the "
            "posterior (unconverged draws) or the forward weights are heavy-tailed; check R-hat "
            "and raise n_temps or n_chains"]


def tempered_bridge(target: Target, draws: np.ndarray, *, seed: Seed = None,
                    proposal: GaussianizingFlow | None = None, n_chains: int = 16,
                    n_temps: int = 200, **ais_options: Any) -> EvidenceResult:
    """log Z of ``target`` from forward and reverse AIS between a proposal and the posterior.

    ``proposal`` defaults to the validated flow of :func:`fit_validated_flow` fitted to the
    first half of every chain; the reverse chains start from the second halves. Other options
    go to :func:`stanlogz.estimators.annealing.ais.ais` (``hmc_steps``, ``schedule``, ...).
    """
    t0 = time.perf_counter()
    chains = as_chains(draws, target.dim)
    d = chains.shape[2]
    # a given proposal needs no fitting half of any size (the structured route's has fewer
    # draws than dimensions)
    fit_half, bridge_half = split_halves(chains, 2 if proposal is not None
                                         else min(min_draws(d), min_fit_draws(d)))
    rng_fit = stream_rng(seed, Stream.FLOW_FIT)
    counting = CountingTarget(target)
    if proposal is None:
        proposal, _ = fit_validated_flow(counting, fit_half, rng_fit)
    options = AnnealOptions.parse({**ais_options, "n_chains": n_chains, "n_temps": n_temps})
    # One pilot tunes both directions: it anneals from flow draws along a grid of β and does
    # not see the posterior draws, so each bound stays a bound given it (half the tuning's cost)
    tuning, tune_evals = tune_hmc(AnnealingPath(proposal, counting),
                                  stream_rng(seed, Stream.HMC_TUNING),
                                  n_leapfrog=options.hmc_steps)
    fwd = ais(counting, proposal, options, seed=stream(seed, Stream.TEMPERED_FWD),
              tuning=tuning)
    rev = reverse_ais(counting, proposal, bridge_half.reshape(-1, d), options,
                      seed=stream(seed, Stream.TEMPERED_REV), tuning=tuning)
    log_z, se = sandwich(fwd.log_z, fwd.log_z_se, rev.log_z, rev.log_z_se)
    warnings = fwd.warnings + rev.warnings
    warnings += sandwich_warnings(fwd.log_z, fwd.log_z_se, rev.log_z, rev.log_z_se, n_temps)
    diagnostics = {"lower": fwd.log_z, "lower_se": fwd.log_z_se, "upper": rev.log_z,
                   "upper_se": rev.log_z_se, "n_chains": n_chains, "n_temps": n_temps,
                   "flow_layers": len(proposal.layers),
                   "acceptance": [fwd.acceptance, rev.acceptance]}
    return EvidenceResult(method="tempered", log_z=log_z, log_z_se=se,
                          n_draws=int(chains.shape[0] * chains.shape[1]),
                          n_evals=counting.n_evals + fwd.n_evals + rev.n_evals + tune_evals,
                          seconds=time.perf_counter() - t0, diagnostics=diagnostics,
                          warnings=warnings)


#: Fewest terms (the bridge's draws on either side, counted as n / (1 + Var f / (E f)^2), the
#: count of :func:`~stanlogz.estimators.bridge.bridge.bridge_overlap`'s share) that must carry a
#: single bridge for its eq. (9) se to be reported; below it gbs's "auto" runs the tempered
#: bridge. Fixed in advance from a measured gap (benchmarks/bridge_carriers.py, docs/benchmarks.md
#: "Few draws carrying the bridge"): on 88-D Gaussians, every overfitted flow left 0.2-2.0 terms
#: carrying the bridge and its ±2 se covered 28% (|z| up to 120), while every sound one (20 and
#: 88 dimensions) had 10.5 or more and covered 97-100%; normal_mixture_k's label switching
#: left 0.5, a kronecker_gp run the budget cut 1.1.
MIN_CARRIERS = 5.0


def few_carriers(carriers: tuple[float, float]) -> str | None:
    """Why a single bridge's se is not to be trusted on its ``carriers`` (flow side, posterior
    side), or None when both reach :data:`MIN_CARRIERS`."""
    if all(c >= MIN_CARRIERS for c in carriers):  # a NaN count is not enough
        return None
    return (f"{carriers[1]:.1f} posterior draws and {carriers[0]:.1f} flow samples carry the "
            f"single bridge (fewer than {MIN_CARRIERS:.0f} on a side: its se rests on them)")


def annealing_start(flow: GaussianizingFlow, fit_info: dict) -> tuple[GaussianizingFlow, str]:
    """Where the tempered bridge anneals from: gbs's ``flow`` when its layers were chosen on
    held-out draws (``fit_info["validated"]``), else the flow's whitening alone, and a name for
    it. Layers fitted without validation follow the draws they were fitted to: on 88-D
    Gaussians with 60 draws per chain and 8 such layers, the tempered bridge from the flow
    gave se 5-35 nats; from its whitening, 0.1-0.3, in a tenth of the time
    (benchmarks/bridge_carriers.py)."""
    if fit_info.get("validated") or not flow.layers:
        return flow, "the flow"
    return flow.whitening_only(), "the flow's whitening (its unvalidated layers dropped)"


def tempered_instead(target: Target, chains: np.ndarray, single: tuple[float, float], *,
                     seed: Seed, proposal: GaussianizingFlow, reason: str | None,
                     fit_info: dict | None = None) -> tuple[float, float, dict, list[str], int]:
    """The tempered bridge in place of a single bridge (``single``: its log Z and se) whose se
    ``reason`` says is not to be trusted: log Z, se, diagnostics, warnings and evaluations.
    It anneals from :func:`annealing_start` of ``proposal`` and its ``fit_info``.

    Under a run's time budget that ends before the tempered bridge does, the single bridge's
    log Z is kept with no se (NaN) and a warning naming the budget that would give one: an
    se resting on a few terms was 10-120 times too small (see :data:`MIN_CARRIERS`); the
    diagnostics then hold ``tempered_cut`` (gbs moves it to the result's ``budget_stop``)."""
    log_z, se = single
    reason = reason or "tempered='always'"
    start, start_name = annealing_start(proposal, fit_info or {"validated": True})
    try:
        tb = tempered_bridge(target, chains, seed=stream(seed, Stream.TEMPERED_BRIDGE),
                             proposal=start)
    except BudgetSpent:
        total = deadline.budget_seconds() or 0.0
        route = deadline.as_option(2 * total)
        return log_z, math.nan, {"single_bridge": {"log_z": log_z, "log_z_se": se},
                                 "tempered_cut": True}, [
            f"log Z {log_z:.3f} from a single bridge with no standard error: {reason}; the "
            f"tempered bridge that gives one did not end within the time budget: run with "
            f"{route}"], 0
    diagnostics = {"single_bridge": {"log_z": log_z, "log_z_se": se},
                   "tempered": {"log_z": tb.log_z, "log_z_se": tb.log_z_se, "start": start_name,
                                **tb.diagnostics}}
    # Fixed in advance (never by comparing the two noisy error bars): once the tempered bridge
    # runs, it is the answer.
    warnings = [f"log Z from a tempered bridge ({tb.log_z:.3f} ± {tb.log_z_se:.3f}; the single "
                f"bridge gave {log_z:.3f} ± {se:.3f}: {reason})", *tb.warnings]
    return tb.log_z, tb.log_z_se, diagnostics, warnings, tb.n_evals
