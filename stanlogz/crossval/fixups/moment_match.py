"""Moment matching for one PSIS-LOO term whose Pareto k̂ is too high (Paananen, Piironen,
Bürkner & Vehtari 2021, "Implicitly adaptive importance sampling", Statistics and Computing).

The full-data posterior draws are the proposal for p(θ | y₋ᵢ) ∝ p(θ | y) / p(y_i | θ). Affine
maps of all draws move the proposal toward the leave-one-out posterior: the draws' mean is
moved to the importance-weighted mean (``shift``), then also their marginal spreads to the
weighted ones (``scale``), then their covariance to the weighted covariance (``cov``). A map
is kept only when the k̂ of the new importance ratios is lower; the proposal density of a
transformed draw is the posterior density of the draw it came from divided by the map's
Jacobian determinant. The maps depend on the draws, so the final estimate uses the split
proposal: half of the draws through the total map, half left as they were, weighted by the
deterministic mixture of the two densities, which keeps the estimate consistent. When mixing
in the untransformed half raises k̂ back above the target, further maps are tried and the split
redone (beyond the paper, which splits once).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.special import logsumexp

from ... import arviz_compat
from ..._util import deadline as run_budget
from ...errors import InputError, Route, StanlogzError
from ..elpd.psis import draw_influence, total_mcse
from ..observations.pointwise import PointwiseLogLik

TRANSFORMATIONS = ("shift", "scale", "cov")

#: Largest dimension for which the full-covariance map is tried by default (dim³ cost).
COV_MAX_DIM = 200
#: Rows per block of the streamed moment and map computations (benchmarks/mm_scaling.py).
ROW_BLOCK = 256

LogDensity = Callable[[np.ndarray], np.ndarray]


@dataclass
class MomentMatched:
    """log p(y_i | y₋ᵢ) of one observation by moment-matched importance sampling."""

    index: int  # 0-based
    elpd: float
    mcse: float  # Monte Carlo se: the final weights' draw influence with its ESS (total_mcse)
    khat_before: float
    khat_after: float  # of the ratios the estimate uses (the split proposal's when split)
    khat_transformed: float  # after the last accepted map, before the split
    psis_elpd: float
    n_evals: int  # log-density plus log-likelihood evaluations
    seconds: float
    transformations: list[str] = field(default_factory=list)  # accepted, in order
    split_used: bool = False
    warnings: list[str] = field(default_factory=list)
    #: the deadline stopped the maps while the final k̂ was still at or above ``k_threshold``:
    #: the matching did not finish (:mod:`.mm_points` keeps the PSIS value for it)
    unfinished: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly dict (observation numbered from 1, as in Stan)."""
        return {"observation": self.index + 1, "elpd": self.elpd, "mcse": self.mcse,
                "method": "mm", "khat_before": self.khat_before, "khat_after": self.khat_after,
                "khat_transformed": self.khat_transformed, "psis_elpd": self.psis_elpd,
                "n_evals": self.n_evals, "seconds": self.seconds,
                "transformations": list(self.transformations), "split_used": self.split_used,
                "warnings": list(self.warnings), "unfinished": self.unfinished}


@dataclass
class _Affine:
    """x ↦ linear · x + offset, with ``linear`` a diagonal (1-D) or a full (2-D) matrix."""

    linear: np.ndarray
    offset: np.ndarray

    def apply(self, x: np.ndarray) -> np.ndarray:
        if self.linear.ndim == 2:
            return x @ self.linear.T + self.offset
        if x.ndim == 1:
            return x * self.linear + self.offset
        out = np.empty_like(x)
        for a in range(0, x.shape[0], ROW_BLOCK):  # row blocks: no full-size temporaries
            np.multiply(x[a:a + ROW_BLOCK], self.linear, out=out[a:a + ROW_BLOCK])
            out[a:a + ROW_BLOCK] += self.offset
        return out

    def inverse(self, x: np.ndarray) -> np.ndarray:
        if self.linear.ndim == 1:
            return (x - self.offset) / self.linear
        return np.linalg.solve(self.linear, (x - self.offset).T).T

    def log_det(self) -> float:
        if self.linear.ndim == 1:
            return float(np.sum(np.log(np.abs(self.linear))))
        return float(np.linalg.slogdet(self.linear)[1])

    def then(self, after: _Affine) -> _Affine:
        """The map ``after ∘ self``."""
        if self.linear.ndim == 1 and after.linear.ndim == 1:
            return _Affine(after.linear * self.linear, after.apply(self.offset))
        a = np.diag(after.linear) if after.linear.ndim == 1 else after.linear
        s = np.diag(self.linear) if self.linear.ndim == 1 else self.linear
        return _Affine(a @ s, after.apply(self.offset))


