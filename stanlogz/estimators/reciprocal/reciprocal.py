"""Unbiased estimates of 1/Z from unbiased importance weights of Z (Wei & Murray 2017).

Every estimator is a Russian-roulette truncation of a series whose terms converge to 1/Z:

    S = Y(0) + sum_{i=1}^{N} (Y(i) - Y~(i-1)) / Pr(N >= i),

with N drawn from a truncation law (default Pr(N >= k) = k^-1.1) independently of the weights.

* IAE (eq. 3): Y(i) = (i+1) / sum_{j<=i} w_j, the reciprocal of increasing averages.
* FCE (Algorithm 1): Y(i) = 1/w of an independence Metropolis chain whose proposals are the
  weights, coupled with a copy that skips the first proposal; ``burn_in`` T gives
  Pr(S >= 0) >= 1 - 2/(T+1) (Proposition 1).
* RBBCE (Algorithm 2): the chain run backwards from the last proposal, Rao-Blackwellized over
  its acceptances; expected O(N) work, and it always has a finite expectation (Proposition 4).

Weights arrive as *log* weights from a source ``(rng, n) -> array of n log-weights``, each the log
of an unbiased estimate of Z (see :mod:`stanlogz.estimators.reciprocal.weight_sources`). ``batch`` m
of them are averaged into one weight before debiasing (§3.3). Arithmetic runs on weights divided by
a reference scale (chosen so that no batch weight under- or overflows), so Z may be far outside
the floating-point range.

With a number of weights linear in N (as here), IAE has either infinite expected cost or infinite
variance for *every* truncation law (by Cauchy-Schwarz, sum Pr(N>=i) and sum 1/(i^2 Pr(N>=i))
cannot both be finite); FCE and RBBCE couple, so their terms vanish and their variance is finite
when the weights are bounded.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..._util.gpd import KHAT_HEAVY
from ..._util.seeds import Stream, stream_rng
from ...densities.target import Target
from ...errors import EstimationError, InputError
from ..common import log_mean_exp

LogWeightSource = Callable[[np.random.Generator, int], np.ndarray]
RECIPROCAL_METHODS = ("rbbce", "fce", "iae")
_CHUNK = 1 << 16  # batches requested from a source per call
_MAX_LOG = 690.0  # |log| of the scaled weights: w and 1/w (and sums of many) stay finite


# ---------------------------------------------------------------- truncation laws
class Truncation:
    """Law of the truncation point N >= 0, given by its survival function Pr(N >= k)."""

    def survival(self, k: np.ndarray) -> np.ndarray:
        """Pr(N >= k) for integers k >= 0."""
        raise NotImplementedError

    def sample(self, rng: np.random.Generator) -> int:
        """One draw of N."""
        raise NotImplementedError

    def mean(self) -> float:
        """E[N] = sum_{k>=1} Pr(N >= k)."""
        raise NotImplementedError


@dataclass(frozen=True)
class PowerLawTruncation(Truncation):
    """Pr(N >= k) = k^-exponent for k >= 1 (so N >= 1); the paper's law with exponent 1.1."""

    exponent: float = 1.1

    def __post_init__(self) -> None:
        if not self.exponent > 1.0:
            raise InputError(f"power-law exponent must be > 1 (finite E[N]), got {self.exponent}")

    def survival(self, k: np.ndarray) -> np.ndarray:
        k = np.asarray(k, dtype=float)
        return np.where(k <= 1, 1.0, np.maximum(k, 1.0) ** -self.exponent)

    def sample(self, rng: np.random.Generator) -> int:
        u = 1.0 - rng.uniform()  # in (0, 1]
        return int(math.floor(u ** (-1.0 / self.exponent)))

    def mean(self) -> float:
        from scipy.special import zeta

        return float(zeta(self.exponent))


