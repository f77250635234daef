"""K-fold in bounded time: the refits' time estimated from the full fit before the first one,
and the folds a time budget leaves without a refit estimated by PSIS from the full fit.

**Estimate.** Every refit is a NUTS run with the full fit's settings on the training data, so
it costs about the full fit's seconds times the share of the data it keeps (the gradient's
cost grows with the observations; the number of leapfrog steps per iteration is about the
same for a posterior that changes little), plus the held-out densities
(``HELDOUT_SHARE`` of that, measured: benchmarks/kfold_time_estimate.py). Folds run
``n_workers`` at a time.

**Anytime.** Under a time budget (:func:`stanlogz.time_budget`), the refits stop once another
would not fit (:class:`~.heldout.RefitWatch`); each fold left is estimated by Pareto-smoothed
importance sampling from the full-data draws, the weights of a draw being
1 / p(y_V | θ) for the fold's observations V jointly:
log p(y_i | y_T) ≈ log Σ_s w_s p(y_i | θ_s) for i in V, with loo's Monte Carlo se of each
(:func:`~stanlogz.crossval.elpd.psis.elpd_mcse`) and the fold's Pareto k̂. A fold whose k̂
exceeds the threshold (min(1 - 1/log10 S, 0.7)) is flagged and its Monte Carlo se NaN: the
estimate is not reliable, as loo's NA says.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy import stats
from scipy.special import logsumexp

from ..._util import deadline
from ..._util.deadline import as_option
from ..._util.progress import duration
from ...arviz_compat import psislw
from ...draws import Draws
from ...draws.continuation import WARM_REFIT_WARMUP, warm_refit_seconds
from ...errors import InputError, OverBudget, StanlogzError
from ..elpd.psis import elpd_mcse, k_threshold, relative_efficiency
from ..elpd.routes import pointwise_source
from ..observations.pointwise import PointwiseLogLik
from . import heldout
from .heldout import HeldOut
from .heldout_points import point_draws

#: A refit's held-out densities (the bridge between the full and the training draws) cost
#: about this share of its NUTS run: the bridge about 0.8 of it, a fold that falls back to
#: the evidence difference about 3 times (benchmarks/kfold_time_estimate.py: with 0.15 the
#: refits took 1.8-2.7 times the estimate on three programs; 1.5 is fitted to them)
HELDOUT_SHARE = 1.5

#: The same share where the program factorizes and each held-out log p(y_i | y_T) takes loo's
#: density-difference term (:func:`.heldout._factorized`) instead of the whole program: the
#: bridge's four whole-program densities per draw are most of it (measured 0.13 of the full
#: fit on wells' 3,020 households and about 0.1 on its first 302, benchmarks/warm_refits.py
#: cost; 0.3 errs high)
HELDOUT_SHARE_TERMS = 0.3
#: ... and each held-out observation's term, evaluated at the training and at the full draws
#: (:func:`~.heldout.heldout_elpd`'s two sides): radon_county_intercept's 5 folds of 184 homes
#: took 9.3 s on the interpreted backend against 0.8 s estimated without them
TERM_SIDES = 2
#: Observations whose terms are timed together for that price (one at a time costs a call's
#: fixed part each: 0.05 s against 0.004 s a term in a batch, interpreted radon)
TIMED_TERMS = 20

#: The observations K-fold will refit on their own (:mod:`.heldout_points`: importance weights
#: heavier than :data:`~.heldout_points.POINT_KHAT`) are counted before the first refit from
#: the full fit: on this many of its draws (thinned evenly per chain) ...
HEAVY_DRAWS = 2000
#: ... where that pass costs at most this share of the refits' estimate (a log_lik quantity is
#: read; a density-difference pass is priced by :func:`factorizes`' timing) ...
HEAVY_SHARE = 0.05
#: ... as the observations whose weights p(y_i | θ) at the full fit's draws have a Pareto k̂
#: above this. A fold weighs its held-out observation by p(y_i | θ) at the draws of a
#: training posterior, which is wider than the full one, so its k̂ runs higher than at the
#: full draws: 0.4 rather than the refits' 0.5 takes that in. Measured
#: (``python -m benchmarks.kfold_heavy_count``, default settings): counted against refit,
#: roaches 21 / 24 and 26 / 22 (seeds 1, 2), radon_county_intercept (K = 5) 1 / 3 and 1 / 2,
#: radon slopes 2 / 1, earnings 2 / 0, mesquite and kidiq 0 / 0; PSIS-LOO's k̂ above 0.5 (the
#: count before) gave 23 and 26, 24 and 40, 8, 1, 3 and 0: the reverse weights
#: 1 / p(y_i | θ) are heavy wherever one observation moves a group's parameter, which a
#: fold's forward weights are not.
HEAVY_KHAT = 0.4
#: A point refit's held-out densities (whole-program densities at its draws and the fold's
#: training draws, for the bridge and the warped bridge) as a share of the full fit's seconds.
#: Measured on roaches (``python -m benchmarks.kfold_point_refits cost --runs 6``, 132 point
#: refits): the densities 0.18 of the full fit on average (median 0.11, 90th percentile 0.37),
#: and NUTS 0.107 against the 0.081 :func:`point_refit_seconds` prices (its short warmup
#: takes more steps per iteration than the full fit's draws); 0.2 takes both, 0.28 in all
#: against the 0.29 measured
POINT_HELDOUT_SHARE = 0.2

#: Why the folds left were not estimated by PSIS, where its pass did not fit in the budget
TOO_LONG = "PSIS from the full fit would not fit in the time budget left"


def factorizes(model: Any, data: dict[str, Any], observations: Any, full: Draws
               ) -> float | None:
    """Where the held-out densities will go term by term (loo's density difference passes
    its check at 3 of the full fit's draws), the seconds of one observation's term at every
    draw of ``full`` (timed once, on the first ``TIMED_TERMS`` observations in one call); None
    where they will not."""
    from ...errors import StanlogzError

    unc = full.flat_unconstrained()
    try:
        pw = PointwiseLogLik(model, data, observations, "difference")
        pw.check(unc[np.unique(np.linspace(0, len(unc) - 1, 3).astype(int))])
        some = np.arange(min(TIMED_TERMS, observations.n))
        pw.columns(some, unc[:2])  # the instances built: not timed
        start = time.perf_counter()
        pw.columns(some, unc)  # in one call, as a refit asks for its held-out observations
    except StanlogzError:
        return None
    return (time.perf_counter() - start) / some.size


#: Draws a whole-program density is timed on for :func:`held_out_price` (scaled to all)
TIMED_DRAWS = 200


def held_out_price(model: Any, data: dict[str, Any], observations: Any, full: Draws
                   ) -> tuple[float | None, float | None]:
    """What one held-out observation's density costs at every draw of ``full``: ``(terms,
    None)`` where the held-out densities go term by term (:func:`factorizes`), ``(None,
    whole)`` where each held-out observation is the whole program on its training set and
    itself (:class:`~.heldout._Pointwise`: a program whose transformed data centre the
    covariates, as wells' do), ``whole`` being the seconds of the full program's density at
    the draws it uses (:data:`~.heldout.INSTANCE_DRAWS` of each side's, all where the
    held-out observations have latents of their own), timed on
    :data:`TIMED_DRAWS` of them. On wells' 3,020 households each
    observation costs 0.2 s at 4,000 draws on each side of the bridge: two minutes a fold,
    which the estimate without it (26 s for ten folds) left out, and a 20 s budget ran 15 s
    past its end in the first fold."""
    terms = factorizes(model, data, observations, full)
    if terms is not None:
        return terms, None
    unc = full.flat_unconstrained()
    rows = unc[np.unique(np.linspace(0, len(unc) - 1, min(TIMED_DRAWS, len(unc))).astype(int))]
    try:
        model.log_density_many(rows[:2])  # the first call's set-up: not timed
        start = time.perf_counter()
        model.log_density_many(rows)
        seconds = time.perf_counter() - start
        # latents of the held-out observations (a training program of fewer parameters):
        # one side, on every draw; else at most INSTANCE_DRAWS of each side's
        latents = model.with_data(observations.without(data, [0])).dim != model.dim
    except StanlogzError:
        return None, None
    most = None if latents else heldout.INSTANCE_DRAWS
    used = len(unc) if most is None else min(len(unc), most)
    return None, seconds * used / len(rows)


def heavy_count(model: Any, data: dict[str, Any], observations: Any, full: Draws,
                terms: float | None, within: float) -> int | None:
    """How many observations have weights p(y_i | θ) with a Pareto k̂ above
    :data:`HEAVY_KHAT` at :data:`HEAVY_DRAWS` of ``full``'s draws: about as many as K-fold's
    folds will refit on their own (on roaches, 21 against 24). None where that pass is not
    cheap: neither a ``log_lik`` quantity nor a density difference (``terms``,
    :func:`factorizes`) whose pass fits in ``within`` seconds."""

    try:
        pw = PointwiseLogLik(model, data, observations, "auto")
    except StanlogzError:
        return None
    per_chain = min(full.n_draws, -(-HEAVY_DRAWS // full.n_chains))
    share = per_chain / full.n_draws
    if pw.source != "log_lik" and (terms is None or observations.n * terms * share > within):
        return None
    thin = full.thinned(per_chain)
    try:
        ll = _fold_columns(pw, thin, np.arange(observations.n), observations.n)
    except StanlogzError:
        return None
    _, khat = psislw(ll.T, relative_efficiency(thin.unconstrained))
    return int(np.sum(~(np.asarray(khat) <= HEAVY_KHAT)))


def point_refit_seconds(full: Draws, dim: int, keep: float) -> float:
    """Seconds one observation's refit of its own should take (:mod:`.heldout_points`): a
    warm NUTS run of :data:`~stanlogz.draws.continuation.WARM_REFIT_WARMUP` iterations and
    :func:`~.heldout_points.point_draws` draws per chain at the full fit's leapfrog steps per
    iteration, on the ``keep`` share of the data, and its held-out densities
    (:data:`POINT_HELDOUT_SHARE` of the full fit)."""
    steps = full.sampler.get("n_leapfrog__")
    iterations = WARM_REFIT_WARMUP + point_draws(full.n_draws, full.n_chains, dim)
    if steps is None or full.n_gradient_evals <= 0 or full.n_draws < 1:
        nuts = min(1.0, iterations / full.n_draws / 2)  # warmup as long as the draws
    else:
        per_iteration = float(np.sum(steps)) / full.n_draws
        nuts = min(1.0, iterations * per_iteration / full.n_gradient_evals)
    return float(full.seconds * (nuts * keep + POINT_HELDOUT_SHARE))


def refit_seconds(full: Draws, n: int, held: Sequence[np.ndarray], n_workers: int,
                  warm: bool = False, terms: float | None = None, points: int = 0,
                  dim: int = 1, whole: float | None = None) -> float | None:
    """Seconds the refits of ``held`` should take, from the full fit's ``full.seconds`` on
    ``n`` observations (``warm``: the share of it a warm-started refit repeats,
    :func:`~stanlogz.draws.continuation.warm_refit_seconds`; ``terms``: the held-out
    densities go term by term, one term at every draw taking ``terms`` seconds
    (:func:`factorizes`): :data:`HELDOUT_SHARE_TERMS` and each held-out observation's term
    on both sides of the bridge; ``whole``: each held-out observation's density is the whole
    program's, ``whole`` seconds at every draw, on both sides (:func:`held_out_price`);
    ``points``: observations to be refit on their own, of a program on ``dim`` parameters,
    :func:`point_refit_seconds` each); None when the draws were given (their cost
    unknown)."""
    if not full.sampling_cost_known or full.seconds <= 0:
        return None
    one = warm_refit_seconds(full) if warm else full.seconds
    # the held-out densities' share is of the cold run's cost (they do not shrink with warmup)
    share = HELDOUT_SHARE_TERMS if terms is not None else HELDOUT_SHARE
    # each held-out observation's term at the training and the full draws: where NUTS is
    # fast (the interpreted backend: radon's 919 homes in 0.24 s), most of a refit's time
    per_term = TERM_SIDES * (terms if terms is not None else whole or 0.0)
    each = [(one + share * full.seconds) * (n - len(v)) / n + per_term * len(v) for v in held]
    if points:
        keep = 1.0 - float(np.mean([len(v) for v in held])) / n
        each.append(points * point_refit_seconds(full, dim, keep))
    return float(sum(each)) / max(1, min(int(n_workers), len(held)))


def estimate_line(seconds: float | None, k: int, full: Draws, points: int | None = None
                  ) -> str:
    """The line printed before the first refit (``points``: observations counted by
    :func:`heavy_count`; None where they were not)."""
    if seconds is None:
        return f"{k} refits: no time estimate (the full-data draws were given, their cost unknown)"
    alone = ""
    if points == 1:
        alone = ", and about 1 observation of heavy weights refit on its own"
    elif points:
        alone = f", and about {points} observations of heavy weights refit on their own"
    return (f"{k} refits: about {duration(seconds)} (the full fit took "
            f"{duration(full.seconds)}; each refit samples the training data with its settings"
            f"{alone})")


def _fill_source(model: Any, data: dict[str, Any], observations: Any, full: Draws,
                 difference: bool) -> Any:
    """The pointwise source PSIS from the full fit would estimate the folds left with
    (:func:`fill_by_psis`); InputError where there is none."""
    unc = full.flat_unconstrained()
    source = "auto" if difference or PointwiseLogLik(
        model, data, observations, "auto").source == "log_lik" else "conditional"
    return pointwise_source(model, data, observations, source,
                            unc[:: max(1, len(unc) // 3)][:3])


def _no_fill(done: int, k: int, need: float, estimate: float | None, full: Draws,
             ahead: float | None = None) -> OverBudget:
    """The refusal where the folds left can be estimated neither by PSIS nor from two refit
    folds: the whole run's budget, at least 1.2 times the estimate (wells: 13 s named for 20
    min of work) and the full fit. ``ahead``: refused before the refits, each estimated at
    that many seconds."""
    route = as_option(max(need, 1.2 * (estimate or 0.0)) + full.seconds, "for the whole run")
    what = (f"the time budget ended the refits after {done} of {k} folds" if ahead is None else
            f"two of the {k} refits (about {duration(ahead)} each) would not fit in the time "
            "budget left")
    return OverBudget(
        f"{what}, and the folds left can be estimated neither by PSIS from the full fit (this "
        "program's density is not a sum of per-observation terms) nor from one refit fold; "
        f"run with {route}", routes=(route,))


def anytime_refits(model: Any, data: dict[str, Any], observations: Any, full: Draws,
                   n_folds: int, estimate: float | None, whole: float | None,
                   n_workers: int = 1) -> bool:
    """Whether a time budget ends kfold's refits (its anytime mode). Under one, the refusal
    :func:`fill_by_psis` would reach after the refits comes before the first: where the
    estimate fits fewer than two folds in the budget left (the last at 1.2 times its share,
    a tenth of the budget kept, as :class:`~.heldout.RefitWatch` starts them) and the folds
    left have no pointwise values from the full fit (``whole`` set: no per-observation
    terms; and no ``log_lik`` quantity or conditional source). Wells under a 60 s budget
    had refit one fold, 45 s, before that refusal."""
    left, total = deadline.remaining(), deadline.budget_seconds() or 0.0
    if left is None:
        return False
    if whole is None or estimate is None:
        return True
    at_once = min(max(int(n_workers), 1), n_folds)
    per_fold = estimate * at_once / n_folds  # a round of at_once folds (the estimate's wall)
    rounds = 2 if at_once == 1 else 1  # the rounds two folds take
    if left - heldout.RefitWatch.RESERVE_SHARE * total >= (rounds + 0.2) * per_fold:
        return True
    try:
        _fill_source(model, data, observations, full, difference=False)
    except InputError as exc:
        raise _no_fill(0, n_folds, full.seconds * n_folds * 1.2, estimate, full,
                       ahead=per_fold) from exc
    return True


def fill_by_psis(model: Any, data: dict[str, Any], observations: Any,
                 held: Sequence[np.ndarray], folds: list[HeldOut | None], full: Draws,
                 progress: Callable[[str], None] | None = None,
                 estimate: float | None = None, difference: bool = True
                 ) -> tuple[list[HeldOut], dict[str, Any] | None]:
    """``folds`` with every None (a fold the budget left without a refit) estimated by PSIS
    from ``full``, and the result's ``budget_stop`` flag (None when every fold was refit).
    ``estimate``: the refits' seconds estimated up front (:func:`refit_seconds`), for the
    route where nothing can estimate the folds left. ``difference=False``: the density
    difference already failed its check (:func:`held_out_price`), so a program without a
    ``log_lik`` quantity goes to the conditional source without checking it again (its
    check builds a data instance per observation: 2 s of posteriordb earnings' 1,059, past
    a 6 s budget)."""
    missing = [j for j, f in enumerate(folds) if f is None]
    if not missing:
        return list(folds), None  # type: ignore[arg-type]
    if progress:
        progress(f"the time budget ended the refits after {len(folds) - len(missing)} of "
                 f"{len(folds)} folds: the {len(missing)} left estimated by PSIS from the "
                 "full fit")
    try:
        pw = _fill_source(model, data, observations, full, difference)
    except InputError as exc:  # no pointwise values from the full fit (a non-factorized program)
        done = [f for f in folds if f is not None]
        if len(done) < 2:  # nothing to estimate the folds left from: the whole run's budget
            need = max([f.seconds for f in done] + [full.seconds]) * len(folds) * 1.2
            raise _no_fill(len(done), len(folds), need, estimate, full) from exc
        return fill_by_sampling(held, folds, str(exc))
    pw.draw_shape = (full.n_chains, full.n_draws)  # a refusal's route: the draws that fit
    # one pass over the draws for every fold left (a log_lik quantity is read, not recomputed)
    rest = np.concatenate([np.asarray(held[j], dtype=int) for j in missing])
    total = full.n_chains * full.n_draws
    try:
        ll = _fold_columns(pw, full, rest, observations.n)
    except OverBudget as exc:
        # a costly pass (one quadrature per observation and draw) that the budget left cannot
        # hold on every draw: on the draws its clock says fit, thinned evenly per chain (PSIS's
        # mc se is that of the draws used); where none fit, from the folds refit
        m = next((int(r.options["pointwise_draws"]) for r in exc.routes
                  if "pointwise_draws" in r.options), None)
        done = [f for f in folds if f is not None]
        if m is None:
            if len(done) < 2:
                raise
            return fill_by_sampling(held, folds, f"{TOO_LONG} ({str(exc).splitlines()[0]})")
        full = full.thinned(-(-m // full.n_chains))
        if progress:
            progress(f"the folds left estimated on {full.n_chains * full.n_draws} of the "
                     f"{total} draws (the pass on all would not fit in the time budget left)")
        ll = _fold_columns(pw, full, rest, observations.n)
    r_eff = relative_efficiency(full.unconstrained)
    threshold = k_threshold(ll.shape[0])
    out: list[HeldOut] = []
    flagged: dict[int, float] = {}
    for j, f in enumerate(folds):
        if f is None:
            index = np.asarray(held[j], dtype=int)
            f = psis_fold(ll[:, index], index, r_eff, threshold)
            flagged[j + 1] = float(f.khat[0])
        out.append(f)
    unreliable = [j for j, k in flagged.items() if not k <= threshold]
    stop = {"folds_refit": len(folds) - len(missing), "folds": len(folds),
            "estimated_by": "psis", "khat": flagged, "unreliable": unreliable}
    if ll.shape[0] < total:
        stop["psis_draws"] = {"draws_used": int(ll.shape[0]), "draws": int(total)}
    return out, stop


def _fold_columns(pw: Any, full: Draws, rest: np.ndarray, n: int) -> np.ndarray:
    """``(S, n)`` log-likelihoods at ``full``'s draws, filled at the observations ``rest``."""
    unc = full.flat_unconstrained()
    constrained = None if full.constrained is None else full.constrained.reshape(
        unc.shape[0], -1)
    ll = np.empty((unc.shape[0], n))
    for idx, block in pw.chunks(unc, constrained, list(full.constrained_names), index=rest):
        ll[:, idx] = block
    return ll


