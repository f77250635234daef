"""PSIS-LOO of a Stan program with every unreliable observation fixed by moment matching, or an
exact or unbiased leave-one-out estimate; subsampling for large N: :func:`loo` (the workflow
on top of the fix-ups, the refits and PSIS; its result: :class:`~.result.LooResult`)."""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from collections.abc import Callable, Mapping
from typing import Any, Unpack

import numpy as np

from ... import arviz_compat
from ..._util import deadline as run_budget
from ..._util.argcheck import check_arguments
from ..._util.arrays import even_rows
from ..._util.gpd import KHAT_HEAVY
from ..._util.progress import duration, steps
from ..._util.seeds import Stream, stream, stream_int_seed, stream_rng
from ..._util.sum_se import sum_se
from ...draws import Draws, obtain_draws
from ...draws.continuation import WarmStart
from ...draws.mode_search import ModeSearch, chain_groups, search_modes
from ...errors import InputError, Route, StanlogzError, ThinForBudget, option
from ...parallel import run_parallel, with_client
from ...stan.program import ProgramLike
from ...stan.settings import NutsArgs, NutsKeywords, nuts_from_keywords
from ..elpd.base import ElpdResult
from ..elpd.psis import LOGLIK_VAR_HEAVY, PsisLoo, psis_loo, relative_efficiency
from ..elpd.routes import (
    PROBE_ROWS,
    conditional_instead,
    exact_split_error,
    pointwise_source,
    refit_data_error,
    refit_refusal,
    refusal_before_draws,
)
from ..fixups.fixups import (
    SHARED_SE,
    FixedPoint,
    FixTask,
    fix_observation,
    fixed_variance,
)
from ..fixups.mixture import mixture_fixup
from ..fixups.mm_points import UNFINISHED, moment_match_points
from ..fixups.moment_match import moment_match_observation
from ..fixups.registry import FixMethod, FixOptions, fix_method
from ..logo.estimator import logo_from_loo
from ..observations.clock import ROUTE_POINTWISE_DRAWS, SUBSAMPLE_APPROX_DRAWS
from ..observations.conditional_source import ClockedColumns, check_pass_budget, start_pass
from ..observations.conditional_verify import self_check as conditional_self_check
from ..observations.observations import load_observed
from ..observations.pointwise import PointwiseLogLik
from ..observations.splitcheck import SplitError
from ..refit.heldout import heldout_many
from ..refit.kfold_time import HELDOUT_SHARE
from .anytime import (
    anytime_pass,
    budget_flags,
    budget_pass_warning,
    pass_reserve,
    poor_left_note,
    refit_prices,
    with_mm_cut,
    within_budget,
)
from .band_refit import correct_band
from .fitloo import is_fit, loo_elsewise
from .modes import in_one_mode, loo_across_modes, one_mode_only
from .own_latent import MAX_OWN_REFITS, own_parameter_note, own_parameter_observations
from .result import LooResult, loo_warnings
from .subsample import draw_sample, final_estimates
from .verify import (
    candidates,
    influence_rows,
    keep_influence,
    parse_verify,
    pos_of,
    self_check,
)

#: The exact refits of the self-check.
EXACT = fix_method("exact")

#: k̂ bands of the loo table (the first bound is the draw-count-dependent threshold).
BANDS = ("good", "bad", "very bad")

#: Moment matching goes on until k̂ is below this (not just below the threshold): stopping at
#: 0.7 left a bias of about 0.45 se over 200 seeds (benchmarks/loo_fixups.py), 0.3 removes it
#: for about twice the density evaluations, still ~5x cheaper than a refit.
MM_K_TARGET = 0.3

#: Moment matching (``fix="auto"`` and ``"mm"``) also re-estimates the values just below the
#: k̂ threshold, from :func:`mm_band_floor` up: k̂ is itself an estimate from the M largest
#: ratios, with an sd of about (1 + k) / sqrt(M), and at a few thousand draws a value whose
#: ratios' tail is past the threshold often reads 0.1-0.3 below it. On issue 45's regression
#: with t(5) noise (N = 4000), one outlier's k̂ read anywhere from 0.44 to 0.97 at 1,000-3,000
#: draws; left on PSIS below the threshold its value was up to +0.6 too high, 4 times the
#: Monte Carlo se the total claimed, and budget-stopped runs covered 0.88
#: (benchmarks/anytime_coverage.py). The floor is the threshold less two sds of k̂ at the
#: draws, kept within [MM_BAND_LOW, KHAT_HEAVY].
MM_BAND_LOW = 0.4

#: The band's moment matching stops after this many seconds, or this share of the run so far
#: when that is longer (and within the time budget); the values left keep PSIS's.
MM_BAND_SECONDS = 5.0
MM_BAND_SHARE = 0.25

#: ... and it stops when maps were tried on this many values (the most variable first) and
#: none lowered a k̂: posteriordb hierarchical_gp tried 239 and lowered none, 2pl_latent_reg_irt
#: spent 74 s the same way (the values left keep PSIS's, as when the time runs out).
MM_BAND_TRIES = 10


def mm_band_floor(n_samples: int, threshold: float) -> float:
    """The k̂ from which moment matching re-estimates values below ``threshold``
    (:data:`MM_BAND_LOW`): the threshold less two sds of k̂ from the Pareto tail of
    min(S / 5, 3 sqrt(S)) ratios of ``n_samples`` = S draws, within [MM_BAND_LOW, KHAT_HEAVY]."""
    m = max(min(0.2 * n_samples, 3.0 * math.sqrt(n_samples)), 1.0)
    return float(np.clip(threshold - 2.0 * (1.0 + threshold) / math.sqrt(m), MM_BAND_LOW,
                         KHAT_HEAVY))


#: Thinned draws of the PSIS approximation of every observation when subsampling (the pass
#: clock counts them when it names a subsample that fits a time budget).
APPROX_DRAWS = SUBSAMPLE_APPROX_DRAWS

#: Seconds of exact refits ``fix="auto"`` starts on its own (estimated as one sampling run per
#: refit); beyond, it names ``fix="exact"`` and K-fold with the estimate instead. A corpus
#: program (posteriordb hierarchical_gp, 550 observations) asked for 34 refits of 216 s each.
AUTO_REFIT_SECONDS = 600.0



def _sampler_warnings(d: Draws) -> list[str]:
    """The sampler's warnings (divergences, R-hat, ESS) on the posterior quantities; the
    log_lik columns are left out (N of them would cost more than the LOO itself)."""
    if d.source != "stanlogz-nuts":
        return []
    if d.constrained is not None:
        keep = [j for j, n in enumerate(d.constrained_names) if not n.startswith("log_lik")]
        d = dataclasses.replace(d, constrained=d.constrained[:, :, keep],
                                constrained_names=[d.constrained_names[j] for j in keep])
    return list(d.summary().warnings)


def _posterior_values(d: Draws) -> np.ndarray:
    """The posterior quantities ArviZ would put in the posterior group (no log_lik)."""
    if d.constrained is None:
        return d.unconstrained
    keep = [j for j, n in enumerate(d.constrained_names) if not n.startswith("log_lik")]
    return d.constrained[:, :, keep] if keep else d.unconstrained


def _check_rows(n_draws: int, k: int = 3) -> np.ndarray:
    """The draws the validity check of the density difference looks at."""
    return even_rows(n_draws, k)


def _psis_pass(pw: PointwiseLogLik, d: Draws, r_eff: float, index: np.ndarray | None,
               keep_above: float = 0.5) -> PsisLoo:
    """PSIS-LOO of the observations ``index`` (all when None), streamed in column blocks; the
    draw influence of observations with k̂ above ``keep_above`` (the ones fix-ups may
    replace) is kept for the Monte Carlo se of the total."""
    con = None if d.constrained is None else d.constrained.reshape(-1, d.constrained.shape[2])
    blocks = pw.chunks(d.flat_unconstrained(), con, d.constrained_names, index=index)
    chains = d.unconstrained.shape[0]
    return PsisLoo.concatenate([psis_loo(ll, r_eff, chains=chains, keep_above=keep_above)
                                for _, ll in blocks])