@dataclass(frozen=True)
class GeometricTruncation(Truncation):
    """Pr(N >= k) = q^(k-1) for k >= 1 (so N >= 1)."""

    q: float = 0.9

    def __post_init__(self) -> None:
        if not 0.0 <= self.q < 1.0:
            raise InputError(f"geometric truncation needs 0 <= q < 1, got {self.q}")

    def survival(self, k: np.ndarray) -> np.ndarray:
        k = np.asarray(k, dtype=float)
        return np.where(k <= 1, 1.0, self.q ** (np.maximum(k, 1.0) - 1.0))

    def sample(self, rng: np.random.Generator) -> int:
        return int(rng.geometric(1.0 - self.q))

    def mean(self) -> float:
        return 1.0 / (1.0 - self.q)


@dataclass(frozen=True)
class FiniteTruncation(Truncation):
    """Pr(N >= k) = survival[k-1] for 1 <= k <= K and 0 beyond. The estimators are then unbiased
    for E[Y(K)], not for 1/Z (tests use this to check the debiasing exactly)."""

    values: tuple[float, ...]

    def __post_init__(self) -> None:
        s = np.asarray(self.values, dtype=float)
        if s.ndim != 1 or s.size == 0 or np.any(s <= 0) or np.any(s > 1) or np.any(np.diff(s) > 0):
            raise InputError("finite truncation needs non-increasing survival values in (0, 1]")

    def survival(self, k: np.ndarray) -> np.ndarray:
        k = np.asarray(k, dtype=int)
        s = np.concatenate([[1.0], np.asarray(self.values, float), [0.0]])
        return s[np.clip(k, 0, len(self.values) + 1)]

    def sample(self, rng: np.random.Generator) -> int:
        u = 1.0 - rng.uniform()
        return int(np.sum(np.asarray(self.values) >= u))

    def mean(self) -> float:
        return float(np.sum(self.values))


# ---------------------------------------------------------------- the three series
def iae_series(w: np.ndarray, survival: np.ndarray) -> float:
    """IAE (eq. 3) on weights ``w[0..N]``; ``survival[i]`` = Pr(N >= i)."""
    w = np.asarray(w, dtype=float)
    y = np.arange(1, w.size + 1) / np.cumsum(w)
    return float(y[0] + np.sum(np.diff(y) / survival[1:w.size]))


def fce_series(w: np.ndarray, u: np.ndarray, survival: np.ndarray, burn_in: int = 0) -> float:
    """FCE (Algorithm 1) on proposal weights ``w[0..N+T]`` and uniforms ``u[0..N+T-1]``
    (``u[t-1]`` decides step t for both chains); ``burn_in`` = T (Proposition 1)."""
    wl = np.asarray(w, dtype=float).tolist()
    ul = np.asarray(u, dtype=float).tolist()
    n = len(wl) - 1 - burn_in
    if n < 0 or len(ul) < n + burn_in:
        raise InputError("FCE needs N + T + 1 weights and N + T uniforms")
    x = xt = wl[0]
    if x <= 0.0:  # 1/w of the starting weight is infinite
        return math.inf
    s = 0.0
    for t in range(1, n + burn_in + 1):
        wt, r = wl[t], ul[t - 1]
        if r * x < wt:  # accept with probability min(1, wt / x)
            x = wt
        if t > 1 and r * xt < wt:  # the copy skips the first transition
            xt = wt
        if t == burn_in:
            s = 1.0 / x
        elif t > burn_in:
            s += (1.0 / x - 1.0 / xt) / survival[t - burn_in]
    if burn_in == 0:
        s += 1.0 / wl[0]
    return s


