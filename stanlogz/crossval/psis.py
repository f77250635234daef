"""PSIS-LOO from a pointwise log-likelihood matrix, with ArviZ's Pareto smoothing.

elpd_i = log Σ_s w_is p(y_i | θ_s) with the PSIS-smoothed, self-normalized weights of
w_is ∝ 1 / p(y_i | θ_s) (Vehtari, Gelman & Gabry 2017). The smoothing and k̂ come from the
installed ArviZ (0.x or 1.x) through :mod:`stanlogz.arviz_compat`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from .. import arviz_compat
from ..errors import InputError


def k_threshold(n_samples: int) -> float:
    """The draw-count-dependent k̂ above which PSIS is unreliable: min(1 − 1/log10 S, 0.7)."""
    return float(min(1.0 - 1.0 / math.log10(max(n_samples, 11)), 0.7))


def relative_efficiency(posterior: np.ndarray) -> float:
    """ArviZ's default r_eff: mean ESS (for the mean) of the posterior quantities over the
    number of draws; ``posterior`` is ``(chains, n, k)``; 1 for a single chain."""
    chains, n, _ = posterior.shape
    if chains == 1:
        return 1.0
    ess = arviz_compat.ess_mean(posterior)
    ess = ess[np.isfinite(ess)]
    return float(ess.mean() / (chains * n)) if ess.size else 1.0


@dataclass
class PsisLoo:
    """Pointwise PSIS-LOO: elpd_i, lppd_i, p_loo_i and k̂_i per observation."""

    elpd_i: np.ndarray
    lppd_i: np.ndarray
    khat: np.ndarray
    r_eff: float
    n_samples: int

    @property
    def p_loo_i(self) -> np.ndarray:
        """Effective number of parameters per observation, lppd_i − elpd_i."""
        return self.lppd_i - self.elpd_i

    @property
    def threshold(self) -> float:
        """k̂ threshold for these draws."""
        return k_threshold(self.n_samples)


def psis_loo(log_lik: np.ndarray, r_eff: float = 1.0) -> PsisLoo:
    """PSIS-LOO of a log-likelihood matrix ``(S, N)`` (or ``(chains, n, N)``)."""
    ll = np.asarray(log_lik, dtype=float)
    if ll.ndim == 3:
        ll = ll.reshape(-1, ll.shape[-1])
    if ll.ndim != 2 or ll.shape[0] < 2 or ll.shape[1] < 1:
        raise InputError(f"log-likelihood must be (draws, observations), got {ll.shape}")
    if not np.all(np.isfinite(ll)):
        s, i = np.argwhere(~np.isfinite(ll))[0]
        raise InputError(f"log-likelihood of observation {i + 1} is not finite at draw {s + 1}")
    s = ll.shape[0]
    lw, khat = arviz_compat.psislw(-ll.T, r_eff=r_eff)  # (N, S), normalized per observation
    elpd_i = logsumexp(lw + ll.T, axis=1)
    lppd_i = logsumexp(ll, axis=0) - math.log(s)
    return PsisLoo(elpd_i=elpd_i, lppd_i=lppd_i, khat=np.asarray(khat, dtype=float).ravel(),
                   r_eff=float(r_eff), n_samples=s)
