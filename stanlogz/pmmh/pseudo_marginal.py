"""Pseudo-marginal random-walk Metropolis-Hastings for doubly-intractable posteriors.

The posterior pi(theta | y) ∝ pi(theta) p*(y | theta) / Z(theta) is given by two Stan programs:
an *outer* program with parameters theta whose target is log pi(theta) + log p*(y | theta), and
an *inner* program that reads theta as data and whose parameters x have the unnormalized density
p*(x | theta) (a new data instance per theta, never a rebuild). Each state carries
f^ = exp(outer target) x S(theta), with S an unbiased estimate of 1/Z(theta) from
:mod:`stanlogz.estimators.reciprocal.reciprocal`. Moves are accepted on |f^| and the sign of every
state is recorded (Lyne et al. 2015); E[h(theta)] is estimated by sum h sigma / sum sigma.

The inner weights come from importance sampling (or AIS) with a proposal fitted to NUTS draws of
the inner program at a reference theta: the outer chain's start, refitted (with the random-walk
covariance) at 1/4, 1/2 and 3/4 of warmup at the mean theta since the previous refit. The
random-walk scale is adapted during warmup only.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._util.progress import Progress, steps
from .._util.seeds import Stream, as_seed_sequence, stream, stream_int_seed, stream_rng
from ..draws import Draws, group_flat_names
from ..draws import sample as nuts_sample
from ..errors import DataError, EstimationError, InputError, Route, option
from ..estimators.common import autocorr_time
from ..estimators.reciprocal.reciprocal import (
    Truncation,
    batch_log_weights,
    check_options,
    estimate_reciprocal,
)
from ..estimators.reciprocal.weight_sources import AISWeights, ImportanceWeights, fit_proposal
from ..mcmc.annealing import AnnealingPath, tune_hmc
from ..stan.model import StanModel
from ..stan.settings import NutsArgs
from .batch import MAX_BATCH, MAX_NEGATIVE, TARGET_LOG_SD, choose_batch, probe_points

WEIGHT_SOURCES = ("is", "ais")
TARGET_ACCEPT = 0.2  # noisy |f^| lowers the best acceptance below RWMH's 0.234
#: iterations of the outer Metropolis-Hastings chain that adapt its proposal scale
MH_WARMUP = 1000
#: draws per chain of the inner program's NUTS fit that the 1/Z proposal is fitted to
INNER_DRAWS = 500


class InnerProgram:
    """The inner Stan program with ``data`` plus theta: :meth:`at` gives p*(x | theta).

    ``theta0`` (name -> value) is a valid theta; the program must declare every one of its
    names in its data block (checked once, here: without the name the data must be rejected).
    """

    def __init__(self, model: StanModel, data: Mapping[str, Any] | None,
                 theta0: Mapping[str, Any]) -> None:
        self.model = model
        self.data = dict(data or {})
        self.names = list(theta0)
        full = self.data_at(theta0)
        self.at(theta0)
        for name in self.names:
            try:
                model.with_data({k: v for k, v in full.items() if k != name})
            except DataError:
                continue
            raise InputError(f"inner program {model.name} does not read the outer parameter "
                             f"'{name}' as data: declare it in its data block")

    def data_at(self, theta: Mapping[str, np.ndarray]) -> dict[str, Any]:
        """The inner program's data at ``theta`` (name -> value)."""
        return {**self.data, **{k: np.asarray(v).tolist() for k, v in theta.items()}}

    def at(self, theta: Mapping[str, np.ndarray]) -> StanModel:
        """p*(x | theta) as a new data instance of the compiled inner program."""
        try:
            return self.model.with_data(self.data_at(theta))
        except DataError as exc:
            shown = ", ".join(f"{k}={np.round(np.asarray(v), 4).tolist()}"
                              for k, v in theta.items())
            raise InputError(f"theta ({shown}) lies outside the inner program's support: {exc}; "
                             "the outer program's constraints must keep theta inside the "
                             "inner program's data constraints") from None