def rbbce_series(w: np.ndarray, survival: np.ndarray) -> tuple[float, int]:
    """RBBCE (Algorithm 2) on weights ``w[0..N]``: the estimate and the number of inner-loop
    updates (lines 10-13), whose expectation is at most N (Proposition 2)."""
    v = np.asarray(w, dtype=float)[::-1].tolist()  # v[j] = w^(N-j)
    n = len(v) - 1
    if v[0] <= 0.0:  # the chain starts from a zero weight: the first term 1/w is infinite
        return math.inf, 0
    y = [0.0] * (n + 1)
    y[0] = 1.0 / v[0]
    s = y[0]
    k = 0  # index of the largest of v[0..i-1]
    ops = 0
    for i in range(1, n + 1):
        vi = v[i]
        if vi < v[k]:
            y[i] = y[k]  # the chain from v[i] accepts v[k] for sure and then follows chain k
        else:
            # Chain from the new maximum: first acceptance at v[i-1-j] with probability
            # gamma * v[i-1-j] / v[i], after which it follows chain i-1-j.
            if i > 64:
                a = np.asarray(v[i - 1::-1]) / vi
                g = np.concatenate([[1.0], np.cumprod(1.0 - a)])
                yi = float(np.dot(a * g[:-1], np.asarray(y[i - 1::-1]))) + g[-1] / vi
            else:
                yi, g = 0.0, 1.0
                for j in range(i):
                    a = v[i - 1 - j] / vi
                    yi += a * g * y[i - 1 - j]
                    g *= 1.0 - a
                yi += g / vi
            y[i] = yi
            ops += i
            k = i
        s += (y[i] - y[i - 1]) / survival[i]
    return s, ops


# ---------------------------------------------------------------- drawing batch weights
def batch_log_weights(source: LogWeightSource, rng: np.random.Generator, n_batches: int,
                      batch: int) -> np.ndarray:
    """``n_batches`` log batch weights, each the log-mean-exp of ``batch`` draws of ``source``.

    Raises InputError when the source returns NaN or +inf, or the wrong number of values, and
    EstimationError when a whole batch has weight zero (1/w undefined).
    """
    out = np.empty(n_batches)
    done = 0
    while done < n_batches:
        k = min(_CHUNK, n_batches - done)
        lw = np.asarray(source(rng, k * batch), dtype=float).reshape(-1)
        if lw.size != k * batch:
            raise InputError(f"weight source returned {lw.size} log-weights, asked for {k * batch}")
        if np.any(np.isnan(lw)) or np.any(lw == np.inf):
            bad = lw[np.isnan(lw) | (lw == np.inf)][0]
            raise InputError(f"weight source returned a non-finite log-weight ({bad}): weights "
                             "must be finite and >= 0; check the proposal and target densities")
        lw = lw.reshape(k, batch)
        top = lw.max(axis=1)
        if np.any(top == -np.inf):
            raise EstimationError(f"a batch of {batch} importance weights is all zero, so 1/w is "
                                  "undefined: increase the batch size or widen the proposal")
        out[done:done + k] = top + np.log(np.mean(np.exp(lw - top[:, None]), axis=1))
        done += k
    return out


# ---------------------------------------------------------------- the estimate
@dataclass
class ReciprocalEstimate:
    """One unbiased estimate S of 1/Z, stored as ``sign`` * exp(``log_abs``).

    ``n_terms`` holds N of each trial; ``n_weights`` counts the source's weights used (batches
    times ``batch``); ``n_ops`` the inner-loop updates of RBBCE (FCE and IAE: N per trial).
    """

    method: str
    log_abs: float
    sign: int
    n_terms: list[int]
    n_weights: int
    batch: int
    n_ops: int
    trial_signs: list[int] = field(default_factory=list)

    @property
    def value(self) -> float:
        """S itself (under- or overflows when 1/Z is outside the float range)."""
        return float(self.sign * math.exp(self.log_abs)) if self.sign else 0.0

    @property
    def n(self) -> int:
        """N of the first trial (the truncation point)."""
        return self.n_terms[0]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _scaled_weights(lw: np.ndarray, method: str) -> tuple[np.ndarray, float]:
    """Batch weights divided by exp(ref), with ref chosen so that neither the smallest weight
    underflows to zero (the series are dominated by its 1/w) nor the largest overflows; raises
    EstimationError when the log-weights spread over more than floating point can hold."""
    lo, hi = float(np.min(lw)), float(np.max(lw))
    if hi - lo > 2 * _MAX_LOG:
        raise EstimationError(f"{method}: the batch weights spread over {hi - lo:.0f} nats, "
                              "more than floating point can hold; use larger batches or a "
                              "proposal closer to the target")
    ref = max(lo, hi - _MAX_LOG)
    return np.exp(lw - ref), ref


