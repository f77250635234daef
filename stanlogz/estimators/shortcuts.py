"""The popular shortcuts to log Z that Grosse, Ghahramani & Adams 2015 grades, for the BDMC testbed.

Each needs the split of the target into a normalized prior and a likelihood, which the testbed
knows when it is given the prior program (the bdmc command's prior program): on the unconstrained
space both carry the same Jacobian, so log L(x) = log p̃(x) − log prior(x).

* ``bic``: the Bayesian information criterion, log Z ≈ log L(θ̂) − (k/2) log n at the maximum
  likelihood θ̂ (k parameters, n observations). Asymptotic, no standard error.
* ``hme``: the harmonic mean of the likelihood over posterior draws (Newton & Raftery 1994):
  1/Z = E_post[1/L]. Unbiased for 1/Z with exact draws, but its variance is often infinite.
* ``lw``: likelihood weighting, the mean of the likelihood over exact prior draws: unbiased for
  Z, hopeless when the posterior is far narrower than the prior.
* ``nested``: nested sampling with ``dynesty`` (optional), run on the same target with a
  Gaussian reference prior q (the prior itself when it is Gaussian, else a Gaussian fitted to
  prior draws, else to the posterior draws, widened): Z = ∫ q (p̃/q) dx, so dynesty integrates
  the "likelihood" p̃/q over q, which is exact whatever q is.

All share the signature ``estimate(target, draws, *, prior=None, prior_draws=None,
n_obs=None, seed=None, **options) -> EvidenceResult``; :data:`SHORTCUTS` maps names to them.
"""

from __future__ import annotations

import importlib.util
import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from .._util.gpd import KHAT_HEAVY
from .._util.seeds import Stream, as_seed_sequence, stream_rng
from ..densities.fits import find_mode, gaussian_from_draws
from ..densities.gaussian import GaussianTarget
from ..densities.target import CountingTarget, Target, log_density_many
from ..errors import EstimationError, InputError, option
from .base import EvidenceResult
from .common import (
    Seed,
    as_chains,
    autocorr_time,
    finite_or_neg_inf,
    k_warning,
    log_mean_exp,
    pareto_k,
    rel_var,
)

# Covariance widening of a Gaussian reference prior fitted to draws for nested sampling.
NESTED_INFLATE = 2.0


