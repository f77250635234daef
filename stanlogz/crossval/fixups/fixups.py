"""Leave-one-out terms log p(y_i | y₋ᵢ) computed anew for observations where PSIS is unreliable.

* ``exact``: NUTS on the data without observation i, then bridge sampling between the two
  posteriors with draws from both sides: with p̃_full(θ) = p̃₋ᵢ(θ) p(y_i | θ), the bridge's log
  weights are log p(y_i | θ) on both sides and it returns log Z_full − log Z₋ᵢ = log p(y_i | y₋ᵢ);
  its error is the optimal bridge's relative MSE with both sides' autocorrelation.
* ``mm`` (:mod:`.moment_match`, wired in :mod:`.loo`): moment-matched importance sampling from
  the full-data draws, no refit; ``auto`` tries it first and refits (``exact``) only the
  observations it leaves above the threshold.
* ``ups``: the unbiased estimator of Rischard, Jacob & Pillai (2018) on the path
  p(θ | y₋ᵢ) p(y_i | θ)^λ (the two-posterior geometric path), with a confidence interval
  from independent replicates.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..._util.display import alias
from ..._util.gpd import KHAT_BAD
from ..._util.seeds import Stream, generator_seed, stream_int_seed
from ..._util.words import transitions
from ...draws.continuation import WarmStart, refit_draws
from ...draws.modes import modes_verdict, split_rhat
from ...errors import Route, StanlogzError, option
from ...estimators.bridge.bridge import solve_bridge
from ...estimators.common import pareto_k
from ...estimators.ups.ups import log_ratio
from ...stan.settings import NutsArgs
from ..observations.pointwise import PointwiseLogLik

#: Key of the mixture values' joint Monte Carlo se in each mis FixedPoint's diagnostics.
SUM_SE = "mis_sum_se"
#: diagnostics key of an exact refit's se part shared with the other refits (log Z(full))
SHARED_SE = "shared_log_z_full_se"


@dataclass
class FixedPoint:
    """One observation's log p(y_i | y₋ᵢ) computed without PSIS, with its Monte Carlo se
    ``mcse``."""

    index: int  # 0-based
    elpd: float
    mcse: float
    method: str
    khat: float
    psis_elpd: float
    n_gradient_evals: int  # NUTS on y₋ᵢ
    n_evals: int  # log-density / log-likelihood evaluations of the estimator itself
    seconds: float
    ci: tuple[float, float] | None = None
    warnings: list[str] = field(default_factory=list)
    khat_after: float | None = None  # moment matching: k̂ of the ratios its estimate uses
    diagnostics: dict[str, Any] = field(default_factory=dict)

    se = alias("mcse", "The former name of ``mcse`` (a Monte Carlo se), kept for "
               "compatibility.")

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly dict (observation numbered from 1, as in Stan)."""
        return {"observation": self.index + 1, "elpd": self.elpd, "mcse": self.mcse,
                "method": self.method, "khat": self.khat, "khat_after": self.khat_after,
                "psis_elpd": self.psis_elpd,
                "n_gradient_evals": self.n_gradient_evals, "n_evals": self.n_evals,
                "seconds": self.seconds, "ci": None if self.ci is None else list(self.ci),
                "warnings": self.warnings, "diagnostics": self.diagnostics}


@dataclass(frozen=True)
class FixTask:
    """What one fix-up needs (picklable apart from the log-likelihood's model)."""

    index: int
    method: str
    khat: float
    psis_elpd: float
    settings: NutsArgs  # the refit's NUTS settings (the workflow's)
    ups_options: dict[str, Any]
    #: the full fit the refit starts from (None: a cold refit)
    warm: WarmStart | None = None


RHAT_ALARM = 1.05  # split R-hat (between/within chain halves) of log p(y_i | theta)


def exact_fix_checks(sol: Any, ll_full: np.ndarray, ll_minus: np.ndarray) -> dict[str, Any]:
    """Overlap and convergence of an exact fix-up's bridge: Pareto k-hat of its weights on both
    sides, whether the fixed point converged, and the split R-hat of log p(y_i | theta) in the
    refit without y_i and in the full-data draws."""
    return {"pareto_k_minus": pareto_k(ll_minus), "pareto_k_full": pareto_k(-ll_full),
            "converged": bool(sol.converged), "rhat_minus": split_rhat(ll_minus),
            "rhat_full": split_rhat(ll_full)}


