"""Mixture importance sampling LOO of a program (Silva & Zanella 2022; loo issue 270): every
leave-one-out density from one HMC run on the mixture of the leave-one-out posteriors, no refit
(the estimator and its sampler: :mod:`~stanlogz.crossval.fixups.mixture`)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ..._util.arrays import even_rows
from ..._util.gpd import KHAT_HEAVY
from ..._util.seeds import Stream, stream_int_seed, stream_rng
from ..._util.sum_se import sum_se
from ...draws import as_draws, sample
from ...errors import InputError, Route
from ...stan.settings import NutsArgs
from ..fixups.mixture import MIS_ESS_SHARE, _estimates, _hmc, _Mixture
from ..observations.observations import load_observed
from ..observations.pointwise import PointwiseLogLik
from .result import LooResult


def mixture_loo(model: Any, data: Any = None, *, draws: Any = None, settings: Any = None,
                obs: str | None = None, obs_fields: list[str] | None = None,
                log_lik: str = "auto", seed: int | None = None, progress: Any = None
                ) -> LooResult:
    """Mixture importance sampling LOO of a Stan program: no refit, one HMC run.

    HMC samples the mixture of the program's leave-one-out posteriors, started from the
    posterior draws (whose variances are the metric); every observation's elpd_i comes from
    the same run (Silva & Zanella 2022).

    Parameters
    ----------
    model : str, Path or StanModel
        The program.
    data : dict or str, optional
        The program's data (a dict or a JSON file).
    draws : Draws, cmdstanpy fit, CSV paths or InferenceData, optional
        Posterior draws to start from (NUTS runs with ``settings`` when omitted).
    settings : NutsArgs, optional
        Chains, warmup and draws per chain of the mixture's HMC (and of NUTS).
    obs, obs_fields : str, list of str, optional
        The observation count and the data variables indexed by observation.
    log_lik : str, default "auto"
        Where log p(y_i | θ) comes from (as in :func:`stanlogz.loo`).
    seed : int, optional
        Random seed of the NUTS run (when ``draws`` are omitted), the chains' starting draws
        and the mixture's HMC.
    progress : callable, optional
        Called with one line of text per step.

    Returns
    -------
    LooResult
        With ``fix="mis"``: elpd_loo, its between-observation se, its Monte Carlo se
        ``mcse_elpd_loo`` and each observation's (``psis_mcse_i``); ``khat`` is the Pareto k̂
        of the terms of the estimator's two means: above 0.5, or with an importance-sampling
        ESS under 5% of the draws, the observation's value is unreliable and its se (and the
        total's) is NaN.

    Raises
    ------
    InputError
        Fewer than two observations, or per-observation latents (the held-out programs
        would change the parameters).

    See Also
    --------
    stanlogz.loo : PSIS-LOO; ``fix="mis"`` uses this for the high-k̂ observations only.

    Examples
    --------
    Every observation's elpd_i, the outlier's included, from one HMC run (from the
    repository root); ``loo(..., fix="mis")`` uses it for the high-k̂
    observations only:

    >>> import stanlogz
    >>> r = stanlogz.mixture_loo("stan_models/examples/normal_mean.stan",
    ...                          "stan_models/examples/normal_outlier.data.json", seed=1)
    >>> r.fix, r.n_obs, r.elpd_i.shape
    ('mis', 10, (10,))
    """
    t0 = time.perf_counter()
    settings = settings if settings is not None else NutsArgs()
    model, data_dict, observations = load_observed(model, data, obs, obs_fields, seed=seed,
                                                   progress=progress, settings=settings)
    pw = PointwiseLogLik(model, data_dict, observations, log_lik)
    n_obs = observations.n
    if n_obs < 2:
        raise InputError("mixture LOO needs at least two observations")
    minus = [pw.held_out_model(i) for i in range(n_obs)]  # refuses per-observation latents
    d = (as_draws(draws, model) if draws is not None
         else sample(model, settings, seed=stream_int_seed(seed, Stream.NUTS),
                     progress=progress))
    post = d.flat_unconstrained()
    pw.check(post[even_rows(post.shape[0], 3)])
    inv_metric = np.maximum(post.var(axis=0), 1e-12)
    k = settings.chains
    rng = stream_rng(seed, Stream.LOO_MIXTURE)
    x0 = post[rng.choice(post.shape[0], size=k, replace=False)]
    step = float(np.median(d.step_size)) if d.step_size is not None else 0.5
    if progress:
        progress(f"HMC on the mixture of {n_obs} leave-one-out posteriors: {k} chains x "
                 f"{settings.draws} draws after {settings.warmup} warmup")
    target = _Mixture(minus)
    xs, acc, eps = _hmc(target, x0, inv_metric, step, settings.warmup, settings.draws, rng,
                        settings.adapt_delta, settings.max_treedepth)
    ll = pw.columns(np.arange(n_obs), xs.reshape(-1, model.dim))
    est = _estimates(ll, k)
    elpd_i = est["elpd_i"]
    p_i = est["lppd_i"] - elpd_i
    warns = []
    if acc < settings.adapt_delta - 0.2:
        warns.append(f"mixture HMC accepted {acc:.2f} of its proposals (target "
                     f"{settings.adapt_delta:.2f}); run more warmup")
    s_all = ll.shape[0]
    unreliable = (est["khat"] > KHAT_HEAVY) | (est["ess_is"] < max(100.0, MIS_ESS_SHARE * s_all))
    bad = np.nonzero(unreliable)[0]
    # one such observation distorts the mixture for all (its component takes the mass), so
    # then no value gets an se (benchmarks/mixture_loo.py: pointwise se's kept for the others
    # covered 0.58 at y10 = 8)
    mcse_i = np.full(n_obs, np.nan) if bad.size else est["mcse_i"]
    mcse = float("nan") if bad.size else est["mcse"]
    if bad.size:
        nums = ", ".join(str(i + 1) for i in bad[:10])
        warns.append(f"{bad.size} observation(s) ({nums}): the mixture terms have Pareto k-hat "
                     f"above {KHAT_HEAVY} or their weight rests on under "
                     f"{MIS_ESS_SHARE:.0%} of the draws (an observation too influential for one "
                     "mixture run), so their values are unreliable and, as they distort the "
                     "mixture for every observation, no se is given; use loo with "
                     f"{Route(options={'fix': 'exact'})}")
    elif est["mcse"] > 0.5:
        warns.append(f"the Monte Carlo se of elpd_loo is {est['mcse']:.2f}: run more draws")
    if est["ess"] < 100 and not bad.size:
        warns.append(f"the smallest ESS of the mixture estimates is {est['ess']:.0f}: their "
                     "Monte Carlo se is unreliable; run more draws")
    res = LooResult(
        model=model.name, elpd_loo=float(elpd_i.sum()),
        se=sum_se(elpd_i), p_loo=float(p_i.sum()), elpd_i=elpd_i,
        psis_elpd_i=elpd_i, lppd_i=est["lppd_i"], khat=est["khat"], threshold=KHAT_HEAVY,
        n_samples=int(ll.shape[0]), r_eff=1.0, fix="mis", log_lik_source=pw.source,
        observations=observations, seconds=0.0, warnings=warns, psis_mcse_i=mcse_i,
        p_loo_se=sum_se(p_i), program=model, data=data_dict,
        draws=d)
    res.mcse_elpd_loo = mcse
    res.seconds = time.perf_counter() - t0
    return res
