"""Python API: the log evidence of a Stan program, and Bayes factors between programs.

:func:`evidence` estimates log Z of one program; :func:`compare` compares several by their
evidence (log Bayes factors, posterior model probabilities) and, on request, by PSIS-LOO with
model weights. Both are re-exported as ``stanlogz.evidence`` and ``stanlogz.compare``.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ._util.argcheck import check_arguments, check_draws
from ._util.seeds import Stream, stream_int_seed
from .draws import Draws, obtain_draws
from .draws.checks import normalization_warnings
from .errors import ArgumentTypeError, InputError, option
from .estimators import lookup
from .estimators.base import EvidenceResult
from .estimators.bridge.anytime import add_sampling_stop, routes_after_stop, sampling_reserve
from .estimators.common import check_evidence_draws, draws_needed
from .estimators.comparison import ComparisonResult, posterior_probs  # noqa: F401 - re-exported
from .estimators.draws_trust import add_draws_trust
from .estimators.modewise import estimate_by_modes
from .mcmc.nuts_continue import more_draws
from .parallel import with_client
from .stan.code import unused_parameters  # noqa: F401 - re-exported
from .stan.inputs import check_stan_file, read_data
from .stan.load import load_model, program_names
from .stan.priors import add_prior_check as _add_prior_check
from .stan.priors import mass_warnings, prior_warnings, program_priors
from .stan.program import ProgramLike
from .stan.settings import NutsArgs, split_nuts_keywords

if TYPE_CHECKING:
    from .crossval.select.choose import ProgramChoice


def _call_estimator(method: str, target: Any, unc: np.ndarray, *, seed: int | None,
                    n_sampling_evals: int | None, progress: Any, options: dict[str, Any]
                    ) -> EvidenceResult:
    """The estimate of ``method`` (``progress`` reaches the estimators that report steps)."""
    return lookup(method).run(target, unc, seed=seed, options=options,
                              n_sampling_evals=n_sampling_evals, progress=progress)


@with_client
def evidence(
    model: ProgramLike,
    data: Any = None,
    *,
    method: str = "gbs",
    draws: Any = None,
    settings: NutsArgs | None = None,
    seed: int | None = None,
    progress: Callable[[str], None] | None = None,
    target_se: float | None = None,
    max_draws: int | None = None,
    normalize_prior: bool = False,
    **options: Any,
) -> EvidenceResult:
    """The log evidence log Z of a Stan program, with its standard error.

    Draws from the posterior with Stan's NUTS (or takes the draws you have), estimates log Z
    from them (by default Gaussianized bridge sampling) and checks what could make the number
    meaningless: bad mixing, draws that run away, chains that disagree, parameters without a
    prior, a prior whose mass inside its bounds is not 1.

    Parameters
    ----------
    model : str, Path or StanModel
        A ``.stan`` file or a built :class:`~stanlogz.StanModel`.
    data : dict or str, optional
        The program's data: a dict or a JSON file (Stan's JSON).
    method : str, default "gbs"
        The estimator: ``"gbs"`` (Gaussianized bridge sampling), ``"bridge-gaussian"``,
        ``"bridge-warp3"``, ``"gis"``, ``"ghm"``, ``"laplace"``, ``"ais"``, ``"smc"``,
        ``"ups"`` ... (the evidence command's help lists them).
    draws : Draws, cmdstanpy fit, CSV paths, InferenceData or array, optional
        Posterior draws you already have (anything :func:`stanlogz.as_draws` takes); without
        them stanlogz's NUTS runs.
    settings : NutsArgs, optional
        Sampler settings; the keywords ``chains``, ``warmup``, ``n_draws`` (kept draws per
        chain), ``adapt_delta`` and ``max_treedepth`` replace single fields.
    seed : int, optional
        Random seed (sampling and estimator); random when omitted.
    progress : callable, optional
        Called with one line of text per step (``print`` works).
    target_se : float, optional
        Continue the chains from their last draws until the se is at most this many nats (or
        the draws reach ``max_draws``); ``diagnostics["target_se_rounds"]`` lists the rounds.
    max_draws : int, optional
        Cap on all draws for ``target_se`` (default 16 times the first draws).
    normalize_prior : bool, default False
        Report log Z with the prior normalized inside the parameters' bounds
        (``diagnostics["log_z_program"]`` keeps the program's own).
    **options
        Sampler keywords (above) and the estimator's options, checked by its options class
        (:mod:`stanlogz.estimators.options`) before anything is built.

    Returns
    -------
    EvidenceResult
        ``log_z`` and ``log_z_se`` (also ``logml`` and ``se``), ``interval()``, the cost
        (``n_evals``, ``seconds``, ``diagnostics["n_sampling_evals"]``), ``warnings`` and
        ``diagnostics`` (``prior_check``, ``draws_trust``, ...).

    Raises
    ------
    InputError
        A bad argument, an unknown method or option, or a cmdstanpy keyword
        (``iter_sampling``: use ``n_draws``), before anything is built.
    StanCompileError
        The program does not compile.
    DataError
        The data do not fit the program.

    See Also
    --------
    compare : log Bayes factors and model probabilities of several programs.
    stanlogz.loo : PSIS-LOO of the same program.
    stanlogz.report.plot_evidence : the proposal against the posterior, and the weights.

    Notes
    -----
    With ``target_se`` each round is sized from the previous round's se; the prior's
    normalization is checked from the code before sampling
    (:func:`stanlogz.stan.priors.program_priors`), and parameters without a prior are named.

    Examples
    --------
    A normal mean whose exact log Z is -13.275816 (from the repository root):

    >>> import stanlogz
    >>> r = stanlogz.evidence("stan_models/examples/normal_mean.stan",
    ...                       "stan_models/examples/normal_mean.data.json", seed=1)
    >>> round(r.log_z, 1), r.log_z_se < 0.05, r.warnings
    (-13.3, True, [])
    """
    check_arguments("evidence", model=model, draws=draws, progress=progress, method=method,
                    target_se=target_se, max_draws=max_draws)
    nuts, options = split_nuts_keywords(settings, options, "evidence")
    lookup(method).options(options)  # one-line errors before any build or sampling
    if target_se is not None and not target_se > 0:
        raise InputError(f"target_se must be a positive number of nats, got {target_se}")
    m = load_model(model, data, seed=stream_int_seed(seed, Stream.MODEL), progress=progress,
                   backend=nuts.backend)
    priors = program_priors(m)
    if progress and draws is None:  # named before the sampling
        for w in prior_warnings(priors):
            progress(f"warning: {w}")
    if draws is None:
        check_evidence_draws(m, method, nuts, options.get("proposal", "auto"))
    with sampling_reserve(m, method, given=draws):  # under a budget, time kept for gbs
        d = obtain_draws(m, draws, nuts, seed=stream_int_seed(seed, Stream.NUTS), progress=progress)
    if progress:
        progress(f"estimating log Z of {m.name} with {method} from {d.n_chains}x{d.n_draws} draws")
    t0 = time.perf_counter()
    cost = d.n_gradient_evals if d.sampling_cost_known else None
    with routes_after_stop(d, nuts):  # draws a budget cut short: a route that fits it
        res, d, modes = estimate_by_modes(  # each mode's evidence where the chains sit in several
            m, d, nuts, seed, lambda u, k: _call_estimator(
                method, m, u, seed=stream_int_seed(seed, Stream.ESTIMATOR, *k), progress=progress,
                n_sampling_evals=None if k else cost, options=options),
            probe=d.source == "stanlogz-nuts")
    if not res.seconds:
        res.seconds = time.perf_counter() - t0
    if target_se is not None and len(modes) > 1:
        res.warnings.append("target_se is not pursued across modes: each mode's chains would "
                            f"need their own rounds; raise {option('draws')} instead")
    elif target_se is not None:
        res, d = _refine_to_target(m, d, res, method, target_se, max_draws, seed, progress,
                                   options, nuts)
    add_sampling_stop(res, d)  # the time budget's stop of the sampling run, if any
    for key, value in (("n_sampling_evals", d.n_gradient_evals), ("sampling_seconds", d.seconds),
                       ("draws_source", d.source), ("chains", d.n_chains), ("model", m.name)):
        res.diagnostics.setdefault(key, value)
    for w in normalization_warnings(m, d, modes):
        if w not in res.warnings:
            res.warnings.append(w)
    add_draws_trust(res, d, list(m.param_names()) if hasattr(m, "param_names") else None, modes)
    _add_prior_check(res, priors, normalize_prior)
    return res


TARGET_SE_SLACK = 1.25  # a sized round whose se is within this factor of the target stops


def _refine_to_target(m: Any, d: Draws, res: EvidenceResult, method: str, target_se: float,
                      max_draws: int | None, seed: int | None,
                      progress: Callable[[str], None] | None, options: dict[str, Any],
                      nuts: NutsArgs | None = None) -> tuple[EvidenceResult, Draws]:
    """More draws (the chains continued: :func:`~stanlogz.mcmc.nuts_continue.more_draws`) and
    a new estimate until the se reaches ``target_se``. Each round is sized from the last se
    (aiming at 0.9 ``target_se``) and reported even when its own noisy se lands a little above
    the target (stopping at the first dip below it would bias the se low); another runs only
    when the se misses it by more than ``TARGET_SE_SLACK``, or not once the budget ends."""
    total = d.n_chains * d.n_draws
    cap = 16 * total if max_draws is None else int(max_draws)
    rounds = [{"draws": total, "log_z": res.log_z, "se": res.log_z_se}]
    i = 0
    while (not res.log_z_se <= (target_se if i == 0 else TARGET_SE_SLACK * target_se)
           and total < cap):
        i += 1
        se = res.log_z_se if np.isfinite(res.log_z_se) else 4.0 * target_se
        want = min(cap, max(draws_needed(total, se, 0.9 * target_se), int(1.25 * total)))
        per_chain = -(-(want - total) // d.n_chains)
        if progress:
            progress(f"se {se:.3g} > target {target_se:g}: {per_chain} more draws per chain")
        d = more_draws(m, d, per_chain, nuts, stream_int_seed(seed, Stream.EXTEND, i),
                       progress, reserve=1.5 * res.seconds * want / total)
        if d.n_chains * d.n_draws == total:  # the time budget left no room for more draws
            res.diagnostics["target_se_ended_by"] = "budget"
            break
        total = d.n_chains * d.n_draws
        t0 = time.perf_counter()
        res = _call_estimator(method, m, d.unconstrained, progress=progress, options=options,
                              seed=stream_int_seed(seed, Stream.ESTIMATOR, i),
                              n_sampling_evals=d.n_gradient_evals if d.sampling_cost_known
                              else None)
        if not res.seconds:
            res.seconds = time.perf_counter() - t0
        rounds.append({"draws": total, "log_z": res.log_z, "se": res.log_z_se})
    res.diagnostics["target_se_rounds"] = rounds
    res.diagnostics["draws_used"] = total
    res.diagnostics.setdefault("target_se_ended_by", "target" if res.log_z_se <= target_se
                               else "max_draws" if total >= cap else "last_round")
    if not res.log_z_se <= target_se:
        need = draws_needed(total, res.log_z_se, target_se) if np.isfinite(res.log_z_se) else 0
        why = "(the cap)" if total >= cap else "(the last round, sized from the one before)"
        res.warnings.append(f"target se {target_se:g} not reached: se {res.log_z_se:.3g} with "
                            f"{total} draws {why}"
                            + (f"; about {need} draws would reach it: raise max_draws"
                               if need and total >= cap else
                               f"; about {need} draws would reach it" if need else ""))
    return res, d


# ---------------------------------------------------------------------- comparison
def check_prior_probs(prior_probs: Sequence[float] | None, k: int) -> np.ndarray:
    """Prior model probabilities as an array (uniform when ``None``); must be positive, sum 1."""
    if prior_probs is None:
        return np.full(k, 1.0 / k)
    p = np.asarray(prior_probs, dtype=float)
    if p.shape != (k,):
        raise InputError(f"{p.size} prior probabilities for {k} models")
    if np.any(~np.isfinite(p)) or np.any(p <= 0):
        raise InputError("prior probabilities must be positive")
    if not math.isclose(float(p.sum()), 1.0, abs_tol=1e-6):
        raise InputError(f"prior probabilities must sum to 1, they sum to {p.sum():g}")
    return p


@with_client
def compare(
    models: Sequence[Any],
    data: Any = None,
    *,
    method: str = "gbs",
    prior_probs: Sequence[float] | None = None,
    draws: Sequence[Any] | None = None,
    settings: NutsArgs | None = None,
    seed: int | None = None,
    progress: Callable[[str], None] | None = None,
    unbiased_bf: bool = False,
    with_loo: bool = False,
    use_evidence: bool = True,
    weights: str | Sequence[str] | None = None,
    loo_options: dict[str, Any] | None = None,
    normalize_prior: bool = False,
    group: str | None = None,
    **options: Any,
) -> ProgramChoice:
    """Compare Stan programs: log Bayes factors and model probabilities, and on request LOO.

    Each program's log Z is estimated as by :func:`evidence`, with its own seed derived from
    ``seed``; the result holds the log Bayes factors against the best program and posterior
    model probabilities, each with a standard error.

    Parameters
    ----------
    models : list of str, Path or StanModel
        Two or more programs. Fits that carry a pointwise ``log_lik`` (CmdStan CSV paths, a
        ``.nc`` InferenceData, a cmdstanpy fit) may stand in for programs: the result is then
        the LOO comparison only
        (:func:`~stanlogz.crossval.select.fitcompare.compare_sources`).
    data : dict, str or list, optional
        One data set for all programs, or a list with one per program.
    method : str, default "gbs"
        The evidence estimator (as in :func:`evidence`).
    prior_probs : sequence of float, optional
        Prior model probabilities (default: equal).
    draws : list, optional
        Existing posterior draws per program (``None`` entries are sampled).
    settings : NutsArgs, optional
        Sampler settings for every program (and the LOO refits); the keywords ``chains``,
        ``warmup``, ``n_draws``, ``adapt_delta``, ``max_treedepth`` replace single fields.
    seed : int, optional
        Random seed.
    progress : callable, optional
        Called with one line of text per step.
    unbiased_bf : bool, default False
        Also unbiased natural-scale Bayes factors Z_i / Z_best (Ẑ_i times an unbiased 1/Z_best
        by Markov-chain truncation, Wei & Murray 2017;
        :func:`stanlogz.estimators.reciprocal.reciprocal.unbiased_bayes_factors`).
    with_loo : bool, default False
        Also PSIS-LOO of every program on the same draws (``loo_options`` go to
        :func:`stanlogz.loo`). ``loo=`` is its former name (it shadowed :func:`stanlogz.loo`),
        still accepted.
    use_evidence : bool, default True
        ``False`` compares by LOO only.
    weights : str or list of str, optional
        Model weights to compute: ``"stacking"``, ``"pseudo-bma"``, ``"pseudo-bma+"``,
        ``"bma"`` (comma-separated or a list).
    loo_options : dict, optional
        Keywords for :func:`stanlogz.loo`.
    normalize_prior : bool, default False
        Compare the prior-normalized log Z (see :func:`evidence`).
    group : str, optional
        Compare by leave-one-group-out instead (elpd_logo over the groups of this data
        variable, each program's :func:`stanlogz.loo` with ``group=``; ``loo_options``'
        ``fix``, ``obs``, ``obs_fields`` apply): differences to the best with the se over
        groups, their Monte Carlo se and stacking weights over groups: the result's ``loo`` is
        the one :class:`~stanlogz.crossval.select.compare.LooComparison`, of the programs'
        leave-one-group-out results. The evidence is not computed.
    **options
        Sampler keywords and the estimator's options.

    Returns
    -------
    ProgramChoice
        A :class:`~stanlogz.ProgramChoice` holding the evidence comparison (``evidence``, a
        :class:`~stanlogz.ComparisonResult`, whose ``log_bf``, ``log_bf_se``, ``post_probs``,
        ``post_probs_se``, ``prior_probs``, ``results`` it reads through), with
        ``with_loo=True`` the LOO comparison (``loo``) and the ``weights`` asked for; printed
        as the evidence table when only the evidence was compared, else as up to three
        tables.

    Raises
    ------
    InputError
        Fewer than two programs, data or draws that do not match them, prior probabilities
        that are not positive or do not sum to 1, an unknown method or option; all before
        anything is built. When the programs' log prior masses differ and are not normalized,
        ``warnings`` says by how much the Bayes factors are off (no error).

    See Also
    --------
    evidence : log Z of one program.
    stanlogz.loo_compare : compare LooResults you already have.
    stanlogz.report.plot_compare : the comparison as a figure.

    Examples
    --------
    Two regressions on the same data (exact log Bayes factor 5.94 for the predictor):

    >>> import stanlogz
    >>> ex = "stan_models/examples/"
    >>> c = stanlogz.compare([ex + "regression.stan", ex + "regression_null.stan"],
    ...                      ex + "regression.data.json", seed=4)
    >>> c.names[c.best], round(float(-c.log_bf[1]), 0)
    ('regression', 6.0)
    """
    from .crossval.psis_loo.fitloo import is_fit
    from .crossval.select import choose as choice

    if "loo" in options:  # with_loo's former name
        with_loo = bool(options.pop("loo")) or with_loo
    fits = isinstance(models, list | tuple) and any(is_fit(m) for m in models)
    if not fits:  # fits (CSV paths, InferenceData, cmdstanpy) are checked by their reader
        check_arguments("compare", models=models)
    models = list(models)
    check_arguments("compare", progress=progress, method=method, prior_probs=prior_probs,
                    weights=weights, loo_options=loo_options,
                    **({} if fits else {"models": models}))
    if draws is not None:
        if not isinstance(draws, list | tuple):
            raise ArgumentTypeError(f"compare(): draws must be a list with one entry per "
                                    f"program (None to sample it), not {type(draws).__name__}")
        for i, di in enumerate(draws):
            if di is not None:
                check_draws("compare", f"draws[{i}]", di)
    nuts, options = split_nuts_keywords(settings, options, "compare")
    if fits:
        return _compare_fits(list(models), data, draws=draws, unbiased_bf=unbiased_bf,
                             nuts=nuts, weights=weights, loo_options=loo_options, seed=seed,
                             progress=progress)
    if group is not None:
        from .crossval.select.group_programs import compare_by_group

        return compare_by_group(models, data, group=group, draws=draws, nuts=nuts,
                               weights=weights, loo_options=loo_options, seed=seed,
                               progress=progress, refused={"with_loo": with_loo, "unbiased_bf":
                                                           unbiased_bf, "options": options})
    by_choice = with_loo or weights is not None or not use_evidence
    methods = choice.parse_weights(weights)
    if by_choice:
        choice.check_request(methods, loo=with_loo, evidence=use_evidence)
    if unbiased_bf and not use_evidence:
        raise InputError("unbiased Bayes factors need the evidence (use_evidence=True)")
    models = list(models)
    if len(models) < 2:
        raise InputError(f"compare needs at least two programs, got {len(models)}")
    if isinstance(data, list | tuple):
        if len(data) != len(models):
            raise InputError(f"{len(data)} data sets for {len(models)} programs; give one for "
                             "all or one per program")
        datas = list(data)
    else:
        datas = [data] * len(models)
    if draws is not None and len(draws) != len(models):
        raise InputError(f"{len(draws)} draw sets for {len(models)} programs")
    prior = check_prior_probs(prior_probs, len(models))
    lookup(method).options(options)  # one-line errors before any build or sampling
    for m in models:  # check every path before building anything
        if isinstance(m, str | os.PathLike):
            check_stan_file(m)
    datas = [read_data(dt) for dt in datas]
    if with_loo:
        choice.check_same_data(datas, program_names(models, models), (loo_options or {}).get("obs"),
                               (loo_options or {}).get("obs_fields"))
    # program i's seed, split by evidence() and loo() into their named streams: both take the
    # draws of its NUTS stream (sampled here once), so each program's evidence and LOO are
    # those of evidence(seed=program_seed[i]) and loo(seed=program_seed[i])
    program_seed = [stream_int_seed(seed, Stream.PROGRAM, i) for i in range(len(models))]
    loaded: list[Any] = []
    by_path: dict[Path, Any] = {}  # a program given twice (e.g. with two data sets) loads once
    for i, (m, dt) in enumerate(zip(models, datas, strict=True)):
        key = Path(m).resolve() if isinstance(m, str | os.PathLike) else None
        if key in by_path:
            loaded.append(by_path[key].with_data(dt))
            continue
        loaded.append(load_model(m, dt, seed=stream_int_seed(program_seed[i], Stream.MODEL),
                                 progress=progress, backend=nuts.backend))
        if key is not None:
            by_path[key] = loaded[-1]
    names = program_names(models, loaded)
    results, kept = [], []
    for i, m in enumerate(loaded):
        if progress:
            progress(f"model {i + 1}/{len(loaded)}: {names[i]}")
        di = None if draws is None else draws[i]
        if unbiased_bf or with_loo:  # the draws are needed again (proposals, LOO)
            di = obtain_draws(m, di, nuts, seed=stream_int_seed(program_seed[i], Stream.NUTS),
                              progress=progress)
            kept.append(di)
        if use_evidence:
            results.append(evidence(m, method=method, draws=di, settings=nuts,
                                    seed=program_seed[i], progress=progress,
                                    normalize_prior=normalize_prior, **options))
    out = ComparisonResult(names, results, prior_probs=prior) if use_evidence else None
    if out is not None and not normalize_prior:
        out.warnings += mass_warnings(names, results)
    if unbiased_bf:
        from .estimators.reciprocal.reciprocal import unbiased_bayes_factors

        if progress:
            progress("unbiased Bayes factors against the best program")
        out.unbiased_bf = unbiased_bayes_factors(loaded, [d.unconstrained for d in kept],
                                                 out.best,
                                                 seed=stream_int_seed(seed, Stream.UNBIASED_BF))
    if not by_choice:  # the evidence alone: its warnings are the choice's
        return choice.ProgramChoice(names=names, evidence=out, warnings=list(out.warnings))
    from .crossval.psis_loo.loo import loo as loo_of

    loos = [loo_of(m, datas[i], draws=kept[i], settings=nuts, seed=program_seed[i],
                   progress=progress, **(loo_options or {}))
            for i, m in enumerate(loaded)] if with_loo else None
    return choice.choose(names, loo=loos, evidence=out, weights=methods,
                         seed=stream_int_seed(seed, Stream.CHOICE),
                         fits=list(zip(loaded, datas, kept, strict=True)) if with_loo else None)


def _compare_fits(models: list[Any], data: Any, *, draws: Any, unbiased_bf: bool,
                  nuts: NutsArgs, weights: Any, loo_options: dict[str, Any] | None,
                  seed: int | None, progress: Any) -> ProgramChoice:
    """:func:`compare` when some models are fits: the LOO comparison of every model."""
    from .crossval.select.fitcompare import compare_sources

    if draws is not None or unbiased_bf:
        raise InputError("fits are compared by PSIS-LOO of their log_lik: drop draws= and "
                         "unbiased_bf (they need every model's program)")
    datas = list(data) if isinstance(data, list | tuple) else [data] * len(models)
    return compare_sources(models, datas, weights=weights, loo_options=loo_options,
                           settings=nuts, seed=seed, progress=progress)

