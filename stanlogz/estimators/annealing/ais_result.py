"""The outcome of (reverse) AIS — :class:`AISResult`, the bound, its spread and per-chain
weights — and the statistics of the weights it uses (:func:`log_mean_exp_with_se`,
:func:`start_order_tau`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...mcmc.annealing import HMCTuning
from ..base import EvidenceResult
from ..common import autocorr_time, log_mean_exp

# Weight ESS below this share of the chains: the log-mean-exp rests on a few chains (in the
# benchmark, a lower bound with ESS 3 of 16 overshot log Z by 0.7 nat at a spread of 0.5).
LOW_ESS_FRACTION = 0.25


@dataclass
class AISResult:
    """Outcome of (reverse) AIS: the bound, its spread and per-chain weights.

    ``log_z`` is a stochastic lower bound (``bound="lower"``, forward AIS) or upper bound
    (``bound="upper"``, reverse AIS from exact posterior samples). ``log_z_se`` is the spread of
    the bound (delta method on the weights), the error of the bound, not of log Z.
    ``log_weights`` are per chain: log of an unbiased estimate of Z/Z_base (forward) or of
    Z_base/Z (reverse).

    ``spread`` says what ``log_z_se`` covers. Forward chains start at independent base draws.
    Reverse chains that share an exact sample start at successive states of one β=1 chain from
    it, so their weights form a stationary series in start order; ``log_z_se`` is then the
    series' standard error (``start_tau``: its integrated autocorrelation time, at least 1), which
    includes the start's share of the variance as far as that chain moves away from the sample,
    and ``spread_given_starts`` the iid formula. With ``spread_starts=0`` the chains share the
    sample itself and the spread is conditional on it.
    """

    log_z: float
    log_z_se: float
    log_weights: np.ndarray
    direction: str
    bound: str
    n_temps: int
    schedule: str
    ess: float
    acceptance: float
    n_divergent: int
    n_evals: int
    seconds: float
    final_positions: np.ndarray
    tuning: HMCTuning
    warnings: list[str] = field(default_factory=list)
    spread: str = "independent chains"
    start_tau: float = 1.0
    spread_given_starts: float | None = None
    start_spacing: int = 0

    @property
    def n_chains(self) -> int:
        return int(self.log_weights.size)

    @property
    def df(self) -> float:
        """Degrees of freedom of ``log_z_se``: effective chains (chains / start_tau) minus 1."""
        return max(1.0, self.n_chains / max(self.start_tau, 1.0) - 1.0)

    def diagnostics(self) -> dict[str, Any]:
        """JSON-friendly diagnostics."""
        return {
            "bound": f"stochastic {self.bound} bound",
            "direction": self.direction,
            "n_chains": self.n_chains,
            "n_temps": self.n_temps,
            "schedule": self.schedule,
            "ess": self.ess,
            "log_weight_sd": float(np.std(self.log_weights, ddof=1)) if self.n_chains > 1 else 0.0,
            "log_weights": self.log_weights.tolist(),
            "acceptance": self.acceptance,
            "n_divergent": self.n_divergent,
            "tuning": self.tuning.to_dict(),
            "spread": self.spread,
            "start_tau": self.start_tau,
            "spread_given_starts": self.spread_given_starts,
            "start_spacing": self.start_spacing,
            "df": self.df,
        }

    def to_evidence(self, method: str, n_draws: int = 0) -> EvidenceResult:
        """As an :class:`EvidenceResult` (``log_z_se`` = spread of the bound)."""
        return EvidenceResult(
            method=method, log_z=self.log_z, log_z_se=self.log_z_se, n_draws=n_draws,
            n_evals=self.n_evals, seconds=self.seconds, diagnostics=self.diagnostics(),
            warnings=list(self.warnings), log_z_df=self.df,
        )


def log_mean_exp_with_se(log_w: np.ndarray) -> tuple[float, float, float]:
    """log-mean-exp of ``log_w``, its delta-method standard error and the weights' ESS."""
    log_w = np.asarray(log_w, dtype=float)
    k = log_w.size
    if k == 0 or not np.any(np.isfinite(log_w)):
        return -np.inf, np.inf, 0.0
    lme = log_mean_exp(log_w)
    w = np.exp(log_w - np.max(log_w))
    ess = float(w.sum() ** 2 / np.sum(w**2))
    # Var(log mean w) ≈ Var(w) / (K mean(w)^2).
    se = float(np.std(w, ddof=1) / (np.sqrt(k) * np.mean(w))) if k > 1 else np.inf
    return lme, se, ess


def start_order_tau(log_w: np.ndarray, groups: list[np.ndarray]) -> float:
    """Integrated autocorrelation time of the normalized weights w/mean(w) along the start order
    (``groups``: chain indices per shared exact sample, in the order their starts were taken):
    :func:`~stanlogz.estimators.common.autocorr_time` of each group's series, averaged with the
    groups' sizes as weights; at least 1, at most the chains."""
    log_w = np.asarray(log_w, dtype=float)
    if not np.all(np.isfinite(log_w)) or log_w.size < 3:
        return 1.0
    u = np.exp(log_w - np.max(log_w))
    u = u / u.mean()
    sizes = np.array([len(g) for g in groups], dtype=float)
    taus = np.array([autocorr_time(u[np.asarray(g, dtype=int)]) for g in groups])
    tau = float(np.sum(sizes * taus) / np.sum(sizes))
    return float(min(max(tau, 1.0), log_w.size))
