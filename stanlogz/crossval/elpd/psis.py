"""PSIS-LOO from a pointwise log-likelihood matrix, with ArviZ's Pareto smoothing.

elpd_i = log Σ_s w_is p(y_i | θ_s) with the PSIS-smoothed, self-normalized weights of
w_is ∝ 1 / p(y_i | θ_s) (Vehtari, Gelman & Gabry 2017). The smoothing and k̂ come from the
installed ArviZ (0.x or 1.x) through :mod:`stanlogz.arviz_compat`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.special import logsumexp, polygamma

from ... import arviz_compat
from ..._util.arrays import finite_array
from ..._util.gpd import KHAT_BAD, KHAT_HEAVY
from ...errors import InputError


def k_threshold(n_samples: int) -> float:
    """The draw-count-dependent k̂ above which PSIS is unreliable: min(1 − 1/log10 S, 0.7)."""
    return float(min(1.0 - 1.0 / math.log10(max(n_samples, 11)), KHAT_BAD))


def relative_efficiency(posterior: np.ndarray) -> float:
    """ArviZ's default r_eff: mean ESS (for the mean) of the posterior quantities over the
    number of draws; ``posterior`` is ``(chains, n, k)``; 1 for a single chain."""
    chains, n, _ = posterior.shape
    if chains == 1:
        return 1.0
    ess = arviz_compat.ess_mean(posterior)
    ess = ess[np.isfinite(ess)]
    return float(ess.mean() / (chains * n)) if ess.size else 1.0


def relative_efficiency_pointwise(log_lik: np.ndarray) -> np.ndarray:
    """Relative efficiency of each observation's likelihood draws, as loo's ``relative_eff``:
    ESS (for the mean) of p(y_i | θ) over the number of draws; ``log_lik`` is
    ``(chains, n, N)``; returns ``(N,)`` (1 where the ESS is undefined, e.g. a constant
    likelihood)."""
    ll = finite_array(log_lik, "log-likelihood", "(chains, draws >= 4, observations)",
                      lambda s: len(s) == 3 and s[1] >= 4 and s[2] >= 1)
    chains, n, n_obs = ll.shape
    out = np.empty(n_obs)
    batch = max(1, 8_000_000 // (chains * n))  # 64 MB of likelihoods at a time
    for start in range(0, n_obs, batch):
        part = ll[:, :, start:start + batch]
        # ESS is invariant to scaling a column: exp(ll - max) avoids overflow and underflow
        lik = np.exp(part - part.max(axis=(0, 1), keepdims=True))
        out[start:start + batch] = arviz_compat.ess_mean(lik)
    out = out / (chains * n)
    return np.where(np.isfinite(out) & (out > 0), out, 1.0)


def elpd_mcse(log_weights: np.ndarray, log_lik: np.ndarray,
              r_eff: float | np.ndarray = 1.0) -> np.ndarray:
    """Monte Carlo standard error of each PSIS estimate elpd_i = log Σ_s w_is p(y_i | θ_s).

    ``log_weights`` are the normalized PSIS log weights and ``log_lik`` the log-likelihoods,
    both ``(N, S)`` (or ``(S,)`` for one observation); ``r_eff`` is one relative efficiency or
    one per observation. As loo's ``mcse_elpd``: the variance of the weighted mean
    E = Σ_s w_s p_s is estimated by Σ_s w_s² (p_s − E)², divided by r_eff, and carried to the
    log scale by treating E as gamma distributed with that mean and variance, for which
    Var(log E) = trigamma(E² / Var E) in closed form (loo draws from the approximating
    distribution instead; the closed form has no sampling noise and stays finite when the
    variance is large, where the normal approximation gives negative draws). This is each
    observation's own se; the se of the total Σ elpd_i is :meth:`PsisLoo.total_mcse`, since
    the observations share the draws and their errors are correlated.
    """
    lw = np.asarray(log_weights, dtype=float)
    ll = np.asarray(log_lik, dtype=float)
    one = lw.ndim == 1
    lw, ll = np.atleast_2d(lw), np.atleast_2d(ll)
    if lw.shape != ll.shape or lw.ndim != 2:
        raise InputError(f"log weights {lw.shape} and log-likelihood {ll.shape} must have "
                         "the same shape (N, S)")
    r = np.broadcast_to(np.asarray(r_eff, dtype=float), (lw.shape[0],))
    if not np.all(r > 0):
        raise InputError("relative efficiency must be positive")
    # the ratio Var(E) / E² does not change when p is scaled, so scale each row by its max
    lik = np.exp(ll - ll.max(axis=1, keepdims=True))
    w = np.exp(lw - logsumexp(lw, axis=1, keepdims=True))
    mean = np.sum(w * lik, axis=1)
    rel_var = np.sum(w**2 * (lik / mean[:, None] - 1.0) ** 2, axis=1) / r
    se = log_mean_mcse(rel_var)
    return se[0:1].reshape(()) if one else se


def log_mean_mcse(rel_var: np.ndarray) -> np.ndarray:
    """Monte Carlo se of log E from the relative variance Var(E) / E² of a positive mean E:
    E treated as gamma distributed with that mean and variance, Var(log E) = trigamma(shape),
    shape = E² / Var(E) (0 where the variance is 0). The one formula of every pointwise PSIS
    mcse (:func:`elpd_mcse`, :func:`psis_loo`)."""
    v = np.asarray(rel_var, dtype=float)
    with np.errstate(divide="ignore"):
        shape = np.where(v > 0, 1.0 / np.where(v > 0, v, 1.0), np.inf)
    return np.where(np.isfinite(shape), np.sqrt(polygamma(1, np.minimum(shape, 1e300))), 0.0)


@dataclass
class PsisLoo:
    """Pointwise PSIS-LOO: elpd_i, lppd_i, p_loo_i and k̂_i per observation."""

    elpd_i: np.ndarray
    lppd_i: np.ndarray
    khat: np.ndarray
    r_eff: float
    n_samples: int
    mcse_i: np.ndarray | None = None  # Monte Carlo se of each elpd_i
    #: Σ_i of each draw's influence g_is on elpd_i (:func:`draw_influence`), ``(S,)``
    influence: np.ndarray | None = None
    #: g_is of the observations (by position) whose k̂ is above ``keep_above``, to take out
    #: of ``influence`` when their values are replaced by fix-ups
    influence_i: dict[int, np.ndarray] = field(default_factory=dict)
    chains: int = 1
    #: estimated bias of each elpd_i (nonzero for k̂ above ``KHAT_HEAVY``; :func:`half_bias`)
    bias_i: np.ndarray | None = None
    #: posterior variance of each log p(y_i | θ) over the draws (WAIC's p_waic_i), from all
    #: the draws and so far steadier than k̂ (:data:`LOGLIK_VAR_HEAVY`)
    var_i: np.ndarray | None = None

    @classmethod
    def concatenate(cls, parts: list[PsisLoo]) -> PsisLoo:
        """The pointwise values of blocks of observations, side by side."""
        if not parts:
            raise InputError("no observations to smooth")
        cat = lambda name: np.concatenate([getattr(p, name) for p in parts])  # noqa: E731
        kept: dict[int, np.ndarray] = {}
        offset = 0
        for p in parts:
            kept.update({offset + j: g for j, g in p.influence_i.items()})
            offset += p.elpd_i.size
        infl = (None if any(p.influence is None for p in parts)
                else np.sum([p.influence for p in parts], axis=0))
        return cls(elpd_i=cat("elpd_i"), lppd_i=cat("lppd_i"), khat=cat("khat"),
                   r_eff=parts[0].r_eff, n_samples=parts[0].n_samples,
                   mcse_i=None if any(p.mcse_i is None for p in parts) else cat("mcse_i"),
                   influence=infl, influence_i=kept, chains=parts[0].chains,
                   bias_i=None if any(p.bias_i is None for p in parts) else cat("bias_i"),
                   var_i=None if any(p.var_i is None for p in parts) else cat("var_i"))

    def total_bias(self, replaced: list[int] | np.ndarray = ()) -> float:
        """Estimated bias of Σ elpd_i over the PSIS values, leaving out ``replaced``."""
        if self.bias_i is None:
            return 0.0
        keep = np.ones(self.bias_i.size, dtype=bool)
        keep[np.asarray(replaced, dtype=int)] = False
        return float(self.bias_i[keep].sum())

    def total_mcse(self, replaced: list[int] | np.ndarray = ()) -> float:
        """Monte Carlo se of Σ elpd_i over the PSIS values, leaving out the positions
        ``replaced`` (values fixed by other means): :func:`total_mcse` of the summed
        influence."""
        if self.influence is None:
            raise InputError("these PSIS values carry no draw influence")
        h = self.influence
        missing = [int(j) for j in replaced if int(j) not in self.influence_i]
        if missing:
            raise InputError(f"no draw influence kept for position(s) {missing[:5]}: "
                             "smooth with a lower keep_above")
        if len(replaced):
            h = h - np.sum([self.influence_i[int(j)] for j in replaced], axis=0)
        return total_mcse(h, self.chains)

    @property
    def p_loo_i(self) -> np.ndarray:
        """Effective number of parameters per observation, lppd_i − elpd_i."""
        return self.lppd_i - self.elpd_i

    @property
    def threshold(self) -> float:
        """k̂ threshold for these draws."""
        return k_threshold(self.n_samples)


def draw_influence(log_weights: np.ndarray, log_lik: np.ndarray,
                   elpd: np.ndarray) -> np.ndarray:
    """Each draw's first-order influence on each PSIS estimate, ``(N, S)``.

    elpd_i = log Σ_s w_is p_is with self-normalized weights is a smooth function of two draw
    averages, mean_s(w̃_is p_is) and mean_s(w̃_is) (w̃ the unnormalized weights); the delta
    method writes its error as the average over draws of S g_is, g_is = w_is (p_is / E_i − 1),
    E_i = exp(elpd_i). The error of Σ_i elpd_i is then the average of S Σ_i g_is: one series
    over the draws that carries the correlation between observations sharing the draws.
    """
    return np.exp(log_weights + log_lik - elpd[:, None]) - np.exp(log_weights)


def total_mcse(influence: np.ndarray, chains: int = 1) -> float:
    """Monte Carlo se of a sum of PSIS estimates from its summed draw influence
    ``influence`` = Σ_i g_is (``(S,)``, chain-major; :func:`draw_influence`): the series
    h_s = S Σ_i g_is has mean zero and the error is its average, so the variance is
    mean(h²) / ESS(h), the ESS (for the mean) accounting for the chains' autocorrelation."""
    g = np.asarray(influence, dtype=float).ravel()
    return float(influence_mcse(g.size * g, chains)[0])