def check_options(method: str, batch: int, trials: int, burn_in: int) -> str:
    """The lower-cased method after checking the options (one-line InputErrors)."""
    method = str(method).lower()
    if method not in RECIPROCAL_METHODS:
        raise InputError(f"unknown 1/Z estimator {method!r}; one of "
                         f"{', '.join(RECIPROCAL_METHODS)}")
    if batch < 1 or trials < 1:
        raise InputError(f"batch and trials must be >= 1, got {batch} and {trials}")
    if burn_in < 0 or (burn_in and method != "fce"):
        raise InputError("burn_in must be >= 0 and applies to fce only")
    return method


def signed_log_mean(log_abs: np.ndarray, signs: np.ndarray) -> tuple[float, int]:
    """log|mean| and sign of the mean of sign_i * exp(log_abs_i)."""
    log_abs = np.asarray(log_abs, dtype=float)
    signs = np.asarray(signs, dtype=float)
    finite = np.isfinite(log_abs) & (signs != 0)
    if not np.any(finite):
        return -math.inf, 0
    ref = float(np.max(log_abs[finite]))
    total = float(np.sum(signs[finite] * np.exp(log_abs[finite] - ref))) / log_abs.size
    if total == 0.0:
        return -math.inf, 0
    return ref + math.log(abs(total)), (1 if total > 0 else -1)


def estimate_reciprocal(
    source: LogWeightSource,
    method: str = "rbbce",
    *,
    rng: np.random.Generator | int | None = None,
    batch: int = 1,
    trials: int = 1,
    truncation: Truncation | None = None,
    burn_in: int = 0,
) -> ReciprocalEstimate:
    """An unbiased estimate of 1/Z from the log-weight ``source`` by ``method`` (rbbce, fce,
    iae): ``trials`` independent estimates averaged, each with its own N, on batch weights that
    average ``batch`` source weights. ``burn_in`` is FCE's T."""
    method = check_options(method, int(batch), int(trials), int(burn_in))
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    law = truncation or PowerLawTruncation()
    logs, signs, ns, ops, used = [], [], [], 0, 0
    for _ in range(int(trials)):
        n = law.sample(rng)
        n_w = n + 1 + (burn_in if method == "fce" else 0)
        lw = batch_log_weights(source, rng, n_w, int(batch))
        used += n_w * int(batch)
        w, ref = _scaled_weights(lw, method)
        surv = law.survival(np.arange(n + 1))
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            if method == "iae":
                s, k = iae_series(w, surv), n
            elif method == "fce":
                s, k = fce_series(w, rng.uniform(size=n_w - 1), surv, burn_in), n
            else:
                s, k = rbbce_series(w, surv)
        if not math.isfinite(s):
            raise EstimationError(f"{method}: the estimate is not finite (a zero weight, or "
                                  "weights spread over more than the float range); use larger "
                                  "batches or a better proposal")
        logs.append(math.log(abs(s)) - ref if s != 0 else -math.inf)
        signs.append(int(np.sign(s)))
        ns.append(n)
        ops += k
    log_abs, sign = signed_log_mean(np.array(logs), np.array(signs))
    return ReciprocalEstimate(method=method, log_abs=log_abs, sign=sign, n_terms=ns,
                              n_weights=used, batch=int(batch), n_ops=ops, trial_signs=signs)