@dataclass
class PseudoMarginalResult:
    """Draws of theta (``draws``: one chain; sampler columns ``lp__`` = log|f^|, ``sign__``,
    ``accept_stat__``, ``n_terms__``) with sign-corrected posterior expectations."""

    draws: Draws
    signs: np.ndarray
    estimator: str
    acceptance: float
    n_weights: int
    seconds: float
    warmup: int
    scale: np.ndarray
    log_weight_sd: float
    diagnostics: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    #: importance weights per batch weight (chosen automatically unless given)
    batch: int = 0
    batch_auto: bool = False

    @property
    def fraction_positive(self) -> float:
        return float(np.mean(self.signs > 0))

    @property
    def n_iter(self) -> int:
        return int(self.signs.size)

    def summary_rows(self) -> list[dict[str, Any]]:
        """Per quantity: sign-corrected mean with its MCSE (batch means) and sd."""
        values, names = self.draws.constrained[0], self.draws.constrained_names
        return [dict(name=n, **signed_moments(values[:, j], self.signs))
                for j, n in enumerate(names)]

    def to_dict(self) -> dict[str, Any]:
        from ..estimators.base import _jsonable

        return _jsonable({
            "estimator": self.estimator, "iterations": self.n_iter, "warmup": self.warmup,
            "acceptance": self.acceptance, "fraction_positive": self.fraction_positive,
            "n_positive": int(np.sum(self.signs > 0)), "n_weights": self.n_weights,
            "weights_per_iteration": self.n_weights / max(1, self.n_iter + self.warmup),
            "seconds": self.seconds,
            "seconds_per_iteration": self.seconds / max(1, self.n_iter + self.warmup),
            "log_weight_sd": self.log_weight_sd, "scale": self.scale.tolist(),
            "batch": self.batch, "batch_auto": self.batch_auto,
            "parameters": self.summary_rows(), "diagnostics": self.diagnostics,
            "warnings": self.warnings})

    def to_inference_data(self) -> Any:
        """ArviZ InferenceData/DataTree: the draws, with the signs in sample_stats ``sign``."""
        from .. import arviz_compat

        idata = self.draws.to_inference_data()
        stats = arviz_compat.group(idata, "sample_stats")
        extra = {"sign": self.signs[None, :], "lp": self.draws.sampler["lp__"],
                 "acceptance_rate": self.draws.sampler["accept_stat__"]}
        posterior = {k: np.asarray(v.values) for k, v in
                     arviz_compat.group(idata, "posterior").data_vars.items()}
        if stats is not None:
            extra = {**{k: np.asarray(v.values) for k, v in stats.data_vars.items()}, **extra}
        return arviz_compat.from_dict({"posterior": posterior, "sample_stats": extra})


def signed_moments(h: np.ndarray, signs: np.ndarray) -> dict[str, float]:
    """sum h sigma / sum sigma, its MCSE (delta method for the ratio; the larger of batch means
    and an integrated-autocorrelation-time estimate, since batches of sqrt(n) are too short for
    a sticky pseudo-marginal chain) and the sign-corrected sd; NaN when the signs sum to zero."""
    h, s = np.asarray(h, dtype=float), np.asarray(signs, dtype=float)
    sbar = s.mean()
    if sbar == 0:
        return {"mean": math.nan, "mcse": math.nan, "sd": math.nan}
    mean = float(np.mean(h * s) / sbar)
    var = float(np.mean(h * h * s) / sbar - mean**2)
    e = s * (h - mean)  # the ratio's linearization
    b = max(1, int(math.sqrt(e.size)))
    k = e.size // b
    if k >= 2:
        bm = e[: k * b].reshape(k, b).mean(axis=1)
        mcse = float(bm.std(ddof=1) / math.sqrt(k) / abs(sbar))
    else:
        mcse = math.nan
    if e.size >= 4 and math.isfinite(mcse):
        tau = autocorr_time(e)
        mcse = max(mcse, float(np.std(e, ddof=1)) * math.sqrt(tau / e.size) / abs(sbar))
    return {"mean": mean, "mcse": mcse, "sd": math.sqrt(max(var, 0.0))}


def _theta_dict(model: StanModel, x: np.ndarray) -> dict[str, np.ndarray]:
    values = model.constrain(x)
    out = {}
    for name, (shape, cols) in group_flat_names(model.param_names()).items():
        out[name] = values[cols].reshape(shape, order="F") if shape else values[cols[0]]
    return out