def influence_mcse(h: np.ndarray, chains: int = 1) -> np.ndarray:
    """Monte Carlo se of estimates whose error is the average over draws of a mean-zero
    influence series (delta method): sqrt(mean(h²) / ESS(h)) per column of ``h`` ``(S,)`` or
    ``(S, k)`` (chain-major), the ESS (for the mean) counting the chains' autocorrelation; the
    one formula of the joint se of a sum of PSIS values (:func:`total_mcse`) and of the
    mixture estimator's values (:func:`stanlogz.crossval.fixups.mixture.estimates_from_weights`)."""
    h = np.asarray(h, dtype=float)
    cols = h.reshape(h.shape[0], -1)
    s = cols.shape[0]
    if chains < 1 or s % chains or s < 4 * chains:
        raise InputError(f"{s} draws cannot be {chains} chains of at least 4")
    ms = np.mean(cols**2, axis=0)
    ess = np.asarray(arviz_compat.ess_mean(cols.reshape(chains, s // chains, -1)), dtype=float)
    ess = np.where(np.isfinite(ess) & (ess > 0), ess, float(s))
    return np.where(ms > 0, np.sqrt(ms / ess), 0.0)


#: An observation whose log-likelihood varies over the posterior draws by more than this
#: (variance; WAIC's p_waic_i, whose warning level it is: Vehtari, Gelman & Gabry 2017) has
#: heavy importance ratios whatever k̂ reads: for log ratios normal with variance V the
#: relative variance of the IS mean is e^V − 1. Its value uses every draw, where k̂ uses the
#: largest few: on issue 45's regression, one outlier's variance was 3.3–4.1 over 12 seeds of
#: 2 x 500 draws while its k̂ read 0.36–0.95 (and its PSIS value was +0.1 to +0.5 too high).
LOGLIK_VAR_HEAVY = 0.4


#: PSIS's bias at k̂ 0.5–0.8 falls about as S^-0.6 (S draws; measured on a normal model with
#: outliers, 1000 vs 4000 exact draws), so the half-sample estimates' bias is 2^0.6 ≈ 1.5
#: times the full one and bias ≈ (mean of the halves − full) / 0.5.
BIAS_FACTOR = 2.0


def half_bias(log_lik: np.ndarray, elpd: np.ndarray, r_eff: float = 1.0) -> np.ndarray:
    """Bias of PSIS elpd_i from the draws' two halves: BIAS_FACTOR × (mean of the estimates
    from each half − the estimate from all), ``log_lik`` ``(n, S)`` rows of the observations,
    ``elpd`` their full estimates. Positive: PSIS overestimates (the log of a mean of
    heavy-tailed ratios is biased upward).

    The factor holds where the ratios' tail is as light as k̂ says. Where it is heavier, the
    bias falls more slowly with the draws and this estimate understates it: for a ``log_lik``
    conditional on one latent per observation (ratios exp((y_i − z_i)² / 2σ²), z_i ~ N(0, 1) a
    priori: tail index k = 1/(1 + σ²), 0.8 at σ = 0.5, while k̂ reads 0.5–0.7) it gave +0.01
    per point against a measured +0.09 (issue 44; docs/features/loo_mcse.md). The warning says
    so rather than claim the bias."""
    ll = np.atleast_2d(np.asarray(log_lik, dtype=float))
    half = ll.shape[1] // 2
    if ll.shape[0] == 0 or half < arviz_compat.PSIS_MIN_DRAWS:
        return np.zeros(ll.shape[0])
    parts = []
    for cols in (slice(0, half), slice(half, 2 * half)):
        lw, _ = arviz_compat.psislw(-ll[:, cols], r_eff=r_eff)
        parts.append(logsumexp(lw + ll[:, cols], axis=1))
    return BIAS_FACTOR * (0.5 * (parts[0] + parts[1]) - np.asarray(elpd, dtype=float))


def psis_loo(log_lik: np.ndarray, r_eff: float = 1.0, chains: int | None = None,
             keep_above: float = 0.5) -> PsisLoo:
    """PSIS-LOO of a log-likelihood matrix ``(S, N)`` (chain-major, ``chains`` chains; one
    when None) or ``(chains, n, N)``; the draw influence of observations with k̂ above
    ``keep_above`` is kept for :meth:`PsisLoo.total_mcse`."""
    ll = np.asarray(log_lik, dtype=float)
    if ll.ndim == 3:
        chains = ll.shape[0] if chains is None else chains
        ll = ll.reshape(-1, ll.shape[-1])
    if ll.ndim != 2 or ll.shape[0] < 2 or ll.shape[1] < 1:
        raise InputError(f"log-likelihood must be (draws, observations), got {ll.shape}")
    if not np.all(np.isfinite(ll)):
        s, i = np.argwhere(~np.isfinite(ll))[0]
        raise InputError(f"log-likelihood of observation {i + 1} is not finite at draw {s + 1}")
    s = ll.shape[0]
    chains = 1 if chains is None else int(chains)
    if chains < 1 or s % chains:
        raise InputError(f"{s} draws cannot be split into {chains} chains")
    llt = np.ascontiguousarray(ll.T)  # (N, S)
    lw, khat = arviz_compat.psislw(-llt, r_eff=r_eff)  # (N, S), normalized per observation
    khat = np.asarray(khat, dtype=float).ravel()
    # A likelihood constant over the draws (e.g. its latents integrated out) gives equal
    # ratios: the importance weights are uniform and the estimate log p(y_i) is exact, but
    # there is no tail to fit, so ArviZ 0.x and older loo report k̂ = Inf ("very bad").
    # posterior's pareto_khat (loo 2.7+) reports NA for constant draws: so does stanlogz
    # (NaN), and the point is not flagged.
    const = np.ptp(llt, axis=1) <= 1e-12 * (1 + np.abs(llt[:, 0]))
    if const.any():
        khat[const] = np.nan
        lw[const] = -math.log(s)
    # One pass of exponentials serves elpd_i, lppd_i, the pointwise se and the influence
    # (each row of the likelihood scaled by its max, which cancels in every ratio).
    top = llt.max(axis=1)
    lik = np.exp(llt - top[:, None])
    lppd_i = np.log(lik.mean(axis=1)) + top
    g = np.exp(lw)
    g *= lik  # w_s p_s
    del lik
    e = g.sum(axis=1)
    elpd_i = np.log(e) + top
    g /= e[:, None]
    g -= np.exp(lw)  # g_is = w_is (p_is / E_i − 1): draw_influence
    rel_var = np.einsum("ij,ij->i", g, g) / float(r_eff)  # Var(E_i) / E_i², as elpd_mcse
    mcse_i = log_mean_mcse(rel_var)
    bias_i = np.zeros(khat.size)
    heavy = np.nonzero(khat > KHAT_HEAVY)[0]  # below, the bias is small against the mc se
    bias_i[heavy] = half_bias(llt[heavy], elpd_i[heavy], r_eff)
    var_i = llt.var(axis=1)
    keep = np.nonzero((khat > keep_above) | (var_i > LOGLIK_VAR_HEAVY))[0]
    return PsisLoo(elpd_i=elpd_i, lppd_i=lppd_i, khat=khat, bias_i=bias_i,
                   r_eff=float(r_eff), n_samples=s, mcse_i=mcse_i,
                   influence=g.sum(axis=0), chains=chains, var_i=var_i,
                   influence_i={int(j): g[j].copy() for j in keep})