class Likelihood:
    """log L = log p̃ − log prior as a :class:`~stanlogz.densities.target.Target` (for the MLE)."""

    def __init__(self, target: Target, prior: Target) -> None:
        if prior.dim != target.dim:
            raise InputError(f"prior has dimension {prior.dim} but the target has {target.dim}")
        self.target, self.prior = target, prior

    @property
    def dim(self) -> int:
        return self.target.dim

    def log_density(self, x: np.ndarray) -> float:
        return float(self.target.log_density(x) - self.prior.log_density(x))

    def log_density_gradient(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        lp, gp = self.target.log_density_gradient(x)
        l0, g0 = self.prior.log_density_gradient(x)
        return float(lp - l0), np.asarray(gp, float) - np.asarray(g0, float)

    def log_density_many(self, xs: np.ndarray) -> np.ndarray:
        a, _ = finite_or_neg_inf(log_density_many(self.target, xs))
        b = log_density_many(self.prior, xs)
        with np.errstate(invalid="ignore"):
            out = a - b
        return np.where(np.isfinite(a) & np.isfinite(b), out, -np.inf)


def _need_prior(prior: Target | None, name: str) -> Target:
    if prior is None:
        raise InputError(f"{name} needs the prior/likelihood split: give the prior program "
                         f"({option('prior', 'PRIOR.stan')})")
    return prior


def _result(method: str, log_z: float, se: float, n_draws: int, counting: CountingTarget,
            t0: float, diagnostics: dict[str, Any], warnings: list[str]) -> EvidenceResult:
    if not np.isfinite(log_z):
        raise EstimationError(f"{method}: every likelihood value is zero or non-finite")
    return EvidenceResult(method, float(log_z), float(se), n_draws=n_draws,
                          n_evals=counting.n_evals, seconds=time.perf_counter() - t0,
                          diagnostics=diagnostics, warnings=warnings)


def bic(target: Target, draws: np.ndarray, *, prior: Target | None = None,
        prior_draws: np.ndarray | None = None, n_obs: int | None = None, seed: Seed = None,
        ) -> EvidenceResult:
    """log Z ≈ log L(θ̂) − (k/2) log n: the BIC at the maximum likelihood θ̂, searched from the
    posterior draw with the highest likelihood. ``n_obs`` is the number of observations n.
    Deterministic: ``log_z_se`` is NaN."""
    t0 = time.perf_counter()
    if n_obs is None or int(n_obs) < 1:
        raise InputError("bic needs the number of observations (n_obs >= 1)")
    counting = CountingTarget(target)
    lik = Likelihood(counting, _need_prior(prior, "bic"))
    x = as_chains(draws, target.dim).reshape(-1, target.dim)
    ll = lik.log_density_many(x)
    if not np.any(np.isfinite(ll)):
        raise EstimationError("bic: the likelihood is zero at every posterior draw")
    mle = find_mode(lik, x[int(np.argmax(ll))])
    ll_max = max(lik.log_density(mle), float(np.max(ll)))
    k, n = target.dim, int(n_obs)
    return _result(
        "bic", ll_max - 0.5 * k * math.log(n), math.nan, x.shape[0], counting, t0,
        {"monte_carlo": False, "max_log_lik": ll_max, "n_params": k, "n_obs": n,
         "mle": mle.tolist()},
        ["BIC is an asymptotic approximation with an O(1) error and no standard error (NaN); "
         "do not use it for Bayes factors between close models: use gbs"])


def harmonic_mean(target: Target, draws: np.ndarray, *, prior: Target | None = None,
                  prior_draws: np.ndarray | None = None, n_obs: int | None = None,
                  seed: Seed = None) -> EvidenceResult:
    """1/Ẑ = mean of 1/L over the posterior draws (the plain harmonic mean estimator); the se
    is the delta method with the draws' autocorrelation time, valid only when Var(1/L) is
    finite (the Pareto k̂ of 1/L says whether it is)."""
    t0 = time.perf_counter()
    counting = CountingTarget(target)
    lik = Likelihood(counting, _need_prior(prior, "hme"))
    chains = as_chains(draws, target.dim)
    ll = lik.log_density_many(chains.reshape(-1, target.dim))
    neg = -ll  # log(1/L); a zero likelihood gives +inf: the estimate is then Z = 0
    if np.any(~np.isfinite(neg)):
        raise EstimationError("hme: the likelihood is zero at a posterior draw")
    log_z = -log_mean_exp(neg)
    w = np.exp(neg - neg.max()).reshape(chains.shape[:2])
    tau = autocorr_time(w)
    se = math.sqrt(tau * rel_var(w) / w.size)
    k = pareto_k(neg)
    warnings = ["the harmonic mean of the likelihood overestimates log Z unless the posterior "
                "draws reach the prior's tails; its se is unreliable: use gbs or ais"]
    if k_warning(k, "prior", KHAT_HEAVY):
        warnings.append(f"hme: 1/L has Pareto k = {k:.2f} > {KHAT_HEAVY}: its variance is likely "
                        "infinite")
    return _result("hme", log_z, se, w.size, counting, t0,
                   {"pareto_k": k, "tau": tau, "max_log_lik": float(ll.max())}, warnings)


def likelihood_weighting(target: Target, draws: np.ndarray, *, prior: Target | None = None,
                         prior_draws: np.ndarray | None = None, n_obs: int | None = None,
                         seed: Seed = None, n_samples: int | None = None) -> EvidenceResult:
    """Ẑ = mean of L over ``n_samples`` exact prior draws (default: as many as posterior draws),
    sampled from the prior or taken without replacement from ``prior_draws``. Unbiased for Z;
    the se is the delta method for iid draws."""
    t0 = time.perf_counter()
    p = _need_prior(prior, "lw")
    counting = CountingTarget(target)
    lik = Likelihood(counting, p)
    chains = as_chains(draws, target.dim)
    n = chains.shape[0] * chains.shape[1] if n_samples is None else int(n_samples)
    if n < 2:
        raise InputError(f"lw needs at least 2 prior draws, got n_samples={n}")
    rng = stream_rng(seed, Stream.PROPOSAL)
    notes = []
    if prior_draws is not None:
        pool = np.atleast_2d(np.asarray(prior_draws, dtype=float))
        if pool.shape[1] != target.dim:
            raise InputError(f"prior draws must have {target.dim} columns, got {pool.shape[1]}")
        if n > pool.shape[0]:
            notes.append(f"lw used all {pool.shape[0]} prior draws (asked for {n})")
            n = pool.shape[0]
        xs = pool[rng.choice(pool.shape[0], size=n, replace=False)]
    elif callable(getattr(p, "sample", None)):
        xs = np.atleast_2d(p.sample(rng, n))  # type: ignore[attr-defined]
    else:
        raise InputError("lw needs exact prior draws (prior_draws) or a prior that samples")
    ll = lik.log_density_many(xs)
    log_z = log_mean_exp(ll)
    se, ess = math.nan, 0.0
    if np.isfinite(log_z):
        w = np.exp(ll - ll.max())
        se = math.sqrt(rel_var(w) / n)
        ess = float(w.sum() ** 2 / np.sum(w * w))
    k = pareto_k(ll)
    warnings = notes + ["likelihood weighting underestimates log Z unless the prior draws "
                        "reach the posterior; use gbs or ais"]
    if k_warning(k, "posterior", KHAT_HEAVY):
        warnings.append(f"lw: the likelihood over prior draws has Pareto k = {k:.2f} > "
                        f"{KHAT_HEAVY}: a few draws carry the estimate and its se is unreliable")
    return _result("lw", log_z, se, n, counting, t0,
                   {"pareto_k": k, "n_prior_draws": n, "ess": ess,
                    "max_log_lik": float(ll.max())}, warnings)


def dynesty_available() -> bool:
    """Whether ``dynesty`` can be imported (the ``bench`` extra)."""
    return importlib.util.find_spec("dynesty") is not None


def reference_prior(draws: np.ndarray, prior: Target | None,
                    prior_draws: np.ndarray | None) -> tuple[GaussianTarget, str]:
    """The Gaussian reference prior of :func:`nested` and what it is."""
    if isinstance(prior, GaussianTarget):
        return prior, "the prior (Gaussian)"
    if prior_draws is not None and np.asarray(prior_draws).shape[0] > 2 * np.asarray(
            prior_draws).shape[1] + 2:
        return (gaussian_from_draws(prior_draws, inflate=NESTED_INFLATE),
                f"Gaussian fitted to prior draws, covariance x{NESTED_INFLATE:g}")
    if prior is not None and callable(getattr(prior, "sample", None)):
        xs = prior.sample(np.random.default_rng(0), 4000)  # type: ignore[attr-defined]
        return (gaussian_from_draws(xs, inflate=NESTED_INFLATE),
                f"Gaussian fitted to prior draws, covariance x{NESTED_INFLATE:g}")
    return (gaussian_from_draws(draws, inflate=NESTED_INFLATE ** 2),
            f"Gaussian fitted to the posterior draws, covariance x{NESTED_INFLATE ** 2:g}")


def nested(target: Target, draws: np.ndarray, *, prior: Target | None = None,
           prior_draws: np.ndarray | None = None, n_obs: int | None = None, seed: Seed = None,
           nlive: int = 250, dlogz: float = 0.1, maxcall: int = 300_000,
           sample: str = "rwalk") -> EvidenceResult:
    """Nested sampling with ``dynesty`` over the Gaussian reference prior q of
    :func:`reference_prior` with likelihood p̃/q; log Z and its se are dynesty's."""
    if not dynesty_available():
        raise InputError("nested sampling needs dynesty: pip install dynesty (or the 'bench' "
                         "extra)")
    import dynesty
    from scipy import special

    t0 = time.perf_counter()
    chains = as_chains(draws, target.dim)
    q, what = reference_prior(chains, prior, prior_draws)
    counting = CountingTarget(target)

    def loglike(x: np.ndarray) -> float:
        lp = counting.log_density(x)
        v = float(lp - q.log_density(x))
        return v if np.isfinite(v) else -1e300

    def transform(u: np.ndarray) -> np.ndarray:
        return q.mean + q.chol @ special.ndtri(u)

    ss = as_seed_sequence(seed)
    sampler = dynesty.NestedSampler(loglike, transform, target.dim, nlive=int(nlive),
                                    sample=sample, rstate=np.random.default_rng(ss))
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        sampler.run_nested(dlogz=dlogz, maxcall=int(maxcall), print_progress=False)
    res = sampler.results
    ncall = int(np.sum(res.ncall))
    warnings = []
    if ncall >= maxcall:
        warnings.append(f"nested sampling stopped at maxcall={maxcall} likelihood calls before "
                        f"the remaining evidence fell below dlogz={dlogz}: raise maxcall")
    return _result("nested", float(res.logz[-1]), float(res.logzerr[-1]),
                   chains.shape[0] * chains.shape[1], counting, t0,
                   {"reference_prior": what, "nlive": int(nlive), "n_calls": ncall,
                    "sample": sample, "information": float(res.information[-1])}, warnings)


SHORTCUTS: dict[str, Callable[..., EvidenceResult]] = {
    "bic": bic, "hme": harmonic_mean, "lw": likelihood_weighting, "nested": nested,
}

# Shortcuts that need the prior/likelihood split (nested sampling runs without it).
NEEDS_PRIOR = ("bic", "hme", "lw")