class _Estimates:
    """log|S| and sign of 1/Z(theta) estimates, with the inner proposal refitted on demand."""

    def __init__(self, outer: StanModel, inner: InnerProgram, *, source: str, method: str,
                 batch: int, trials: int, truncation: Truncation | None, burn_in: int,
                 proposal: str, inflate: float, n_temps: int, nuts: NutsArgs,
                 seed: np.random.SeedSequence, progress: Progress) -> None:
        self.outer, self.inner, self.source, self.method = outer, inner, source, method
        self.options = {"batch": batch, "trials": trials, "truncation": truncation,
                        "burn_in": burn_in}
        self.proposal_kind, self.inflate, self.n_temps = proposal, inflate, n_temps
        self.nuts, self.progress = nuts, progress
        self.seed, self.n_fits = seed, 0
        self.rng = stream_rng(seed, Stream.PMMH_WEIGHTS)
        self.n_weights = 0
        self.q: Any = None
        self.tuning: Any = None

    def fit(self, x: np.ndarray) -> None:
        """Fit the proposal to NUTS draws of the inner program at theta(x)."""
        model = self.inner.at(_theta_dict(self.outer, x))
        fit_seed = stream(self.seed, Stream.PMMH_FIT, self.n_fits)  # this fit's own streams
        self.n_fits += 1
        draws = nuts_sample(model, self.nuts, seed=stream_int_seed(fit_seed, Stream.NUTS))
        self.q = fit_proposal(draws.unconstrained, self.proposal_kind, inflate=self.inflate,
                              seed=stream_int_seed(fit_seed, Stream.PROPOSAL))
        if self.source == "ais":
            self.tuning, _ = tune_hmc(AnnealingPath(self.q, model),
                                      stream_rng(fit_seed, Stream.HMC_TUNING), n_leapfrog=5,
                                      n_iter=40)
        if self.progress:
            self.progress(f"inner proposal ({self.proposal_kind}) fitted at "
                          + ", ".join(f"{k}={np.round(v, 3)}"
                                      for k, v in _theta_dict(self.outer, x).items()))

    def weights(self, x: np.ndarray) -> Callable[[np.random.Generator, int], np.ndarray]:
        model = self.inner.at(_theta_dict(self.outer, x))
        if self.source == "ais":
            return AISWeights(model, self.q, n_temps=self.n_temps, hmc_steps=5,
                              tuning=self.tuning)
        return ImportanceWeights(model, self.q)

    def __call__(self, x: np.ndarray) -> tuple[float, int, int]:
        """log|S|, sign and N at x."""
        e = estimate_reciprocal(self.weights(x), self.method, rng=self.rng, **self.options)
        self.n_weights += e.n_weights
        return e.log_abs, e.sign, e.n

    def log_weight_sd(self, x: np.ndarray, n: int = 200) -> float:
        """sd of the log batch weights at x (Doucet et al. suggest about 1-1.7 for the log of a
        likelihood estimate; much more makes the chain stick)."""
        lw = batch_log_weights(self.weights(x), self.rng, n, self.options["batch"])
        return float(np.std(lw, ddof=1))


