"""Leave-one-out terms log p(y_i | y₋ᵢ) computed anew for observations where PSIS is unreliable.

* ``exact``: NUTS on the data without observation i, then bridge sampling between the two
  posteriors with draws from both sides: with p̃_full(θ) = p̃₋ᵢ(θ) p(y_i | θ), the bridge's log
  weights are log p(y_i | θ) on both sides and it returns log Z_full − log Z₋ᵢ = log p(y_i | y₋ᵢ);
  its error is the optimal bridge's relative MSE with both sides' autocorrelation.
* ``mm`` (:mod:`.moment_match`, wired in :mod:`.loo`): moment-matched importance sampling from
  the full-data draws, no refit; ``auto`` tries it first and refits (``exact``) only the
  observations it leaves above the threshold.
* ``ups``: paper 000's unbiased estimator on the path p(θ | y₋ᵢ) p(y_i | θ)^λ (the two-posterior
  geometric path), with a confidence interval from independent replicates.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..estimators.bridge import solve_bridge
from ..estimators.ups import log_ratio
from .pointwise import PointwiseLogLik

FIX_METHODS = ("auto", "mm", "exact", "ups", "none")


@dataclass
class FixedPoint:
    """One observation's log p(y_i | y₋ᵢ) computed without PSIS."""

    index: int  # 0-based
    elpd: float
    se: float
    method: str
    khat: float
    psis_elpd: float
    n_gradient_evals: int  # NUTS on y₋ᵢ
    n_evals: int  # log-density / log-likelihood evaluations of the estimator itself
    seconds: float
    ci: tuple[float, float] | None = None
    warnings: list[str] = field(default_factory=list)
    khat_after: float | None = None  # moment matching: k̂ of the ratios its estimate uses

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly dict (observation numbered from 1, as in Stan)."""
        return {"observation": self.index + 1, "elpd": self.elpd, "se": self.se,
                "method": self.method, "khat": self.khat, "khat_after": self.khat_after,
                "psis_elpd": self.psis_elpd,
                "n_gradient_evals": self.n_gradient_evals, "n_evals": self.n_evals,
                "seconds": self.seconds, "ci": None if self.ci is None else list(self.ci),
                "warnings": self.warnings}


@dataclass(frozen=True)
class FixTask:
    """What one fix-up needs (picklable apart from the log-likelihood's model)."""

    index: int
    method: str
    khat: float
    psis_elpd: float
    chains: int
    warmup: int
    draws: int
    ups_options: dict[str, Any]


def fix_observation(pw: PointwiseLogLik, full_unc: np.ndarray, task: FixTask,
                    rng: np.random.Generator) -> FixedPoint:
    """log p(y_i | y₋ᵢ) for ``task.index`` by ``task.method``; ``full_unc`` are the full-data
    posterior draws ``(chains, n, dim)``."""
    t0 = time.perf_counter()
    i = task.index
    held_out = pw.held_out_model(i)
    fit = held_out.nuts(chains=task.chains, warmup=task.warmup, draws=task.draws,
                        seed=int(rng.integers(2**31 - 1)))
    minus_unc = fit.unconstrained
    warns: list[str] = []
    n_div = int(np.sum(fit.sampler["divergent__"] > 0))
    if n_div:
        warns.append(f"observation {i + 1}: {n_div} divergent transitions in the refit without "
                     "it; its value may be biased")
    if task.method == "exact":
        c_full, n_full, dim = full_unc.shape
        ll_full = pw.column(i, full_unc.reshape(-1, dim)).reshape(c_full, n_full)
        ll_minus = pw.column(i, minus_unc.reshape(-1, dim)).reshape(minus_unc.shape[:2])
        sol = solve_bridge(ll_full, ll_minus)
        return FixedPoint(i, sol.log_r, sol.se, "exact", task.khat, task.psis_elpd,
                          fit.n_gradient_evals, ll_full.size + ll_minus.size,
                          time.perf_counter() - t0, warnings=warns)
    res = log_ratio(held_out, pw.model, draws0=minus_unc, draws1=full_unc,
                    seed=int(rng.integers(2**31 - 1)), **task.ups_options)
    return FixedPoint(i, res.estimate, res.se, "ups", task.khat, task.psis_elpd,
                      fit.n_gradient_evals, res.n_evals + res.n_evals_tuning,
                      time.perf_counter() - t0, ci=(float(res.ci[0]), float(res.ci[1])),
                      warnings=warns + [f"observation {i + 1}: {w}" for w in res.warnings])