@with_client
def loo(
    model: ProgramLike,
    data: Any = None,
    *,
    group: str | None = None,
    draws: Any = None,
    obs: str | None = None,
    obs_fields: list[str] | None = None,
    fix: str = "auto",
    log_lik: str = "auto",
    k_threshold: float | None = None,
    subsample: int | None = None,
    settings: NutsArgs | None = None,
    seed: int | None = None,
    n_workers: int = 1,
    ups_options: dict[str, Any] | None = None,
    progress: Any = None,
    mm_budget: float | None = None,
    cond_budget: float | None = None,
    fix_options: FixOptions | Mapping[str, Any] | None = None,
    verify: int | str = "auto",
    mcse_target: float | None = None,
    pointwise_draws: int | None = None,
    **nuts_keywords: Unpack[NutsKeywords],
) -> ElpdResult:
    """PSIS-LOO of a Stan program, with every unreliable observation recomputed.

    Pareto-smoothed importance sampling leave-one-out cross-validation (Vehtari, Gelman and
    Gabry 2017): the expected log predictive density elpd_loo with its standard error, the
    effective number of parameters p_loo and the Pareto k̂ of each observation. Every
    observation whose k̂ exceeds the threshold is recomputed by ``fix`` and its Monte Carlo se
    enters the Monte Carlo se of elpd_loo.

    Parameters
    ----------
    model : str, Path, StanModel, or a fit
        A ``.stan`` file or a built :class:`~stanlogz.StanModel`; or a fit without its
        program (InferenceData, a cmdstanpy fit, CmdStan CSV paths, a log-likelihood array
        ``(chains, draws, observations)``, or ``None`` with ``draws``): then PSIS only, see
        :func:`~stanlogz.crossval.psis_loo.fitloo.loo_from_fit`; an argument that needs the
        program (sampler settings, fix-ups, ``obs``, budgets) is refused by name.
    data : dict or str, optional
        The program's data (a dict or a Stan JSON file).
    group : str, optional
        A data variable with one integer group label per observation (e.g. ``"county"``):
        leave-one-group-out without refits instead of leave-one-out. Each group's latents are
        integrated out given the hyperparameters, PSIS runs over the hyperparameter draws, and
        groups whose k̂ is above 0.4 (or ``k_threshold``) are refit exactly (``fix`` "auto" or
        "exact"; "none" keeps their PSIS values). Returns a
        :class:`~stanlogz.crossval.logo.result.LogoResult`
        (:func:`~stanlogz.crossval.logo.estimator.logo`).
    draws : Draws, cmdstanpy fit, CSV paths or InferenceData, optional
        Existing posterior draws; without them NUTS runs with ``settings``.
    obs : str, optional
        The data variable that counts the observations (inferred when unambiguous).
    obs_fields : list of str, optional
        The data variables indexed by observation (inferred when omitted).
    fix : {"auto", "mm", "exact", "ups", "mis", "none"}, default "auto"
        How observations above the k̂ threshold are recomputed: ``"auto"`` (moment matching,
        then an exact refit for those still above), ``"mm"`` (moment matching only),
        ``"exact"`` (NUTS without the observation, bridged to the full posterior), ``"ups"``
        (unbiased path sampling), ``"mis"`` (mixture importance sampling from one HMC run, no
        refit; :mod:`~stanlogz.crossval.fixups.mixture`) or ``"none"``.
    log_lik : {"auto", "log_lik", "difference", "conditional", "integrated"}, default "auto"
        Where log p(y_i | θ) comes from: the ``log_lik`` generated quantity, the program's
        density on data instances of one observation (``"difference"``, checked for
        validity), log p(y_i | y₋ᵢ, θ) with the observation's latents integrated out
        (``"conditional"``; what ``"auto"`` uses when the difference is not valid: linked
        latents, non-factorized likelihoods), or log p(y_i | θ) with one latent per
        observation integrated out over its prior (``"integrated"``). ``"auto"`` takes the
        integrated route when the program has exactly one latent per observation (found from
        its parameters) even where it has a ``log_lik`` (reported in ``log_lik_source`` and a
        note): elpd_loo is the LOO of the marginal predictive p(y_i | y₋ᵢ), whose PSIS over a
        ``log_lik`` conditional on the latent is heavy-tailed; ``"log_lik"`` forces the
        generated quantity (:mod:`~stanlogz.crossval.elpd.routes`).
    k_threshold : float, optional
        Fix observations above this k̂ instead of min(1 − 1/log10 S, 0.7) for S draws.
    subsample : int, optional
        Estimate elpd_loo from PSIS on this many observations drawn at random (the difference
        estimator of Magnusson et al. 2020), for large N.
    settings : NutsArgs, optional
        Sampler settings for the first fit and every refit; the keywords ``chains``,
        ``warmup``, ``n_draws``, ``adapt_delta`` and ``max_treedepth`` replace single fields.
    seed : int, optional
        Random seed.
    n_workers : int, default 1
        Parallel workers for the refits.
    ups_options : dict, optional
        Options of ``fix="ups"``.
    progress : callable, optional
        Called with one line of text per step.
    mm_budget : float, optional
        Seconds of moment matching; the observations left keep their PSIS values with the k̂
        warning (Ctrl-C during moment matching does the same;
        :mod:`~stanlogz.crossval.fixups.mm_points`).
    cond_budget : float, optional
        Seconds for the conditional log-likelihood's pass (``log_lik="conditional"``): it
        stops cleanly at the budget, saying how far it got
        (:func:`~stanlogz.crossval.observations.conditional_source.start_pass`).
    fix_options : FixOptions or dict, optional
        The options of ``fix`` (its class in :mod:`~stanlogz.crossval.fixups.registry`, e.g.
        ``{"mm_budget": 30}`` for ``"auto"`` and ``"mm"``, ``{"ups_options": {...}}`` for
        ``"ups"``); ``mm_budget=`` and ``ups_options=`` fill in the same options. An option the
        method does not take raises.
    verify : int or "auto", default "auto"
        The self-check (:mod:`~stanlogz.crossval.psis_loo.verify`): recompute this many values
        still estimated from the draws (the worst k̂ in [0.5, threshold], others of that band,
        one at random) by exact refits and test each against its Monte Carlo se; on a failure
        the band (and below, while values there fail) is refit, or the Monte Carlo se of
        elpd_loo withheld, with a warning. ``"auto"``: 4 points when their refits cost at most
        half the run so far (or 10 s);
        ``0``: off. The outcome is ``verification`` on the result. Unless off, and where
        the fix-up refits, the PSIS values of k̂ 0.2 to the threshold are also corrected by
        exact refits of a stratified random sample of them where their summed bias would be
        material (:mod:`~stanlogz.crossval.psis_loo.band_refit`; ``band`` on the result).
    mcse_target : float, optional
        A precision target: while ``mcse_elpd_loo`` is above it, the chains are continued
        (their adapted step size and metric, no new warmup) and elpd_loo computed again, until
        it is met, the time budget ends, or the draws reach 64 times the first; ``precision``
        on the result says which (:mod:`~stanlogz.crossval.psis_loo.target`).
    pointwise_draws : int, optional
        Run the pointwise pass and PSIS-LOO on this many of the posterior draws, spread evenly
        over each chain (at least 100): a costly pass (the conditional log-likelihood, a
        density difference of a slow program) costs that share of its time, and the Monte
        Carlo se of elpd_loo is that of the draws used (measured coverage in
        ``benchmarks/loo_conditional.py --pointwise-draws``). A note says so. Without it,
        under a time budget (:func:`~stanlogz.time_budget`), a pass that would not fit on
        all the draws but fits on 2,000, 1,000 or 400 of them runs on those (a note, and
        ``budget_stop["pass_draws"]``); giving ``pointwise_draws`` (all the draws, too) turns
        that off.
    **nuts_keywords
        ``chains``, ``warmup``, ``n_draws``, ``adapt_delta``, ``max_treedepth``.

    Returns
    -------
    ElpdResult
        A :class:`~stanlogz.crossval.psis_loo.result.LooResult` (with ``group``, a
        :class:`~stanlogz.crossval.logo.result.LogoResult`; both elpd results): ``elpd_loo``,
        ``se``, ``p_loo``, ``looic``, ``mcse_elpd_loo``, the pointwise ``elpd_i`` and
        ``khat``, ``fixed`` (one entry per recomputed observation), ``warnings``;
        ``pointwise_dataframe()``, ``to_dict()`` and ``to_arviz()``. It prints as loo's table.

    Raises
    ------
    InputError
        A bad argument, a fix or log-likelihood source that does not apply, or a cmdstanpy
        keyword (``iter_sampling``: use ``n_draws``); before anything is sampled.

    See Also
    --------
    stanlogz.loo_compare : compare LooResults of several programs.
    stanlogz.kfold : K-fold and leave-one-group-out cross-validation.
    stanlogz.report.plot_khat : the k̂ of each observation.

    Examples
    --------
    PSIS-LOO of a log-likelihood array (no program; 4 chains x 100 draws x 12 observations):

    >>> import numpy as np, stanlogz
    >>> ll = np.random.default_rng(0).normal(-1.0, 0.3, size=(4, 100, 12))
    >>> r = stanlogz.loo(ll)
    >>> r.n_obs, bool(r.looic == -2 * r.elpd_loo), r.khat.shape
    (12, True, (12,))

    Of a program with an outlying observation, which moment matching recomputes (run from
    the repository root; the landing page of the documentation shows its table):

    >>> r = stanlogz.loo("stan_models/examples/normal_mean.stan",
    ...                  "stan_models/examples/normal_outlier.data.json", seed=1)
    >>> [(f.index + 1, f.method) for f in r.fixed]
    [(10, 'mm')]
    """
    check_pointwise_draws(pointwise_draws, mcse_target=mcse_target, group=group,
                          program=not (is_fit(model) or model is None))
    if mcse_target is not None:  # rounds of loo() on continued chains (target.py)
        if group is not None or subsample is not None or is_fit(model) or model is None:
            raise InputError("mcse_target continues the chains of a Stan program: it does not "
                             "apply to a fit without its program, group or subsample")
        from .target import loo_to_target

        def again(m: Any, _: Any, dr: Any, checked: bool) -> Any:
            return loo(model if m is None else m, data if m is None else None,
                       draws=draws if dr is None else dr, obs=obs, obs_fields=obs_fields,
                       fix=fix, log_lik=log_lik, k_threshold=k_threshold, settings=settings,
                       seed=seed, n_workers=n_workers, ups_options=ups_options,
                       progress=progress, mm_budget=mm_budget, cond_budget=cond_budget,
                       fix_options=fix_options, verify=verify if checked else 0,
                       pointwise_draws=EVERY_DRAW, **nuts_keywords)
        return loo_to_target(again, mcse_target, seed=seed, progress=progress)
    n_verify = parse_verify(verify)
    if n_verify and (group is not None or is_fit(model) or model is None):
        raise InputError("verify refits observations of a Stan program: it does not apply to "
                         "a fit without its program or with group (use verify=0)")
    if group is not None:
        check_arguments("loo", group=group)
        if fix_options is not None:
            raise InputError("fix_options: leave-one-group-out takes no fix-up options")
        return logo_from_loo(model, data, group=group, draws=draws, obs=obs, obs_fields=obs_fields,
                             fix=fix, log_lik=log_lik, k_threshold=k_threshold,
                             subsample=subsample, settings=settings, seed=seed,
                             n_workers=n_workers, ups_options=ups_options, progress=progress,
                             mm_budget=mm_budget, cond_budget=cond_budget,
                             **nuts_keywords)
    check_arguments("loo", draws=draws, progress=progress, obs=obs, obs_fields=obs_fields,
                    fix=fix, log_lik=log_lik, k_threshold=k_threshold, subsample=subsample,
                    n_workers=n_workers, ups_options=ups_options)
    nuts = nuts_from_keywords(settings, nuts_keywords, "loo")
    if is_fit(model) or (model is None and draws is not None):
        return loo_elsewise(model, data, draws=draws, obs=obs, obs_fields=obs_fields, fix=fix,
                            log_lik=log_lik, k_threshold=k_threshold, subsample=subsample,
                            settings=nuts, seed=seed, progress=progress, n_workers=n_workers,
                            ups_options=ups_options, mm_budget=mm_budget,
                            cond_budget=cond_budget, fix_options=fix_options)
    t0 = time.perf_counter()
    method = fix_method(fix)
    if n_verify and subsample is not None:
        raise InputError("verify checks PSIS values against exact refits of every observation's "
                         "own value; it does not apply with subsample (use verify=0)")
    if k_threshold is not None and not 0.0 <= k_threshold <= 1.0:
        raise InputError(f"k_threshold must be in [0, 1], got {k_threshold}")
    # the fix-up's options, validated once here; below, only this object travels
    fix_opts = method.options(fix_options, mm_budget=mm_budget, ups_options=ups_options)
    check_pass_budget(cond_budget)
    model, data_dict, observations = load_observed(model, data, obs, obs_fields, seed=seed,
                                                   progress=progress, settings=nuts)
    if subsample is not None and not (isinstance(subsample, int | np.integer)
                                      and 2 <= subsample < observations.n):
        raise InputError(f"subsample must be an integer in 2..{observations.n - 1} (there are "
                         f"{observations.n} observations), got {subsample}")
    early = None
    if log_lik not in ("conditional", "integrated"):
        early = PointwiseLogLik(model, data_dict, observations, log_lik)  # bad ones fail early
        if draws is None and subsample is None:  # a refusal no draw can change: before NUTS
            refusal = refusal_before_draws(early, log_lik,
                                           stream_rng(seed, Stream.PROBE).uniform(
                                               -2.0, 2.0, (8 * PROBE_ROWS, model.dim)))
            if refusal is not None:
                raise refusal
    if run_budget.remaining() is not None:
        arviz_compat.arviz()  # its import (seconds) after NUTS would eat the pass's reserve
    with run_budget.reserving(*(pass_reserve(early, nuts.chains * nuts.draws)
                                if early is not None else (None,))):
        d = obtain_draws(model, draws, nuts, seed=stream_int_seed(seed, Stream.NUTS),
                         progress=progress)
    modes_note = None
    if d.source == "stanlogz-nuts" and subsample is None and not in_one_mode():
        # modes the chains do not move between: each mode's LOO, weighed by its evidence;
        # draws given (a precision target's continued rounds too) are grouped, not searched
        searched = (search_modes(model, d, nuts, seed) if draws is None
                    else ModeSearch(d, chain_groups(d.unconstrained)))
        if len(searched.groups) > 1 or searched.unsampled:
            def one_mode(part: Draws, k: int) -> LooResult:
                with one_mode_only():
                    return loo(model, None, draws=part, obs=obs, obs_fields=obs_fields,
                               fix=fix, log_lik=log_lik, k_threshold=k_threshold, settings=nuts,
                               seed=stream_int_seed(seed, Stream.LOO_MODES, 1, k),
                               n_workers=n_workers, ups_options=ups_options,
                               progress=progress, mm_budget=mm_budget, cond_budget=cond_budget,
                               fix_options=fix_options, verify=0,
                               pointwise_draws=pointwise_draws)
            across, modes_note = loo_across_modes(one_mode, model, searched, seed)
            if across is not None:
                return across
        d = searched.draws
    cold_s, refit_s = refit_prices(d, nuts)  # one cold and one warm refit from d
    # one exact refit where the held-out observation's own parameters go (its latents, a
    # group of one): NUTS and the augmented bridge's held-out densities, as K-fold prices them
    bridge_s = None if cold_s is None else (refit_s or 0.0) + HELDOUT_SHARE * cold_s
    sampled, (d, thinned_note) = d, thin_for_pass(d, pointwise_draws)
    # the whole run's diagnostics, thinned or not: read before the steps the budget cuts, so
    # that a budget's end leaves only the result to assemble (radon_county_intercept's 90
    # parameters: 0.4 s, which ran past a 15 s budget when read last)
    warns = _sampler_warnings(sampled)
    unc = d.flat_unconstrained()
    pw = pointwise_source(model, data_dict, observations, log_lik,
                          unc[_check_rows(unc.shape[0])], check=subsample is None)
    if getattr(pw, "source", None) == "conditional" and \
            getattr(early, "source", None) == "difference":
        pw.proxy = early  # screens a budget-stopped pass's certain stratum (screen.py)
    # the self-check's and the k-hat band's refits: by the augmented bridge for a source whose
    # terms integrate the latents out (no held-out program of its own), else a NUTS refit
    exact_s = bridge_s if isinstance(pw, ClockedColumns) else refit_s
    r_eff = relative_efficiency(_posterior_values(d))
    t1 = time.perf_counter()
    notes: list[str] = [thinned_note] if thinned_note else []
    if subsample is None:
        start_pass(pw, progress, unc.shape[0], cond_budget, chains=d.n_chains,
                   refit_seconds=refit_s, draws=unc)
        if not pw.checked:
            pw.check(unc[_check_rows(unc.shape[0])])
        # under a time budget: in random order, the rest estimated if the budget ends it
        # (or, where every observation fits on fewer draws, again on those: ThinForBudget)
        pw.anytime_thin = pointwise_draws is None
        # one mode of several: every observation's draw influence, for the mixture's mcse
        keep_above = (-np.inf if in_one_mode() and observations.n * unc.shape[0]
                      <= ALL_INFLUENCE else _keep_above(k_threshold))
        thinned_by_budget: tuple[int, int] | None = None
        budget_note: str | None = None
        try:
            while True:  # thinned again where the rate measured on fewer draws still asks
                try:
                    ps, sample_index, est = anytime_pass(pw, d, r_eff, keep_above,
                                                         seed, progress)
                    break
                except ThinForBudget as thin:
                    before = d.n_chains * d.n_draws
                    d, budget_note = thin_for_pass(sampled, thin.draws, budget=True,
                                                   every=thin.every)
                    # thinned again only to fewer draws, and only where fewer are named
                    now = d.n_chains * d.n_draws
                    pw.anytime_thin = before > now > min(ROUTE_POINTWISE_DRAWS)
                    thinned_by_budget = (now, sampled.n_chains * sampled.n_draws)
                    unc, r_eff = d.flat_unconstrained(), relative_efficiency(_posterior_values(d))
                    if progress:
                        progress(budget_note)
                    start_pass(pw, progress, unc.shape[0], cond_budget, chains=d.n_chains,
                               refit_seconds=refit_s)
        finally:
            pw.anytime_thin = False
        if budget_note:
            notes.append(budget_note)
        if est is None:
            est = _full_estimates(ps)
        else:
            notes.append(budget_pass_warning(*est["budget_pass"], est["approximation"],
                                             len(est.get("screened", []))))
    else:
        pw, sample_index, est, ps = _subsampled(pw, d, r_eff, subsample, seed, progress,
                                                _keep_above(k_threshold),
                                                fallback=log_lik == "auto")
    budget_stop = budget_flags(d, est, thinned_by_budget if subsample is None else None)
    approximation = est.get("approximation", f"psis{APPROX_DRAWS}")
    poor_left = list(est.get("poor_left", []))  # a stopped pass's heavy ones not computed
    notes.extend(pw.notes() if hasattr(pw, "notes") else [])  # quadrature / sums over y_i
    checked, na_note = conditional_self_check(  # as many observations as verify says
        pw, unc, stream_int_seed(seed, Stream.LOO_VERIFY_CONDITIONAL), n_verify)
    notes.extend(checked)
    if pw.source == "log_lik":
        warn = pw.compare_log_lik(unc[_check_rows(unc.shape[0], 2)])
        if warn:
            notes.append(warn)
    t_pointwise = time.perf_counter() - t1
    threshold = ps.threshold if k_threshold is None else float(k_threshold)
    index = np.arange(observations.n) if sample_index is None else sample_index
    # mis re-estimates from k-hat 0.5 up: PSIS values kept between 0.5 and 0.7 undercovered
    # (benchmarks/mixture_loo.py), and one mixture run serves them all
    bad = index[ps.khat > (min(threshold, KHAT_HEAVY) if method.mixture else threshold)]
    # observations alone in moving a parameter: refit exactly whatever their k-hat (own_latent)
    own: dict[int, int] = {}
    if sample_index is None:  # priced against the run so far, or one refit of given draws
        probe = own_parameter_observations(pw, unc, index, elapsed=max(
            time.perf_counter() - t0, exact_s or 0.0))
        own = probe.own
        notes.extend([probe.note] if probe.note else [])
    own_refit = bool(own) and method.refit is not None and _own_refits_fit(
        len(own), _own_refit_price(pw, min(own), refit_s, bridge_s))
    bad = np.setdiff1d(bad, list(own)) if own_refit else bad
    fixed: list[FixedPoint] = []
    band_mm = np.array([], dtype=int)
    if method.moment_match:  # values just below the threshold whose k-hat may read low
        floor = mm_band_floor(ps.n_samples, threshold)
        heavy = ps.khat > floor
        if ps.var_i is not None:  # ratios heavy by their log-variance, whatever k-hat reads
            heavy |= ps.var_i > LOGLIK_VAR_HEAVY
        sel = np.nonzero(heavy & (ps.khat <= threshold))[0]
        key = ps.khat if ps.var_i is None else ps.var_i  # the steadier measure first
        band_mm = index[sel[np.argsort(-key[sel], kind="stable")]]
        # an observation alone in moving a parameter is refit or flagged (own_latent): its
        # ratios have the prior's tail, which a matched k-hat also reads as lighter
        band_mm = band_mm[~np.isin(band_mm, list(own))]
    mm_cut: list[dict[str, int]] = []  # what the time budget ended of moment matching
    band_seconds = max(MM_BAND_SECONDS, MM_BAND_SHARE * (time.perf_counter() - t0))
    # the refits of observations alone in moving a parameter (a few, about a second each, and
    # without them the mc se is NA) come before the band's matching, which a budget may end
    # (radon_county_intercept under 15 s: the band took the time and the refits were refused)
    band_now = band_mm if not own_refit else band_mm[:0]
    # the full-data log density at the draws, computed once for both calls that match
    log_post = functools.cache(lambda: pw.model.log_density_many(d.flat_unconstrained()))
    if method.acts and (bad.size or band_now.size):
        fixed, why = _fix(pw, d, bad, ps, index, method, threshold, r_eff, nuts, fix_opts,
                          seed, n_workers, progress, band=band_now, band_seconds=band_seconds,
                          cut=mm_cut, log_post=log_post)
        notes.extend(why)
    if own_refit:
        more, why = _fix(pw, d, np.array(sorted(own)), ps, index, EXACT, threshold, r_eff, nuts,
                         EXACT.options(None), seed, n_workers, progress)
        fixed = fixed + more
        notes.extend(why)
        if method.acts and band_mm.size and not any(n.startswith("interrupted") for n in notes):
            more, why = _fix(pw, d, band_mm[:0], ps, index, method, threshold, r_eff, nuts,
                             fix_opts, seed, n_workers, progress, band=band_mm,
                             band_seconds=band_seconds, cut=mm_cut, log_post=log_post)
            fixed = fixed + more
            notes.extend(why)
    budget_stop = with_mm_cut(budget_stop, mm_cut)
    verification, before, band = None, ps.elpd_i.copy(), None
    if sample_index is None:
        before[[pos_of(index, f.index) for f in fixed]] = [f.elpd for f in fixed]
        fixed, verification = self_check(
            verify, candidates(ps, index, fixed, threshold), fixed, within_budget(
                lambda idx, stage: _fix(pw, d, idx, ps, index, EXACT, threshold, r_eff, nuts,
                                        EXACT.options(None),
                                        stream(seed, Stream.LOO_VERIFY, 1 + stage),
                                        n_workers, progress)),
            refit_seconds=exact_s, elapsed=time.perf_counter() - t0,
            can_repair=method.refit is not None, rng=stream_rng(seed, Stream.LOO_VERIFY, 0),
            progress=progress, replace=method.acts, chains=d.n_chains,
            influence=lambda obs: influence_rows(ps, pw, d, r_eff, index, obs))
        if n_verify != 0 and method.refit is not None and method.acts:  # band_refit
            done = [pos_of(index, f.index) for f in fixed]
            keep_influence(ps, pw, d, r_eff, done)  # the claim without the values fixed
            fixed, band = correct_band(
                index, ps.khat, ps.elpd_i, fixed,
                lambda idx: _fix(pw, d, idx, ps, index, EXACT, threshold, r_eff, nuts,
                                 EXACT.options(None), stream(seed, Stream.LOO_BAND, 1),
                                 n_workers, progress),
                threshold=threshold, refit_seconds=exact_s,
                rng=stream_rng(seed, Stream.LOO_BAND, 0), psis_mcse=ps.mcse_i,
                claimed=float(np.hypot(ps.total_mcse(done), ps.total_bias(done))),
                forced=n_verify is not None, progress=progress)
        keep_influence(ps, pw, d, r_eff, [pos_of(index, f.index) for f in fixed])
    refit = {f.index for f in fixed if f.method not in ("mm", "mis")}  # a self-check's too
    own_na = own_parameter_note(own, d.unc_names, set(own) <= refit) if own else None
    elpd_i = ps.elpd_i.copy()
    pos = {int(o): j for j, o in enumerate(index)}
    for f in fixed:
        elpd_i[pos[f.index]] = f.elpd
    for o, shift in ({} if band is None else band.shifts).items():
        elpd_i[pos[o]] += shift
    est = (_full_estimates(ps, elpd_i) if sample_index is None
           else final_estimates(est, sample_index, elpd_i, ps, fixed))
    res = LooResult(
        model=model.name, elpd_loo=est["elpd"], se=est["se"], p_loo=est["p_loo"],
        elpd_i=elpd_i, psis_elpd_i=ps.elpd_i, lppd_i=ps.lppd_i, khat=ps.khat,
        threshold=threshold, n_samples=ps.n_samples, r_eff=r_eff, fix=fix,
        log_lik_source=pw.source, observations=observations, fixed=fixed,
        seconds=time.perf_counter() - t0, warnings=warns + notes, psis_mcse_i=ps.mcse_i,
        p_loo_se=est["p_loo_se"], sample_index=sample_index,
        subsampling_se=est.get("subsampling_se", 0.0),
        subsampling_factor=est.get("subsampling_factor", 1.0),
        approximation=None if sample_index is None else approximation,
        pointwise_seconds=t_pointwise,
        program=model, data=data_dict, draws=d, verification=verification)
    # the band's unsampled values keep their PSIS se and bias estimate (band_refit)
    grow, replaced = est.get("expansion", 1.0), [pos[f.index] for f in fixed]
    res.mcse_psis = ps.total_mcse(replaced) * grow
    res.mcse_bias = ps.total_bias(replaced) * grow
    res.mcse_elpd_loo = math.sqrt(res.mcse_psis**2 + res.mcse_bias**2
                                  + fixed_variance(fixed) * grow**2
                                  + (0.0 if band is None else band.se**2 + band.bias**2))
    res.band = band
    res.psis = ps if in_one_mode() else None  # the mixture of modes weighs its influence
    if band is not None and band.status == "skipped":  # PSIS's bias left, as an error
        res.warnings.append(band.note)
    if res.still_bad() or (verification and verification.status == "withheld"):
        res.mcse_elpd_loo = float("nan")  # as loo: NA while a k-hat stays above the threshold
    res.budget_stop = budget_stop
    if verification is not None:
        verification.share = verification.seconds / max(res.seconds, 1e-9)
        verification.elpd_before = float(before.sum())
        if verification.status in ("repaired", "withheld"):
            res.warnings.append(verification.note)
    if own_na is not None:
        res.warnings.append(own_na)
        if not own_na.endswith("refit exactly") and np.isfinite(res.mcse_elpd_loo):
            res.mcse_elpd_loo, res.mcse_na_note = float("nan"), own_na  # the first reason stays
    heavy_na = (_heavy_left_note(band_mm, res.fixed, ps, index, band, bool(budget_stop))
                or poor_left_note(poor_left))
    if heavy_na is not None:  # heavy ratios left on PSIS: as loo's NA for a high k-hat
        res.warnings.append(heavy_na)
        if np.isfinite(res.mcse_elpd_loo):
            res.mcse_elpd_loo, res.mcse_na_note = float("nan"), heavy_na
    if na_note is not None:  # the conditional route's values failed their self-check
        res.mcse_elpd_loo, res.mcse_na_note = float("nan"), na_note
    if modes_note is not None:  # modes whose weights could not be estimated
        res.warnings.append(modes_note)
        res.mcse_elpd_loo, res.mcse_na_note = float("nan"), modes_note
    res.warnings.extend(loo_warnings(res))
    res.warnings = list(dict.fromkeys(res.warnings))  # refits sharing the draws repeat theirs
    return res