def inner_nuts(inner_draws: int | None = None) -> NutsArgs:
    """The default NUTS settings of the inner program's fit: 2 chains of ``inner_draws``
    (default :data:`INNER_DRAWS`) draws after max(200, ``inner_draws`` / 2) warmup."""
    n = INNER_DRAWS if inner_draws is None else inner_draws
    if isinstance(n, int) and n < 20:
        raise InputError(f"need inner_draws >= 20, got {n}")
    return NutsArgs(chains=2, warmup=max(200, n // 2), draws=n)


def pmmh(
    outer: StanModel | str | os.PathLike[str],
    inner: StanModel | str | os.PathLike[str],
    data: Mapping[str, Any] | str | os.PathLike[str] | None = None,
    *,
    estimator: str = "rbbce",
    iter: int = 2000,
    warmup: int = MH_WARMUP,
    seed: int | None = None,
    batch: int | None = None,
    trials: int = 1,
    truncation: Truncation | None = None,
    burn_in: int = 0,
    weights: str = "is",
    proposal: str = "t",
    inflate: float = 1.0,
    n_temps: int = 10,
    inner_draws: int | None = None,
    settings: NutsArgs | None = None,
    adapt_delta: float | None = None,
    max_treedepth: int | None = None,
    init: Mapping[str, Any] | None = None,
    progress: Progress = None,
) -> PseudoMarginalResult:
    """Pseudo-marginal MH on the outer program's parameters with unbiased 1/Z from the inner.

    ``data`` (a dict or JSON path) goes to both programs; the inner also gets theta. The
    1/Z estimator is ``estimator`` (rbbce, fce, iae) with ``batch`` weights averaged per
    batch weight (default: chosen at the start and at each warmup refit so that the sd of the
    log batch weights is at most :data:`stanlogz.pmmh.batch.TARGET_LOG_SD`, and doubled when
    warmup shows negative estimates; see :mod:`stanlogz.pmmh.batch`), ``trials`` estimates
    averaged, ``truncation`` (default Pr(N >= k) = k^-1.1)
    and FCE's ``burn_in``; ``weights`` is "is" (importance sampling) or "ais" (``n_temps``
    temperatures), from a ``proposal`` ("t": a multivariate t with 10 degrees of freedom and
    the draws' covariance x ``inflate``, whose weights have finite variance where a Gaussian's
    may not; "gaussian"; or "flow") fitted to ``inner_draws`` NUTS draws per chain of the
    inner program. That NUTS runs with
    ``settings`` (a :class:`~stanlogz.stan.settings.NutsArgs`; default :func:`inner_nuts`),
    whose ``draws``, ``adapt_delta`` and ``max_treedepth`` the loose keywords replace. ``init``
    holds constrained starting values (default: the unconstrained origin).
    """
    from ..stan.inputs import read_data

    auto = batch is None
    estimator = check_options(estimator, 1 if auto else batch, trials, burn_in)
    if weights not in WEIGHT_SOURCES:
        raise InputError(f"unknown weight source {weights!r}; one of {', '.join(WEIGHT_SOURCES)}")
    nuts = NutsArgs.of(settings if settings is not None else inner_nuts(inner_draws),
                       draws=inner_draws, adapt_delta=adapt_delta, max_treedepth=max_treedepth)
    if iter < 1 or warmup < 0 or nuts.draws < 20:
        raise InputError("need iter >= 1, warmup >= 0, inner_draws >= 20")
    data = dict(data) if isinstance(data, Mapping) else dict(read_data(data) or {})
    if not isinstance(outer, StanModel):
        outer = StanModel.from_file(outer, data, progress=progress)
    names = list(group_flat_names(outer.param_names()))
    if outer.dim == 0:
        raise InputError(f"outer program {outer.name} has no parameters")
    if init is not None and set(names) - set(init):
        raise InputError(f"init lacks {', '.join(sorted(set(names) - set(init)))}")
    x = np.zeros(outer.dim) if init is None else outer.unconstrain(
        np.concatenate([np.ravel(np.asarray(init[k], float), order="F") for k in names]))
    theta0 = _theta_dict(outer, x)
    if not isinstance(inner, StanModel):
        inner = StanModel.from_file(inner, {**data, **{k: np.asarray(v).tolist()
                                                       for k, v in theta0.items()}},
                                    progress=progress)
    inner_prog = InnerProgram(inner, data, theta0)
    ss = as_seed_sequence(seed)
    rng = stream_rng(ss, Stream.PMMH_CHAIN)
    est = _Estimates(outer, inner_prog, source=weights, method=estimator, batch=batch or 1,
                     trials=trials, truncation=truncation, burn_in=burn_in, proposal=proposal,
                     inflate=inflate, n_temps=n_temps, nuts=nuts,
                     seed=ss, progress=progress)
    t0 = time.perf_counter()
    est.fit(x)
    batch_log: list[dict[str, Any]] = []

    def tune_batch(points: list[np.ndarray], t: int, start: int) -> None:
        b, sd = choose_batch(est.weights, points, est.rng, start=start)
        est.options["batch"] = b
        batch_log.append({"iteration": t, "batch": b, "log_weight_sd": sd})
        if progress:
            progress(f"batch {b} (sd of log batch weights {sd:.2f})")

    refits = sorted({t for t in (warmup // 4, warmup // 2, 3 * warmup // 4) if t >= 20})
    if auto:
        tune_batch([x], 0, 10)
        if not refits:
            check_tamed(batch_log[-1], proposal)
    d = outer.dim
    chol = np.eye(d) * 0.5 * 2.38 / math.sqrt(d)
    log_mult = 0.0

    failed: list[tuple[bool, str]] = []  # (during warmup, why) per rejected proposal
    in_warmup = [warmup > 0]

    def evaluate(z: np.ndarray) -> tuple[float, int, int]:
        lp = outer.log_density(z)
        if not math.isfinite(lp):
            return -math.inf, 0, 0
        log_s, sign, n = est(z)
        return lp + log_s, sign, n

    def evaluate_proposal(z: np.ndarray) -> tuple[float, int, int]:
        """evaluate(z), with a proposal whose 1/Z estimate cannot be formed (all weights of a
        batch zero, or weights spread beyond floating point) rejected and counted instead of
        stopping the chain."""
        try:
            return evaluate(z)
        except EstimationError as exc:
            failed.append((in_warmup[0], str(exc)))
            return -math.inf, 0, 0

    cur = evaluate(x)
    if not math.isfinite(cur[0]):
        raise InputError("the starting point has zero outer density or a zero 1/Z estimate")
    total = warmup + iter
    xs = np.empty((iter, d))
    info = np.empty((iter, 4))  # log|f|, sign, acceptance prob, N
    n_acc = 0
    # The proposal is refitted, and the random-walk covariance re-estimated, at 1/4, 1/2 and
    # 3/4 of warmup from the warmup draws since the previous refit (``refits`` above).
    since = 0
    hist: list[np.ndarray] = []
    signs_since: list[int] = []
    bar = steps(progress, total, "pseudo-marginal MH", unit="it")
    for t in range(total):
        in_warmup[0] = t < warmup
        prop = x + math.exp(log_mult) * (chol @ rng.standard_normal(d))
        new = evaluate_proposal(prop)
        delta = new[0] - cur[0]
        a = math.exp(min(0.0, delta)) if math.isfinite(new[0]) else 0.0
        if rng.uniform() < a:
            x, cur = prop, new
            n_acc += t >= warmup
        if t < warmup:
            log_mult += (a - TARGET_ACCEPT) / (1 + t) ** 0.6  # Robbins-Monro, warmup only
            log_mult = min(max(log_mult, -5.0), 3.0)
            hist.append(x.copy())
            signs_since.append(cur[1])
            if t in refits:
                pts, since = np.array(hist[since:]), t
                cov = np.atleast_2d(np.cov(pts, rowvar=False)) + 1e-8 * np.eye(d)
                if np.all(np.isfinite(cov)) and np.linalg.matrix_rank(cov) == d:
                    chol, log_mult = np.linalg.cholesky(cov) * 2.38 / math.sqrt(d), 0.0
                est.fit(pts.mean(axis=0))
                if auto:
                    neg = float(np.mean(np.asarray(signs_since) < 0))
                    b = est.options["batch"]
                    tune_batch(probe_points(pts, est.rng),
                               t, 2 * b if neg > MAX_NEGATIVE else max(10, b // 2))
                    signs_since = []
                    if t == refits[-1]:
                        check_tamed(batch_log[-1], proposal)
                cur = evaluate_proposal(x)
        else:
            xs[t - warmup] = x
            info[t - warmup] = (cur[0], cur[1], a, cur[2])
        bar.update(f"iteration {t + 1}/{total} ({'warmup' if t < warmup else 'sampling'})"
                   if (t + 1) % max(1, total // 10) == 0 else None)
    bar.close()
    seconds = time.perf_counter() - t0
    signs = info[:, 1].astype(int)
    draws = Draws(unconstrained=xs[None], constrained=outer.constrain_many(xs)[None],
                  constrained_names=outer.param_names(), unc_names=outer.param_unc_names(),
                  sampler={"lp__": info[None, :, 0], "sign__": info[None, :, 1].copy(),
                           "accept_stat__": info[None, :, 2], "n_terms__": info[None, :, 3]},
                  seconds=seconds, source="array")
    lw_sd = est.log_weight_sd(xs.mean(axis=0))
    res = PseudoMarginalResult(draws=draws, signs=signs, estimator=estimator,
                               acceptance=n_acc / iter, n_weights=est.n_weights, seconds=seconds,
                               warmup=warmup, scale=math.exp(log_mult) * np.diag(chol),
                               log_weight_sd=lw_sd,
                               batch=est.options["batch"], batch_auto=auto,
                               diagnostics={"batch": est.options["batch"], "batch_auto": auto,
                                            "batch_tuning": batch_log,
                                            "trials": trials, "weights": weights,
                                            "proposal": proposal, "mean_n": float(info[:, 3]
                                                                                   .mean()),
                                            "failed_estimates": sum(not w for w, _ in failed),
                                            "failed_estimates_warmup": sum(w for w, _ in failed)})
    if failed:
        res.diagnostics["first_failure"] = failed[0][1]
    res.warnings = _warnings(res)
    return res


def check_tamed(tuning: Mapping[str, Any], proposal: str) -> None:
    """Refuse (:class:`~stanlogz.errors.EstimationError`) when the automatic batch chosen for
    sampling reached its cap with the log batch weights still spread beyond the target: the
    1/Z estimates, and so the sign-corrected means, would be noise."""
    if tuning["batch"] >= MAX_BATCH and not tuning["log_weight_sd"] <= TARGET_LOG_SD:
        routes = ((Route(options={"proposal": "t"}),) if proposal != "t" else ()) + (
            Route(options={"weights": "ais"}), Route(options={"proposal": "flow"}),
            option("batch"))
        raise EstimationError(
            f"pmmh: the largest automatic batch ({MAX_BATCH}) leaves the log batch weights "
            f"spread by sd {tuning['log_weight_sd']:.2f} (target {TARGET_LOG_SD}): the "
            f"{proposal} proposal's importance weights likely have infinite variance at some "
            f"theta, so the 1/Z estimates and posterior means would be noise; use "
            f"{', '.join(map(str, routes[:-2]))} or {routes[-2]}, or a fixed {routes[-1]} to "
            "accept the risk", routes=routes)


def _warnings(r: PseudoMarginalResult) -> list[str]:
    out = []
    if r.diagnostics.get("failed_estimates"):
        out.append(f"{r.diagnostics['failed_estimates']} proposal(s) after warmup were rejected "
                   "because their 1/Z estimate could not be formed (a batch of zero weights, or "
                   "weights spread beyond floating point): the chain then targets a slightly "
                   f"different posterior; increase {option('batch')} or widen the proposal")
    if r.fraction_positive < 0.95:
        out.append(f"{100 * (1 - r.fraction_positive):.1f}% of the 1/Z estimates are negative: "
                   f"the sign-corrected expectations have high variance; increase "
                   f"{option('batch')} or {option('trials')}, or use rbbce (or fce with a "
                   "burn-in)")
    if r.acceptance < 0.05:
        out.append(f"acceptance rate {r.acceptance:.3f} is low (the chain sticks on large "
                   f"estimates): increase {option('batch')} or {option('trials')} to reduce the "
                   "variance of 1/Z")
    if r.log_weight_sd > 1.5:
        out.append(f"log batch weights spread by sd {r.log_weight_sd:.2f} at the posterior "
                   f"mean: increase {option('batch')}, or use AIS weights or a flow proposal")
    if r.batch_auto and r.batch >= MAX_BATCH:
        out.append(f"the automatic batch reached its cap {MAX_BATCH} without taming the 1/Z "
                   "estimates: the importance proposal is too far from the inner density at "
                   f"some theta (weights of infinite variance); use "
                   f"{Route(options={'weights': 'ais'})} or "
                   f"{Route(options={'proposal': 'flow'})}")
    if r.n_iter < 1000:
        out.append(f"only {r.n_iter} iterations: the MCSEs from batch means are rough")
    return out