def fill_by_sampling(held: Sequence[np.ndarray], folds: list[HeldOut | None], why: str
                     ) -> tuple[list[HeldOut], dict[str, Any]]:
    """``folds`` with every None estimated from the folds refit, where PSIS from the full fit
    is not available (``why``): the folds are a random partition, so the refit ones are a
    random sample of them, and each fold left gets the refit folds' elpd per observation times
    its size (a ratio estimator). The error of the folds left together is the sample's,
    se² = K² (1 − k/K) s² / k over the k of K folds refit, s² the variance of the refit folds'
    residuals from the ratio, widened so that ±2 se is the t interval of k − 1 degrees of
    freedom; it is shared by the folds left (it adds linearly over them)."""
    k, n_folds = sum(f is not None for f in folds), len(folds)
    done = [f for f in folds if f is not None]
    size = np.array([f.index.size for f in done], dtype=float)
    point = np.array([float(np.sum(f.elpd_i)) for f in done])
    joint = np.array([f.elpd for f in done])
    rate, rate_joint = point.sum() / size.sum(), joint.sum() / size.sum()
    left = sum(np.asarray(held[j]).size for j, f in enumerate(folds) if f is None)

    # with few folds refit the variance is itself rough: the se is widened so that ±2 se is
    # the t interval of k − 1 degrees of freedom (benchmarks/kfold_fold_sample.py: coverage)
    widen = float(stats.t.ppf(stats.norm.cdf(2.0), k - 1)) / 2.0

    def se(values: np.ndarray, r: float) -> float:
        resid = values - r * size
        return widen * float(n_folds * np.sqrt((1 - k / n_folds) * np.var(resid, ddof=1) / k))

    se_point, se_joint = se(point, rate), se(joint, rate_joint)
    out: list[HeldOut] = []
    for j, f in enumerate(folds):
        if f is None:
            index = np.asarray(held[j], dtype=int)
            share = index.size / left
            nan = float("nan")
            f = HeldOut(index=index, elpd=rate_joint * index.size, mcse=se_joint * share,
                        method="fold-sample", elpd_i=np.full(index.size, rate),
                        elpd_i_mcse=se_point * share, khat=(nan, nan), n_latent=0,
                        n_gradient_evals=0, n_evals=0, seconds=0.0,
                        shared_mcse=se_joint * share, elpd_i_shared_mcse=se_point * share)
        out.append(f)
    stop = {"folds_refit": k, "folds": n_folds, "estimated_by": "fold-sample", "khat": {},
            "unreliable": [], "why_not_psis": why}
    return out, stop


