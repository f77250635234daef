"""Predictive measures by LOO weights, as R loo 3.0's ``measure_*`` family: RPS and SRPS
(ordinal/discrete or continuous outcomes), Brier score, accuracy and balanced accuracy
(binary or categorical), MAE, MSE, RMSE and R², ArviZ's CRPS and SCRPS, and custom measures
(:class:`CustomMeasure`), each with a between-observation se and a Monte Carlo se.

Inputs are arrays: ``log_w`` ``(S, N)`` PSIS log weights of the leave-one-out posteriors
(:func:`~stanlogz.crossval.checks.predictive.loo_log_weights`; they need not be normalized),
``y`` ``(N,)``, posterior-predictive draws ``y_rep`` ``(S, N)``, optionally draws ``mu``
``(S, N)`` of a point prediction (E[y | θ], or P(y = 1 | θ) for a binary outcome) and class
probabilities ``probs`` ``(S, N, K)`` for a categorical outcome.

Definitions (w_s the normalized LOO weights of observation i, x_s = y_rep_si):

* ``rps`` = mean of EXy − ½ EXX (a loss), ``srps`` = mean of −EXy / EXX − ½ log EXX (a utility),
  with EXy = Σ_s w_s |x_s − y_i| and EXX the bias-corrected weighted probability-weighted-moment
  estimate Σ_{s≠t} w_s w_t |x_s − x_t| / (1 − Σ_s w_s²) of E|X − X'| (loo's ``measure_rps``;
  for an ordinal outcome EXy − ½ EXX equals Σ_k (F(k) − 1[y ≤ k])², the unnormalized RPS);
* ``crps``, ``scrps``: ArviZ's ``loo_score`` (utilities): ½ EXX' − EXy and −EXy / EXX' −
  ½ log EXX' with the plug-in EXX' = Σ_{s≠t} w_s w_t |x_s − x_t|;
* ``mae``, ``mse``, ``rmse``, ``r2``: errors of the LOO predictive mean μ_i = Σ_s w_s mu_si,
  R² = 1 − MSE / mean((y − ȳ)²);
* ``brier``: mean of (p_i − y_i)² for a binary outcome (p_i = μ_i) and of
  Σ_k (p_ik − 1[y_i = k])² for a categorical one;
* ``acc``: share of observations whose predicted class (μ_i > 0.5, or the most probable
  category) is the observed one; ``bacc``: the mean over the observed classes of that share.

se: sd / √N for the means; the delta method for RMSE and R² (loo's); for accuracy loo's
√(a(1 − a)/N) (per class for balanced accuracy) with a term for the predicted classes' own
uncertainty added in quadrature (:func:`_accuracy`; it vanishes away from class boundaries).
``se`` is loo's number; beside it ``se_parts["se_calibrated"]`` is the se to read ±2 of
(:mod:`~stanlogz.crossval.checks.measure_se`: the pointwise values' dependence through the shared
posterior and a small-N bootstrap-t factor; for accuracies the flip-aware se).
Monte Carlo se: each measure is a smooth function of PSIS-weighted expectations, so its Monte
Carlo error is the average over draws of one influence series (the delta method), whose se is
:func:`stanlogz.crossval.elpd.psis.total_mcse` (the one formula of PSIS sums' Monte Carlo se,
chains' autocorrelation included). Accuracies are step functions: their Monte Carlo se counts
each observation's chance of its predicted class flipping, Φ(−margin / mcse(margin)).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from ...errors import InputError
from ..elpd.psis import total_mcse
from .measure_se import calibrated_se
from .predictive import _weights

#: Built-in measures by name: True where the measure is a loss (lower is better).
MEASURES = {"rps": True, "srps": False, "crps": False, "scrps": False, "mae": True,
            "mse": True, "rmse": True, "r2": False, "brier": True, "acc": False,
            "bacc": False}


#: The most categories taken from y_rep draws (the class-indicator array is S x N x K).
MAX_CATEGORIES = 100


@dataclass
class Measure:
    """A predictive measure: its estimate, between-observation se, Monte Carlo se, pointwise
    values and each observation's influence on the estimate (estimate ≈ const + mean of the
    influence; paired differences between programs use it), and whether it is a loss."""

    name: str
    estimate: float
    se: float
    mcse: float
    pointwise: np.ndarray
    influence: np.ndarray
    loss: bool
    #: ses beside loo's ``se``: ``se_calibrated`` (every built-in and custom measure; the one
    #: to read ±2 of) and, for acc, bacc, ``se_binomial`` = ``se``, ``se_flip`` and
    #: ``se_flip_aware`` (both in quadrature)
    se_parts: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable dict."""
        return {"measure": self.name, "estimate": self.estimate, "se": self.se,
                "mcse": self.mcse, "loss": self.loss, **self.se_parts,
                "pointwise": self.pointwise.tolist()}