#: Observations x draws up to which one mode's LOO keeps every observation's draw influence
#: (8 bytes each: 160 MB) for the mcse of the modes' mixture (:mod:`.modes`); beyond, the
#: mixture's mcse takes the bound that holds whatever the errors' correlation
ALL_INFLUENCE = 20_000_000
#: The fewest draws ``pointwise_draws`` may leave (PSIS fits a tail to the largest 3√S ratios).
MIN_POINTWISE_DRAWS = 100
#: ``pointwise_draws`` of every draw: no thinning, not even the time budget's (the rounds of a
#: precision target continue the chains to narrow the mc se, which thinning would widen).
EVERY_DRAW = 2**62


def check_pointwise_draws(value: Any, *, mcse_target: float | None = None,
                          group: str | None = None, program: bool = True) -> None:
    """:class:`InputError` for a ``pointwise_draws`` that is not an integer >= 100 or that
    comes with an argument it cannot serve (a precision target continues every draw, a fit
    without its program has no pass, leave-one-group-out integrates over all draws)."""
    if value is None:
        return
    if not isinstance(value, int | np.integer) or isinstance(value, bool) \
            or value < MIN_POINTWISE_DRAWS:
        raise InputError(f"pointwise_draws must be an integer >= {MIN_POINTWISE_DRAWS} (the "
                         f"draws the pointwise pass and PSIS run on), got {value!r}")
    clash = ("mcse_target" if mcse_target is not None else "group" if group is not None
             else None if program else "a fit without its program")
    if clash:
        raise InputError(f"pointwise_draws thins the draws of a Stan program's pointwise pass; "
                         f"it does not apply with {clash}")


