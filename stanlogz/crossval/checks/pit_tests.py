"""Dependence-aware uniformity tests of PIT values (Tesso & Vehtari 2026, "LOO-PIT predictive
model checking"), as R posterior 1.7's ``uniformity_test`` and arviz-stats' ``pot_c``,
``piet_c`` and ``prit_c`` define them.

Each test turns the n PIT values u_1..u_n into n pointwise two-sided p-values, combines them by
the Cauchy combination test (Liu & Xie 2020), truncated or not (Chen, Xu & Gao 2025), and
splits the evidence among the observations by Shapley values:

* **POT** (pointwise order tests): the i-th smallest value u_(i) of n uniforms is
  Beta(i, n − i + 1); p_(i) = 2 min(F(u_(i)), 1 − F(u_(i))). Truncated combination.
* **PIET** (pointwise inverse-CDF evaluation tests): −log u_i is Exp(1) under uniformity, whose
  CDF at −log u_i is 1 − u_i; p_i = 2 min(u_i, 1 − u_i). Untruncated combination.
* **PRIT** (pointwise rank-based individual tests): k_i = #{j: u_j ≤ u_i} is compared with
  Binomial(n, u_i) by the mid-p value m_i = P(K < k_i) + ½ P(K = k_i);
  p_i = 2 min(m_i, 1 − m_i). Truncated combination.

Combination: with c_i = tan((½ − p_i) π) (standard Cauchy under each pointwise null), the
statistic is T = mean_i c_i (untruncated) or T = mean_i c_i 1[p_i < ½] (truncated: p-values
above ½ carry no evidence and count as 0, not as large negative terms), and the p-value is the
standard Cauchy tail 1/2 − arctan(T)/π. Shapley values of the game v(S) = mean_{i∈S} c_i (the
untruncated Cauchy values) in closed form: φ_i = c_i / n + (H_n − 1)/n · (c_i − mean_{j≠i} c_j),
H_n the n-th harmonic number; they sum to mean_i c_i, and a positive φ_i marks an observation
that pushes toward rejection. They are returned per observation (the input's order), where R
returns them in the order of the sorted PIT values.

The p-values are the analytic Cauchy ones, as posterior and arviz-stats report them. LOO-PIT
values are dependent; :mod:`stanlogz.crossval.checks.pit_null` calibrates each statistic by
simulation for that dependence (``p_value_calibrated``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from scipy import special

from ...errors import InputError
from .pit_null import effective_params, grid_floor, null_pit, randomized_null_pit, tail_p_value

#: The dependence-aware tests by their lower-case names, and whether each truncates by default.
DEPENDENCE_AWARE_TESTS = {"pot": True, "piet": False, "prit": True}


def _values(pit: Any) -> np.ndarray:
    u = np.asarray(pit, dtype=float).ravel()
    if u.size < 2:
        raise InputError("a uniformity test needs at least two PIT values")
    if not np.all(np.isfinite(u)) or np.any((u < 0) | (u > 1)):
        raise InputError("PIT values must be finite and in [0, 1]")
    return u


def _pointwise(u: np.ndarray, test: str) -> np.ndarray:
    """Pointwise p-values of each row of ``u`` ``(m, n)`` in the rows' own order."""
    n = u.shape[1]
    if test == "piet":
        # the Exp(1) CDF at -log u is 1 - u (exactly; posterior computes it through pexp)
        cdf = 1.0 - u
        return 2.0 * np.minimum(cdf, 1.0 - cdf)
    order = np.argsort(u, axis=1, kind="stable")
    s = np.take_along_axis(u, order, axis=1)
    if test == "pot":
        i = np.arange(1, n + 1)
        cdf = special.betainc(i, n - i + 1, s)
        p_sorted = 2.0 * np.minimum(cdf, 1.0 - cdf)
    else:  # prit: k = #{u_j <= u_i}, mid-p under Binomial(n, u_i)
        # k at sorted position j: 1 + the last position of s_j's run of equal values
        j = np.arange(n)
        ends = np.where(np.concatenate([s[:, 1:] != s[:, :-1], np.ones((len(s), 1), bool)],
                                       axis=1), j, n)
        k = np.minimum.accumulate(ends[:, ::-1], axis=1)[:, ::-1] + 1
        # mid-p P(K < k) + ½ P(K = k) = P(K ≤ k) − ½ P(K = k), with P(K ≤ k) =
        # I_{1−u}(n − k, k + 1) (1 at k = n) and the pmf from log-gamma (faster than
        # scipy.stats.binom's cdf twice, which dominated the simulated nulls' cost)
        cdf = np.where(k >= n, 1.0, special.betainc(np.maximum(n - k, 1), k + 1, 1.0 - s))
        # log C(n, k) looked up for the n + 1 values of k (the same sums, element by element)
        m = np.arange(n + 1)
        log_choose = special.gammaln(n + 1) - special.gammaln(m + 1) - special.gammaln(n - m + 1)
        log_pmf = log_choose[k] + special.xlogy(k, s) + special.xlog1py(n - k, -s)
        mid = cdf - 0.5 * np.exp(log_pmf)
        p_sorted = 2.0 * np.minimum(mid, 1.0 - mid)
    out = np.empty_like(p_sorted)
    np.put_along_axis(out, order, p_sorted, axis=1)
    return out