# ---------------------------------------------------------------- unbiased Bayes factors
@dataclass
class BayesFactorEstimate:
    """Unbiased estimate of Z_A / Z_B from independent replicates Z^_A x (1/Z_B)^.

    ``value`` ± ``se`` is on the natural scale (the mean of the replicates and its standard
    error); ``log_value`` ± ``log_se`` its log by the delta method (NaN when the mean is not
    positive). ``fraction_positive`` is the share of positive replicates. ``tail_k`` is the
    Pareto k-hat of the replicates' deviations from their median: RBBCE has a finite mean but
    not necessarily a finite variance, and above 0.5 the se may not exist.
    """

    value: float
    se: float
    log_value: float
    log_se: float
    fraction_positive: float
    replicates: int
    n_weights: int
    method: str
    tail_k: float = float("nan")

    @property
    def warnings(self) -> list[str]:
        """What to do when the replicates' tail or signs make the se unreliable."""
        out = []
        if math.isfinite(self.tail_k) and self.tail_k > KHAT_HEAVY:
            out.append(f"the Bayes factor replicates are heavy-tailed (Pareto k-hat "
                       f"{self.tail_k:.2f} > {KHAT_HEAVY}): their variance may be infinite and "
                       "the se unreliable; use larger batches or trust the log-scale column")
        return out


def unbiased_bayes_factor(
    source_a: LogWeightSource,
    source_b: LogWeightSource,
    *,
    method: str = "rbbce",
    replicates: int = 100,
    n_a: int = 10,
    rng: np.random.Generator | int | None = None,
    **options: Any,
) -> BayesFactorEstimate:
    """Z_A / Z_B, unbiased: each replicate multiplies the mean of ``n_a`` weights of A (unbiased
    for Z_A) by an independent :func:`estimate_reciprocal` of 1/Z_B (``options`` go there)."""
    from ..ups.ups import replicate_tail_k

    if replicates < 2 or n_a < 1:
        raise InputError(f"need replicates >= 2 and n_a >= 1, got {replicates} and {n_a}")
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    logs, signs, used = np.empty(replicates), np.empty(replicates), 0
    for r in range(replicates):
        log_za = log_mean_exp(source_a(rng, n_a))  # a zero estimate of Z_A is valid
        rb = estimate_reciprocal(source_b, method, rng=rng, **options)
        logs[r], signs[r] = log_za + rb.log_abs, rb.sign
        used += n_a + rb.n_weights
    finite = np.isfinite(logs) & (signs != 0)
    ref = float(np.max(logs[finite])) if np.any(finite) else 0.0
    x = np.where(finite, signs * np.exp(np.where(finite, logs, ref) - ref), 0.0)
    mean, sd = float(x.mean()), float(x.std(ddof=1))
    se = sd / math.sqrt(replicates)
    scale = math.exp(ref)
    log_value = ref + math.log(mean) if mean > 0 else math.nan
    log_se = se / mean if mean > 0 else math.nan
    return BayesFactorEstimate(value=mean * scale, se=se * scale, log_value=log_value,
                               log_se=log_se, fraction_positive=float(np.mean(signs > 0)),
                               replicates=int(replicates), n_weights=used, method=method,
                               tail_k=replicate_tail_k(x))


def unbiased_bayes_factors(models: Sequence[Target], draws: Sequence[np.ndarray],
                           reference: int, *, replicates: int = 200, batch: int = 10,
                           method: str = "rbbce", inflate: float = 1.5,
                           seed: int | None = None) -> list[BayesFactorEstimate | None]:
    """Unbiased Z_i / Z_reference for every program ``models[i]`` (None for the reference),
    from importance weights with a Gaussian proposal (covariance x ``inflate``) fitted to each
    program's posterior ``draws`` (unconstrained, (chains, n, dim))."""
    from .weight_sources import ImportanceWeights, fit_proposal

    sources = [ImportanceWeights(m, fit_proposal(d, "gaussian", inflate=inflate))
               for m, d in zip(models, draws, strict=True)]
    return [None if i == reference else
            unbiased_bayes_factor(sources[i], sources[reference], method=method,
                                  replicates=replicates, n_a=batch, batch=batch,
                                  rng=stream_rng(seed, Stream.PROGRAM, i))
            for i in range(len(models))]
