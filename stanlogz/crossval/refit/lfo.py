"""Leave-future-out cross-validation of time-series programs (Bürkner, Gabry & Vehtari 2020):
:func:`lfo` and its result, :class:`~.lfo_result.LfoResult`.

For every forecast origin t = L .. N − M the M-step-ahead predictive density
elpd_t = log p(y_{t+1:t+M} | y_{1:t}) is computed

* ``exact``: by :func:`stanlogz.crossval.refit.heldout.heldout_elpd` between the posteriors given
  y_{1:t} and y_{1:t+M} (NUTS on every prefix, run in parallel): exact up to Monte Carlo error,
  per-time latents included;
* ``psis``: by Pareto-smoothed importance sampling from the posterior of the last refit
  y_{1:i*}, with log ratios log p̃(θ; y_{1:t}) − log p̃(θ; y_{1:i*}) (two data instances of the
  program), refitting at t when k̂ exceeds the threshold (default 0.7);
  elpd_t = log Σ_s w_s p(y_{t+1:t+M} | θ_s, y_{1:t}), where the last factor is again a difference
  of two instances' log densities. The program must factor sequentially (each y_t's density given
  the past), as AR-type programs that condition on their first values do.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any, Unpack

import numpy as np
from scipy import special

from ... import arviz_compat
from ..._util import deadline
from ..._util.argcheck import check_arguments
from ..._util.deadline import StepsClock
from ..._util.gpd import KHAT_BAD
from ..._util.progress import steps
from ..._util.seeds import Stream, generator_seed, stream, stream_int_seed
from ..._util.words import transitions
from ...draws import Draws, obtain_draws
from ...draws.continuation import WarmStart, refit_draws
from ...draws.modes import disagreeing
from ...errors import DataError, InputError, OverBudget, Route, option
from ...estimators.common import autocorr_time
from ...parallel import run_parallel, with_client
from ...stan.program import ProgramLike, StanProgram
from ...stan.settings import NutsArgs, NutsKeywords, nuts_from_keywords
from ..elpd.psis import k_threshold as psis_k_threshold
from ..observations.observations import Observations, load_observed
from .cv_tail import add_cv_warnings
from .heldout import heldout_elpd
from .kfold_modes import missed_modes
from .lfo_anytime import budget_warning as lfo_budget_warning
from .lfo_anytime import fixed_dimension, psis_from_nearest, refusal, total_mcse, visit_origins
from .lfo_result import LfoResult

LFO_METHODS = ("psis", "exact")


def _prefix(data: dict[str, Any], obs: Observations, t: int) -> tuple[dict[str, Any],
                                                                        Observations]:
    """The data of the first ``t`` observations and their observation structure."""
    return obs.subset(data, np.arange(t)), Observations(obs.size_name, obs.fields, t)


@with_client
def lfo(
    model: ProgramLike,
    data: Any = None,
    *,
    min_train: int,
    ahead: int = 1,
    method: str = "psis",
    k_threshold: float = KHAT_BAD,
    obs: str | None = None,
    obs_fields: list[str] | None = None,
    settings: NutsArgs | None = None,
    seed: int | None = None,
    n_workers: int = 1,
    progress: Callable[[str], None] | None = None,
    warm_refits: bool = True,
    **nuts_keywords: Unpack[NutsKeywords],
) -> LfoResult:
    """Leave-future-out cross-validation of a time-series program.

    For each forecast origin t = ``min_train`` .. N − ``ahead``, log p(y[t+1:t+M] | y[1:t])
    with M = ``ahead``, summed over the origins (Bürkner, Gabry and Vehtari 2020). The
    observations must be in time order.

    Parameters
    ----------
    model : str, Path or StanModel
        The program (a ``.stan`` file or a built :class:`~stanlogz.StanModel`).
    data : dict or str, optional
        Its data (a dict or a Stan JSON file), observations in time order.
    min_train : int
        Observations used before the first forecast.
    ahead : int, default 1
        Observations predicted from each origin.
    method : {"psis", "exact"}, default "psis"
        ``"psis"``: importance sampling from the last refit, refitting when k̂ exceeds
        ``k_threshold``; ``"exact"``: NUTS on every prefix, bridged between consecutive
        posteriors.
    k_threshold : float, default 0.7
        The k̂ above which ``"psis"`` refits.
    obs, obs_fields : str, list of str, optional
        The observation count and the data variables indexed by observation (inferred when
        omitted).
    settings : NutsArgs, optional
        Settings of every NUTS run; ``chains``, ``warmup``, ``n_draws``, ``adapt_delta`` and
        ``max_treedepth`` replace single fields.
    seed : int, optional
        Random seed (each refit's derives from it).
    n_workers : int, default 1
        Parallel workers for the refits.
    progress : callable, optional
        Called with one line of text per step.
    warm_refits : bool, default True
        ``"psis"``: start each refit at the last fit's final draws with a short warmup
        (:func:`~stanlogz.draws.continuation.refit_draws`) instead of a full warmup from
        random inits.
    **nuts_keywords
        Single NUTS settings over ``settings`` (as in :func:`~stanlogz.kfold`).

    Returns
    -------
    LfoResult
        ``elpd_lfo``, ``se``, ``mcse``; per origin ``elpd_t``, ``mcse_t`` and ``khat_t``;
        ``refits`` (the origins where NUTS ran) and ``warnings``.

    Raises
    ------
    InputError
        An unknown method, a threshold outside [0, 1], or ``min_train + ahead`` beyond the
        observations; before anything is sampled.

    See Also
    --------
    stanlogz.kfold : K-fold and leave-one-group-out cross-validation.
    stanlogz.loo : leave-one-out, when the observations are exchangeable.

    Examples
    --------
    The executed tutorial :doc:`/tutorials/kfold_lfo` runs ``lfo`` on an autoregression and
    compares it with the exact value; the ``lfo`` command with ``min_train`` 20 is the same
    from a shell.
    """
    t0 = time.perf_counter()
    check_arguments("lfo", model=model, progress=progress, min_train=min_train, ahead=ahead,
                    method=method, k_threshold=k_threshold, obs=obs, obs_fields=obs_fields,
                    n_workers=n_workers)
    nuts = nuts_from_keywords(settings, nuts_keywords, "lfo")
    if method not in LFO_METHODS:
        raise InputError(f"method must be one of {', '.join(LFO_METHODS)}, got {method!r}")
    if not 0.0 <= k_threshold <= 1.0:
        raise InputError(f"k_threshold must be in [0, 1], got {k_threshold}")
    model, data_dict, observations = load_observed(model, data, obs, obs_fields, seed=seed,
                                                   progress=progress, settings=nuts)
    n = observations.n
    for name, value in (("ahead", ahead), ("min_train", min_train)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
            raise InputError(f"{name} must be a positive integer, got {value!r}")
    if min_train + ahead > n:
        raise InputError(f"min_train + ahead = {min_train + ahead} exceeds the {n} "
                         "observations: nothing is left to predict")
    origins = np.arange(min_train, n - ahead + 1)
    if method == "exact":
        res = _exact(model, data_dict, observations, origins, ahead, nuts, seed, n_workers,
                     progress)
    else:
        res = _psis(model, data_dict, observations, origins, ahead, k_threshold, nuts, seed,
                    progress, warm_refits)
    res.seconds = time.perf_counter() - t0
    if res.mcse_na_note:
        res.warnings.append(res.mcse_na_note)
    if not math.isfinite(res.se):
        res.warnings.append(f"{res.elpd_t.size} origins with {ahead}-step windows are worth "
                            "fewer than two independent forecasts: elpd_lfo has no se; lower "
                            f"{option('ahead')} or {option('min_train')}")
    add_cv_warnings(res, res.elpd_t, "elpd_lfo")
    return res


def _fit(model: StanProgram, data: dict[str, Any], obs: Observations, t: int, nuts: NutsArgs,
         seed: Any) -> tuple[Any, Draws]:
    """The data instance of y_{1:t} and NUTS draws from its posterior."""
    inst = _instance(model, data, obs, t)
    return inst, obtain_draws(inst, None, nuts, seed=stream_int_seed(seed, Stream.REFIT_NUTS))


def _instance(model: StanProgram, data: dict[str, Any], obs: Observations, t: int) -> Any:
    """The program with the first ``t`` observations; InputError when it rejects them."""
    try:
        return model.with_data(_prefix(data, obs, t)[0])
    except DataError as exc:
        raise InputError(f"the program rejects its first {t} observations as data ({exc}); "
                         f"raise {option('min_train')}", routes=option("min_train")) from None


def _divergences(d: Draws) -> int:
    return int(np.sum(d.sampler.get("divergent__", np.zeros(1)) > 0))


def _exact(model: StanProgram, data: dict[str, Any], obs: Observations, origins: np.ndarray,
           ahead: int, nuts: NutsArgs, seed: int | None, n_workers: int,
           progress: Callable[[str], None] | None) -> LfoResult:
    times = sorted(set(origins.tolist()) | {int(t) + ahead for t in origins})
    _instance(model, data, obs, times[0])  # a too-short prefix fails here, with one line
    if progress:
        progress(f"exact LFO: NUTS on {len(times)} prefixes of the {obs.n} observations")

    def bridge(t: int, fitted: dict[int, Draws], rng: np.random.Generator) -> Any:
        part, part_obs = _prefix(data, obs, t + ahead)
        return heldout_elpd(model, part, part_obs, np.arange(t, t + ahead), settings=nuts,
                            full_draws=fitted[t + ahead], train_draws=fitted[t],
                            pointwise=False, seed=generator_seed(rng))

    if deadline.remaining() is not None:  # the origins that fit, the rest by PSIS
        t0 = deadline.clock()
        draws, bridged, slowest = visit_origins(
            origins, times, ahead, seed,
            lambda t, rng: _fit(model, data, obs, t, nuts, generator_seed(rng))[1],
            bridge, progress)
        left = [int(t) for t in origins if int(t) not in bridged]
        psis: dict[int, Any] = {}
        if left:
            insts: dict[int, Any] = {}

            def inst(t: int) -> Any:
                if t not in insts:
                    insts[t] = _instance(model, data, obs, t)
                return insts[t]

            if not fixed_dimension(inst, times):
                raise refusal(origins.size, len(bridged), times, slowest,
                              nuts.warmup + nuts.draws, deadline.clock() - t0)
            psis = psis_from_nearest(origins, ahead, draws, inst, left)
        return _exact_result(model, origins, ahead, times, draws, bridged, psis,
                             missed=_missed(model, data, obs, times[0], draws, nuts, seed))
    clock = StepsClock("LFO prefix fits", len(times), nuts.warmup + nuts.draws)

    with steps(progress, len(times), "LFO prefixes (NUTS)", unit="fit") as fitted:
        def done() -> None:
            fitted.update()
            clock.done()  # the run's time budget: the fits left at the rate so far

        fits = run_parallel(lambda t, rng: _fit(model, data, obs, t, nuts, generator_seed(rng))[1],
                            times, stream(seed, Stream.REFIT), n_workers=n_workers,
                            backend="thread" if n_workers > 1 else "serial",
                            on_done=done)
    draws = dict(zip(times, fits, strict=True))
    with steps(progress, origins.size, "LFO origins (bridges)", unit="origin") as bar:
        held = run_parallel(lambda t, rng: bridge(t, draws, rng), origins.tolist(),
                            stream(seed, Stream.REFIT_ESTIMATOR),
                            n_workers=n_workers, backend="thread" if n_workers > 1 else "serial",
                            on_done=bar.update)
    return _exact_result(model, origins, ahead, times, draws,
                         dict(zip(origins.tolist(), held, strict=True)),
                         missed=_missed(model, data, obs, times[0], draws, nuts, seed))


def _missed(model: StanProgram, data: dict[str, Any], obs: Observations, t: int,
            draws: dict[int, Draws], nuts: NutsArgs, seed: int | None) -> str | None:
    """The mode search on the first fit, on y[1:t] (:func:`~.kfold_modes.missed_modes`)."""
    if t not in draws:
        return None
    return missed_modes(_instance(model, data, obs, t), draws[t], nuts, seed,
                        chains=f"the chains on y[1:{t}]", quantity="elpd_lfo")


def _exact_result(model: StanProgram, origins: np.ndarray, ahead: int, times: list[int],
                  draws: dict[int, Draws], held: dict[int, Any],
                  psis: dict[int, tuple[float, float, float, int]] | None = None,
                  missed: str | None = None) -> LfoResult:
    """The exact LFO result of the prefix fits ``draws`` (by t) and the origins' bridges
    ``held`` (by origin): every origin, or, where a time budget ended them, the others by
    PSIS (``psis``: :func:`~.lfo_anytime.psis_from_nearest`)."""
    psis = psis or {}
    fits = [draws[t] for t in times if t in draws]
    warns = _divergence_warning(sum(_divergences(f) for f in fits))
    for h in held.values():
        warns.extend(w for w in h.warnings if w not in warns and "divergent" not in w)
    rows = [(held[t].elpd, held[t].mcse, float("nan")) if t in held else psis[t][:3]
            for t in origins.tolist()]
    elpd, mcse, khat = (np.array(c, dtype=float) for c in zip(*rows, strict=True))
    total, stop = None, None
    if psis:
        total = total_mcse([held[t].mcse for t in held], psis)
        stop = {"origins_exact": len(held), "origins": int(origins.size),
                "estimated_by": "psis", "khat": {t: v[2] for t, v in psis.items()},
                "unreliable": [t for t, v in psis.items() if not np.isfinite(v[1])]}
        warns.append(lfo_budget_warning(stop))
    n_samples = fits[0].n_chains * fits[0].n_draws
    return LfoResult(model.name, "exact", int(origins[0]), ahead, origins, elpd, mcse, khat,
                     sorted(draws), float("nan"), n_samples,
                     int(sum(d.n_gradient_evals for d in fits)), mcse_total=total,
                     warnings=warns, budget_stop=stop, mcse_na_note=missed)


def _psis(model: StanProgram, data: dict[str, Any], obs: Observations, origins: np.ndarray,
          ahead: int, k_threshold: float, nuts: NutsArgs, seed: int | None,
          progress: Callable[[str], None] | None, warm_refits: bool = True) -> LfoResult:
    insts: dict[int, Any] = {}

    def inst(t: int) -> Any:
        if t not in insts:
            insts[t] = _instance(model, data, obs, t)
        return insts[t]

    def refit(t: int) -> Draws:
        refit_seed = stream(seed, Stream.REFIT, len(refits))
        # after the first fit, each refit starts where the last one's chains ended (its
        # posterior on y[1:star] is close to the one on y[1:t]): a short warmup
        warm = WarmStart.of(inst(star), d) if refits and warm_refits else None
        refits.append(t)
        if warm is None:
            return _fit(model, data, obs, t, nuts, refit_seed)[1]
        return refit_draws(inst(t), nuts, seed=stream_int_seed(refit_seed, Stream.REFIT_NUTS),
                           warm=warm, progress=progress)[0]

    def fits(t: int) -> bool:
        """Under a time budget, whether a refit on y_{1:t} fits (at the first fit's seconds
        per observation, a fifth more, a tenth of the budget kept); a refit that its own NUTS
        refuses in warmup does not either (anytime: the origin stays on the old draws)."""
        left = deadline.remaining()
        if left is None:
            return True
        need = 1.2 * first_seconds * t / int(origins[0])
        return left - 0.1 * (deadline.budget_seconds() or 0.0) >= need

    refits: list[int] = []
    skipped: list[int] = []  # origins whose refit the budget left out
    star = int(origins[0])
    base = inst(star)
    t_first = deadline.clock()  # the budget's clock (a step-count clock in tests)
    d = refit(star)
    first_seconds = deadline.clock() - t_first
    missed = missed_modes(base, d, nuts, seed, chains=f"the chains on y[1:{star}]",
                          quantity="elpd_lfo")
    # a fit whose chains ended in different places (a refit's probe found another mode):
    # the origins estimated from its draws keep their values, their se NA (loo's NA)
    unmixed_warns: list[str] = []
    unmixed: list[int] = []

    def mixed(fit: Draws, t: int) -> bool:
        w = disagreeing(fit.unconstrained, f"the fit on y[1:{t}]",
                        "the values of the origins estimated from its draws")
        if w:
            unmixed_warns.append(w)
        return w is None

    ok = mixed(d, star)
    n_grad, n_div = d.n_gradient_evals, _divergences(d)
    elpd, mcse, khat = [], [], []
    block: list[np.ndarray] = []  # influence of each draw on the origins of the current refit
    var_total = 0.0
    bar = steps(progress, origins.size, "PSIS-LFO origins", unit="origin")
    for t in origins.tolist():
        if inst(t).dim != base.dim or inst(t + ahead).dim != base.dim:
            exact = Route(options={"method": "exact"})
            raise InputError(f"the number of parameters of {model.name} changes with the "
                             "number of observations: PSIS-LFO needs a fixed parameter "
                             f"space; use {exact}", routes=exact)
        x = d.flat_unconstrained()
        k = float("nan")
        if t == star:
            log_w = np.full(len(x), -math.log(len(x)))
        else:
            ratio = inst(t).log_density_many(x) - inst(star).log_density_many(x)
            log_w, k_arr = arviz_compat.psislw(ratio[None, :])
            log_w, k = log_w[0], float(k_arr.ravel()[0])
            new = None
            if k > k_threshold and fits(t):
                if progress:
                    progress(f"k-hat {k:.2f} > {k_threshold:.2f} at t = {t}: refit on "
                             f"y[1:{t}]")
                try:
                    new = refit(t)
                except OverBudget:  # its warmup would not end in time
                    refits.pop()
            if k > k_threshold and new is None:
                skipped.append(t)  # anytime: kept on the old draws, flagged, mcse NaN
            elif new is not None:
                var_total += _block_var(block, d)
                block = []
                d = new
                star, k = t, float("nan")
                ok = mixed(d, t)
                n_grad += d.n_gradient_evals
                n_div += _divergences(d)
                x = d.flat_unconstrained()
                log_w = np.full(len(x), -math.log(len(x)))
        log_lik = inst(t + ahead).log_density_many(x) - inst(t).log_density_many(x)
        e = float(special.logsumexp(log_w + log_lik))
        elpd.append(e)
        khat.append(k)
        influence = np.exp(log_w) * (np.exp(log_lik - e) - 1.0)
        block.append(influence)
        mcse.append(math.sqrt(_block_var([influence], d)))
        if not ok:
            unmixed.append(t)
        bar.update()
    bar.close()
    var_total += _block_var(block, d)
    mcse_t = np.array(mcse)
    stop = None
    warns = _divergence_warning(n_div)
    if skipped:
        # as loo's NA: a value PSIS cannot be trusted for (k̂ above the threshold of the
        # draws' size) has no Monte Carlo se, nor has the total; one below keeps PSIS's
        unreliable = np.isin(origins, skipped) & ~(np.array(khat) <= psis_k_threshold(len(x)))
        mcse_t[unreliable] = np.nan
        if unreliable.any():
            var_total = float("nan")
        stop = {"refits_skipped": len(skipped), "origins_flagged": skipped,
                "unreliable": origins[unreliable].tolist()}
        warns.append(f"the time budget left {len(skipped)} refit(s) out: origins "
                     f"{', '.join(map(str, skipped[:8]))}{', ...' if len(skipped) > 8 else ''} "
                     f"keep PSIS values above k-hat {k_threshold:.2f}"
                     + (f" (Monte Carlo se NA at {int(unreliable.sum())}, k-hat above "
                        f"{psis_k_threshold(len(x)):.2f})" if unreliable.any() else ""))
    if unmixed:
        mcse_t[np.isin(origins, unmixed)] = np.nan
        var_total = float("nan")
        warns.extend(unmixed_warns)
    return LfoResult(model.name, "psis", int(origins[0]), ahead, origins, np.array(elpd),
                     mcse_t, np.array(khat), refits, k_threshold, len(x), int(n_grad),
                     mcse_total=math.sqrt(var_total), warnings=warns, budget_stop=stop,
                     mcse_na_note=missed)


def _block_var(influences: list[np.ndarray], d: Draws) -> float:
    """Delta-method variance of the sum of the log estimates log Σ_s w_s p_s that share the
    draws ``d``: each draw's influence on estimate t is w_s (p_s / p̂ − 1) (self-normalized
    weights; uniform 1/S right after a refit), summed over the estimates, with the draws'
    integrated autocorrelation time."""
    if not influences:
        return 0.0
    psi = np.sum(influences, axis=0)
    tau = autocorr_time(psi.reshape(d.n_chains, d.n_draws))
    return float(tau * np.sum(psi**2))


def _divergence_warning(n_div: int) -> list[str]:
    return [f"{transitions(n_div)} in the NUTS fits: values may be biased; "
            f"raise {option('adapt_delta')} or reparameterize the program"] if n_div else []


