"""Model weights: stacking of LOO predictive distributions and pseudo-BMA(+) (Yao, Vehtari,
Simpson & Gelman 2018), and Bayesian model averaging from log evidence.

Every function takes plain arrays: ``elpd_i`` is the ``(N, K)`` matrix of pointwise LOO log
predictive densities of K programs on the same N observations.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import minimize
from scipy.special import logsumexp, softmax

from ..._util.arrays import finite_array
from ..._util.seeds import SeedLike, Stream, stream_int_seed
from ...errors import InputError
from ...estimators.comparison import probs_se

#: Weight methods by the names ``weights`` takes.
WEIGHT_METHODS = ("stacking", "pseudo-bma", "pseudo-bma+", "bma")


@dataclass
class ModelWeights:
    """Weights of K programs (summing to one) with a standard error per weight.

    ``se`` is the uncertainty from the finite data (Bayesian bootstrap spread for stacking and
    pseudo-BMA+, delta method for pseudo-BMA and BMA); ``mcse`` is the Monte Carlo error of a
    bootstrap average (0 where nothing is simulated).
    """

    method: str
    weights: np.ndarray
    se: np.ndarray
    mcse: np.ndarray
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self, names: Sequence[str] | None = None) -> dict[str, Any]:
        """A JSON-serializable dict (weights keyed by program name when ``names`` are given)."""
        keys = list(names) if names is not None else [str(i) for i in range(self.weights.size)]
        return {"method": self.method,
                "weights": dict(zip(keys, map(float, self.weights), strict=True)),
                "se": dict(zip(keys, map(float, self.se), strict=True)),
                "mcse": dict(zip(keys, map(float, self.mcse), strict=True)),
                **{k: v for k, v in self.details.items() if not k.startswith("_")}}


def check_elpd_matrix(elpd_i: Any) -> np.ndarray:
    """``elpd_i`` as a finite ``(N, K)`` float array with K >= 2 programs."""
    return finite_array(elpd_i, "pointwise elpd",
                        "(observations, programs) with at least two programs",
                        lambda s: len(s) == 2 and s[0] >= 1 and s[1] >= 2)


def stacking_objective(weights: np.ndarray, elpd_i: np.ndarray) -> float:
    """Σ_i log Σ_k w_k exp(elpd_ik): the log score of the weighted mixture of LOO predictives."""
    with np.errstate(divide="ignore"):
        return float(np.sum(logsumexp(elpd_i + np.log(np.asarray(weights, float)), axis=1)))


def _solve_stacking(elpd_i: np.ndarray, obs_weights: np.ndarray | None = None,
                    start: np.ndarray | None = None, ftol: float = 1e-15,
                    polish: int = 200) -> np.ndarray:
    """argmax over the simplex of Σ_i c_i log Σ_k w_k exp(elpd_ik) (c_i = 1 by default).

    The objective is concave in w; rows are rescaled by their maximum (which shifts the
    objective by a constant), then SLSQP with tight tolerances, then multiplicative EM steps
    polish the weights (each step keeps them on the simplex and never lowers the objective).
    ``start``: initial weights (default uniform); ``ftol`` and ``polish`` (EM steps) trade
    precision for speed.
    """
    n, k = elpd_i.shape
    c = np.ones(n) if obs_weights is None else np.asarray(obs_weights, dtype=float)
    p = np.exp(elpd_i - elpd_i.max(axis=1, keepdims=True))  # (N, K), row max 1

    def f(w: np.ndarray) -> float:
        return -float(c @ np.log(np.maximum(p @ w, 1e-300)))

    def g(w: np.ndarray) -> np.ndarray:
        return -((c / np.maximum(p @ w, 1e-300)) @ p)

    w0 = np.full(k, 1.0 / k) if start is None else np.asarray(start, dtype=float)
    res = minimize(f, w0, jac=g, method="SLSQP", bounds=[(0.0, 1.0)] * k,
                   constraints=[{"type": "eq", "fun": lambda w: np.sum(w) - 1.0,
                                 "jac": lambda w: np.ones_like(w)}],
                   options={"ftol": ftol, "maxiter": 1000})
    w = np.clip(np.asarray(res.x, dtype=float), 0.0, None)
    w = w / w.sum() if w.sum() > 0 else np.full(k, 1.0 / k)
    total = c.sum()
    for _ in range(polish):  # EM (fixed point of the KKT conditions): w_k <- w_k * grad_k / Σc
        w_new = w * ((c / (p @ w)) @ p) / total
        w_new /= w_new.sum()
        if np.max(np.abs(w_new - w)) < 1e-13:
            w = w_new
            break
        w = w_new
    w[w < 1e-10] = 0.0  # EM only shrinks a zero-optimum weight geometrically
    return w / w.sum()


def stacking_weights(elpd_i: Any, *, n_boot: int = 200, seed: int | None = None
                     ) -> ModelWeights:
    """Stacking weights: the w on the simplex that maximize Σ_i log Σ_k w_k exp(elpd_ik).

    ``se`` is the spread of the weights re-solved on ``n_boot`` Bayesian-bootstrap reweightings
    of the observations (Dirichlet(1, ..., 1) weights times N), i.e. how much the weights
    would move with other data of the same size; ``n_boot=0`` skips it.
    """
    e = check_elpd_matrix(elpd_i)
    n, k = e.shape
    w = _solve_stacking(e)
    p = np.exp(e - e.max(axis=1, keepdims=True))
    grad = (1.0 / (p @ w)) @ p  # KKT: grad_k = N where w_k > 0, <= N where w_k = 0
    kkt = float(np.max(np.abs(grad[w > 1e-8] - n)) / n) if np.any(w > 1e-8) else 0.0
    se = np.zeros(k)
    if n_boot > 0:
        rng = np.random.default_rng(seed)
        # warm-started at the optimum, to 1e-10 in the score: the spread needs ~1% precision
        boots = np.array([_solve_stacking(e, n * rng.dirichlet(np.ones(n)), start=w,
                                          ftol=1e-10, polish=20) for _ in range(n_boot)])
        se = boots.std(axis=0, ddof=1)
    return ModelWeights("stacking", w, se, np.zeros(k),
                        {"log_score": stacking_objective(w, e), "kkt_gap": kkt,
                         "n_boot": int(n_boot)})


def pseudo_bma_weights(elpd_i: Any, *, plus: bool = True, n_boot: int = 1000,
                       seed: int | None = None, dirichlet: np.ndarray | None = None
                       ) -> ModelWeights:
    """Pseudo-BMA weights w_k ∝ exp(elpd_loo_k) (``plus=False``) or pseudo-BMA+ weights:
    the average over Bayesian-bootstrap draws b ~ Dirichlet(1, ..., 1) of softmax_k of
    N Σ_i b_i elpd_ik (Yao et al. 2018, eq. 9), which regularizes the weights by the
    uncertainty of the elpd estimates.

    ``dirichlet``: optional ``(B, N)`` bootstrap draws to use instead of fresh ones (to
    reproduce another implementation's draws). Pseudo-BMA+: ``se`` is the bootstrap sd of
    the per-draw weights and ``mcse`` = se / sqrt(B) the Monte Carlo error of their mean.
    Pseudo-BMA: ``se`` by the delta method with the paired covariance N cov(elpd_ik, elpd_ij).
    """
    e = check_elpd_matrix(elpd_i)
    n, k = e.shape
    if not plus:
        elpd = e.sum(axis=0)
        w = softmax(elpd)
        cov = n * np.cov(e, rowvar=False, bias=True)
        jac = np.diag(w) - np.outer(w, w)
        se = np.sqrt(np.clip(np.diag(jac @ cov @ jac.T), 0.0, None))
        return ModelWeights("pseudo-bma", w, se, np.zeros(k), {})
    if dirichlet is None:
        if n_boot < 2:
            raise InputError(f"pseudo-BMA+ needs n_boot >= 2 bootstrap draws, got {n_boot}")
        b = np.random.default_rng(seed).dirichlet(np.ones(n), size=n_boot)
    else:
        b = np.asarray(dirichlet, dtype=float)
        if b.ndim != 2 or b.shape[1] != n or b.shape[0] < 2:
            raise InputError(f"bootstrap draws must be (B >= 2, {n}), got {b.shape}")
    z = n * (b @ e)  # (B, K): bootstrapped elpd_loo
    per_draw = softmax(z, axis=1)
    w = per_draw.mean(axis=0)
    sd = per_draw.std(axis=0, ddof=1)
    return ModelWeights("pseudo-bma+", w, sd, sd / math.sqrt(b.shape[0]),
                        {"n_boot": int(b.shape[0]), "elpd_boot_sd": z.std(axis=0).tolist()})


def pointwise_weights(elpd_i: Any, methods: Sequence[str], *, n_boot: int = 1000,
                      seed: SeedLike = None) -> dict[str, ModelWeights]:
    """The weights among ``methods`` (``stacking``, ``pseudo-bma``, ``pseudo-bma+``; others
    are skipped) from the ``(units, K)`` pointwise values of K programs (observations, or
    groups for leave-one-group-out): stacking's se from ``n_boot // 5`` re-solved bootstrap
    draws, pseudo-BMA+ from ``n_boot``, each on its own named stream of ``seed``
    (:class:`~stanlogz._util.seeds.Stream`: ``STACKING``, ``PSEUDO_BMA``)."""
    out: dict[str, ModelWeights] = {}
    if "stacking" in methods:
        out["stacking"] = stacking_weights(elpd_i, n_boot=max(n_boot // 5, 2),
                                           seed=stream_int_seed(seed, Stream.STACKING))
    if "pseudo-bma" in methods:
        out["pseudo-bma"] = pseudo_bma_weights(elpd_i, plus=False)
    if "pseudo-bma+" in methods:
        out["pseudo-bma+"] = pseudo_bma_weights(elpd_i, n_boot=n_boot,
                                                seed=stream_int_seed(seed, Stream.PSEUDO_BMA))
    return out


def bma_weights(log_z: Any, log_z_se: Any, prior_probs: Any = None) -> ModelWeights:
    """Posterior model probabilities softmax(log Z_k + log prior_k) with delta-method standard
    errors from the (independent) log Z estimates: var p_i = Σ_j (p_i (δ_ij − p_j))² se_j²."""
    lz = np.asarray(log_z, dtype=float)
    se = np.asarray(log_z_se, dtype=float)
    k = lz.size
    if lz.ndim != 1 or k < 2 or se.shape != lz.shape:
        raise InputError(f"BMA weights need log Z and its se for at least two programs, got "
                         f"{lz.shape} and {se.shape}")
    if not np.all(np.isfinite(lz)):
        raise InputError("BMA weights need finite log Z estimates")
    prior = np.full(k, 1.0 / k) if prior_probs is None else np.asarray(prior_probs, float)
    if prior.shape != (k,) or np.any(prior <= 0):
        raise InputError(f"prior probabilities must be {k} positive numbers")
    p = softmax(lz + np.log(prior / prior.sum()))
    details: dict[str, Any] = {"prior_probs": prior.tolist()}
    unknown = np.flatnonzero(~np.isfinite(se))
    if unknown.size:
        details["log_z_se_unknown"] = unknown.tolist()
    return ModelWeights("bma", p, probs_se(p, se), np.zeros(k), details)