@dataclass
class CustomMeasure:
    """A measure given as a Python callable, averaged over observations.

    ``on="draws"``: ``fn(y (N,), y_rep (S, N)) -> (S, N)`` scores of each draw; the pointwise
    value is their LOO expectation Σ_s w_s h_si (e.g. ``lambda y, yr: (yr - y) ** 2``).
    ``on="mean"``: ``fn(y (N,), mu (N,)) -> (N,)``, elementwise in the LOO predictive mean
    (e.g. ``lambda y, m: np.abs(y - m) / np.abs(y)``); its Monte Carlo se uses a central
    difference of ``fn`` in μ. ``loss``: whether lower is better.
    """

    name: str
    fn: Callable[..., Any]
    on: str = "draws"
    loss: bool = True


def elpd_measure(elpd_i: Any, mcse: float = float("nan")) -> Measure:
    """elpd (the sum of pointwise LOO log predictive densities) as a :class:`Measure`, se
    √N sd (as ``loo``), with the Monte Carlo se of the LOO result it came from."""
    v = np.asarray(elpd_i, dtype=float).ravel()
    if v.size < 2 or not np.all(np.isfinite(v)):
        raise InputError("elpd needs at least two finite pointwise values")
    infl = v.size * (v - v.mean())
    return Measure("elpd", float(v.sum()), _se(infl), float(mcse), v, infl, False)


def _se(infl: np.ndarray) -> float:
    return float(np.std(infl, ddof=1) / math.sqrt(infl.size))


def _calibrated(infl: np.ndarray, g_obs: np.ndarray, w: np.ndarray, scale: float = 1.0
                ) -> dict[str, float]:
    """``se_parts`` of a smooth measure: the calibrated se beside loo's
    (:func:`~stanlogz.crossval.checks.measure_se.calibrated_se`)."""
    return {"se_calibrated": calibrated_se(infl, g_obs, w, scale)}


def _mean_measure(name: str, v: np.ndarray, g_obs: np.ndarray, w: np.ndarray, chains: int,
                  loss: bool | None = None) -> Measure:
    """A measure that is the mean of pointwise values ``v`` whose draw influence (∂v_i /
    ∂log w_si) is ``g_obs`` ``(S, N)``."""
    infl = v - v.mean()
    return Measure(name, float(v.mean()), _se(infl), _mcse(g_obs.sum(axis=1) / v.size, chains),
                   v, infl, MEASURES[name] if loss is None else loss, _calibrated(infl, g_obs, w))


def _mcse(g: np.ndarray, chains: int) -> float:
    """Monte Carlo se of an estimate whose draw influence is ``g`` ``(S,)``
    (:func:`~stanlogz.crossval.elpd.psis.total_mcse`; with fewer than 4 draws per chain the
    draws are taken as independent, sqrt(Σ g²))."""
    if not np.any(g != 0):
        return 0.0
    if g.size < 4 * chains:
        return float(np.sqrt(np.sum(g**2)))
    return float(total_mcse(g, chains))


