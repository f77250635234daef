"""Mixture importance sampling LOO (Silva & Zanella 2022; loo issue 270): every leave-one-out
density from one MCMC run on the mixture of the leave-one-out posteriors, no refit.

The proposal is q(θ) ∝ p(θ | y) Σ_j 1 / p(y_j | θ) = Σ_j p(θ, y₋ⱼ): the log-sum-exp of the
programs on the data instances without one observation each, so HMC on it needs only their
gradients. With draws θ_s from q and w_s = 1 / Σ_j p(y_j | θ_s)^-1,

    p(y_i | y₋ᵢ) = Σ_s w_s / Σ_s (w_s / p(y_i | θ_s)),

a ratio of two means whose ratios are bounded (w_s / p(y_i | θ_s) ≤ 1), so the estimate has
finite variance even where PSIS has k̂ > 1. The Monte Carlo se of each elpd_i and of the sum
comes from the delta method on the two means, with the ESS of the per-draw influence over the
chains.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
from scipy.special import logsumexp

from ... import arviz_compat
from ..._util.seeds import child_sequence
from ..._util.sum_se import sum_se
from ...errors import InputError
from ..observations.observations import load_observed
from ..observations.pointwise import PointwiseLogLik
from ..psis_loo.loo import LooResult
from ..psis_loo.psis import influence_mcse

#: Child of the user's seed for the mixture chains.
MIXTURE_STREAM = 7903
#: Pareto k̂ of the mixture estimator's terms above which its value and se are unreliable:
#: the means are not smoothed, so their variance (and the CLT behind the se) needs k < 1/2;
#: at 0.7 the benchmark's total undercovered (benchmarks/mixture_loo.py).
MIS_K_MAX = 0.5
#: Smallest importance-sampling ESS (share of the draws, at least 100) of either mean's terms
#: for an se: below it an observation's estimate rests on a few rare draws; at y10 = 8 in
#: benchmarks/mixture_loo.py they had 1-5% and undercovered, at y10 = 5 12-32% and covered.
MIS_ESS_SHARE = 0.05
#: Integration time of each HMC trajectory in units of the posterior sd (the metric).
TRAJECTORY = 1.5


class _Mixture:
    """log q(θ) = log Σ_j p(θ, y₋ⱼ) and its gradient, batched over chains."""

    def __init__(self, minus: list[Any]) -> None:
        self.minus = minus
        self.n_evals = 0

    def __call__(self, xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lps, grads = [], []
        for m in self.minus:
            lp, g = m.log_density_gradient_many(xs)
            lps.append(lp)
            grads.append(g)
        self.n_evals += len(self.minus) * xs.shape[0]
        lp = np.stack(lps)  # (N, K)
        with np.errstate(invalid="ignore"):
            total = logsumexp(lp, axis=0)
            wts = np.exp(lp - total)
        wts = np.where(np.isfinite(wts), wts, 0.0)
        grad = np.einsum("nk,nkd->kd", wts, np.stack(grads))
        return total, grad


def _hmc(target: _Mixture, x0: np.ndarray, inv_metric: np.ndarray, step: float, warmup: int,
         n: int, rng: np.random.Generator, adapt_delta: float = 0.8,
         max_treedepth: int = 10) -> tuple[np.ndarray, float, float]:
    """Vectorized HMC of K chains from ``x0`` (K, dim) with a diagonal metric, the step size
    adapted by dual averaging toward acceptance ``adapt_delta`` during ``warmup``, at most
    2^``max_treedepth`` leapfrog steps per iteration (NUTS's bound); returns (K, n, dim)
    draws, the mean acceptance after warmup and the step size."""
    k, dim = x0.shape
    x = x0.copy()
    lp, g = target(x)
    mu, h_bar, log_eps_bar, eps = math.log(10 * step), 0.0, math.log(step), step
    out = np.empty((k, n, dim))
    acc_sum = 0.0
    for it in range(warmup + n):
        # a random number of steps (mean about TRAJECTORY / eps) breaks HMC's periodicity,
        # which with a fixed length near π makes draws of Gaussian targets anti-correlated
        cap = min(200, 2**max_treedepth)
        n_steps = int(rng.integers(1, max(2, min(cap, int(math.ceil(2 * TRAJECTORY / eps))))
                                   + 1))
        p = rng.standard_normal((k, dim)) / np.sqrt(inv_metric)
        h0 = -lp + 0.5 * np.sum(inv_metric * p**2, axis=1)
        xn, gn, lpn = x.copy(), g.copy(), lp.copy()
        pn = p + 0.5 * eps * gn
        for s in range(n_steps):
            xn = xn + eps * inv_metric * pn
            lpn, gn = target(xn)
            if s < n_steps - 1:
                pn = pn + eps * gn
        pn = pn + 0.5 * eps * gn
        h1 = -lpn + 0.5 * np.sum(inv_metric * pn**2, axis=1)
        delta = np.where(np.isfinite(h1), h0 - h1, -np.inf)
        accept = np.exp(np.minimum(0.0, delta))
        take = np.log(rng.uniform(size=k)) < delta
        x = np.where(take[:, None], xn, x)
        lp = np.where(take, lpn, lp)
        g = np.where(take[:, None], gn, g)
        if it < warmup:  # Hoffman & Gelman's dual averaging toward acceptance adapt_delta
            t = it + 1
            h_bar = ((1 - 1 / (t + 10)) * h_bar
                     + (adapt_delta - float(accept.mean())) / (t + 10))
            log_eps = mu - math.sqrt(t) / 0.05 * h_bar
            w = t**-0.75
            log_eps_bar = w * log_eps + (1 - w) * log_eps_bar
            eps = math.exp(log_eps) if it < warmup - 1 else math.exp(log_eps_bar)
        else:
            out[:, it - warmup] = x
            acc_sum += float(accept.mean())
    return out, acc_sum / max(n, 1), eps


def _estimates(ll: np.ndarray, chains: int) -> dict[str, Any]:
    """elpd_i, lppd_i and Monte Carlo se's from the log-likelihood ``ll`` (S, N) at mixture
    draws (``chains`` chains of equal length, in order)."""
    return estimates_from_weights(-logsumexp(-ll, axis=1), ll, chains)


def estimates_from_weights(log_w: np.ndarray, ll: np.ndarray, chains: int) -> dict[str, Any]:
    """:func:`_estimates` for mixture draws with log weights ``log_w`` = log p(θ_s, y) −
    log q(θ_s) (up to a constant) and the log-likelihood ``ll`` (S, N) of the observations
    estimated: elpd_i = log mean(w) − log mean(w / p(y_i | θ))."""
    s, n = ll.shape
    log_a = logsumexp(log_w) - math.log(s)
    log_b = logsumexp(log_w[:, None] - ll, axis=0) - math.log(s)  # (N,)
    elpd_i = log_a - log_b
    lppd_i = logsumexp(log_w[:, None] + ll, axis=0) - math.log(s) - log_a
    # influence of draw s on elpd_i = log A − log B_i (delta method)
    phi = np.exp(log_w - log_a)[:, None] - np.exp(log_w[:, None] - ll - log_b[None, :])
    total = phi.sum(axis=1)
    both = np.column_stack([phi, total])  # each column has mean exactly zero over the draws
    se = influence_mcse(both, chains)
    ess = arviz_compat.ess_mean(both.reshape(chains, s // chains, n + 1))
    ess = np.where(np.isfinite(ess) & (ess > 0), ess, s)
    # Pareto k̂ of the terms of both means: a heavy tail (k̂ > 0.5) makes the means, and their
    # sample-based se, unreliable (benchmarks/mixture_loo.py)
    _, k_a = arviz_compat.psislw(log_w[None, :])
    _, k_b = arviz_compat.psislw((log_w[:, None] - ll).T)
    k_a = float(np.ravel(k_a)[0])
    k_b = np.asarray(k_b, dtype=float).ravel()
    khat = np.maximum(np.where(np.isfinite(k_b), k_b, k_a), k_a)  # inf: a constant tail
    # importance-sampling ESS of both means' terms: bounded terms can still put their mass on
    # a few rare draws (an observation dominating the mixture), which k̂ does not see
    def is_ess(lw: np.ndarray) -> np.ndarray:
        return np.exp(2 * logsumexp(lw, axis=0) - logsumexp(2 * lw, axis=0))

    ess_is = np.minimum(is_ess(log_w[:, None] - ll), float(is_ess(log_w)))
    return {"elpd_i": elpd_i, "lppd_i": lppd_i, "mcse_i": se[:n], "mcse": float(se[n]),
            "ess": float(np.min(ess)), "khat": khat, "ess_is": ess_is}


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
        Its data.
    draws : Draws, cmdstanpy fit, CSV paths or InferenceData, optional
        Posterior draws to start from (NUTS runs with ``settings`` when omitted).
    settings : NutsArgs, optional
        Chains, warmup and draws per chain of the mixture's HMC (and of NUTS).
    obs, obs_fields : str, list of str, optional
        The observation count and the data variables indexed by observation.
    log_lik : str, default "auto"
        Where log p(y_i | θ) comes from (as in :func:`stanlogz.loo`).
    seed : int, optional
        Random seed.
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
    repository root); ``stanlogz loo PROGRAM --data DATA --fix mis`` uses it for the high-k̂
    observations only:

    >>> import stanlogz
    >>> r = stanlogz.mixture_loo("stan_models/examples/normal_mean.stan",
    ...                          "stan_models/examples/normal_outlier.data.json", seed=1)
    >>> r.fix, r.n_obs, r.elpd_i.shape
    ('mis', 10, (10,))
    """
    from ...draws import as_draws, sample
    from ...stan.settings import NutsArgs

    t0 = time.perf_counter()
    settings = settings if settings is not None else NutsArgs()
    model, data_dict, observations = load_observed(model, data, obs, obs_fields, seed=seed,
                                                   progress=progress)
    pw = PointwiseLogLik(model, data_dict, observations, log_lik)
    n_obs = observations.n
    if n_obs < 2:
        raise InputError("mixture LOO needs at least two observations")
    minus = [pw.held_out_model(i) for i in range(n_obs)]  # refuses per-observation latents
    d = (as_draws(draws, model) if draws is not None
         else sample(model, settings, seed=seed, progress=progress))
    post = d.flat_unconstrained()
    pw.check(post[np.unique(np.linspace(0, post.shape[0] - 1, 3).astype(int))])
    inv_metric = np.maximum(post.var(axis=0), 1e-12)
    k = settings.chains
    rng = np.random.default_rng(child_sequence(seed, MIXTURE_STREAM))
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
    unreliable = (est["khat"] > MIS_K_MAX) | (est["ess_is"] < max(100.0, MIS_ESS_SHARE * s_all))
    bad = np.nonzero(unreliable)[0]
    # one such observation distorts the mixture for all (its component takes the mass), so
    # then no value gets an se (benchmarks/mixture_loo.py: pointwise se's kept for the others
    # covered 0.58 at y10 = 8)
    mcse_i = np.full(n_obs, np.nan) if bad.size else est["mcse_i"]
    mcse = float("nan") if bad.size else est["mcse"]
    if bad.size:
        nums = ", ".join(str(i + 1) for i in bad[:10])
        warns.append(f"{bad.size} observation(s) ({nums}): the mixture terms have Pareto k-hat "
                     f"above {MIS_K_MAX} or their weight rests on under "
                     f"{MIS_ESS_SHARE:.0%} of the draws (an observation too influential for one "
                     "mixture run), so their values are unreliable and, as they distort the "
                     "mixture for every observation, no se is given; use loo with "
                     "fix='exact' (--fix exact)")
    elif est["mcse"] > 0.5:
        warns.append(f"the Monte Carlo se of elpd_loo is {est['mcse']:.2f}: run more draws")
    if est["ess"] < 100 and not bad.size:
        warns.append(f"the smallest ESS of the mixture estimates is {est['ess']:.0f}: their "
                     "Monte Carlo se is unreliable; run more draws")
    res = LooResult(
        model=model.name, elpd_loo=float(elpd_i.sum()),
        se=sum_se(elpd_i), p_loo=float(p_i.sum()), elpd_i=elpd_i,
        psis_elpd_i=elpd_i, lppd_i=est["lppd_i"], khat=est["khat"], threshold=MIS_K_MAX,
        n_samples=int(ll.shape[0]), r_eff=1.0, fix="mis", log_lik_source=pw.source,
        observations=observations, seconds=0.0, warnings=warns, psis_mcse_i=mcse_i,
        p_loo_se=sum_se(p_i), program=model, data=data_dict,
        draws=d)
    res.mcse_elpd_loo = mcse
    res.seconds = time.perf_counter() - t0
    return res