def exact_fix_warnings(i: int, d: dict[str, Any]) -> list[str]:
    """What to do when an exact fix-up's bridge overlaps poorly or its draws did not mix."""
    out = []
    k_min = min(d["pareto_k_minus"], d["pareto_k_full"])
    if np.isfinite(k_min) and k_min > KHAT_BAD:
        out.append(f"observation {i + 1}: the exact fix-up's bridge overlaps poorly (Pareto k "
                   f"{d['pareto_k_minus']:.2f} and {d['pareto_k_full']:.2f}); its se may not "
                   f"hold: run more draws or use {Route(options={'fix': 'ups'})}")
    if not d["converged"]:
        out.append(f"observation {i + 1}: the exact fix-up's bridge did not converge")
    rhat = max(d["rhat_minus"], d["rhat_full"])
    if np.isfinite(rhat) and rhat > RHAT_ALARM or rhat == np.inf:
        out.append(f"observation {i + 1}: log p(y_i | theta) has split R-hat {rhat:.2f} > "
                   f"{RHAT_ALARM} in the draws the fix-up bridges: run longer chains")
    return out


def fix_observation(pw: PointwiseLogLik, full_unc: np.ndarray, task: FixTask,
                    rng: np.random.Generator) -> FixedPoint:
    """log p(y_i | y₋ᵢ) for ``task.index`` by ``task.method``; ``full_unc`` are the full-data
    posterior draws ``(chains, n, dim)``."""
    t0 = time.perf_counter()
    i = task.index
    held_out = pw.held_out_model(i)
    seed = generator_seed(rng)  # this refit's seed: its NUTS run and its estimate take streams
    fit, _ = refit_draws(held_out, task.settings, seed=stream_int_seed(seed, Stream.REFIT_NUTS),
                         warm=task.warm)
    minus_unc = fit.unconstrained
    warns: list[str] = []
    dim = full_unc.shape[2]
    try:
        ll_minus = pw.column(i, minus_unc.reshape(-1, dim)).reshape(minus_unc.shape[:2])
    except StanlogzError:  # no held-out term at the refit's draws: the parameters decide
        ll_minus = None
    # the refit's chains ended in different places (its probe found a mode the full fit's
    # draws do not reach) where its held-out value differs: the value stands, its se is NA
    # (the total's mcse with it); where they agree on it (modes alike by a symmetry), the se
    # is widened by half their range (the modes' weights unknown)
    unmixed, spread = modes_verdict(minus_unc, f"observation {i + 1}: the refit without it",
                                    "its fixed value", quantity=ll_minus)
    if unmixed:
        warns.append(unmixed)
    n_div = int(np.sum(fit.sampler["divergent__"] > 0))
    if n_div:
        warns.append(f"observation {i + 1}: {transitions(n_div)} in the refit without "
                     f"it; its value may be biased (raise {option('adapt_delta')})")
    if task.method == "exact":
        c_full, n_full, _ = full_unc.shape
        ll_full = pw.column(i, full_unc.reshape(-1, dim)).reshape(c_full, n_full)
        if ll_minus is None:  # the bridge needs it: its error is the fix-up's
            ll_minus = pw.column(i, minus_unc.reshape(-1, dim)).reshape(minus_unc.shape[:2])
        sol = solve_bridge(ll_full, ll_minus)
        diagnostics = exact_fix_checks(sol, ll_full, ll_minus)
        return FixedPoint(i, sol.log_r, float("nan") if unmixed else math.hypot(sol.se, spread),
                          "exact", task.khat, task.psis_elpd,
                          fit.n_gradient_evals, ll_full.size + ll_minus.size,
                          time.perf_counter() - t0,
                          warnings=warns + exact_fix_warnings(i, diagnostics),
                          diagnostics=diagnostics)
    res = log_ratio(held_out, pw.model, draws0=minus_unc, draws1=full_unc,
                    seed=stream_int_seed(seed, Stream.REFIT_ESTIMATOR), **task.ups_options)
    return FixedPoint(i, res.estimate, float("nan") if unmixed else math.hypot(res.se, spread),
                      "ups", task.khat, task.psis_elpd, fit.n_gradient_evals,
                      res.n_evals + res.n_evals_tuning + (0 if ll_minus is None
                                                          else ll_minus.size),
                      time.perf_counter() - t0, ci=(float(res.ci[0]), float(res.ci[1])),
                      warnings=warns + [f"observation {i + 1}: {w}" for w in res.warnings])


def fixed_variance(fixed: Sequence[FixedPoint]) -> float:
    """The Monte Carlo variance of the sum of the fixed values: each refit's se² (independent
    runs; the part from a log Z(full) shared by evidence-difference refits added linearly)
    plus, once, the squared joint se of the values from the one mixture run."""
    own = [f for f in fixed if SUM_SE not in f.diagnostics]
    shared = [float(f.diagnostics.get(SHARED_SE, 0.0)) for f in own]
    var = sum(max(f.mcse**2 - c * c, 0.0) for f, c in zip(own, shared, strict=True))
    var += sum(shared) ** 2  # one log Z(full) shared by evidence-difference refits
    joint = [f.diagnostics[SUM_SE] for f in fixed if SUM_SE in f.diagnostics]
    return float(var + (joint[0] ** 2 if joint else 0.0))
