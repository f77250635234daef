"""Helpers shared by the sample-based evidence estimators: draw handling, log-mean-exp,
integrated autocorrelation time, Pareto k-hat, seeds and warnings."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._util import deadline
from .._util.gpd import KHAT_BAD, gpd_fit
from .._util.seeds import SeedLike
from ..densities.target import Target, log_density_many
from ..errors import EstimationError, InputError, Route
from ..flows.selection import STRUCTURED_MIN_DRAWS, min_fit_draws

Seed = SeedLike


def as_chains(draws: np.ndarray, dim: int | None = None) -> np.ndarray:
    """Draws as an array shaped ``(chains, n, dim)``; ``(n, dim)`` is one chain."""
    a = np.asarray(draws, dtype=float)
    if a.ndim == 2:
        a = a[None]
    if a.ndim != 3:
        raise InputError(f"draws must have shape (chains, n, dim) or (n, dim), got {a.shape}")
    if dim is not None and a.shape[2] != dim:
        raise InputError(f"draws have dimension {a.shape[2]} but the target has {dim}")
    if a.shape[1] < 2:
        raise InputError(f"need at least 2 draws per chain, got {a.shape[1]}")
    if not np.all(np.isfinite(a)):
        raise InputError("draws contain NaN or infinite values")
    stuck = np.flatnonzero(np.ptp(a, axis=(0, 1)) == 0)
    if stuck.size:
        raise InputError(f"coordinate {stuck[0]} of the draws never changes: the sampler is stuck "
                         "(or the parameter is fixed); rerun sampling")
    return a


def split_halves(chains: np.ndarray, min_per_half: int) -> tuple[np.ndarray, np.ndarray]:
    """First and second half of every chain: ``(fit, bridge)``, each ``(chains, n//2, dim)``.

    Splitting each chain in time (not alternating draws) keeps the two halves nearly independent
    for autocorrelated chains, and keeps the bridge half contiguous so its autocorrelation time
    can be measured.
    """
    half = chains.shape[1] // 2
    fit, bridge = chains[:, :half], chains[:, half : 2 * half]
    check_half_size(chains.shape[0], chains.shape[1], chains.shape[2], min_per_half)
    return fit, bridge


def check_half_size(n_chains: int, n_draws: int, dim: int, min_per_half: int) -> None:
    """:class:`InputError` when the halves of ``n_chains`` chains of ``n_draws`` draws hold
    fewer than ``min_per_half`` draws each, naming the draws per chain (a route) that
    would do; callers check it before sampling too."""
    n_half = n_chains * (n_draws // 2)
    if n_half < min_per_half:
        per_chain = 2 * math.ceil(min_per_half / n_chains)
        per_chain = math.ceil(per_chain / 50) * 50
        route = Route(options={"draws": per_chain}, note=f"({n_chains} chains)")
        raise InputError(
            f"too few draws: each half has {n_half}, need at least {min_per_half} "
            f"for dimension {dim}; run with {route}", routes=route
        )


#: Draws per chain the bridge side needs at least where halves are too small to fit the
#: proposal and gbs splits the draws unevenly (:func:`uneven_cut`, ``bridge.route.two_way_split``):
#: the posterior-side term's autocorrelation time is measured per chain.
MIN_BRIDGE_PER_CHAIN = 20


def uneven_cut(n_chains: int, n_draws: int, least: int) -> int | None:
    """Where each chain's halves hold fewer than ``least`` draws in all (a run the time budget
    ended early, or a short fit), the draws per chain that fit the proposal, the first of each
    chain, the others entering the bridge: ``ceil(least / n_chains)``, when at least
    ``MIN_BRIDGE_PER_CHAIN`` are left per chain. None: even halves (they suffice, or too few
    draws either way, which :func:`split_halves` refuses)."""
    if n_chains * (n_draws // 2) >= least:
        return None
    cut = -(-least // n_chains)
    return cut if n_draws - cut >= MIN_BRIDGE_PER_CHAIN else None


def check_evidence_draws(model: Any, method: str, nuts: Any, proposal: str = "auto") -> None:
    """Before sampling: :class:`InputError` when the draws the sampler settings ``nuts`` (a
    :class:`~stanlogz.stan.settings.NutsArgs`) keep are too few for the halves ``gbs`` splits
    each chain into (naming the draws per chain that do) and for the uneven split
    (:func:`uneven_cut`) gbs makes of draws too few for halves. Halves with fewer draws than
    a dense covariance needs are not refused: gbs then whitens with a diagonal plus low-rank
    covariance (:mod:`stanlogz.estimators.bridge.route`); ``proposal`` (gbs's option) "dense" or
    "structured" asks for that route's own minimum."""
    if method == "gbs":
        need = {"dense": dense_least(model.dim), "structured": STRUCTURED_MIN_DRAWS}.get(
            proposal, least_draws(model.dim))
        kept = -(-nuts.draws // nuts.thin)
        if uneven_cut(nuts.chains, kept, need) is None:  # gbs splits such draws unevenly
            check_half_size(nuts.chains, kept, model.dim, need)


def sample_count(n: int | None, default: int, name: str = "n_q") -> int:
    """The number of proposal samples: ``n``, or ``default`` when None; must be at least 1."""
    n = default if n is None else int(n)
    if n < 1:
        raise InputError(f"{name} must be a positive number of samples, got {n}")
    return n


def least_draws(dim: int, validate: bool = True) -> int:
    """The fewest draws per half gbs accepts in ``dim`` dimensions (either route)."""
    return min(dense_least(dim, validate), STRUCTURED_MIN_DRAWS)


def dense_least(dim: int, validate: bool = True) -> int:
    """The fewest draws per half the dense (validated) whitening needs in ``dim`` dimensions."""
    return min(min_draws(dim), min_fit_draws(dim)) if validate else min_draws(dim)


def min_draws(dim: int) -> int:
    """The fewest draws a flow or Gaussian fit needs in ``dim`` dimensions."""
    return max(2 * dim + 2, 20)


def draws_needed(n_draws: int, se: float, target_se: float) -> int:
    """Posterior draws for a standard error ``target_se``, from ``se`` with ``n_draws`` (Monte
    Carlo error falls as one over the square root of the draws)."""
    return int(math.ceil(n_draws * (se / target_se) ** 2))


#: Rows of one call of the target density between two checks of the run's time budget.
BUDGET_ROWS = 512


def eval_log_density(target: Target, xs: np.ndarray) -> tuple[np.ndarray, int]:
    """Log densities at the rows of ``xs`` with NaN/+inf turned into -inf (weight zero), and
    how many are not finite. Under a run's time budget the rows go in blocks, and a spent
    budget stops them (:func:`stanlogz._util.deadline.check_spent`)."""
    xs = np.asarray(xs)
    if deadline.remaining() is None or xs.shape[0] <= BUDGET_ROWS:
        lp, _ = finite_or_neg_inf(log_density_many(target, xs))
        return lp, int(np.sum(~np.isfinite(lp)))
    parts = []
    for a in range(0, xs.shape[0], BUDGET_ROWS):
        deadline.check_spent("the estimator's evaluations of the log density")
        parts.append(finite_or_neg_inf(log_density_many(target, xs[a:a + BUDGET_ROWS]))[0])
    lp = np.concatenate(parts)
    return lp, int(np.sum(~np.isfinite(lp)))


def rel_var(f: np.ndarray) -> float:
    """Var(f) / E(f)^2 of positive terms ``f`` (any shape); inf when the mean is not positive or
    there is a single term."""
    m = f.mean()
    # var(f / m), not var(f) / m^2: m^2 underflows where the terms are tiny (an overfitted flow)
    return float((f / m).var(ddof=1)) if m > 0 and f.size > 1 else float("inf")


def logsumexp(a: np.ndarray) -> float:
    """log Σ exp(a), with -inf entries allowed (all -inf gives -inf)."""
    a = np.asarray(a, dtype=float)
    m = np.max(a) if a.size else -np.inf
    if not np.isfinite(m):
        return float(m)
    return float(m + np.log(np.sum(np.exp(a - m))))


def log_mean_exp(a: np.ndarray) -> float:
    """log of the mean of exp(a)."""
    a = np.asarray(a, dtype=float)
    return logsumexp(a) - math.log(a.size)


def autocorr_time(x: np.ndarray) -> float:
    """Integrated autocorrelation time of a scalar series shaped ``(chains, n)`` or ``(n,)``.

    Multi-chain autocorrelations (within-chain autocovariances combined with the between-chain
    variance, as in Stan) truncated by Geyer's initial monotone sequence. 1 for independent draws;
    floored at ``1/log10(N)`` (Stan's cap on super-efficiency).
    """
    x = np.atleast_2d(np.asarray(x, dtype=float))
    m, n = x.shape
    if n < 4 or not np.all(np.isfinite(x)):
        return 1.0
    xc = x - x.mean(axis=1, keepdims=True)
    nfft = 1 << (2 * n - 1).bit_length()
    f = np.fft.rfft(xc, nfft, axis=1)
    acov = np.fft.irfft(f * np.conj(f), nfft, axis=1)[:, :n] / n
    w = acov[:, 0].mean() * n / (n - 1)
    var_plus = w * (n - 1) / n
    if m > 1:
        var_plus += x.mean(axis=1).var(ddof=1)
    if var_plus <= 0:
        return 1.0
    rho = 1.0 - (w - acov.mean(axis=0)) / var_plus
    rho[0] = 1.0
    n_pairs = n // 2
    gam = rho[: 2 * n_pairs].reshape(n_pairs, 2).sum(axis=1)
    pos = np.nonzero(gam <= 0)[0]
    k = pos[0] if pos.size else n_pairs
    gam = np.minimum.accumulate(gam[:k]) if k > 0 else gam[:0]
    tau = -1.0 + 2.0 * gam.sum() if k > 0 else 1.0
    return float(max(tau, 1.0 / math.log10(max(m * n, 10))))


def pareto_k(log_weights: np.ndarray) -> float:
    """Pareto k-hat of importance weights given as logs (PSIS diagnostic; > 0.7 is unreliable).

    Non-finite log weights are dropped; NaN when fewer than 20 finite weights remain or the tail
    is flat.
    """
    lw = np.asarray(log_weights, dtype=float).ravel()
    lw = lw[np.isfinite(lw)]
    n = lw.size
    if n < 20:
        return float("nan")
    m = int(math.ceil(min(0.2 * n, 3 * math.sqrt(n))))
    lw = np.sort(lw)
    tail = lw[-m:]
    cut = lw[-m - 1]
    exceed = np.exp(tail - tail[-1]) - np.exp(cut - tail[-1])
    exceed = exceed[exceed > 0]
    if exceed.size < 5 or exceed[-1] <= exceed[0] * (1 + 1e-12):
        return float("nan")
    return float(gpd_fit(exceed)[0])


def finite_or_neg_inf(a: np.ndarray) -> tuple[np.ndarray, int]:
    """``a`` with NaN and +inf replaced by -inf (weight zero), and how many were replaced."""
    a = np.asarray(a, dtype=float).copy()
    bad = np.isnan(a) | (a == np.inf)
    a[bad] = -np.inf
    return a, int(bad.sum())


def require_some_finite(a: np.ndarray, what: str) -> None:
    """Raise :class:`EstimationError` when no entry of ``a`` is finite."""
    if not np.any(np.isfinite(a)):
        raise EstimationError(f"all log densities at {what} are non-finite")


def k_warning(k: float, side: str, threshold: float = KHAT_BAD) -> str | None:
    """A one-line warning when a Pareto k-hat exceeds ``threshold``, else None.

    Plain importance-sampling and harmonic-mean averages need ``k < 0.5`` for their variance,
    hence their standard error, to exist.
    """
    if np.isfinite(k) and k > threshold:
        return (
            f"poor overlap between proposal and posterior on the {side} side "
            f"(Pareto k = {k:.2f} > {threshold}): the standard error is unreliable; "
            "run more draws or use gbs"
        )
    return None