def pot_pvalues(pit: Any) -> np.ndarray:
    """Pointwise order-test p-values, each observation getting the p-value of its rank's order
    statistic (ties broken by position)."""
    return _pointwise(_values(pit)[None, :], "pot")[0]


def piet_pvalues(pit: Any) -> np.ndarray:
    """Pointwise inverse-CDF (exponential) evaluation p-values 2 min(u, 1 − u)."""
    return _pointwise(_values(pit)[None, :], "piet")[0]


def prit_pvalues(pit: Any) -> np.ndarray:
    """Pointwise rank-based mid-p values of k_i = #{u_j ≤ u_i} under Binomial(n, u_i)."""
    return _pointwise(_values(pit)[None, :], "prit")[0]


_PVALUES = {"pot": pot_pvalues, "piet": piet_pvalues, "prit": prit_pvalues}


def combined_statistics(u: np.ndarray, test: str, truncate: bool, cap: float = 1.0
                        ) -> np.ndarray:
    """The combined Cauchy statistic of each row of PIT values ``u`` ``(m, n)``, the pointwise
    p-values capped at ``cap``."""
    p = np.minimum(_pointwise(np.atleast_2d(np.asarray(u, dtype=float)), test), cap)
    c = cauchy_values(np.clip(p, 1e-300, 1.0))
    if truncate:
        c = np.where(p < 0.5, c, 0.0)
    with np.errstate(invalid="ignore"):
        return np.mean(c, axis=1)


def cauchy_values(p_values: Any) -> np.ndarray:
    """tan((½ − p) π): standard Cauchy when p is U(0, 1); +inf at p = 0."""
    p = np.asarray(p_values, dtype=float)
    with np.errstate(over="ignore"):
        c = np.tan((0.5 - p) * np.pi)
    return np.where(p <= 0.0, np.inf, np.where(p >= 1.0, -np.inf, c))


def cauchy_combination_test(p_values: Any, truncate: bool = True) -> tuple[float, float]:
    """The (truncated) Cauchy combination of p-values: statistic T (mean of the Cauchy values,
    those of p ≥ ½ set to 0 when ``truncate``) and its p-value 1/2 − arctan(T)/π."""
    p = np.asarray(p_values, dtype=float).ravel()
    if p.size == 0 or not np.all((p >= 0) & (p <= 1)):
        raise InputError("the Cauchy combination needs p-values in [0, 1]")
    c = cauchy_values(p)
    if truncate:
        c = np.where(p < 0.5, c, 0.0)
    if np.any(np.isposinf(c)):
        return math.inf, 0.0
    t = float(np.mean(c)) if np.all(np.isfinite(c)) else -math.inf
    return t, float(0.5 - math.atan(t) / math.pi)


def shapley_contributions(cauchy: Any) -> np.ndarray:
    """Shapley values of the game v(S) = mean of ``cauchy`` over S, in closed form
    φ_i = c_i/n + (H_n − 1)/n · (c_i − mean_{j≠i} c_j) (0 for a single player)."""
    c = np.asarray(cauchy, dtype=float).ravel()
    n = c.size
    if n <= 1:
        return np.zeros(n)
    harmonic = float(np.sum(1.0 / np.arange(1, n + 1)))
    others = (np.sum(c) - c) / (n - 1)
    return c / n + (harmonic - 1.0) / n * (c - others)