def psis_fold(ll: np.ndarray, index: np.ndarray, r_eff: float, threshold: float) -> HeldOut:
    """One fold held out by PSIS from the full-data draws, at which its observations ``index``
    have the log-likelihood ``ll`` ``(S, m)`` (see the module's text)."""
    t0 = time.perf_counter()
    lw, khat = psislw(-ll.sum(axis=1)[None], r_eff)
    lw = lw[0]
    k = float(np.asarray(khat).reshape(-1)[0])
    elpd_i = logsumexp(lw[:, None] + ll, axis=0)
    mcse_i = elpd_mcse(np.broadcast_to(lw, ll.T.shape), ll.T, r_eff)
    joint = float(logsumexp(lw + ll.sum(axis=1)))
    joint_mcse = float(elpd_mcse(lw, ll.sum(axis=1), r_eff))
    bad = not k <= threshold
    warns = ([f"fold of observations {', '.join(str(i + 1) for i in index[:5])}"
              f"{', ...' if index.size > 5 else ''}: PSIS k-hat {k:.2f} > {threshold:.2f}, "
              "its estimate is unreliable (Monte Carlo se NA)"] if bad else [])
    nan = float("nan")
    # the fold's values share its draws (their errors add linearly: an upper bound), and the
    # folds estimated so share the full fit's draws: all of it counts as shared, so these
    # folds' errors add linearly too (KFoldResult.mcse)
    sum_mcse = nan if bad else float(np.sum(mcse_i))
    return HeldOut(index=index, elpd=joint, mcse=nan if bad else joint_mcse, method="psis",
                   elpd_i=elpd_i, elpd_i_mcse=sum_mcse, khat=(k, nan), n_latent=0,
                   n_gradient_evals=0, n_evals=int(ll.size), seconds=time.perf_counter() - t0,
                   warnings=warns, shared_mcse=nan if bad else joint_mcse,
                   elpd_i_shared_mcse=sum_mcse)


def budget_warning(stop: dict[str, Any]) -> str:
    """The warning of a K-fold run the time budget ended."""
    if stop["estimated_by"] == "fold-sample":
        left = stop["folds"] - stop["folds_refit"]
        return (f"the time budget ended the refits after {stop['folds_refit']} of "
                f"{stop['folds']} folds; the {left} left are estimated from those refit (the "
                "folds are a random partition: their elpd per observation, with the sampling "
                "error in the Monte Carlo se), as PSIS from the full fit "
                + ("would not fit in the time left"
                   if stop.get("why_not_psis", "").startswith(TOO_LONG)
                   else "cannot serve this program"))
    bad = stop["unreliable"]
    thinned = stop.get("psis_draws")
    on = "" if not thinned else (f" on {thinned['draws_used']} of its {thinned['draws']} draws "
                                 "(all would not fit in the time left)")
    return (f"the time budget ended the refits after {stop['folds_refit']} of {stop['folds']} "
            f"folds; the other {stop['folds'] - stop['folds_refit']} are PSIS estimates from "
            f"the full fit{on}" + (f" (folds {', '.join(map(str, bad))} have k-hat above the "
                                   "threshold: Monte Carlo se NA)" if bad else ""))
