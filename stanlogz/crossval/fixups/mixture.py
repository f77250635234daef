"""Mixture importance sampling LOO (Silva & Zanella 2022; loo issue 270): every leave-one-out
density from one MCMC run on the mixture of the leave-one-out posteriors, no refit; the
estimator and its HMC sampler here, the workflow in
:func:`~stanlogz.crossval.psis_loo.mixture_loo.mixture_loo`.

The proposal is q(θ) ∝ p(θ | y) Σ_j 1 / p(y_j | θ) = Σ_j p(θ, y₋ⱼ): the log-sum-exp of the
programs on the data instances without one observation each, so HMC on it needs only their
gradients. With draws θ_s from q and w_s = 1 / Σ_j p(y_j | θ_s)^-1,

    p(y_i | y₋ᵢ) = Σ_s w_s / Σ_s (w_s / p(y_i | θ_s)),

a ratio of two means whose ratios are bounded (w_s / p(y_i | θ_s) ≤ 1), so the estimate has
finite variance even where PSIS has k̂ > 1. The Monte Carlo se of each elpd_i and of the sum
comes from the delta method on the two means, with the ESS of the per-draw influence over the
chains.

As a fix-up of PSIS-LOO (``loo(..., fix="mis")``, :func:`mixture_fixup`): the observations
with k̂ above the threshold (the set B) are re-estimated from one HMC run on

    q(θ) ∝ p(θ, y) + Σ_{j∈B} p(θ, y₋ⱼ) = p(θ, y) (1 + Σ_{j∈B} 1 / p(y_j | θ)),

the posterior mixed with the leave-one-out posteriors of B only (Silva & Zanella 2022 restricted
to the points that need it: |B| + 1 density gradients per step instead of N), each component
weighted (c_j = its PSIS p(y_j | y₋ⱼ)) to about equal mass: an influential point's
leave-one-out posterior otherwise takes nearly all of it and the posterior's term rests on a
few draws. With w_s = p(θ_s, y) / q(θ_s), p(y_i | y₋ᵢ) = Σ_s w_s / Σ_s (w_s / p(y_i | θ_s))
(:func:`estimates_from_weights`). The other observations keep their PSIS values and Monte Carlo
se.

The Monte Carlo se of elpd_loo adds independent parts: the PSIS values' (the posterior draws)
and the mixture values' (the mixture draws, a separate run), the latter from the summed
per-draw influence over B, since the mixture values share their draws.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
from scipy.special import logsumexp

from ... import arviz_compat
from ..._util.arrays import even_rows
from ..._util.gpd import KHAT_HEAVY
from ..._util.seeds import Stream, stream_rng
from ...errors import InputError, Route
from ...mcmc.hmc import DualAveraging
from ...stan.settings import NutsArgs
from ..elpd.psis import PsisLoo, influence_mcse
from .fixups import SUM_SE, FixedPoint

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
    adapt, eps = DualAveraging(step, adapt_delta), step
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
        if it < warmup:  # dual averaging toward acceptance adapt_delta
            eps = adapt.update(float(accept.mean()))
            eps = eps if it < warmup - 1 else adapt.final
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


class _Weighted:
    """log q(θ) = log Σ_k c_k p_k(θ) and its gradient, batched over chains (``log_c``: log c_k)."""

    def __init__(self, programs: list[Any], log_c: np.ndarray) -> None:
        self.programs, self.log_c, self.n_evals = programs, np.asarray(log_c, float), 0

    def __call__(self, xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        out = [m.log_density_gradient_many(xs) for m in self.programs]
        self.n_evals += len(self.programs) * xs.shape[0]
        lp = np.stack([o[0] for o in out]) + self.log_c[:, None]  # (K, chains)
        with np.errstate(invalid="ignore"):
            total = logsumexp(lp, axis=0)
            wts = np.exp(lp - total)
        wts = np.where(np.isfinite(wts), wts, 0.0)
        return total, np.einsum("nk,nkd->kd", wts, np.stack([o[1] for o in out]))


def mixture_fixup(pw: Any, d: Any, bad: np.ndarray, ps: PsisLoo, pos: dict[int, int],
                  settings: NutsArgs, seed: Any, progress: Any
                  ) -> tuple[list[FixedPoint], list[str]]:
    """The observations ``bad`` (0-based, k̂ above the threshold) by one mixture run (module
    docstring), with ``settings``' chains, warmup and draws; none are replaced, and a warning
    says why, when the run is unreliable (a term's Pareto k̂ above 0.5 or its
    importance-sampling ESS under 5% of the draws: one too influential observation then
    distorts the mixture for every one)."""
    t0 = time.perf_counter()
    bad = np.asarray(bad, dtype=int)
    try:
        minus = [pw.held_out_model(int(i)) for i in bad]
    except InputError as exc:
        return [], [f"{bad.size} observation(s) have Pareto k-hat above the threshold; mixture "
                    f"importance sampling needs the program without each of them ({exc}); use "
                    f"{Route(options={'fix': 'exact'})}"]
    model = pw.model
    post = d.flat_unconstrained()
    # equal mass for the posterior and each leave-one-out component: weight c_j =
    # p(y_j | y₋ⱼ) (its PSIS estimate) times the constant the programs' densities drop
    rows = post[even_rows(post.shape[0], 20)]
    lp_rows = model.log_density_many(rows)
    ll_rows = pw.columns(bad, rows)
    log_c = np.array([float(np.median(lp_rows - m.log_density_many(rows) - ll_rows[:, j]))
                      + float(ps.elpd_i[pos[int(i)]])
                      for j, (i, m) in enumerate(zip(bad, minus, strict=True))])
    inv_metric = np.maximum(post.var(axis=0), 1e-12)
    k = settings.chains
    rng = stream_rng(seed, Stream.LOO_MIXTURE)
    x0 = post[rng.choice(post.shape[0], size=k, replace=post.shape[0] < k)]
    step = float(np.median(d.step_size)) if d.step_size is not None else 0.5
    if progress:
        progress(f"mixture importance sampling of {bad.size} observation(s) with high k-hat "
                 f"({', '.join(str(i + 1) for i in bad[:10])}): HMC on the posterior mixed with "
                 f"their leave-one-out posteriors, {k} chains x {settings.draws} draws")
    target = _Weighted([model, *minus], np.concatenate([[0.0], log_c]))
    xs, acc, _ = _hmc(target, x0, inv_metric, step, settings.warmup, settings.draws, rng,
                      settings.adapt_delta, settings.max_treedepth)
    flat = xs.reshape(-1, model.dim)
    lps = np.stack([m.log_density_many(flat) for m in (model, *minus)], axis=1)
    log_q = logsumexp(lps + np.concatenate([[0.0], log_c])[None, :], axis=1)
    ll = pw.columns(bad, flat)
    est = estimates_from_weights(lps[:, 0] - log_q, ll, k)
    khat, ess_is = est["khat"][:bad.size], est["ess_is"][:bad.size]
    s_all = ll.shape[0]
    # the means are not smoothed, so their variance (and the CLT behind the se) needs k < 1/2;
    # at 0.7 the benchmark's total undercovered (benchmarks/mixture_loo.py)
    unreliable = (khat > KHAT_HEAVY) | (ess_is < max(100.0, MIS_ESS_SHARE * s_all))
    if unreliable.any():
        nums = ", ".join(str(int(bad[j]) + 1) for j in np.nonzero(unreliable)[0][:10])
        return [], [f"mixture importance sampling could not fix observation(s) {nums}: the "
                    f"mixture terms have Pareto k-hat above {KHAT_HEAVY} or rest on under "
                    f"{MIS_ESS_SHARE:.0%} of the draws (too influential for one mixture run); "
                    f"their PSIS values are kept; use {Route(options={'fix': 'exact'})}"]
    seconds = (time.perf_counter() - t0) / bad.size
    evals = int(target.n_evals // bad.size)
    warns = ([f"mixture HMC accepted {acc:.2f} of its proposals (target "
              f"{settings.adapt_delta:.2f}); run more warmup"]
             if acc < settings.adapt_delta - 0.2 else [])
    diag = {SUM_SE: float(est["mcse"]), "n_mixture_components": int(bad.size + 1),
            "mixture_khat": None, "acceptance": float(acc)}
    return [FixedPoint(int(i), float(est["elpd_i"][j]), float(est["mcse_i"][j]), "mis",
                       float(ps.khat[pos[int(i)]]), float(ps.elpd_i[pos[int(i)]]), evals, 0,
                       seconds, warnings=list(warns), khat_after=float(khat[j]),
                       diagnostics={**diag, "mixture_khat": float(khat[j])})
            for j, i in enumerate(bad)], []