def _pairs(x: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per column of draws ``x`` and normalized weights ``w`` ``(S, N)``: the plug-in
    Σ_{s,t} w_s w_t |x_s − x_t|, 1 − Σ_s w_s², and each draw's D_s = Σ_t w_t |x_s − x_t|
    ``(S, N)`` (sorted cumulative sums, O(S log S))."""
    order = np.argsort(x, axis=0, kind="stable")
    xs = np.take_along_axis(x, order, axis=0)
    ws = np.take_along_axis(w, order, axis=0)
    below = np.cumsum(ws, axis=0) - ws          # weight strictly before each sorted draw
    above = 1.0 - below - ws
    wx = ws * xs
    m_below = np.cumsum(wx, axis=0) - wx
    m_above = wx.sum(axis=0) - m_below - wx
    d_sorted = xs * (below - above) - (m_below - m_above)
    d = np.empty_like(d_sorted)
    np.put_along_axis(d, order, d_sorted, axis=0)
    plug = np.sum(w * d, axis=0)
    return plug, 1.0 - np.sum(w**2, axis=0), d


def _rank_scores(name: str, y: np.ndarray, yr: np.ndarray, w: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Pointwise rps/srps/crps/scrps and their draw influence ``(S, N)``."""
    dev = np.abs(yr - y)
    exy = np.sum(w * dev, axis=0)
    plug, denom, d = _pairs(yr, w)
    corrected = name in ("rps", "srps")
    if corrected and np.any(denom <= 0):
        raise InputError(f"{name} needs weight on more than one draw for every observation")
    scale = 1.0 / denom if corrected else np.ones_like(denom)
    exx = plug * scale
    g_exy = w * (dev - exy)
    g_exx = 2.0 * w * (d - plug) * scale
    if name in ("rps", "crps"):
        sign = 1.0 if name == "rps" else -1.0
        return sign * (exy - 0.5 * exx), sign * (g_exy - 0.5 * g_exx)
    if np.any(exx <= 0):
        raise InputError(f"{name} needs predictive draws that vary for every observation")
    value = -exy / exx - 0.5 * np.log(exx)
    return value, -g_exy / exx + g_exx * (exy / exx**2 - 0.5 / exx)


def _class_probs(y: np.ndarray, w: np.ndarray, y_rep: np.ndarray | None,
                 probs: np.ndarray | None, first: int) -> tuple[np.ndarray, np.ndarray,
                                                               np.ndarray]:
    """Categories ``(K,)``, LOO class probabilities ``(N, K)`` and per-draw class probability
    draws ``(S, N, K)`` of a categorical outcome."""
    if probs is not None:
        p = np.asarray(probs, dtype=float)
        if p.ndim != 3 or p.shape[:2] != w.shape:
            raise InputError(f"probs must be (draws, observations, categories) = "
                             f"({w.shape[0]}, {w.shape[1]}, K), got {p.shape}")
        cats = np.arange(first, first + p.shape[2], dtype=float)
    else:
        if y_rep is None:
            raise InputError("a categorical measure needs y_rep draws or class probabilities")
        cats = np.unique(np.concatenate([y, y_rep.ravel()]))
        if np.any(cats != np.round(cats)) or cats.size > MAX_CATEGORIES:
            raise InputError(f"acc, bacc and brier need a binary or categorical outcome (at "
                             f"most {MAX_CATEGORIES} integer categories), got {cats.size} "
                             "distinct values; pass class probabilities (probs) otherwise")
        p = (y_rep[:, :, None] == cats[None, None, :]).astype(float)
    if not np.all(np.isin(y, cats)):
        raise InputError(f"observed categories must be among {cats.tolist()}")
    return cats, np.einsum("sn,snk->nk", w, p), p


def _flip_series(margin: np.ndarray, dev: np.ndarray, coef: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Flip probabilities q_i = Φ(−margin_i / sd_i) ``(N,)`` of margins with draw deviations
    ``dev`` ``(S, N)`` (sd_i² = Σ_s dev_si²), and the draw series ``(S,)`` that sums each
    observation's flip error √(q_i(1 − q_i)) · ``coef_i`` along its standardized deviations
    (its sum of squares is Σ_i (…)² for independent flips, (Σ_i …)² for flips in lockstep)."""
    sd = np.sqrt(np.sum(dev**2, axis=0))
    pos = sd > 0
    safe = np.where(pos, sd, 1.0)
    q = np.where(pos, stats.norm.sf(np.abs(margin) / safe), 0.0)
    scale = np.where(pos, np.sqrt(q * (1 - q)) / safe, 0.0)
    return q, dev @ (scale * coef)


def _accuracy(name: str, y: np.ndarray, hit: np.ndarray, flip: np.ndarray,
              margin: np.ndarray, m_infl: np.ndarray, m_post: np.ndarray, chains: int
              ) -> Measure:
    """Accuracy or balanced accuracy from hits ``(N,)``, each hit's change when its predicted
    class flips to the runner-up (``flip``: −1 a hit lost, +1 a miss won, 0 a miss that stays
    one), the margins of the predicted class over the runner-up ``(N,)``, their Monte Carlo
    draw influence ``m_infl`` and their LOO posterior deviations ``m_post`` (√w_s (m_s − m),
    ``(S, N)``).

    se: the between-observation se of loo (√(a(1 − a)/N); per class for bacc) counts the
    outcomes' noise given the predicted classes, not the classes' own uncertainty: a
    prediction near the class boundary flips under new data (and leave-one-out flips a whole
    group's prediction against each left-out observation at the boundary), and the hits of
    observations that share parameters flip together. So a flip term is added in quadrature:
    observation i's prediction flips with probability q_i = Φ(−margin_i / sd_i), sd_i its LOO
    posterior sd (the sampling sd of the margin, Bernstein–von Mises), a change of ``flip_i``
    with sd √(q_i(1 − q_i)); the changes are summed as one series over posterior draws, so
    observations whose margins move together flip together. It vanishes where every margin
    is far from 0. ``se`` is loo's and arviz-stats' number (``se_binomial`` too); the
    flip-aware se stands beside it as ``se_flip_aware``.

    Monte Carlo se: the same construction with each margin's Monte Carlo sd (its draw
    influence), through :func:`~stanlogz.crossval.elpd.psis.total_mcse`."""
    n = y.size
    _, g_mc = _flip_series(margin, m_infl, flip)
    _, g_post = _flip_series(margin, m_post, flip)
    if name == "acc":
        a = float(hit.mean())
        se_b = math.sqrt(a * (1 - a) / n)
        se_f = float(np.sqrt(np.sum(g_post**2))) / n
        return Measure(name, a, se_b, _mcse(g_mc / n, chains), hit, hit - a, False,
                       _flip_parts(se_b, se_f))
    classes, idx, n_c = np.unique(y, return_inverse=True, return_counts=True)
    k = classes.size
    if k < 2:
        raise InputError("balanced accuracy needs at least two observed classes")
    acc_c = np.bincount(idx, weights=hit) / n_c
    se_b = math.sqrt(float(np.sum(acc_c * (1 - acc_c) / n_c))) / k
    per = k * n_c[idx]
    _, g_mc = _flip_series(margin, m_infl, flip / per)
    _, g_post = _flip_series(margin, m_post, flip / per)
    se_f = float(np.sqrt(np.sum(g_post**2)))
    return Measure(name, float(acc_c.mean()), se_b, _mcse(g_mc, chains), hit / per,
                   (hit - acc_c[idx]) * n / per, False, _flip_parts(se_b, se_f))


def _flip_parts(se_b: float, se_f: float) -> dict[str, float]:
    """The se beside loo's: its binomial part, the flip term, and both in quadrature
    (``se_flip_aware``, stanlogz's own name: ``se`` stays loo's and arviz-stats' number)."""
    se = math.hypot(se_b, se_f)
    return {"se_binomial": se_b, "se_flip": se_f, "se_flip_aware": se, "se_calibrated": se}


def _classify(name: str, y: np.ndarray, w: np.ndarray, y_rep: np.ndarray | None,
              mu: np.ndarray | None, probs: np.ndarray | None, first: int, chains: int
              ) -> Measure:
    """acc, bacc or brier of a binary (0/1) or categorical outcome."""
    n = y.size
    binary = probs is None and np.all(np.isin(y, (0.0, 1.0))) and (
        mu is not None or y_rep is not None and np.all(np.isin(y_rep, (0.0, 1.0))))
    if binary:
        m = mu if mu is not None else y_rep
        if np.any((m < 0) | (m > 1)):
            raise InputError(f"{name} of a binary outcome needs probabilities in [0, 1]")
        p = np.sum(w * m, axis=0)
        if name == "brier":
            return _mean_measure(name, (p - y) ** 2, 2.0 * (p - y) * w * (m - p), w, chains)
        hit = ((p > 0.5).astype(float) == y).astype(float)
        margin, dev = np.abs(p - 0.5), np.sign(p - 0.5) * (m - p)
        flip = 1.0 - 2.0 * hit                       # binary: a miss flips to a hit
        return _accuracy(name, y, hit, flip, margin, w * dev, np.sqrt(w) * dev, chains)
    else:
        cats, pk, draws = _class_probs(y, w, y_rep, probs, first)
        onehot = (y[:, None] == cats[None, :]).astype(float)
        if name == "brier":
            g = np.einsum("nk,sn,snk->sn", 2.0 * (pk - onehot), w, draws - pk[None])
            return _mean_measure(name, np.sum((pk - onehot) ** 2, axis=1), g, w, chains)
        top2 = np.argsort(-pk, axis=1, kind="stable")[:, :2]
        hit = (cats[top2[:, 0]] == y).astype(float)
        rows = np.arange(n)
        diff = (np.take_along_axis(draws, top2[None, :, :1], axis=2)[..., 0]
                - np.take_along_axis(draws, top2[None, :, 1:], axis=2)[..., 0])
        margin = pk[rows, top2[:, 0]] - pk[rows, top2[:, 1]]
        flip = np.where(hit > 0, -1.0, (cats[top2[:, 1]] == y).astype(float))
        return _accuracy(name, y, hit, flip, margin, w * (diff - margin),
                         np.sqrt(w) * (diff - margin), chains)


def _point(name: str, y: np.ndarray, w: np.ndarray, m: np.ndarray, chains: int) -> Measure:
    """mae, mse, rmse or r2 of the LOO predictive mean of ``m``."""
    n = y.size
    mu = np.sum(w * m, axis=0)
    e = y - mu
    centred = w * (m - mu)                      # each draw's influence on μ_i
    if name == "mae":
        return _mean_measure(name, np.abs(e), centred * -np.sign(e), w, chains)
    v = e**2
    mse = float(v.mean())
    g_obs = centred * (-2.0 * e)
    g_mse = g_obs.sum(axis=1) / n
    if name == "mse":
        return _mean_measure(name, v, g_obs, w, chains)
    if name == "rmse":
        r = math.sqrt(mse)
        infl = (v - mse) / (2 * r) if r > 0 else np.zeros(n)
        return Measure(name, r, _se(infl), _mcse(g_mse / (2 * r), chains) if r > 0 else 0.0,
                       v, infl, True, _calibrated(infl, g_obs, w, 1 / (2 * r) if r > 0 else 0))
    sy = (y - y.mean()) ** 2
    vy = float(sy.mean())
    if vy <= 0:
        raise InputError("r2 is undefined when the outcome does not vary")
    infl = -((v - mse) - (mse / vy) * (sy - vy)) / vy
    return Measure(name, 1.0 - mse / vy, _se(infl), _mcse(-g_mse / vy, chains), v, infl, False,
                   _calibrated(infl, g_obs, w, -1.0 / vy))


def _custom(c: CustomMeasure, y: np.ndarray, w: np.ndarray, yr: np.ndarray | None,
            m: np.ndarray | None, chains: int) -> Measure:
    n = y.size
    if c.on == "draws":
        if yr is None:
            raise InputError(f"custom measure {c.name!r} (on draws) needs y_rep")
        h = np.asarray(c.fn(y, yr), dtype=float)
        if h.shape != w.shape or not np.all(np.isfinite(h)):
            raise InputError(f"custom measure {c.name!r} must return finite (draws, "
                             f"observations) = {w.shape} values, got {h.shape}")
        v = np.sum(w * h, axis=0)
        g_obs = w * (h - v)
    elif c.on == "mean":
        if m is None:
            raise InputError(f"custom measure {c.name!r} (on the mean) needs mu or y_rep")
        mu = np.sum(w * m, axis=0)
        v = np.asarray(c.fn(y, mu), dtype=float)
        if v.shape != (n,) or not np.all(np.isfinite(v)):
            raise InputError(f"custom measure {c.name!r} must return {n} finite values, got "
                             f"shape {v.shape}")
        step = 1e-6 * (1.0 + np.abs(mu))
        deriv = (np.asarray(c.fn(y, mu + step), dtype=float)
                 - np.asarray(c.fn(y, mu - step), dtype=float)) / (2 * step)
        g_obs = w * (m - mu) * deriv
    else:
        raise InputError(f"custom measure {c.name!r}: on must be 'draws' or 'mean', got "
                         f"{c.on!r}")
    return _mean_measure(c.name, v, g_obs, w, chains, bool(c.loss))


def loo_measures(log_w: Any, y: Any, y_rep: Any = None,
                 measures: Sequence[str | CustomMeasure] = ("rps", "srps"), *,
                 mu: Any = None, probs: Any = None, first_category: int = 1,
                 chains: int = 1) -> list[Measure]:
    """The ``measures`` (names of :data:`MEASURES` or :class:`CustomMeasure`) of the LOO
    predictive distributions given by the PSIS log weights ``log_w`` ``(S, N)``.

    ``y_rep`` ``(S, N)``: posterior-predictive draws (rps, srps, crps, scrps, and the point
    prediction when ``mu`` is not given); ``mu`` ``(S, N)``: draws of the point prediction
    (mae, mse, rmse, r2; P(y = 1) for a binary acc, bacc, brier); ``probs`` ``(S, N, K)``:
    class probabilities of a categorical outcome whose categories are ``first_category`` ...
    (without them the classes come from ``y_rep``). ``chains``: the draws are that many
    chains, chain-major (their autocorrelation enters the Monte Carlo se).

    Parameters
    ----------
    log_w : array_like
        PSIS log weights ``(S, N)`` of the leave-one-out posteriors (need not be normalized).
    y : array_like
        The observations ``(N,)``.
    y_rep : array_like, optional
        Posterior-predictive draws ``(S, N)``.
    measures : sequence of str or CustomMeasure
        Names among :data:`MEASURES` and custom measures, each at most once.
    mu, probs : array_like, optional
        Draws of the point prediction ``(S, N)``; class probabilities ``(S, N, K)``.
    first_category : int
        The label of the first category of ``probs`` (1 as in Stan's ``categorical``).
    chains : int
        The number of chains the draws are made of (chain-major).

    Returns
    -------
    list of Measure
        One per measure, in the order asked.

    Raises
    ------
    InputError
        An unknown measure, arrays of the wrong shape or not finite, a measure without the
        inputs it needs (e.g. rps without ``y_rep``), an undefined value (R² of a constant
        outcome, balanced accuracy with one observed class).

    Examples
    --------
    >>> import numpy as np
    >>> from stanlogz.crossval.checks.measures import loo_measures
    >>> pmf = np.array([0.1, 0.2, 0.3, 0.4])          # one observation's LOO predictive
    >>> draws = np.arange(1.0, 5.0)[:, None] * np.ones((1, 2))
    >>> lw = np.log(pmf)[:, None] * np.ones((1, 2))
    >>> crps = loo_measures(lw, [3.0, 4.0], draws, ["crps"])[0]
    >>> [round(float(v), 4) for v in crps.pointwise]   # −Σ_k (F(k) − 1[y ≤ k])²
    [-0.26, -0.46]
    """
    yv = np.asarray(y, dtype=float).ravel()
    w = _weights(log_w, yv.size)
    s = w.shape[0]

    def draws(a: Any, what: str) -> np.ndarray | None:
        if a is None:
            return None
        x = np.asarray(a, dtype=float)
        if x.shape != (s, yv.size) or not np.all(np.isfinite(x)):
            raise InputError(f"{what} must be finite (draws, observations) = {(s, yv.size)}, "
                             f"got {x.shape}")
        return x

    yr, m = draws(y_rep, "y_rep"), draws(mu, "mu")
    if yv.size < 2 or not np.all(np.isfinite(yv)):
        raise InputError("measures need at least two finite observations")
    if chains < 1 or s % chains:
        raise InputError(f"{s} draws cannot be {chains} chains of equal length")
    out = []
    for meas in measures:
        if isinstance(meas, CustomMeasure):
            out.append(_custom(meas, yv, w, yr, m if m is not None else yr, chains))
            continue
        if meas not in MEASURES:
            raise InputError(f"unknown measure {meas!r}; choose from {', '.join(MEASURES)} "
                             "or pass a CustomMeasure")
        if meas in ("rps", "srps", "crps", "scrps"):
            if yr is None:
                raise InputError(f"{meas} needs posterior-predictive draws y_rep")
            v, g = _rank_scores(meas, yv, yr, w)
            out.append(_mean_measure(meas, v, g, w, chains))
        elif meas in ("acc", "bacc", "brier"):
            out.append(_classify(meas, yv, w, yr, m, probs, first_category, chains))
        else:
            point = m if m is not None else yr
            if point is None:
                raise InputError(f"{meas} needs draws of the point prediction (mu or y_rep)")
            out.append(_point(meas, yv, w, point, chains))
    return out
