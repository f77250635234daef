"""Gaussianized bridge sampling (Jia & Seljak 2019): optimal bridge sampling between the
posterior and a Gaussianizing flow fitted to half of the posterior draws.

``log Z`` solves the Meng–Wong score equation; its standard error is the square root of the
relative mean-square error (Jia & Seljak eq. 9), with the integrated autocorrelation time of the
posterior-side term. The number of flow samples ``n_q`` follows the paper's adaptive rule.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special, stats

from ..._util import deadline
from ..._util.gpd import KHAT_BAD
from ..._util.progress import Progress, steps
from ..._util.seeds import Stream, stream_rng
from ...densities.target import CountingTarget, Target
from ...errors import BudgetSpent, EstimationError, InputError, Route
from ...flows.gaussianize import GaussianizingFlow, single_blas_thread
from ...flows.selection import fit_validated_flow
from ..base import EvidenceResult, FlowDetail
from ..common import (
    Seed,
    as_chains,
    autocorr_time,
    draws_needed,
    eval_log_density,
    pareto_k,
    rel_var,
    require_some_finite,
    sample_count,
)
from .anytime import MIN_Q, BridgeBudget
from .route import (  # noqa: F401 - combine_orientations re-exported
    choose_route,
    combine_orientations,
    flow_log_weights,
    orientation_correlation,
    two_way_split,
)
from .tempered import few_carriers, tempered_instead


@dataclass
class BridgeSolution:
    """Root of the optimal-bridge score equation and the two terms of its relative MSE."""

    log_r: float
    re2_q: float  # proposal-side term of eq. (9)
    re2_p: float  # posterior-side term, autocorrelation included
    tau: float
    iterations: int
    converged: bool
    tau_q: float = 1.0  # autocorrelation time of the proposal-side terms (1: independent draws)

    @property
    def se(self) -> float:
        """Standard error of ``log_r`` (square root of the relative MSE)."""
        return math.sqrt(self.re2_q + self.re2_p)


def solve_bridge(log_w_p: np.ndarray, log_w_q: np.ndarray) -> BridgeSolution:
    """Optimal bridge sampling from log weights ``log p - log q``.

    ``log_w_p`` at the posterior draws, shaped ``(chains, n)`` (chain structure is used for the
    autocorrelation time); ``log_w_q`` at draws of ``q``: independent draws as a flat array, or
    MCMC draws shaped ``(chains, n)`` (their autocorrelation time then enters the error).
    ``-inf`` entries are allowed (p = 0 there). Returns ``log r = log Z_p - log Z_q`` (``log Z_p``
    for a normalized ``q``) with its error terms.
    """
    lw_p = np.atleast_2d(np.asarray(log_w_p, dtype=float))
    q_shape = np.shape(log_w_q)
    lw_q = np.asarray(log_w_q, dtype=float).ravel()
    a = lw_p.ravel()
    n_p, n_q = a.size, lw_q.size
    if not np.any(a < np.inf) or not np.any(np.isfinite(lw_q)):
        raise EstimationError("no overlap between proposal and posterior: all bridge terms vanish")
    shift = math.log(n_q / n_p)

    def score(c: float) -> float:
        return float(special.expit(c + shift - a).sum() - special.expit(lw_q - shift - c).sum())

    fin = np.concatenate([a[np.isfinite(a)], lw_q[np.isfinite(lw_q)]])
    lo, hi = float(fin.min()) - abs(shift) - 50.0, float(fin.max()) + abs(shift) + 50.0
    if score(lo) >= 0 or score(hi) <= 0:
        raise EstimationError("bridge score equation has no root: proposal and posterior disjoint")
    c, info = optimize.brentq(score, lo, hi, xtol=1e-12, rtol=1e-14, maxiter=500,
                              full_output=True, disp=False)
    # both terms of eq. (9) at log r = c, with the weight distributions estimated from the
    # samples at hand; the posterior-side term's autocorrelation time is measured per chain
    log_s_p, log_s_q = math.log(n_p / (n_p + n_q)), math.log(n_q / (n_p + n_q))
    f1 = np.exp(lw_q - c - np.logaddexp(log_s_p + lw_q - c, log_s_q))
    f2 = np.exp(-np.logaddexp(log_s_p + lw_p - c, log_s_q))
    tau = autocorr_time(f2)
    tau_q = autocorr_time(f1.reshape(q_shape)) if len(q_shape) == 2 else 1.0
    re2_q, re2_p = tau_q * rel_var(f1) / n_q, tau * rel_var(f2) / n_p
    return BridgeSolution(float(c), re2_q, re2_p, tau, int(info.iterations), bool(info.converged),
                          tau_q)


def adaptive_n_q(sol: BridgeSolution, n_q0: int, f_err: float, f_eva: float,
                 n_sampling_evals: int | None, max_n_q: int) -> int:
    """The paper's rule: the ``n_q`` that makes the proposal term a fraction ``f_err`` of eq. (9)
    (holding the weights' relative variances at their values for ``n_q0``), at least the ``n_q0``
    samples drawn so far (they are reused), at most ``f_eva`` of all target evaluations when the
    sampling cost is known, and at most ``max_n_q``."""
    if sol.re2_p <= 0 or not np.isfinite(sol.re2_q):
        want = max_n_q
    else:
        want = math.ceil(sol.re2_q * n_q0 * (1.0 - f_err) / (f_err * sol.re2_p))
    n_q = max(n_q0, want)
    if n_sampling_evals is not None:
        n_q = min(n_q, max(n_q0, int(f_eva / (1.0 - f_eva) * n_sampling_evals)))
    return int(min(n_q, max(n_q0, max_n_q)))


@dataclass
class _OneBridge:
    """One orientation of GBS: a flow fitted on one half of the draws, bridged with the other."""

    sol: BridgeSolution
    lw_p: np.ndarray
    lw_q: np.ndarray
    flow: GaussianizingFlow
    fit_info: dict
    fit_seconds: float
    bad_p: int
    bad_q: int
    capped: bool
    seconds: float = 0.0


def _bridge_once(counting: CountingTarget, fit_half: np.ndarray, bridge_half: np.ndarray,
                 rng_fit: np.random.Generator, rng_q: np.random.Generator, *,
                 n_layers: int | None, flow_options: dict | None, validate: bool,
                 n_q: int | None, f_err: float, f_eva: float, n_sampling_evals: float | None,
                 max_n_q_factor: float, structured: bool = False,
                 budget: BridgeBudget | None = None) -> _OneBridge:
    d = fit_half.shape[2]
    x_p = bridge_half.reshape(-1, d)
    n_p = x_p.shape[0]
    n_q0 = sample_count(n_q, n_p)
    deadline.check_spent("the bridge estimate")  # the run's time budget
    t_lp = deadline.clock()  # the budget's clock (a step-count clock in tests)
    lp_p, bad_p = eval_log_density(counting, x_p)  # first: it times a target evaluation
    require_some_finite(lp_p, "the posterior draws")
    keep = None
    if budget is not None:
        budget.timed(deadline.clock() - t_lp, n_p)
        keep = budget.fit_keep(n_p, n_q0)
    t_fit = time.perf_counter()
    with deadline.wrapping_up(keep) as wrap:  # under a budget, fewer layers leave the bridge time
        if validate or structured:
            flow, info = fit_validated_flow(counting, fit_half, rng_fit, n_layers=n_layers,
                                            structured=structured, **(flow_options or {}))
        else:
            flow = GaussianizingFlow.fit(fit_half.reshape(-1, d), n_layers=n_layers,
                                         rng=rng_fit, **(flow_options or {}))
            info = {"whitening": "sample", "validated": False}
    t_fit = time.perf_counter() - t_fit
    lw_p = (lp_p - flow.log_density_many(x_p)).reshape(bridge_half.shape[:2])

    n_q_cut = False
    if budget is not None:  # the flow samples that fit, at a target evaluation's cost
        fit = max(budget.more_samples(n_q0, budget.seconds_per_eval), min(n_q0, MIN_Q))
        n_q_cut, n_q0 = fit < n_q0, fit
    t_q = deadline.clock()
    lw_q, bad_q = flow_log_weights(counting, flow, rng_q, n_q0)
    t_q = (deadline.clock() - t_q) / max(n_q0, 1)
    sol = solve_bridge(lw_p, lw_q)
    capped = False
    max_n_q = int(max_n_q_factor * n_p)
    if n_q is None:
        evals = None if n_sampling_evals is None else int(n_sampling_evals)
        n_q_new = adaptive_n_q(sol, n_q0, f_err, f_eva, evals, max_n_q)
        if budget is not None and n_q_new > n_q0:
            fit = n_q0 + budget.more_samples(n_q_new - n_q0, t_q)
            n_q_cut, n_q_new = n_q_cut or fit < n_q_new, fit
        if n_q_new > n_q0:
            lw_more, bad_more = flow_log_weights(counting, flow, rng_q, n_q_new - n_q0)
            bad_q += bad_more
            lw_q = np.concatenate([lw_q, lw_more])
            sol = solve_bridge(lw_p, lw_q)
        capped = n_q_new >= max_n_q and sol.re2_q > 0.5 * (sol.re2_q + sol.re2_p)
    if budget is not None:
        budget.layers_cut.append(wrap.fired)
        budget.n_q_cut.append(n_q_cut)
    return _OneBridge(sol, lw_p, lw_q, flow, info, t_fit, bad_p, bad_q, capped)


#: |difference| between the two orientations, in combined standard errors, that raises a warning
SWAP_ALARM_Z = 3.0
#: the precision, in nats, that the "draws needed" advice aims at
ADVICE_SE = 0.1


@single_blas_thread
def gbs(
    target: Target,
    draws: np.ndarray,
    *,
    seed: Seed = None,
    n_layers: int | None = None,
    f_err: float = 0.1,
    f_eva: float = 0.1,
    n_sampling_evals: int | None = None,
    n_q: int | None = None,
    max_n_q_factor: float = 20.0,
    flow_options: dict | None = None,
    validate: bool = True,
    swap_halves: bool = True,
    tempered: str = "auto",
    folds: int = 2,
    proposal: str = "auto",
    progress: Progress = None,
) -> EvidenceResult:
    """Log evidence of ``target`` by Gaussianized bridge sampling from posterior ``draws``.

    ``draws`` are shaped ``(chains, n, dim)`` or ``(n, dim)``; the first half of every chain fits
    the flow, the second half enters the bridge, and with ``swap_halves`` (default) the roles are
    swapped for a second estimate: log Z is their mean, and its standard error covers both the
    bridges' errors (eq. 9) and the spread between the two fits. With ``validate`` (default) the
    flow's whitening and number of layers (at most ``n_layers``) are chosen on held-out draws
    (:func:`stanlogz.flows.selection.fit_validated_flow`). ``n_q`` fixes the number of flow
    samples per bridge (else the adaptive rule with ``f_err``/``f_eva`` picks it, at most
    ``max_n_q_factor * n_p``). The first bridge's flow and log weights are kept in
    ``diagnostics`` under keys starting with "_". ``diagnostics`` also hold per-chain and
    per-half estimates (see :func:`consistency_checks`), and ``warnings`` say when chains
    disagree on log Z, the estimate drifts within the draws, or the two halves disagree.
    ``tempered``: "auto" (default) also runs a tempered bridge
    (:func:`stanlogz.estimators.bridge.tempered.tempered_bridge`, from the first flow) when the
    single bridge's se is not to be trusted: fewer than 5 draws carry it on a side
    (:data:`~stanlogz.estimators.bridge.tempered.MIN_CARRIERS`; ``diagnostics`` hold the
    counts as ``bridge_carriers_p``/``_q``), or it overlaps poorly on both sides (Pareto k > 0.7)
    and its two halves disagree beyond their errors. It then reports the tempered bridge (or,
    when the time budget ends that first, the single bridge's log Z with a NaN se); "always" or
    "never". ``folds`` >= 3
    cross-fits instead of swapping halves (:mod:`stanlogz.estimators.bridge.crossfit`): K blocks of
    every chain, each bridged with a flow fitted to the others, and an se with K - 1 degrees of
    freedom when the folds' spread decides it. ``progress`` counts the bridges (a bar where
    it draws one, :mod:`stanlogz._util.progress`). ``proposal``: "auto" (default) whitens
    with a dense covariance where each half holds the draws it needs, else with a diagonal
    plus low-rank one (:mod:`stanlogz.flows.lowrank`, layers on single coordinates), whose
    draws and memory grow with the dimension only; "dense" or "structured" force one.
    ``diagnostics["proposal"]`` names the whitening that ran and ``proposal_route`` says why.
    """
    if tempered not in ("auto", "always", "never"):
        raise InputError(f"tempered must be 'auto', 'always' or 'never', got {tempered!r}")
    t0 = time.perf_counter()
    for name, frac in (("f_err", f_err), ("f_eva", f_eva)):
        if not 0 < frac < 1:
            raise InputError(f"{name} must be a fraction strictly between 0 and 1, got {frac}")
    chains = as_chains(draws, target.dim)
    d = chains.shape[2]
    n_fit = chains.shape[1] - chains.shape[1] // folds if folds > 2 else chains.shape[1] // 2
    route = choose_route(chains.shape[0] * n_fit, d, proposal, validate)
    least = route.least
    if folds > 2:
        from .crossfit import fold_orientations

        orientations, uneven = fold_orientations(chains, folds, least), None
    elif folds == 2:  # uneven: the warning of an uneven split, else None
        orientations, uneven = two_way_split(chains, least, swap_halves)
    else:
        raise InputError(f"folds must be an integer >= 2, got {folds}")
    counting = CountingTarget(target)
    share = None if n_sampling_evals is None else n_sampling_evals / len(orientations)
    runs = []
    budget = BridgeBudget.start(len(orientations))  # None without a run's time budget
    with steps(progress, len(orientations), "bridge sampling", unit="bridge") as bar:
        for i, (fit, br) in enumerate(orientations):
            if budget is not None and runs and not budget.next_fits(runs[0].seconds):
                break  # the orientations done are the answer
            t_one = deadline.clock()
            try:
                one = _bridge_once(counting, fit, br, stream_rng(seed, Stream.FLOW_FIT, i),
                                   stream_rng(seed, Stream.PROPOSAL, i),
                                   n_layers=n_layers, flow_options=flow_options,
                                   validate=validate, n_q=n_q, f_err=f_err, f_eva=f_eva,
                                   n_sampling_evals=share, max_n_q_factor=max_n_q_factor,
                                   structured=route.structured, budget=budget)
            except BudgetSpent:
                if budget is None or not runs:
                    raise  # nothing estimable yet
                break
            one.seconds = deadline.clock() - t_one
            runs.append(one)
            if budget is not None:
                budget.orientations_done = len(runs)
            bar.update()
    main = runs[0]
    n_p = main.lw_p.size
    warnings: list[str] = [] if uneven is None else [uneven]
    if any(r.capped for r in runs):
        warnings.append(f"flow-sample budget capped at n_q = {max(r.lw_q.size for r in runs)}: "
                        "the flow fits the posterior poorly; use more draws or flow layers")
    k_q = max(pareto_k(r.lw_q) for r in runs)
    k_p = max(pareto_k(-r.lw_p) for r in runs)
    bad_p = sum(r.bad_p for r in runs)
    bad_q = sum(r.bad_q for r in runs)
    n_q_total = sum(r.lw_q.size for r in runs)
    estimates = [r.sol.log_r for r in runs]
    ses = [r.sol.se for r in runs]
    df, rho = None, math.nan
    if len(estimates) > 2:
        from .crossfit import combine_folds

        log_z, se, swap_z, df = combine_folds(estimates, ses)
    else:
        rho = orientation_correlation(route, d, min(r.lw_p.size for r in runs))
        log_z, se, swap_z = combine_orientations(estimates, ses, correlated=rho)
    diagnostics = bridge_diagnostics(main.sol, main.lw_q.size, n_p, k_q, k_p, bad_p, bad_q)
    diagnostics["n_q_total"] = n_q_total
    diagnostics.update(
        flow_layers=[len(r.flow.layers) for r in runs],
        whitening=[r.fit_info.get("whitening") for r in runs],
        proposal=(" / ".join(dict.fromkeys(str(r.fit_info.get("whitening")) for r in runs))
                  if route.structured else "dense"), proposal_route=route.reason,
        fit_seconds=sum(r.fit_seconds for r in runs),
        half_swap_log_z=estimates, half_swap_se=ses, swap_z=swap_z, orientation_correlation=rho,
        validation=[{k: v for k, v in r.fit_info.items() if k != "whitening"} for r in runs])
    shares = [bridge_overlap(r.sol, r.lw_q.size, r.lw_p.size) for r in runs]
    overlap = min(o[0] for o in shares), min(o[1] for o in shares)
    diagnostics.update(bridge_overlap_q=overlap[0], bridge_overlap_p=overlap[1])
    warnings += bridge_warnings(main.sol, k_q, k_p, bad_p, bad_q, n_q_total, "flow",
                                se=se, n_draws=chains.shape[0] * chains.shape[1],
                                overlap=overlap)
    if abs(swap_z) > SWAP_ALARM_Z:
        parts = (f"the {len(estimates)} folds" if len(estimates) > 2 else "the two halves")
        warnings.append(f"{parts} of the draws give different log Z ("
                        + " vs ".join(f"{e:.3f}" for e in estimates) + f", {swap_z:+.1f} se): "
                        "the fitted proposal depends on the draws it was fitted to; the "
                        "standard error covers the spread, run more draws to shrink it")
    consistency = consistency_checks(main.lw_p, main.lw_q, main.sol.log_r)
    diagnostics.update(consistency)
    warnings += consistency_warnings(consistency)
    n_evals = counting.n_evals
    carriers = (min(o[0] * r.lw_q.size for o, r in zip(shares, runs, strict=True)),
                min(o[1] * r.lw_p.size for o, r in zip(shares, runs, strict=True)))
    diagnostics.update(bridge_carriers_q=carriers[0], bridge_carriers_p=carriers[1])
    reason = few_carriers(carriers) or (
        f"Pareto k above {KHAT_BAD} on both sides and halves {swap_z:+.1f} se apart"
        if min(k_q, k_p) > KHAT_BAD and abs(swap_z) > SWAP_ALARM_Z else None)
    if tempered == "always" or (tempered == "auto" and reason):
        log_z, se, extra, more, evals = tempered_instead(target, chains, (log_z, se), seed=seed,
                                                         proposal=main.flow, reason=reason,
                                                         fit_info=main.fit_info)
        diagnostics.update(extra)
        warnings, n_evals, df = warnings + more, n_evals + evals, None
    stop = {"bridge": budget.to_dict()} if budget is not None and budget.cut() else {}
    if stop:
        warnings.append(budget.warning())
    if diagnostics.pop("tempered_cut", False):  # the budget ended the tempered bridge
        stop["tempered"] = {"done": False}
    return EvidenceResult(
        method="gbs", log_z=log_z, log_z_se=se, budget_stop=stop or None,
        n_draws=int(sum(r.lw_p.size for r in runs) if len(runs) > 2 else
                    chains.shape[0] * chains.shape[1] if uneven else 2 * n_p),
        n_evals=n_evals, seconds=time.perf_counter() - t0,
        diagnostics=diagnostics, warnings=warnings, log_z_df=df,
        detail=FlowDetail(main.flow, log_w_p=main.lw_p, log_w_q=main.lw_q),
    )


def bridge_diagnostics(sol: BridgeSolution, n_q: int, n_p: int, k_q: float, k_p: float,
                        bad_p: int, bad_q: int) -> dict:
    return {
        "pareto_k_q": k_q, "pareto_k_p": k_p, "iterations": sol.iterations,
        "converged": sol.converged, "n_q": n_q, "n_p": n_p, "tau": sol.tau,
        "re2_q": sol.re2_q, "re2_p": sol.re2_p, "n_nonfinite_p": bad_p, "n_nonfinite_q": bad_q,
    }


#: Smallest share of a bridge side's terms that carry it, 1 / (1 + Var f / (E f)²), below which
#: its overlap is called poor: eq. (9)'s se then rests on a few dominating terms. A share, not a
#: count, so that a short run with good overlap is not flagged (its se says what more draws buy).
OVERLAP_MIN_SHARE = 0.1


def bridge_overlap(sol: BridgeSolution, n_q: int, n_p: int) -> tuple[float, float]:
    """The shares 1 / (1 + Var f / (E f)²) of the optimal bridge's terms f on the proposal and
    posterior sides (1 when p = q), from the two terms of eq. (9) without their
    autocorrelation times.

    The overlap diagnostic of bridge sampling: its terms p q / (s_p p + s_q q) (over q or p)
    are bounded by 1 / s, so their variance is finite whatever the tails of p / q, and the
    Pareto k̂ of the raw ratios p / q or q / p, which decides plain importance sampling, says
    nothing about it (a Gaussian flow on a skewed 1-D posterior has k̂ 2-7 and an exact bridge).
    """
    rel_q = sol.re2_q * n_q / sol.tau_q
    rel_p = sol.re2_p * n_p / sol.tau
    return 1.0 / (1.0 + rel_q), 1.0 / (1.0 + rel_p)


def bridge_warnings(sol: BridgeSolution, k_q: float, k_p: float, bad_p: int, bad_q: int,
                    n_q: int, proposal: str, *, se: float | None = None,
                    n_draws: int | None = None, overlap: tuple[float, float] | None = None
                    ) -> list[str]:
    """One-line warnings that say what to do about a bridge-sampling result (``se`` overrides
    the bridge's own; with ``n_draws`` the advice says how many draws would do). With
    ``overlap`` (:func:`bridge_overlap`, the flow's bridges) overlap is judged on it, else on the
    Pareto k̂ of both sides."""
    se = sol.se if se is None else se
    out = []
    if not sol.converged:
        out.append("bridge fixed point did not converge: check the draws and the target")
    if overlap is not None:
        if min(overlap) < OVERLAP_MIN_SHARE:
            out.append(f"poor overlap between {proposal} and posterior: {overlap[0]:.1%} of the "
                       f"{proposal} samples and {overlap[1]:.1%} of the posterior draws carry "
                       f"the bridge (below {OVERLAP_MIN_SHARE:.0%} on a side): raise the flow's "
                       "layer cap (default 8, chosen on held-out draws): "
                       f"{Route(options={'option': 'n_layers=16'}, api_text='n_layers=16')}, or "
                       "run more draws")
    elif np.isfinite(k_q) and np.isfinite(k_p) and min(k_q, k_p) > KHAT_BAD:
        out.append(f"poor overlap between {proposal} and posterior (Pareto k = {k_q:.2f} on the "
                   f"proposal side, {k_p:.2f} on the posterior side): run more draws")
    if bad_q:
        out.append(f"{bad_q} of {n_q} {proposal} samples have non-finite log density (counted as "
                   "weight 0): check the model's support")
    if bad_p:
        out.append(f"{bad_p} posterior draws have non-finite log density: are they the target's?")
    if not math.isfinite(se):  # no overlap: more draws of the same kind may not help
        out.append("infinite standard error: no overlap between the proposal and the draws")
    elif se > 0.5:
        out.append(f"large standard error ({se:.2f} nats): run more posterior draws" + (
            f" (about {draws_needed(n_draws, se, ADVICE_SE)} in all for an se of {ADVICE_SE} "
            "nats)" if n_draws else ""))
    return out


# Consistency of the estimate across parts of the posterior draws. Every part is bridged against
# the same flow samples, so no new target evaluations are needed, and the flow-side error is
# shared: it cancels (to first order) in differences between parts, whose variance is therefore
# the sum of the parts' posterior-side terms of eq. (9).
CHAIN_ALARM_P = 1e-3  # false-alarm probability of the between-chain test on well-mixed chains
DRIFT_ALARM_Z = 3.0  # |first half - second half| in combined standard errors (two-sided p 0.003)


def _part_estimates(parts: list[np.ndarray], lw_q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bridge estimate and posterior-side standard error from each part of the draws (NaN where
    a part has no overlap with the flow)."""
    est, se = np.full(len(parts), np.nan), np.full(len(parts), np.nan)
    for i, part in enumerate(parts):
        try:
            s = solve_bridge(part, lw_q)
        except EstimationError:
            continue
        est[i], se[i] = s.log_r, math.sqrt(s.re2_p)
    return est, se


def consistency_checks(lw_p: np.ndarray, lw_q: np.ndarray, log_z: float) -> dict:
    """Per-chain and per-half (in time) estimates of log Z and the statistics that compare them.

    ``lw_p`` holds the posterior-side log weights shaped ``(chains, n)``. With two or more chains:
    ``chain_log_z``, their ``chain_log_z_se`` (posterior side), the spread ``chain_log_z_sd``, and
    Cochran's ``chain_q`` (chi-square with chains - 1 degrees of freedom when all chains sample
    the same distribution) with its ``chain_p``. Always: ``half_log_z`` (first and second half of
    every chain) and ``drift_z``, their difference in combined standard errors.
    """
    out: dict = {}
    n_chains, n = lw_p.shape
    if n_chains >= 2 and n >= 10:
        est, se = _part_estimates([lw_p[c : c + 1] for c in range(n_chains)], lw_q)
        ok = np.isfinite(est) & (se > 0)
        out.update(chain_log_z=est.tolist(), chain_log_z_se=se.tolist(),
                   chain_log_z_sd=float(np.std(est[ok], ddof=1)) if ok.sum() >= 2 else math.nan)
        if ok.sum() >= 2:
            w = 1.0 / se[ok] ** 2
            mean = float(np.sum(w * est[ok]) / np.sum(w))
            q = float(np.sum(w * (est[ok] - mean) ** 2))
            out.update(chain_q=q, chain_p=float(stats.chi2.sf(q, ok.sum() - 1)))
    if n >= 20:
        h = n // 2
        est, se = _part_estimates([lw_p[:, :h], lw_p[:, h : 2 * h]], lw_q)
        out["half_log_z"] = est.tolist()
        if np.all(np.isfinite(est)) and np.all(se > 0):
            out["drift_z"] = float((est[1] - est[0]) / math.hypot(se[0], se[1]))
    return out


def consistency_warnings(c: dict) -> list[str]:
    """Warnings when the parts of the posterior draws disagree on log Z beyond their errors."""
    out = []
    if c.get("chain_p", 1.0) < CHAIN_ALARM_P:
        out.append(f"chains disagree on log Z (per-chain sd {c['chain_log_z_sd']:.3g} nats, "
                   f"p = {c['chain_p']:.1e}): the sampler may not have mixed between modes; "
                   "run longer chains or check R-hat")
    if abs(c.get("drift_z", 0.0)) > DRIFT_ALARM_Z:
        a, b = c["half_log_z"]
        out.append(f"log Z drifts between the first and second half of the draws ({a:.3f} vs "
                   f"{b:.3f}, {c['drift_z']:+.1f} se): the chains may not have converged; "
                   "run longer chains")
    return out