def thin_for_pass(d: Draws, pointwise_draws: int | None, budget: bool = False,
                  every: bool = True) -> tuple[Draws, str | None]:
    """``d`` thinned evenly per chain to about ``pointwise_draws`` draws in all, and the note
    saying so (``d`` and None when it has no more); ``budget``: the time budget chose them,
    ``every``: so that every observation fits (else: so that enough do for an estimate of
    the rest)."""
    total = d.n_chains * d.n_draws
    if pointwise_draws is None or pointwise_draws >= total:
        return d, None
    t = d.thinned(-(-int(pointwise_draws) // d.n_chains))
    kept = t.n_chains * t.n_draws
    fits = ("every observation does" if every else
            "enough observations for an estimate of the rest do")
    why = (f"the time budget: the pass on all {total} would not have fitted, on {kept} {fits}"
           if budget else "pointwise_draws")
    return t, (f"pointwise log-likelihood and PSIS-LOO on {kept} of the {total} posterior draws "
               f"({t.n_draws} of {d.n_draws} per chain, spread evenly; {why}); the Monte Carlo "
               "se is that of these draws")


def _full_estimates(ps: PsisLoo, elpd_i: np.ndarray | None = None) -> dict[str, float]:
    """elpd = Σ elpd_i, loo's se sqrt(N var(elpd_i)), p_loo and its se."""
    elpd_i = ps.elpd_i if elpd_i is None else elpd_i
    p_i = ps.lppd_i - elpd_i
    return {"elpd": float(elpd_i.sum()), "se": sum_se(elpd_i), "p_loo": float(p_i.sum()),
            "p_loo_se": sum_se(p_i)}


def _keep_above(k_threshold: float | None) -> float:
    """k̂ above which a PSIS value may be replaced by a fix-up (its influence is kept): the
    lowest moment matching re-estimates (:data:`MM_BAND_LOW`)."""
    return MM_BAND_LOW if k_threshold is None else min(MM_BAND_LOW, float(k_threshold))


def _subsampled(pw: PointwiseLogLik, d: Draws, r_eff: float, m: int, seed: int | None,
                progress: Any, keep_above: float = KHAT_HEAVY, fallback: bool = True
                ) -> tuple[Any, np.ndarray, dict[str, Any], PsisLoo]:
    """PSIS on ``m`` observations drawn without replacement, and the approximation of every
    observation: PSIS-LOO on ``APPROX_DRAWS`` evenly thinned draws. The source it used comes
    first: a density difference that fails its check on these draws gives way to the
    conditional log-likelihood (``fallback``, as the full pass chooses). (The point estimate
    log p(y_i | θ̄) left heavy-tailed differences on influential observations, whose sample
    variance underestimated the subsampling variance: its ±2 se covered 39–77%.)"""
    n = pw.obs.n
    unc = d.flat_unconstrained()
    rows = even_rows(unc.shape[0], APPROX_DRAWS)
    if progress:
        progress(f"approximate PSIS-LOO of {n} observations on {rows.size} thinned draws; "
                 f"PSIS on {m} observations drawn at random")
    check_rows = unc[rows[_check_rows(rows.size)]]
    try:
        at_points = np.concatenate([b for _, b in pw.chunks(unc[rows])], axis=1)
        pw.check(check_rows, at_points[_check_rows(rows.size)])
    except run_budget.OverBudget:  # the budget, not the route: no other route is tried
        raise
    except StanlogzError as exc:  # what the full pass would have found before choosing
        if not (fallback and getattr(pw, "source", None) == "difference"):
            raise
        pw = conditional_instead(pw, check_rows, exc)
        if progress:
            progress(f"the density difference is not a pointwise log-likelihood here; "
                     f"approximating every observation with the conditional one on "
                     f"{rows.size} thinned draws")
        at_points = np.concatenate([b for _, b in pw.chunks(unc[rows])], axis=1)
    ap = psis_loo(at_points, r_eff)
    rng = stream_rng(seed, Stream.LOO_SUBSAMPLE)
    index, certain = draw_sample(ap.khat, m, rng, ap.var_i)
    ps = _psis_pass(pw, d, r_eff, index, keep_above)
    return pw, index, {"approx": ap.elpd_i, "certain": certain}, ps


def _fix(pw: PointwiseLogLik, d: Draws, bad: np.ndarray, ps: PsisLoo, index: np.ndarray,
         fix: FixMethod, threshold: float, r_eff: float, nuts: NutsArgs,
         options: FixOptions, seed: int | None, n_workers: int, progress: Any,
         band: np.ndarray | None = None, band_seconds: float = MM_BAND_SECONDS,
         cut: list[dict[str, int]] | None = None,
         log_post: Callable[[], np.ndarray] | None = None
         ) -> tuple[list[FixedPoint], list[str]]:
    """Fix-ups of the observations ``bad`` (0-based) by the steps of ``fix``, and warnings for
    those that cannot be. Moment matching alone (``mm``) keeps every matched value; followed by
    a refit (``auto``) it keeps those it brings under the threshold and refits the rest. The
    observations ``band`` (k̂ just below the threshold, :func:`mm_band_floor`, or ratios heavy
    by their log-likelihood variance) are moment matched too, within ``band_seconds``, after
    ``bad``; never refit. ``cut`` gets an entry for each of the two whose matching the run's
    time budget ended (:func:`moment_match_points`). ``log_post()``: the full-data log
    density at the draws (computed here when not given)."""
    pos = {int(o): j for j, o in enumerate(index)}
    fixed: list[FixedPoint] = []
    mm_notes: list[str] = []  # kept whatever the refits say (a band or budget stop)
    if fix.mixture:
        return mixture_fixup(pw, d, bad, ps, pos, nuts, seed, progress)
    if fix.moment_match:
        lp = (log_post() if log_post is not None  # shared by all points
              else pw.model.log_density_many(d.flat_unconstrained()))

        def match(i: int, deadline: float | None, on_map: Any) -> FixedPoint:
            return _moment_matched(pw, d, lp, i, ps, pos[i], threshold, r_eff,
                                   deadline=deadline, on_map=on_map)

        matched: list[FixedPoint] = []
        if bad.size:
            if progress:
                progress(f"moment matching {bad.size} observation(s) with k-hat > "
                         f"{threshold:.2f}: {', '.join(str(i + 1) for i in bad)}")
            matched, mm_notes, _ = moment_match_points(bad, match, progress,
                                                       getattr(options, "mm_budget", None),
                                                       cut=cut)
        fixed = [f for f in matched if fix.refit is None or f.khat_after <= threshold]
        if band is not None and band.size and not any(n.startswith("interrupted")
                                                      for n in mm_notes):
            done, band_note = _match_band(band, match, ps, pos, threshold, band_seconds,
                                          progress, cut)
            fixed += done
            mm_notes += band_note
        bad = np.array([f.index for f in matched if f.khat_after > threshold], dtype=int)
        if fix.refit is None or not bad.size or any(n.startswith("interrupted") for n in mm_notes):
            return fixed, mm_notes
    if not bad.size:
        return fixed, mm_notes
    method = fix.refit
    # the self-check's and the k-hat band's refits are below the threshold
    above = bool(np.all(ps.khat[[pos[int(i)] for i in bad]] > threshold))
    no_data = refit_data_error(pw.model, pw.data, pw.obs)
    if no_data is not None:
        return fixed, mm_notes + [refit_refusal(no_data, bad.size, threshold, above)]
    too_long = _auto_refits_too_long(fix, d, bad.size, threshold)
    if too_long:
        return fixed, mm_notes + [too_long]
    try:
        for i in bad:
            pw.held_out_model(int(i))  # build data instances (and check dims) before workers
    except InputError as exc:
        if method != "exact":
            why = (f"{bad.size} observation(s) have Pareto k-hat above {threshold:.2f}; "
                   f"{method} cannot refit them one at a time ({exc}); "
                   f"use {Route(options={'fix': 'exact'})}")
            return fixed, [*mm_notes, why]
        try:
            done, left_note = _exact_with_latents(pw, d, bad, ps, pos, nuts, seed, n_workers,
                                                  progress)
            return fixed + done, mm_notes + left_note
        except SplitError as err:
            return fixed, mm_notes + [refit_refusal(err, bad.size, threshold, above)]
    refused = (exact_split_error(pw, d.flat_unconstrained(), int(bad[0]))
               if method == "exact" else None)
    if refused is not None:
        return fixed, mm_notes + [refit_refusal(refused, bad.size, threshold, above)]
    if progress:
        why = f" with k-hat > {threshold:.2f}" if above else ""
        progress(f"refitting {bad.size} observation(s){why} ({method}): "
                 f"{', '.join(str(i + 1) for i in bad)}")
    warm = WarmStart.of(pw.model, d)  # refits start from the full fit (cold: other dims)
    tasks = [FixTask(int(i), method, float(ps.khat[pos[int(i)]]),
                     float(ps.elpd_i[pos[int(i)]]), nuts,
                     dict(getattr(options, "ups_options", None) or {}), warm)
             for i in bad]
    unc = d.unconstrained

    def one(task: FixTask, rng: Any) -> FixedPoint | None:
        try:
            return fix_observation(pw, unc, task, rng)
        except run_budget.OverBudget:  # the run's budget ended this refit (its NUTS still in
            return None                # warmup): the value keeps PSIS's, not the command

    with steps(progress, len(tasks), f"{method} refits", unit="refit") as bar:
        done = run_parallel(one, tasks, stream(seed, Stream.REFIT), n_workers=n_workers,
                            backend="thread" if n_workers > 1 else "serial",
                            on_done=bar.update)
    fixed += [f for f in done if f is not None]
    left = [t.index + 1 for t, f in zip(tasks, done, strict=True) if f is None]
    if left:  # posteriordb radon_county_intercept under 15 s: refused at 14 s, answer lost
        mm_notes = [*mm_notes, f"the time budget ended the {method} refits after "
                    f"{len(tasks) - len(left)} of {len(tasks)}; observation(s) "
                    f"{', '.join(map(str, left[:10]))} keep their values from the posterior "
                    f"draws (a longer {option('time_budget')} refits them)"]
    return fixed, mm_notes


def _match_band(band: np.ndarray, match: Any, ps: PsisLoo, pos: dict[int, int],
                threshold: float, seconds: float, progress: Any,
                cut: list[dict[str, int]] | None = None) -> tuple[list[FixedPoint], list[str]]:
    """Moment-matched values of the observations ``band`` (k̂ at most the threshold, and above
    :func:`mm_band_floor` or with a log-likelihood variance above :data:`LOGLIK_VAR_HEAVY`;
    the most variable first) within ``seconds`` (and the time budget): a value is kept where a
    map lowered its k̂; the others, and those the time left, keep PSIS's, with a note when
    time left some, or when a value heavy by its variance could not be matched. Where the
    run's time budget (not ``seconds``) left some, ``cut`` gets their count."""
    floor = mm_band_floor(ps.n_samples, threshold)
    if progress:
        progress(f"moment matching {band.size} observation(s) with k-hat in ({floor:.2f}, "
                 f"{threshold:.2f}] or a log-likelihood variance above {LOGLIK_VAR_HEAVY} "
                 "(k-hat reads low at these draws)")
    def lowered(f: FixedPoint) -> bool:
        return f.khat_after is not None and f.khat_after < f.khat and f.khat_after <= threshold

    def in_vain(done: list[FixedPoint]) -> bool:  # the first MM_BAND_TRIES maps lowered none
        tried = [f for f in done if f.khat >= MM_K_TARGET]  # below: not counted here
        return len(tried) >= MM_BAND_TRIES and not any(map(lowered, done))

    by_budget: list[dict[str, int]] = []
    matched, _, left = moment_match_points(band, match, progress, seconds, stop_when=in_vain,
                                           cut=by_budget)
    matched += _grace_matches(left, match, ps, pos, progress)
    tried = {f.index for f in matched}
    left = [i for i in left if i not in tried]
    if left and by_budget and cut is not None:
        cut.append({"observations_done": len(matched), "observations": int(band.size)})
    kept = [f for f in matched if lowered(f)]
    notes = []
    done = {f.index for f in kept}
    # (maps are tried only from k-hat MM_K_TARGET up: below, no map is a failure)
    stuck = [f.index for f in matched if f.index not in done and f.khat >= MM_K_TARGET
             and ps.var_i is not None and ps.var_i[pos[f.index]] > LOGLIK_VAR_HEAVY]
    if stuck:  # heavy by their variance, and no map helped: PSIS's error bar may not hold
        notes.append(f"{len(stuck)} observation(s) whose log-likelihood varies over the draws "
                     f"by more than {LOGLIK_VAR_HEAVY} (heavy importance ratios, whatever "
                     "k-hat reads) keep their PSIS values: moment matching did not lower "
                     f"their k-hat ({', '.join(str(i + 1) for i in stuck[:10])}); their "
                     "error bars may not hold: refit them with "
                     f"{Route(options={'fix': 'exact', 'k_threshold': 0})}, or draw more")
    if left and in_vain(matched):
        notes.append(f"moment matching of the values with k-hat in ({floor:.2f}, "
                     f"{threshold:.2f}] or a log-likelihood variance above "
                     f"{LOGLIK_VAR_HEAVY} stopped after {len(matched)} of {band.size}: none of "
                     "those tried (the most variable first) had its k-hat lowered; "
                     f"the other {len(left)} keep their PSIS values, whose error bars hold "
                     "less well there")
    elif left:
        run_left = run_budget.remaining()  # the run's budget, where it ended them first
        why = ("the run's time budget" if run_left is not None and run_left < seconds
               else duration(seconds))
        notes.append(f"moment matching of the values with k-hat in ({floor:.2f}, "
                     f"{threshold:.2f}] or a log-likelihood variance above "
                     f"{LOGLIK_VAR_HEAVY} stopped after {len(matched)} of {band.size} "
                     f"({why}); the other {len(left)} keep their PSIS values, "
                     "whose error bars hold less well there")
    return kept, notes


#: Values heavy by their log-likelihood variance that the time budget left unmatched are
#: matched anyway where they are at most this many (more would leave the mc se NA whatever
#: the grace matched), the most variable first, each within ``GRACE_SECONDS``
#: or ``GRACE_SHARE`` of the budget (whichever is longer), and none past ``GRACE_SECONDS``
#: after the budget's end: left on PSIS they make the total's mc se NA
#: (:func:`_heavy_left_note`), and one match costs a fraction of a second (regression.stan's
#: outlier at N = 4,000: 0.02-0.5 s). (Two values each given a tenth of a 20 s budget ran
#: radon_county_intercept 2.4 s past it.)
GRACE_MAX = 2
GRACE_SECONDS = 0.5
GRACE_SHARE = 0.1


def _grace_matches(left: list[int], match: Any, ps: PsisLoo, pos: dict[int, int],
                   progress: Any) -> list[FixedPoint]:
    """Moment-matched values of the (at most ``GRACE_MAX``) observations among ``left`` that
    are heavy by their log-likelihood variance, where a time budget ran out before them: each
    within its grace past the budget; one the grace cuts short is not returned."""
    total = run_budget.budget_seconds()
    if total is None or ps.var_i is None or not left:
        return []
    heavy = [i for i in left if ps.var_i[pos[i]] > LOGLIK_VAR_HEAVY]
    if len(heavy) > GRACE_MAX:  # the total's mcse reads NA whatever the grace matches
        return []
    out = []
    last = run_budget.clock() + (run_budget.remaining() or 0.0) + GRACE_SECONDS
    for i in heavy:
        grace = min(run_budget.clock() + max(GRACE_SECONDS, GRACE_SHARE * total), last)
        try:
            f = match(i, grace, lambda msg, i=i: progress and progress(f"observation {i + 1}: "
                                                                        f"{msg}"))
        except run_budget.OverBudget:  # a conditional quadrature checks the budget, spent
            continue                   # here: no grace for it (the value keeps PSIS's)
        if not f.diagnostics.get(UNFINISHED):
            out.append(f)
    return out


def _heavy_left_note(band: np.ndarray, fixed: list[FixedPoint], ps: PsisLoo,
                     index: np.ndarray, correction: Any = None, stopped: bool = False
                     ) -> str | None:
    """Why the mc se is NA where values heavy by their log-likelihood variance (above
    ``LOGLIK_VAR_HEAVY``) among those moment matching was asked to match (``band``) keep
    PSIS's values in a run the time budget cut (``stopped``: its sampling, pass, draws or
    moment matching). Their PSIS values read high beyond their mc se whatever k̂ says
    (issue 45: regression.stan's outlier, left by a spent budget at about 750 draws, was +0.3
    to +0.5 nats off, z up to +3.1), so the total has none, as loo's for a k̂ above the
    threshold. None when every such value was matched, refit, or corrected by the k̂ band's
    refits (``correction``, a :class:`~.band_refit.BandCorrection` that ran: their error is
    then in its se), and None where no budget cut the run: it is then the run without a
    budget, where the band's own time cap leaves such values on radon_county_intercept whose
    k̂ reads low and the total covered (benchmarks/corpus_coverage.py); at 30 s, the cap, not
    the budget, left 17 of them, and the total was NA only because a budget was given."""
    if ps.var_i is None or not band.size or run_budget.budget_seconds() is None \
            or not stopped:
        return None
    pos = {int(o): j for j, o in enumerate(index)}
    done = {f.index for f in fixed}
    if correction is not None and correction.status != "skipped":
        done |= {*correction.sampled, *correction.unsampled}
    left = [int(o) for o in band
            if int(o) not in done and ps.var_i[pos[int(o)]] > LOGLIK_VAR_HEAVY]
    if not left:
        return None
    return (f"{len(left)} observation(s) whose log-likelihood varies over the draws by more than "
            f"{LOGLIK_VAR_HEAVY} keep their PSIS values ({', '.join(str(i + 1) for i in left[:10])}"
            "): their importance ratios are heavy whatever k-hat reads, and moment matching "
            "did not replace them, so their error is beyond their Monte Carlo se and the total "
            f"has none; {Route(options={'fix': 'exact', 'k_threshold': 0})} refits them, and a "
            f"longer {option('time_budget')} lets moment matching run")


def _own_refit_price(pw: Any, i: int, nuts_s: float | None, bridge_s: float | None
                     ) -> float | None:
    """Seconds of one exact refit of observation ``i``, alone in moving a parameter: a NUTS
    refit where its held-out program keeps the parameters (a group's intercept stays, with
    its prior: radon's one-house counties, under a second each), the augmented bridge's
    where they go with it (a latent per observation: NUTS and 1.5 cold runs' worth of
    held-out densities)."""
    try:
        pw.held_out_model(int(i))
    except StanlogzError:  # no held-out program of its own (or data it refuses): the dearer
        return bridge_s
    return nuts_s


def _own_refits_fit(n_own: int, refit_seconds: float | None) -> bool:
    """Whether the ``n_own`` observations alone in moving a parameter are refit exactly: up to
    ``MAX_OWN_REFITS`` always; more where their refits (``refit_seconds`` each, one warm refit
    from the draws) take no more than ``fix="auto"`` starts on its own
    (``AUTO_REFIT_SECONDS``) and half the time budget left (posteriordb
    radon_variable_intercept_slope_noncentered: 28 one-house counties, refits under a second
    each, were flagged with no mcse at a count cap of 10)."""
    if n_own <= MAX_OWN_REFITS:
        return True
    return bool(refit_seconds) and _refits_fit(n_own * refit_seconds, share=0.5)


def _refits_fit(cost: float, share: float = 1.0) -> bool:
    """Whether refits of ``cost`` seconds are what ``fix="auto"`` starts on its own: within
    ``AUTO_REFIT_SECONDS`` and ``share`` of the time budget left."""
    left = run_budget.remaining()
    return cost <= AUTO_REFIT_SECONDS and (left is None or cost <= share * left)


def _auto_refits_too_long(fix: FixMethod, d: Draws, n_refits: int, threshold: float
                          ) -> str | None:
    """The line ``fix="auto"`` gives instead of refits that would take longer than
    ``AUTO_REFIT_SECONDS`` (one sampling run of ``d`` per refit); None when they fit, when the
    sampling time is unknown, or when the user asked for the refits (``fix="exact"``)."""
    if fix.name != "auto" or not d.seconds:
        return None
    cost = n_refits * d.seconds
    if _refits_fit(cost):
        return None
    left = run_budget.remaining()
    limit = (f"more than {Route(options={'fix': 'auto'})} starts on its own "
             f"({duration(AUTO_REFIT_SECONDS)})"
             if left is None or left >= AUTO_REFIT_SECONDS else
             f"more than the time budget has left ({duration(max(left, 0.0))})")
    return (f"{n_refits} observation(s) keep Pareto k-hat above {threshold:.2f} after moment "
            f"matching; refitting each would take about {duration(cost)} ({n_refits} x "
            f"{d.seconds:.0f} s of sampling), {limit}: refit them with "
            f"{Route(options={'fix': 'exact'})}, or estimate the elpd by K-fold "
            f"({Route('kfold', {'k': 10})})")


def _exact_with_latents(pw: PointwiseLogLik, d: Draws, bad: np.ndarray, ps: PsisLoo,
                        pos: dict[int, int], nuts: NutsArgs, seed: int | None,
                        n_workers: int, progress: Any) -> tuple[list[FixedPoint], list[str]]:
    """Exact log p(y_i | y₋ᵢ) for a program with one latent per observation: the held-out
    observation's latents are integrated out by the augmented bridge of :mod:`.heldout`.
    Under a time budget the refits stop where the next would not fit, and those done are kept
    (the others keep their values from the draws, with a note): ``(points, notes)``."""
    if progress:
        progress(f"refitting {bad.size} observation(s) without their own parameters (exact, "
                 f"augmented bridge): {', '.join(str(i + 1) for i in bad)}")
    anytime = run_budget.remaining() is not None
    found = heldout_many(pw.model, pw.data, pw.obs, [[int(i)] for i in bad], full_draws=d,
                         settings=nuts, seed=stream(seed, Stream.LOO_HELDOUT),
                         n_workers=n_workers, progress=progress, anytime=anytime)
    done = [FixedPoint(int(i), h.elpd, h.mcse, h.method, float(ps.khat[pos[int(i)]]),
                       float(ps.elpd_i[pos[int(i)]]), h.n_gradient_evals, h.n_evals, h.seconds,
                       warnings=list(h.warnings), diagnostics={SHARED_SE: h.shared_mcse})
            for i, h in zip(bad, found, strict=True) if h is not None]
    left = [int(i) + 1 for i, h in zip(bad, found, strict=True) if h is None]
    notes = [] if not left else [
        f"the time budget ended the exact refits after {len(done)} of {bad.size}; "
        f"observation(s) {', '.join(map(str, left))} keep their values from the posterior "
        f"draws (a longer {option('time_budget')} refits them)"]
    return done, notes


def _moment_matched(pw: PointwiseLogLik, d: Draws, log_post: np.ndarray, i: int, ps: PsisLoo,
                    j: int, threshold: float, r_eff: float, **options: Any) -> FixedPoint:
    """Observation ``i`` (``j``-th pointwise entry) fixed by moment matching; ``log_post`` is
    the full-data log density at the draws. A value heavy by its log-likelihood variance
    (above :data:`LOGLIK_VAR_HEAVY`) whose k̂ reads below :data:`MM_K_TARGET` gets maps until
    one lowers its k̂ (its ratios are heavy whatever k̂ reads: left on PSIS, a budget-stopped
    run's mc se was NA in 49 of 120 runs of regression.stan at N = 1,000)."""
    target = MM_K_TARGET
    if ps.var_i is not None and ps.var_i[j] > LOGLIK_VAR_HEAVY and ps.khat[j] < MM_K_TARGET:
        target = float(ps.khat[j])
    mm = moment_match_observation(pw, d.unconstrained, i, r_eff=r_eff, k_threshold=threshold,
                                  k_target=target, log_post_draws=log_post,
                                  log_lik_draws=pw.column(i, d.flat_unconstrained()),
                                  **options)
    warns = list(mm.warnings)
    if mm.khat_after > threshold:
        warns.append(f"observation {i + 1}: moment matching lowered k-hat from "
                     f"{mm.khat_before:.2f} to {mm.khat_after:.2f}, still above "
                     f"{threshold:.2f}")
    return FixedPoint(i, mm.elpd, mm.mcse, "mm", float(ps.khat[j]), float(ps.elpd_i[j]), 0,
                      mm.n_evals, mm.seconds, warnings=warns, khat_after=mm.khat_after,
                      diagnostics={UNFINISHED: True} if mm.unfinished else {})