def _means(x: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Column means of ``x`` (S, dim), plain and with weights ``w`` (summing to 1), streamed
    over row blocks (one pass, no (S, dim) temporaries: the cost at thousands of parameters
    is memory traffic)."""
    mean, mean_w = np.zeros(x.shape[1]), np.zeros(x.shape[1])
    for a in range(0, x.shape[0], ROW_BLOCK):
        xb = x[a:a + ROW_BLOCK]
        mean += xb.sum(axis=0)
        mean_w += w[a:a + ROW_BLOCK] @ xb
    return mean / x.shape[0], mean_w


def _spreads(x: np.ndarray, w: np.ndarray, mean: np.ndarray, mean_w: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray]:
    """Column variances of ``x`` about ``mean`` (plain) and about ``mean_w`` (weights ``w``),
    streamed over row blocks."""
    var, var_w = np.zeros(x.shape[1]), np.zeros(x.shape[1])
    for a in range(0, x.shape[0], ROW_BLOCK):
        xb = x[a:a + ROW_BLOCK]
        c = xb - mean
        var += np.einsum("sd,sd->d", c, c)
        c = xb - mean_w
        var_w += np.einsum("s,sd,sd->d", w[a:a + ROW_BLOCK], c, c)
    return var / x.shape[0], var_w


def _matching_map(name: str, x: np.ndarray, log_w: np.ndarray) -> _Affine | None:
    """The affine map that gives draws ``x`` (S, dim) the weighted mean (and marginal
    variances, or covariance) of ``x`` under normalized log weights ``log_w``; None when the
    weighted moments are degenerate."""
    w = np.exp(log_w - logsumexp(log_w))
    mean, mean_w = _means(x, w)
    if name == "shift":
        return _Affine(np.ones(x.shape[1]), mean_w - mean)
    if name == "scale":
        var, var_w = _spreads(x, w, mean, mean_w)
        if np.any(var <= 0) or np.any(var_w <= 0):
            return None
        s = np.sqrt(var_w / var)
        return _Affine(s, mean_w - s * mean)
    centered, centered_w = x - mean, x - mean_w
    cov = centered.T @ centered / x.shape[0]
    cov_w = (centered_w * w[:, None]).T @ centered_w
    try:
        chol, chol_w = np.linalg.cholesky(cov), np.linalg.cholesky(cov_w)
    except np.linalg.LinAlgError:
        return None
    a = chol_w @ np.linalg.inv(chol)
    if not np.all(np.isfinite(a)):
        return None
    return _Affine(a, mean_w - a @ mean)


def _evaluate(f: LogDensity, x: np.ndarray, what: str) -> np.ndarray:
    out = np.asarray(f(x), dtype=float).reshape(-1)
    if out.shape != (x.shape[0],):
        raise InputError(f"{what} returned {out.size} values for {x.shape[0]} draws")
    return out


def _check_inputs(draws: np.ndarray, index: int, r_eff: float, k_threshold: float,
                  max_iters: int) -> np.ndarray:
    x = np.asarray(draws, dtype=float)
    if x.ndim != 3 or x.shape[0] * x.shape[1] < 25 or x.shape[2] < 1:
        raise InputError(f"draws must be (chains, draws, dim) with at least 25 draws in all "
                         f"(the Pareto fit needs a tail of 5), got {x.shape}")
    if not np.all(np.isfinite(x)):
        raise InputError("draws have non-finite values")
    if index < 0:
        raise InputError(f"observation index must be >= 0, got {index}")
    if not r_eff > 0:
        raise InputError(f"r_eff must be positive, got {r_eff}")
    if not 0 < k_threshold < 1.5:
        raise InputError(f"k_threshold must be in (0, 1.5), got {k_threshold}")
    if max_iters < 0:
        raise InputError(f"max_iters must be >= 0, got {max_iters}")
    return x.reshape(-1, x.shape[2])


def moment_match(draws: np.ndarray, log_post: LogDensity, log_lik_i: LogDensity, *,
                 index: int, r_eff: float, k_threshold: float,
                 log_post_draws: np.ndarray | None = None,
                 log_lik_draws: np.ndarray | None = None, split: bool = True,
                 max_iters: int = 30, cov: bool | None = None,
                 k_target: float | None = None, deadline: float | None = None,
                 on_map: Callable[[str], None] | None = None) -> MomentMatched:
    """log p(y_i | y₋ᵢ) for observation ``index`` by moment matching the full-data posterior
    ``draws`` (chains, n, dim; unconstrained) toward the leave-one-out posterior.

    ``log_post`` is the full-data log density (any constant) and ``log_lik_i`` log p(y_i | θ),
    both at rows of an (m, dim) array; their values at ``draws`` can be passed as
    ``log_post_draws`` / ``log_lik_draws`` (chains * n values, chain-major) to save
    evaluations. Maps are tried while k̂ ≥ ``k_target`` (default ``k_threshold``), at most
    ``max_iters`` accepted; the result is reliable, and carries no warning, when the final k̂ is
    below ``k_threshold``. A ``k_target`` below the threshold (e.g. 0.3) spends a few more
    evaluations to remove the bias PSIS still has at k̂ between 0.5 and 0.7. ``cov``: try the
    full-covariance map (default: when the dimension is at most ``COV_MAX_DIM`` and a tenth
    of the draws; its cost grows as dim³ and its covariance estimate is poor beyond). The se
    is the delta-method se of the self-normalized estimate with the ESS of its per-draw
    influence series (chains' autocorrelation and antithetic NUTS draws included).
    ``split=False`` uses the transformed draws alone, whose maps were fitted to the same
    draws: the estimate is then not consistent, and a warning says so. ``deadline`` (a value
    of the run budget's clock, :data:`stanlogz._util.deadline.clock`): no further map is tried
    after it (the estimate uses the maps accepted so far, and ``unfinished`` says when k̂ was
    still at or above ``k_threshold``); ``on_map`` receives a progress line per accepted map.
    """
    t0 = time.perf_counter()
    x0 = _check_inputs(draws, index, r_eff, k_threshold, max_iters)
    if k_target is not None and not k_target < 1.5:
        raise InputError(f"k_target must be below 1.5, got {k_target}")
    target = k_threshold if k_target is None else min(float(k_target), k_threshold)
    n_draws_chain = np.asarray(draws).shape[1]
    n_evals = 0
    if log_post_draws is None:
        lp0 = _evaluate(log_post, x0, "log_post")
        n_evals += x0.shape[0]
    else:
        lp0 = np.asarray(log_post_draws, dtype=float).reshape(-1)
    if log_lik_draws is None:
        ll0 = _evaluate(log_lik_i, x0, "log_lik_i")
        n_evals += x0.shape[0]
    else:
        ll0 = np.asarray(log_lik_draws, dtype=float).reshape(-1)
    if lp0.shape != (x0.shape[0],) or ll0.shape != (x0.shape[0],):
        raise InputError(f"log_post_draws and log_lik_draws need {x0.shape[0]} values each, "
                         f"got {lp0.size} and {ll0.size}")
    if not (np.all(np.isfinite(lp0)) and np.all(np.isfinite(ll0))):
        raise InputError(f"observation {index + 1}: log density or log-likelihood is not "
                         "finite at some posterior draws")

    def psis(log_ratios: np.ndarray) -> tuple[np.ndarray, float]:
        lw, k = arviz_compat.psislw(log_ratios, r_eff=r_eff)
        return lw, float(np.asarray(k).reshape(-1)[0])

    lw, khat_before = psis(-ll0)
    psis_elpd = float(logsumexp(lw + ll0))

    def improve() -> bool:
        """Accept the first map (in TRANSFORMATIONS order) that lowers k̂ of the current draws."""
        nonlocal x, lp, ll, lq, lw, khat, total, n_evals, stopped
        for name in names:
            step = _matching_map(name, x, lw)
            if step is None:
                continue
            x_new = step.apply(x)
            n_evals += 2 * x_new.shape[0]
            try:
                lp_new = _evaluate(log_post, x_new, "log_post")
                ll_new = _evaluate(log_lik_i, x_new, "log_lik_i")
            except run_budget.OverBudget:  # the run's budget ended inside this map (a
                stopped = True             # conditional quadrature checks it): the maps
                return False               # accepted so far stand, as at the deadline
            except InputError:
                raise
            except StanlogzError:  # the program failed at the moved draws: reject the map
                continue
            if not (np.all(np.isfinite(lp_new)) and np.all(np.isfinite(ll_new))):
                continue
            lq_new = lq - step.log_det()
            lw_new, k_new = psis(lp_new - ll_new - lq_new)
            if k_new < khat:
                x, lp, ll, lq, lw, khat = x_new, lp_new, ll_new, lq_new, lw_new, k_new
                total = total.then(step)
                accepted.append(name)
                if on_map is not None:
                    on_map(f"map {len(accepted)} ({name}) -> k-hat {k_new:.2f}, "
                           f"{time.perf_counter() - t0:.1f} s")
                return True
        return False

    # x, lp, ll, lq: current draws, their log posterior, log-likelihood, log proposal density
    x, lp, ll, lq = x0, lp0, ll0, lp0.copy()
    khat, total = khat_before, _Affine(np.ones(x0.shape[1]), np.zeros(x0.shape[1]))
    accepted: list[str] = []
    warns: list[str] = []
    if cov is None:
        cov = x0.shape[1] <= min(COV_MAX_DIM, x0.shape[0] // 10)
    names = TRANSFORMATIONS if cov else TRANSFORMATIONS[:2]
    stopped = False  # the deadline, not k-hat or max_iters, ended the maps

    def late() -> bool:
        nonlocal stopped
        stopped = stopped or (deadline is not None and run_budget.clock() >= deadline)
        return stopped

    while khat >= target and len(accepted) < max_iters and not late() and improve():
        pass
    khat_final, lw_final, ll_final = khat, lw, ll
    split_used = split and bool(accepted)
    while split_used:
        lw_final, ll_final, khat_final, n_split = _split(x0, lp0, ll0, x, lp, ll, total,
                                                         log_post, psis, n_draws_chain)
        n_evals += n_split
        # the split's k-hat is the one that counts: when mixing in the untransformed draws
        # raised it above the threshold, move the transformed half further if a map helps
        if khat_final < target or len(accepted) >= max_iters or late() or not improve():
            break
    if khat_final >= k_threshold and len(accepted) >= max_iters > 0:
        warns.append(f"observation {index + 1}: moment matching stopped after max_iters = "
                     f"{max_iters} maps with k-hat {khat_final:.2f}; raise max_iters")
    khat_transformed = khat
    lw, ll, khat = lw_final, ll_final, khat_final
    elpd = float(logsumexp(lw + ll))
    chains = np.asarray(draws).shape[0]
    se = total_mcse(draw_influence(lw[None], ll[None], np.array([elpd]))[0], chains)
    if not split and accepted:
        warns.append(f"observation {index + 1}: split=False weights the transformed draws "
                     "alone, but the maps were fitted to those same draws, so the estimate "
                     "is not consistent (and its se not a Monte Carlo se); use split=True")
    if khat >= k_threshold:
        warns.append(f"observation {index + 1}: Pareto k-hat is {khat:.2f} (>= "
                     f"{k_threshold:.2f}) after moment matching, so its elpd and se are "
                     "unreliable; refit without the observation "
                     f"({Route(options={'fix': 'exact'})}) or draw more")
    return MomentMatched(index, elpd, se, khat_before, khat, khat_transformed, psis_elpd,
                         n_evals, time.perf_counter() - t0, accepted, split_used, warns,
                         unfinished=stopped and khat >= k_threshold)


def _split(x0: np.ndarray, lp0: np.ndarray, ll0: np.ndarray, x: np.ndarray, lp: np.ndarray,
           ll: np.ndarray, total: _Affine, log_post: LogDensity,
           psis: Callable[[np.ndarray], tuple[np.ndarray, float]], n_draws_chain: int
           ) -> tuple[np.ndarray, np.ndarray, float, int]:
    """Log weights, log-likelihoods and k̂ of the split proposal: every other draw of each
    chain through the total map ``total`` (their values are those of the transformed ``x``),
    the rest as drawn, weighted by the equal mixture of the two proposal densities; returns
    the number of new log-density evaluations too."""
    moved = (np.arange(x0.shape[0]) % n_draws_chain) % 2 == 0
    kept = ~moved
    log_det = total.log_det()
    lp_mix = np.where(moved, lp, lp0)
    ll_mix = np.where(moved, ll, ll0)
    # density of each draw under the transformed component: p(T⁻¹ x) / |det T|
    lp_back = np.empty_like(lp0)
    lp_back[moved] = lp0[moved]
    lp_back[kept] = _evaluate(log_post, total.inverse(x0[kept]), "log_post")
    lq_mix = np.logaddexp(lp_mix, np.where(np.isfinite(lp_back), lp_back, -np.inf) - log_det)
    lw, khat = psis(lp_mix - ll_mix - lq_mix)
    return lw, ll_mix, khat, int(kept.sum())


def moment_match_observation(pw: PointwiseLogLik, draws: np.ndarray, index: int, *,
                             r_eff: float, k_threshold: float, k_target: float | None = None,
                             log_lik_draws: np.ndarray | None = None,
                             **options: Any) -> MomentMatched:
    """:func:`moment_match` for observation ``index`` of a compiled Stan program: the full-data
    log density is the program's (every constant kept, Jacobian included) and log p(y_i | θ)
    comes from ``pw``; ``draws`` are its unconstrained posterior draws (chains, n, dim)."""
    return moment_match(draws, pw.model.log_density_many, lambda t: pw.column(index, t),
                        index=index, r_eff=r_eff, k_threshold=k_threshold, k_target=k_target,
                        log_lik_draws=log_lik_draws, **options)