@dataclass
class PitTest:
    """A dependence-aware uniformity test of PIT values."""

    #: "pot", "piet" or "prit"
    test: str
    #: combined Cauchy statistic T
    statistic: float
    #: analytic Cauchy p-value (posterior's ``pvalue``, arviz-stats' p-value)
    p_value: float
    n: int
    truncate: bool
    #: pointwise p-values, one per observation (NaN where left out)
    pointwise_p: np.ndarray
    #: Shapley contributions to the statistic, one per observation (NaN where left out)
    contributions: np.ndarray
    #: p-value under the simulated null of dependent LOO-PIT values (None: not computed)
    p_value_calibrated: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable dict (NaN entries as None)."""
        def clean(v: np.ndarray) -> list[float | None]:
            return [float(x) if np.isfinite(x) else None for x in v]
        return {"test": self.test, "statistic": self.statistic, "p_value": self.p_value,
                "p_value_calibrated": self.p_value_calibrated, "n": self.n,
                "truncate": self.truncate, "pointwise_p": clean(self.pointwise_p),
                "contributions": clean(self.contributions)}

    def drivers(self, alpha: float = 0.05, gamma: float = 0.0) -> np.ndarray:
        """Observations (0-based) whose contribution exceeds ``gamma`` when the test rejects at
        ``alpha`` (the calibrated p-value where there is one); empty otherwise."""
        p = self.p_value if self.p_value_calibrated is None else self.p_value_calibrated
        if not p < alpha:
            return np.array([], dtype=int)
        return np.flatnonzero(np.nan_to_num(self.contributions, nan=-np.inf) > gamma)


def uniformity_test(pit: Any, test: str = "pot", truncate: bool | None = None,
                    p_loo: float | None = None, calibrate: bool = False,
                    floor: float = 0.0, widths: Any = None) -> PitTest:
    """One of the dependence-aware tests ``"pot"``, ``"piet"``, ``"prit"`` (module docstring)
    of the PIT values (NaN values are left out, their entries NaN).

    Parameters
    ----------
    pit : array_like
        PIT values in [0, 1].
    test : {"pot", "piet", "prit"}
        The pointwise tests.
    truncate : bool, optional
        Truncated Cauchy combination; default as posterior: True for POT and PRIT, False for
        PIET.
    p_loo : float, optional
        With ``calibrate``: the model's p_loo, for the simulated null of its LOO-PIT values
        (None: independent values).
    calibrate : bool, default False
        Also compute ``p_value_calibrated`` under the simulated null
        (:mod:`stanlogz.crossval.checks.pit_null`).
    floor : float, default 0
        With ``calibrate``: the PIT values' resolution (a PIT estimated from draws lies within
        half the largest weight of 0 and 1; :func:`pit_floor`).
    widths : array_like, optional
        With ``calibrate``, for a randomized PIT: each observation's P(ỹ_i = y_i)
        (:func:`randomization_widths`), NaN entries where the PIT is NaN.

    Returns
    -------
    PitTest
        The statistic, the analytic p-value, the pointwise p-values and the Shapley
        contributions per observation.
    """
    name = str(test).lower()
    if name not in DEPENDENCE_AWARE_TESTS:
        raise InputError(f"uniformity test must be one of {', '.join(DEPENDENCE_AWARE_TESTS)}, "
                         f"got {test!r}")
    trunc = DEPENDENCE_AWARE_TESTS[name] if truncate is None else bool(truncate)
    raw = np.asarray(pit, dtype=float).ravel()
    ok = np.isfinite(raw)
    u = _values(raw[ok])
    p = _PVALUES[name](u)
    stat, pval = cauchy_combination_test(p, truncate=trunc)
    pointwise = np.full(raw.size, np.nan)
    pointwise[ok] = p
    contrib = np.full(raw.size, np.nan)
    contrib[ok] = shapley_contributions(cauchy_values(np.clip(p, 1e-300, 1.0 - 1e-16)))
    out = PitTest(name, stat, pval, int(u.size), trunc, pointwise, contrib)
    if calibrate:

        wv = None if widths is None else np.asarray(widths, dtype=float).ravel()[ok]
        out.p_value_calibrated = calibrated_test_p_value(name, trunc, u, p_loo, floor, wv)
    return out


def pit_tests(pit: Any, p_loo: float | None = None, calibrate: bool = True,
              floor: float = 0.0, widths: Any = None) -> dict[str, PitTest]:
    """POT, PIET and PRIT of the same PIT values, each with its default truncation."""
    return {t: uniformity_test(pit, t, p_loo=p_loo, calibrate=calibrate, floor=floor,
                               widths=widths)
            for t in DEPENDENCE_AWARE_TESTS}


def randomization_widths(log_w: Any, y: Any, y_rep: Any) -> np.ndarray:
    """Each observation's LOO predictive probability of its observed value, Σ_s w_is
    1[y_rep_si = y_i]: the width of the bar a randomized PIT is drawn on."""
    lw = np.asarray(log_w, dtype=float)
    w = np.exp(lw - special.logsumexp(lw, axis=0, keepdims=True))
    yv = np.asarray(y, dtype=float).ravel()
    return np.sum(w * (np.asarray(y_rep, dtype=float) == yv), axis=0)


def pit_floor(log_w: Any) -> float:
    """The resolution of LOO-PIT values estimated from PSIS log weights ``(S, N)``: the largest
    over observations of half the largest normalized weight (where
    :func:`~stanlogz.crossval.checks.predictive.loo_pit` keeps a PIT away from 0 and 1)."""
    lw = np.asarray(log_w, dtype=float)
    w_max = np.exp(np.max(lw, axis=0) - special.logsumexp(lw, axis=0))
    return float(0.5 * np.max(w_max))


#: Uniform samples simulated for the simultaneous band's pointwise level, and their seed.
BAND_SIMS = 4000
BAND_SEED = 20261128


@lru_cache(maxsize=32)
def _band_gamma(n: int, level: float) -> float:
    """The pointwise level γ at which the n order statistics of independent uniforms all lie in
    their central 1 − γ Beta intervals with probability ``level`` (simulated, fixed seed): the
    (1 − level)-quantile of the smallest pointwise POT p-value."""
    rng = np.random.default_rng([BAND_SEED, n])
    u = np.sort(rng.random((BAND_SIMS, n)), axis=1)
    i = np.arange(1, n + 1)
    cdf = special.betainc(i, n - i + 1, u)
    p_min = np.min(2.0 * np.minimum(cdf, 1.0 - cdf), axis=1)
    return float(np.quantile(p_min, 1.0 - level))


def simultaneous_band(n: int, level: float = 0.99) -> tuple[np.ndarray, np.ndarray]:
    """Simultaneous band of the ECDF of ``n`` uniforms, as intervals ``(lo, hi)`` ``(n,)`` of the
    order statistics: under independence all u_(i) lie in [lo_i, hi_i] with probability
    ``level``. The ECDF F_n stays within #{hi_i ≤ x}/n ≤ F_n(x) ≤ #{lo_i ≤ x}/n exactly when
    they do. The band is POT's (the Beta(i, n − i + 1) quantiles at an adjusted pointwise level,
    Säilynoja, Bürkner & Vehtari 2022); dependent LOO-PIT values stay inside it more often."""
    if n < 1 or not 0 < level < 1:
        raise InputError(f"a band needs n >= 1 and a level in (0, 1), got n = {n}, "
                         f"level = {level}")
    g = _band_gamma(int(n), float(level))
    i = np.arange(1, n + 1)
    return (special.betaincinv(i, n - i + 1, g / 2),
            special.betaincinv(i, n - i + 1, 1.0 - g / 2))


# The simulated null of the tests (:mod:`.pit_null` simulates the LOO-PIT values).
@lru_cache(maxsize=256)
def null_test_statistics(test: str, truncate: bool, n: int, p: int,
                         floor: float = 0.0) -> np.ndarray:
    """Sorted null statistics of a dependence-aware test
    (:func:`stanlogz.crossval.checks.pit_tests.uniformity_test`) for ``n`` LOO-PIT values of a
    model with ``p`` parameters, the values clipped to [``floor``, 1 − ``floor``]."""
    u = np.clip(null_pit(n, p), floor, 1.0 - floor)
    return np.sort(combined_statistics(u, test, truncate, cap=1.0 - 2.0 * floor))


@lru_cache(maxsize=32)
def _randomized_statistics(test: str, truncate: bool, n: int, p: int, floor: float,
                           widths: tuple[float, ...]) -> np.ndarray:
    z = np.clip(randomized_null_pit(n, p, widths), floor, 1.0 - floor)
    return np.sort(combined_statistics(z, test, truncate, cap=1.0 - 2.0 * floor))


def calibrated_test_p_value(test: str, truncate: bool, pit: np.ndarray,
                            p_loo: float | None = None, floor: float = 0.0,
                            widths: np.ndarray | None = None) -> float:
    """The p-value of a dependence-aware test of the PIT values ``pit`` under the simulated null
    of LOO-PIT values of a model with round(``p_loo``) parameters. ``floor``: the PIT's
    resolution (a PIT estimated from draws is kept within half the largest weight of 0 and 1);
    observed and null values are both clipped to [f, 1 − f], f = ``floor`` rounded up by
    :func:`grid_floor`, and the pointwise p-values capped at 1 − 2f (a value within f of ½ is
    as near as the draws resolve), since the tests, PIET above all, weigh the values nearest 0,
    ½ and 1 most. ``widths``: for a randomized PIT, each observation's P(ỹ_i = y_i); the null
    is then randomized alike (:func:`randomized_null`, simulated anew for each call)."""
    u = np.asarray(pit, dtype=float).ravel()
    f = grid_floor(floor)
    n = int(u.size)
    p = effective_params(n, p_loo)
    if widths is not None and np.any(np.asarray(widths) > 0):
        key = tuple(np.asarray(widths, dtype=float).ravel().tolist())
        null = _randomized_statistics(test, bool(truncate), n, p, f, key)
    else:
        null = null_test_statistics(test, bool(truncate), n, p, f)
    stat = float(combined_statistics(np.clip(u, f, 1.0 - f)[None, :], test, truncate,
                                     cap=1.0 - 2.0 * f)[0])
    return tail_p_value(stat, null)
