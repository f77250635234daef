"""Leave-one-group-out cross-validation without refits: :func:`logo`.

With θ = (φ, a_1, …, a_G) split as :mod:`.structure` checks,

    p(y_g | y₋g) = ∫ p(y_g | φ) p(φ | y₋g) dφ,   p(y_g | φ) = ∫ p(y_g | a_g, φ) p(a_g | φ) da_g.

PSIS on the joint posterior fails for groups (a_g is informed mostly by y_g, so the ratios
1 / p(y_g | a_g, φ) are heavy-tailed); with a_g integrated out the ratios 1 / p(y_g | φ) over
the posterior draws of φ are smooth (the same idea as integrated importance sampling for
latent Gaussian models: Vehtari et al. 2016; Merkle, Furr & Rabe-Hesketh 2019). The
integrated likelihood comes from the compiled density on two data instances:

    log p(y_g | φ) = log ∫ exp f_g(φ, a_g, a₋g) da_g − log ∫ exp f_∅(φ, a_g, a₋g) da_g,

f_g the program on group g's rows alone and f_∅ on no rows (else the full data and the data
without group g): every term not involving y_g cancels, and an unnormalized prior of a_g
cancels too. Both integrals are adaptive Gauss–Hermite on the unconstrained scale
(:mod:`.integrate`). Then PSIS as for observations
(:func:`~stanlogz.crossval.elpd.psis.psis_loo`, its
Monte Carlo se and the summed draw influence for the total), plus the integration error as a
bound. Groups whose k̂ stays above the threshold are refit exactly (:func:`heldout_many`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Unpack

import numpy as np
from scipy.special import logsumexp

from ... import arviz_compat
from ..._util import deadline
from ..._util.seeds import Stream, stream, stream_int_seed, stream_rng
from ..._util.sum_se import sum_se
from ...draws import obtain_draws
from ...draws.summary import sampler_flags
from ...errors import InputError, Route, SkipObsValues, ThinForBudget
from ...stan.nuts import budget_stop_dict
from ...stan.program import ProgramLike, StanProgram
from ...stan.settings import NutsArgs, NutsKeywords, nuts_from_keywords
from ..elpd.psis import (
    draw_influence,
    elpd_mcse,
    psis_loo,
    relative_efficiency_pointwise,
)
from ..elpd.psis import total_mcse as influence_mcse
from ..observations.observations import load_observed
from ..refit.heldout import heldout_many
from .budget import (
    GroupWatch,
    ObsWatch,
    refits_left_note,
    thinned_note,
)
from .integrate import Integral, integrate
from .obs_sample import OBS_DRAWS, obs_draws, subsample_value
from .pairs import check_pairs, make_pairs
from .prior_share import prior_shared, shared_integrals
from .result import GroupValue, LogoResult, total_mcse
from .structure import GroupStructure, check_structure, find_groups, instance, logo_route

FIXES = ("auto", "refit", "none")
#: Default k̂ above which a group is refit. PSIS values of groups whose true k is above 0.5
#: undercover (0.86 at ±2 mc se between 0.5 and loo's 0.7), and k̂ is an estimate with an sd
#: of about (1 + k) / sqrt(M r_eff) ≈ 0.1 at 4000 draws (M tail draws; the GPD fit's
#: asymptotic sd): such a group showed k̂ 0.35-0.5 in 15% of runs, its value then about 2 se
#: too high (the tail unseen), which took the total's coverage to 0.915. Refitting from one sd
#: below 0.5 leaves few of them; groups are few, so refits are cheap
#: (benchmarks/logo_coverage.py, docs/guide/logo.md).
LOGO_K = 0.4
#: Share of the run's budget the observation-level values leave for what follows them.
RESERVE_SHARE = 0.1


def logo(
    model: ProgramLike,
    data: Any = None,
    *,
    group: str,
    draws: Any = None,
    obs: str | None = None,
    obs_fields: list[str] | None = None,
    fix: str = "auto",
    k_threshold: float | None = None,
    pointwise_obs: bool = True,
    settings: NutsArgs | None = None,
    seed: int | None = None,
    progress: Callable[[str], None] | None = None,
    **nuts_keywords: Unpack[NutsKeywords],
) -> LogoResult:
    """Leave-one-group-out cross-validation of a hierarchical Stan program without refits.

    Parameters
    ----------
    model, data
        The program (a path or :class:`StanModel`) and its data.
    group
        The data variable holding each observation's group (1-based index of the group
        parameters, e.g. ``county``).
    draws
        Existing posterior draws of the program on all data; else NUTS with ``settings``.
    obs, obs_fields
        The observation size variable and per-observation arrays (inferred when unambiguous).
    fix
        Groups whose k̂ exceeds the threshold: ``"auto"``/``"refit"`` refit them exactly
        (NUTS without the group, as ``kfold``), ``"none"`` keeps the PSIS value with a warning.
    k_threshold
        k̂ above which a group is refit (default min(1 − 1/log10 S, 0.4): PSIS values of
        groups whose k is above 0.5 undercover, and k̂ estimates k with an sd of about 0.1;
        groups are few, so refitting them is cheap).
    pointwise_obs
        Also compute log p(y_i | y₋g(i)) per observation (one more integral per observation,
        at a weighted subsample of the draws: :mod:`.obs_sample`).
    settings, seed, progress, nuts_keywords
        NUTS settings (``chains``, ``warmup``, ``draws``, ... replace its fields), seed,
        progress callback.

    Returns
    -------
    LogoResult
        elpd_logo, its between-group se, its Monte Carlo se, per-group and per-observation
        values.
    """
    t0 = time.perf_counter()
    settings = nuts_from_keywords(settings, nuts_keywords, "loo")
    if fix not in FIXES:
        raise InputError(f"fix must be one of {', '.join(FIXES)} for leave-one-group-out, "
                         f"got {fix!r}")
    if k_threshold is not None and not 0.0 <= k_threshold <= 1.0:
        raise InputError(f"k_threshold must be in [0, 1], got {k_threshold}")
    model, data_dict, observations = load_observed(model, data, obs, obs_fields, seed=seed,
                                                   progress=progress, settings=settings,
                                                   labels={"group": group})
    st = find_groups(model, data_dict, observations, group)
    pairs = make_pairs(model, data_dict, observations, st)
    # the structure is an identity of the density, checked at any points: before sampling
    probe = stream_rng(seed, Stream.PROBE).normal(0, 0.5, (3, model.dim))
    check_structure(model, data_dict, observations, st, probe)
    check_pairs(model, data_dict, observations, st, pairs, probe)
    d = obtain_draws(model, draws, settings, seed=stream_int_seed(seed, Stream.NUTS),
                     progress=progress)
    budgeted = deadline.remaining() is not None
    warns: list[str] = []
    stop: dict[str, Any] = {}
    if getattr(d, "budget_stop", None):  # NUTS past warmup, stopped: the draws so far
        stop["sampling"] = budget_stop_dict(d.budget_stop)
    try:  # under a budget, on fewer draws where all of them would not fit (.budget)
        ll, err, lap, how, empty = _group_pass(
            pairs, st, d.flat_unconstrained(), group, seed, progress,
            GroupWatch(st.n_groups, d.n_chains * d.n_draws) if budgeted else None)
    except ThinForBudget as thin:
        total, of = d.n_chains * d.n_draws, d.n_draws
        d = d.thinned(-(-thin.draws // d.n_chains))
        warns.append(thinned_note(d.n_chains * d.n_draws, total, d.n_draws, of))
        stop["pass_draws"] = {"draws_used": d.n_chains * d.n_draws, "draws": total}
        if progress:
            progress(warns[-1])
        ll, err, lap, how, empty = _group_pass(pairs, st, d.flat_unconstrained(), group, seed,
                                               progress, None)
    unc = d.flat_unconstrained()
    s, n_g = unc.shape[0], st.n_groups
    chains = d.unconstrained.shape[0]
    ll3 = ll.reshape(chains, -1, n_g)
    # each group's own relative efficiency: p(y_g | φ) of a group that informs a slowly mixing
    # hyperparameter has a far smaller ESS than the average (one scalar r_eff left the se of
    # such groups 1.5x too small: benchmarks/logo_coverage.py)
    r_g = relative_efficiency_pointwise(ll3) if chains > 1 else np.ones(n_g)
    r_eff = float(np.mean(r_g))
    ps = psis_loo(ll, r_eff, chains=chains, keep_above=0.0)
    threshold = min(ps.threshold, LOGO_K) if k_threshold is None else float(k_threshold)
    lw, _ = arviz_compat.psislw(-ll.T, r_eff=r_eff)  # (G, S) normalized
    # each group's se from its own draw-influence series (the delta method of the
    # self-normalized estimate) and that series' ESS over the chains, as for the total
    infl = draw_influence(lw, ll.T, ps.elpd_i)
    mcse_g = np.array([influence_mcse(infl[g], chains) for g in range(n_g)])
    # first-order effect of per-draw errors on log Σ w p: a weighted mean of them, <= their max
    wp = np.exp(lw + ll.T - logsumexp(lw + ll.T, axis=1, keepdims=True))
    int_err = np.sum(wp * err.T, axis=1)
    # PSIS's own bias above k̂ 0.5 (half-sample estimate) enters the se, as in loo
    bias = ps.bias_i if ps.bias_i is not None else np.zeros(n_g)
    groups = [GroupValue(int(st.labels[g]), st.rows[g], float(ps.elpd_i[g]),
                         float(np.sqrt(mcse_g[g]**2 + bias[g]**2 + int_err[g]**2)),
                         float(ps.khat[g]), "psis",
                         how[g], float(int_err[g]), float(ps.elpd_i[g]), float(lap[g]))
              for g in range(n_g)]
    elpd_obs = mcse_obs = None
    if pointwise_obs:
        try:
            elpd_obs, mcse_obs = _obs_values(
                model, data_dict, observations, st, unc, empty, lw, ll, group, pairs.refs,
                r_g, stream_rng(seed, Stream.LOGO_OBS),
                ObsWatch(observations.n, RESERVE_SHARE * (deadline.budget_seconds() or 0.0))
                if budgeted else None)
        except SkipObsValues as skip:
            warns.append(str(skip))
            stop["obs_values"] = "left out"
    bad = [g for g in range(n_g) if ps.khat[g] > threshold]
    refit: list[int] = []
    if bad and fix != "none":
        if progress:
            progress(f"{len(bad)} group(s) with k-hat above {threshold:.2f}: exact refits")
        found = heldout_many(model, data_dict, observations, [st.rows[g] for g in bad],
                             full_draws=d, settings=settings, seed=stream(seed, Stream.REFIT),
                             anytime=budgeted)
        left = [g for g, f in zip(bad, found, strict=True) if f is None]
        if left:  # the budget ended the refits: those keep PSIS (k-hat above: mc se NA)
            warns.append(refits_left_note([int(st.labels[g]) for g in left]))
            stop["refits_skipped"] = [int(st.labels[g]) for g in left]
        folds = [f for f in found if f is not None]
        bad = [g for g, f in zip(bad, found, strict=True) if f is not None]
        for g, f in zip(bad, folds, strict=True):
            gv = groups[g]
            gv.elpd, gv.mcse, gv.method, gv.integration_error = f.elpd, f.mcse, "refit", 0.0
            if elpd_obs is not None and mcse_obs is not None:
                elpd_obs[f.index] = f.elpd_i
                mcse_obs[f.index] = np.nan  # a refit gives the se of their sum only
            warns.extend(f.warnings)
        refit = bad
        bad = bad + [g for g in range(n_g) if ps.khat[g] > threshold and g not in refit]
    elif bad:
        labels = ", ".join(str(int(st.labels[g])) for g in bad[:10])
        warns.append(f"{len(bad)} group(s) have Pareto k-hat above {threshold:.2f} ({labels}): "
                     "their PSIS values are unreliable; refit them "
                     f"({Route(options={'fix': 'auto'})}, or {logo_route(group)})")
    psis_part = float(np.hypot(ps.total_mcse(refit), ps.total_bias(refit)))
    mcse = total_mcse(psis_part, [groups[g].mcse for g in refit],
                      [float(int_err[g]) for g in range(n_g) if g not in refit])
    if set(bad) - set(refit):
        mcse = float("nan")  # as loo: NA while a PSIS value above the threshold is kept
    elpd_g = np.array([gv.elpd for gv in groups])
    summary = d.summary()
    if d.source == "stanlogz-nuts":
        warns = list(summary.warnings) + warns
    flags = draws_flags(summary.diagnostics)
    if flags:
        mcse = float("nan")  # the draws may miss part of the posterior: no honest mc se
    return LogoResult(model.name, group, float(elpd_g.sum()), sum_se(elpd_g), mcse, groups,
                      elpd_obs, observations, s, threshold, time.perf_counter() - t0, warns,
                      mcse_psis=psis_part, mcse_obs=mcse_obs, draws_flags=flags,
                      budget_stop=stop or None)


def _group_pass(pairs: Any, st: GroupStructure, unc: np.ndarray, group: str, seed: Any,
                progress: Any, watch: GroupWatch | None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str], list[Any]]:
    """Every group's log p(y_g | φ) per draw (its latents integrated out), the integration
    error bounds, the Laplace gap, the method and the reference integrals; ``watch`` (under
    a time budget) may stop it to run on fewer draws."""
    if progress:
        progress(f"integrating the latents of {st.n_groups} groups at {unc.shape[0]} draws")
    s, n_g = unc.shape[0], st.n_groups
    ll, err, lap = np.empty((s, n_g)), np.empty((s, n_g)), np.empty(n_g)
    how: list[str] = []
    empty: list[Any] = []
    zeros = _empty_integrals(pairs.zeros, st, unc, group, seed)
    for g in range(n_g):
        c = st.coords[g]
        what = f"group {int(st.labels[g])} of {group}"
        i1 = integrate(pairs.ones[g], unc, c, unc[:, c], what, _check_rows(unc, c))
        i0 = zeros(g)
        how.append(i1.method if i1.method == i0.method else "gauss-hermite/laplace")
        empty.append(i0)
        ll[:, g] = i1.value - i0.value
        err[:, g] = i1.error + i0.error
        lap[g] = float(np.max(np.abs((i1.laplace - i0.laplace) - ll[:, g])))
        if watch is not None:
            watch.done()
    return ll, err, lap, how, empty


#: Share of divergent transitions above which the draws are taken to miss part of the posterior
#: (a centred hierarchy's funnel): a stray divergence or two (0.05%) comes with draws that
#: reproduce the non-centred program's elpd_logo, the funnel's misses with 2-6%.
DIVERGENT_SHARE = 0.01


def draws_flags(diag: dict[str, Any]) -> list[str]:
    """The sampler's signs that the draws are not (yet) from the posterior
    (:func:`~stanlogz.draws.summary.sampler_flags` with divergences counted above
    ``DIVERGENT_SHARE``). Every group's PSIS value then rests on draws that may miss a region
    (a funnel's neck a centred hierarchy's NUTS does not enter biases every group the same
    way), which no Monte Carlo se given the draws covers."""
    return sampler_flags(diag, DIVERGENT_SHARE)


def _check_rows(unc: np.ndarray, c: np.ndarray, k: int = 48) -> np.ndarray:
    """Draws at which Laplace is checked against Gauss–Hermite: ``k`` spread over the run
    and the ``k // 3`` with the most extreme values of every hyperparameter (where a
    non-Gaussian integrand shows first)."""
    spread = np.linspace(0, unc.shape[0] - 1, k).astype(int)
    hyper = np.delete(unc, c, axis=1)
    z = np.abs(hyper - hyper.mean(axis=0)) / (hyper.std(axis=0) + 1e-300)
    extreme = np.argsort(-np.max(z, axis=1))[: k // 3]
    return np.unique(np.concatenate([spread, extreme]))


def _empty_integrals(zeros: list[StanProgram], st: GroupStructure, unc: np.ndarray,
                     group: str, seed: Any) -> Callable[[int], Integral]:
    """Group g's reference integral by index: one shared integral where the groups' latent
    priors are one function (:mod:`.prior_share`), else one per group."""

    def own(g: int) -> Integral:
        c = st.coords[g]
        return integrate(zeros[g], unc, c, unc[:, c], f"group {int(st.labels[g])} of {group}",
                         _check_rows(unc, c))

    rows = unc[_check_rows(unc, st.coords[0], 6)]
    if not prior_shared(zeros, st, rows, stream_rng(seed, Stream.LOGO_OBS, 1)):
        return own
    return shared_integrals(zeros, st, unc, lambda: own(0)).__getitem__


def _obs_values(model: StanProgram, data: dict[str, Any], obs: Any, st: GroupStructure,
                unc: np.ndarray, empty: list[Any], lw: np.ndarray, ll: np.ndarray, group: str,
                refs: list[np.ndarray], r_g: np.ndarray, rng: np.random.Generator,
                watch: ObsWatch | None = None) -> tuple[np.ndarray, np.ndarray]:
    """log p(y_i | y₋g(i)) = log Σ_s w_gs p(y_i | φ_s), p(y_i | φ) with a_g integrated over
    its prior, and their Monte Carlo se: the instance with row i added to the rows of the
    group's reference integral (:mod:`.pairs`) against
    that integral, at the draws :func:`obs_draws` picks (shared by the group's observations)."""
    out, se = np.empty(obs.n), np.empty(obs.n)
    for g, rows in enumerate(st.rows):
        c = st.coords[g]
        pick = obs_draws(lw[g], ll[:, g], OBS_DRAWS, rng)
        sub = unc if pick is None else unc[pick]
        for i in rows:
            one = instance(model, data, obs, np.union1d(refs[g], [i]), st)
            v = integrate(one, sub, c, sub[:, c], f"group {int(st.labels[g])} of {group}",
                          _check_rows(sub, c))
            ll_i = v.value - (empty[g].value if pick is None else empty[g].value[pick])
            if pick is None:
                out[i] = float(logsumexp(lw[g] + ll_i))
                se[i] = float(elpd_mcse(lw[g], ll_i, r_g[g]))
            else:
                out[i], se[i] = subsample_value(ll_i, np.exp(lw[g][pick]), r_g[g])
        if watch is not None:
            watch.done(len(rows))  # SkipObsValues where the rest would not fit
    return out, se


def logo_from_loo(model: ProgramLike, data: Any = None, *, group: str, fix: str = "auto",
                  **options: Any) -> LogoResult:
    """:func:`logo` called with the keywords of :func:`~stanlogz.crossval.psis_loo.loo.loo`
    (``loo(..., group=)``):
    ``fix`` "auto" or "exact" refits high-k̂ groups, "none" keeps their PSIS values; loo's
    options that have no meaning for groups (``subsample``, ``log_lik``, ``ups_options``,
    ``mm_budget``, ``cond_budget``, ``n_workers`` > 1) are refused."""
    how = {"auto": "auto", "exact": "refit", "none": "none"}
    if fix not in how:
        raise InputError(f"loo with group: fix must be auto, exact or none, got {fix!r}")
    for name, default in (("subsample", None), ("log_lik", "auto"), ("ups_options", None),
                          ("mm_budget", None), ("cond_budget", None), ("n_workers", 1)):
        if options.pop(name, default) != default:
            raise InputError(f"loo with group: {name} does not apply to leave-one-group-out")
    return logo(model, data, group=group, fix=how[fix], **options)
