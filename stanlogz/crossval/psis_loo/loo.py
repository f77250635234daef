"""PSIS-LOO of a Stan program with every unreliable observation fixed by moment matching, or an
exact or unbiased leave-one-out estimate; subsampling for large N: :func:`loo`,
:class:`LooResult`."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Unpack

import numpy as np

from ... import arviz_compat
from ..._util.argcheck import check_arguments
from ..._util.progress import steps
from ..._util.sum_se import sum_se
from ...draws import Draws, obtain_draws
from ...errors import InputError
from ...parallel import child_sequence, run_parallel, with_client
from ...stan.program import ProgramLike
from ...stan.settings import NutsArgs, NutsKeywords, nuts_from_keywords
from ..fixups.fixups import FIX_METHODS, FixedPoint, FixTask, fix_observation
from ..fixups.mixture_fix import SHARED_SE, fixed_variance, mixture_fixup
from ..fixups.mm_points import check_budget, moment_match_points
from ..fixups.moment_match import moment_match_observation
from ..names import LooNames
from ..observations.conditional_source import check_pass_budget, start_pass
from ..observations.observations import Observations, load_observed
from ..observations.pointwise import PointwiseLogLik
from ..observations.splitcheck import SplitError
from ..refit.cv_se import elpd_se
from ..refit.heldout import heldout_many
from .loo_arviz import fixed_khat
from .loo_routes import exact_split_error, pointwise_source, refit_refusal
from .loo_warnings import _posterior_values, _sampler_warnings, _warnings
from .psis import PsisLoo, psis_loo, relative_efficiency
from .subsample import draw_sample, subsample_estimates

#: k̂ bands of the loo table (the first bound is the draw-count-dependent threshold).
BANDS = ("good", "bad", "very bad")

#: Moment matching goes on until k̂ is below this (not just below the threshold): stopping at
#: 0.7 left a bias of about 0.45 se over 200 seeds (benchmarks/loo_fixups.py), 0.3 removes it
#: for about twice the density evaluations, still ~5x cheaper than a refit.
MM_K_TARGET = 0.3

#: Thinned draws of the PSIS approximation of every observation when subsampling.
APPROX_DRAWS = 100

#: Child of the user's seed that draws the subsampled observations.
SUBSAMPLE_STREAM = 7901
#: Child of the user's seed for the refits of programs with per-observation parameters.
HELDOUT_STREAM = 7902


@dataclass(repr=False)
class LooResult(LooNames):
    """Leave-one-out cross-validation of one program: elpd_loo with its se, its Monte Carlo se,
    p_loo, and the pointwise values (PSIS, or fixed where k̂ was above the threshold). With
    subsampling the pointwise arrays hold the sampled observations (``sample_index``) only."""

    model: str
    elpd_loo: float
    se: float  # between-observation se, as loo and ArviZ report it
    p_loo: float
    elpd_i: np.ndarray  # final pointwise values (fixed ones replaced)
    psis_elpd_i: np.ndarray
    lppd_i: np.ndarray
    khat: np.ndarray
    threshold: float
    n_samples: int
    r_eff: float
    fix: str
    log_lik_source: str
    observations: Observations
    fixed: list[FixedPoint] = field(default_factory=list)
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)
    psis_mcse_i: np.ndarray | None = None  # Monte Carlo se of each PSIS value
    p_loo_se: float = float("nan")
    #: complete Monte Carlo se: sqrt(mcse_psis² + mcse_bias² + Σ fixed points' se²)
    mcse_elpd_loo: float = 0.0
    #: Monte Carlo se of the PSIS values' part of elpd_loo, from the draws' summed influence
    #: (accounts for the observations sharing the draws; :meth:`PsisLoo.total_mcse`)
    mcse_psis: float = 0.0
    #: estimated bias of the PSIS values' part (k̂ above 0.5; :func:`.psis.half_bias`),
    #: included in mcse_elpd_loo (elpd_loo is left as PSIS gives it, as loo and ArviZ do)
    mcse_bias: float = 0.0
    sample_index: np.ndarray | None = None  # subsampled observations (0-based), or None
    subsampling_se: float = 0.0  # se of the subsampling (difference) estimator
    #: the small-sample (bootstrap-t) factor included in subsampling_se (1 when not subsampled)
    subsampling_factor: float = 1.0
    approximation: str | None = None  # the cheap pointwise approximation used to subsample
    pointwise_seconds: float = 0.0  # building and smoothing the pointwise values
    # What the result was computed from (not serialized): for predictive checks and refits.
    program: Any = field(default=None, repr=False)
    data: dict[str, Any] | None = field(default=None, repr=False)
    draws: Draws | None = field(default=None, repr=False)

    @property
    def n_obs(self) -> int:
        """Number of observations (all of them, also when subsampled)."""
        return int(self.observations.n)

    @property
    def index(self) -> np.ndarray:
        """0-based observations of the pointwise arrays."""
        return (np.arange(self.n_obs) if self.sample_index is None
                else np.asarray(self.sample_index))

    @property
    def mc_se_i(self) -> np.ndarray:
        """Monte Carlo se of the fixed pointwise values (0 for PSIS points)."""
        out = np.zeros(self.elpd_i.size)
        pos = {int(o): j for j, o in enumerate(self.index)}
        for f in self.fixed:
            out[pos[f.index]] = f.se
        return out

    @property
    def mcse_i(self) -> np.ndarray:
        """Complete Monte Carlo se of each pointwise value: PSIS's, or the fix-up's."""
        out = (np.zeros(self.elpd_i.size) if self.psis_mcse_i is None
               else np.array(self.psis_mcse_i, dtype=float))
        pos = {int(o): j for j, o in enumerate(self.index)}
        for f in self.fixed:
            out[pos[f.index]] = f.se
        return out

    def khat_counts(self) -> dict[str, int]:
        """Observations per k̂ band: (-inf, threshold], (threshold, 1], (1, inf)."""
        k = self.khat
        return {"good": int(np.sum(k <= self.threshold)),
                "bad": int(np.sum((k > self.threshold) & (k <= 1.0))),
                "very bad": int(np.sum(k > 1.0))}

    def unfixed_bad(self) -> list[int]:
        """0-based indices of observations above the threshold that were not fixed."""
        done = {f.index for f in self.fixed}
        return [int(self.index[j]) for j in np.nonzero(self.khat > self.threshold)[0]
                if int(self.index[j]) not in done]

    def pointwise(self) -> list[dict[str, Any]]:
        """One row per (sampled) observation: number (from 1), elpd, its Monte Carlo se, k̂,
        method."""
        method = {f.index: f.method for f in self.fixed}
        se = self.mcse_i
        return [{"observation": int(o) + 1, "elpd": float(self.elpd_i[j]),
                 "mc_se": float(se[j]), "psis_elpd": float(self.psis_elpd_i[j]),
                 "khat": float(self.khat[j]), "method": method.get(int(o), "psis")}
                for j, o in enumerate(self.index)]

    def table(self) -> list[list[Any]]:
        """The loo-style summary rows: (quantity, estimate, se)."""
        return [["elpd_loo", round(self.elpd_loo, 3), round(self.se, 3)],
                ["p_loo", round(self.p_loo, 3), round(self.p_loo_se, 3)],
                ["looic", round(-2 * self.elpd_loo, 3), round(2 * self.se, 3)]]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable dict (pointwise rows included)."""
        return {"model": self.model, "elpd_loo": self.elpd_loo, "se": self.se,
                "se_loo": self.se_loo, "mcse_elpd_loo": self.mcse_elpd_loo,
                "mcse_psis": self.mcse_psis, "mcse_bias": self.mcse_bias, "p_loo": self.p_loo,
                "p_loo_se": self.p_loo_se, "looic": -2 * self.elpd_loo, "n_obs": self.n_obs,
                "n_samples": self.n_samples, "r_eff": self.r_eff, "khat_threshold": self.threshold,
                "khat_counts": self.khat_counts(), "fix": self.fix,
                "log_lik_source": self.log_lik_source,
                "observations": {"size": self.observations.size_name,
                                 "fields": list(self.observations.fields)},
                "subsample": None if self.sample_index is None else {
                    "m": int(self.sample_index.size), "approximation": self.approximation,
                    "subsampling_se": self.subsampling_se,
                    "subsampling_factor": self.subsampling_factor},
                "fixed": [f.to_dict() for f in self.fixed], "pointwise": self.pointwise(),
                "seconds": self.seconds, "pointwise_seconds": self.pointwise_seconds,
                "warnings": self.warnings}

    def to_arviz(self) -> Any:
        """The result as ArviZ's ELPD object (``ELPDData`` in 0.x, ``ELPDDataLOO`` in 1.x), with
        the fixed pointwise values, for ``arviz.compare`` and ArviZ's plots. As loo does after
        its fix-ups: ``pareto_k`` holds a moment-matched point's k̂ after the matching and 0 for
        an exact refit (brms' ``reloo``), ``influence_pareto_k`` the PSIS k̂ of every point,
        ``fixed`` (bool) and ``fix_method`` (``""`` where not fixed) which were recomputed."""
        import xarray as xr

        if self.sample_index is not None:
            raise InputError("a subsampled LOO has pointwise values for the sampled "
                             "observations only; run without subsample for an ArviZ object")
        k_after, methods = fixed_khat(self.khat, self.index, self.fixed)
        elpd_i = xr.DataArray(self.elpd_i, dims=["obs"], name="loo_i")
        k = xr.DataArray(k_after, dims=["obs"], name="pareto_k")
        extra = {"influence_pareto_k": xr.DataArray(np.asarray(self.khat, dtype=float),
                                                    dims=["obs"], name="influence_pareto_k"),
                 "fixed": xr.DataArray(methods != "", dims=["obs"], name="fixed"),
                 "fix_method": xr.DataArray(methods, dims=["obs"], name="fix_method")}
        warn = bool(self.unfixed_bad())
        if arviz_compat.arviz_major() >= 1:
            from arviz_stats.utils import ELPDDataLOO

            out = ELPDDataLOO(elpd=self.elpd_loo, se=self.se, p=self.p_loo,
                              n_samples=self.n_samples, n_data_points=self.n_obs, scale="log",
                              warning=warn, good_k=self.threshold, elpd_i=elpd_i, pareto_k=k,
                              p_loo_i=xr.DataArray(self.lppd_i - self.elpd_i, dims=["obs"]))
            for name, value in extra.items():
                setattr(out, name, value)
            return out
        from arviz.stats.stats_utils import ELPDData

        return ELPDData(
            data=[self.elpd_loo, self.se, self.p_loo, self.n_samples, self.n_obs, warn, elpd_i,
                  k, "log", self.threshold, *extra.values()],
            index=["elpd_loo", "se", "p_loo", "n_samples", "n_data_points", "warning", "loo_i",
                   "pareto_k", "scale", "good_k", *extra])


def _check_rows(n_draws: int, k: int = 3) -> np.ndarray:
    """The draws the validity check of the density difference looks at."""
    return np.unique(np.linspace(0, n_draws - 1, min(k, n_draws)).astype(int))


def _psis_pass(pw: PointwiseLogLik, d: Draws, r_eff: float, index: np.ndarray | None,
               keep_above: float = 0.5) -> PsisLoo:
    """PSIS-LOO of the observations ``index`` (all when None), streamed in column blocks; the
    draw influence of observations with k̂ above ``keep_above`` (the ones fix-ups may
    replace) is kept for the Monte Carlo se of the total."""
    con = None if d.constrained is None else d.constrained.reshape(-1, d.constrained.shape[2])
    blocks = pw.chunks(d.flat_unconstrained(), con, d.constrained_names, index=index)
    chains = d.unconstrained.shape[0]
    return PsisLoo.concatenate([psis_loo(ll, r_eff, chains=chains, keep_above=keep_above)
                                for _, ll in blocks])


@with_client
def loo(
    model: ProgramLike,
    data: Any = None,
    *,
    draws: Any = None,
    obs: str | None = None,
    obs_fields: list[str] | None = None,
    fix: str = "auto",
    log_lik: str = "auto",
    k_threshold: float | None = None,
    subsample: int | None = None,
    settings: NutsArgs | None = None,
    seed: int | None = None,
    n_workers: int = 1,
    ups_options: dict[str, Any] | None = None,
    progress: Any = None,
    mm_budget: float | None = None,
    cond_budget: float | None = None,
    **nuts_keywords: Unpack[NutsKeywords],
) -> LooResult:
    """PSIS-LOO of a Stan program (a path or :class:`StanModel`) with ``data``, or of a fit
    without its program (``loo(idata)``, a cmdstanpy fit, CSV paths, a log-likelihood array, or
    ``model=None`` with ``draws``): see :func:`~stanlogz.crossval.psis_loo.fitloo.loo_from_fit`
    (PSIS only; fix-ups, data, subsampling and the difference log-likelihood need the program).

    Every observation whose Pareto k̂ exceeds the threshold is recomputed by ``fix``:
    ``"auto"`` (moment matching, then ``"exact"`` for observations still above the threshold),
    ``"mm"`` (moment matching only), ``"exact"`` (NUTS without it and bridge sampling between
    the two posteriors), ``"ups"`` (unbiased path sampling), ``"mis"`` (mixture importance
    sampling of those observations from one HMC run on the posterior mixed with their
    leave-one-out posteriors, no refit; :mod:`.mixture_fix`) or ``"none"``. ``draws``: existing
    draws (Draws, cmdstanpy fit, CSV paths, InferenceData); without them NUTS runs with
    ``settings`` (a :class:`~stanlogz.stan.settings.NutsArgs`; ``chains``, ``warmup``,
    ``n_draws``, ``adapt_delta`` and ``max_treedepth`` replace its fields), and so does every
    refit of the fix-ups. ``obs`` names the observation size variable (inferred when
    unambiguous); ``log_lik``: ``"auto"``, ``"log_lik"`` (the generated quantity),
    ``"difference"`` (the program's density on data instances of one observation, checked for
    validity) or ``"conditional"`` (log p(y_i | y₋ᵢ, θ) from the density normalized over y_i,
    the observation's latents integrated out; what ``"auto"`` uses without a ``log_lik`` when
    the difference is not valid: per-observation or linked latents, non-factorized
    likelihoods; :mod:`.loo_routes`). ``k_threshold``: fix observations above this k̂
    instead of the draw-count-dependent threshold min(1 − 1/log10 S, 0.7). ``subsample``:
    estimate elpd_loo from PSIS on this many observations drawn at random (difference
    estimator around PSIS-LOO of every observation on 100 thinned draws; Magnusson et al.
    2020), for large N. ``mm_budget``: seconds of moment matching, after which the remaining
    high-k̂ observations keep their PSIS values (with the k̂ warning); Ctrl-C during moment
    matching likewise returns the observations matched so far with a note
    (:mod:`.mm_points`). ``cond_budget``: seconds for the conditional log-likelihood's pass
    (:func:`~stanlogz.crossval.observations.conditional_source.start_pass`).
    """
    from .fitloo import is_fit, loo_elsewise

    check_arguments("loo", draws=draws, progress=progress, obs=obs, obs_fields=obs_fields,
                    fix=fix, log_lik=log_lik, k_threshold=k_threshold, subsample=subsample,
                    n_workers=n_workers, ups_options=ups_options)
    nuts = nuts_from_keywords(settings, nuts_keywords, "loo")
    if is_fit(model) or (model is None and draws is not None):
        return loo_elsewise(model, data, draws=draws, obs=obs, obs_fields=obs_fields, fix=fix,
                            log_lik=log_lik, k_threshold=k_threshold, subsample=subsample,
                            settings=nuts, seed=seed, progress=progress)
    t0 = time.perf_counter()
    if fix not in (*FIX_METHODS, "mis"):
        raise InputError(f"fix must be one of {', '.join(FIX_METHODS)}, mis, got {fix!r}")
    if k_threshold is not None and not 0.0 <= k_threshold <= 1.0:
        raise InputError(f"k_threshold must be in [0, 1], got {k_threshold}")
    mm_budget = check_budget(mm_budget)
    check_pass_budget(cond_budget)
    model, data_dict, observations = load_observed(model, data, obs, obs_fields, seed=seed,
                                                   progress=progress)
    if subsample is not None and not (isinstance(subsample, int | np.integer)
                                      and 2 <= subsample < observations.n):
        raise InputError(f"subsample must be an integer in 2..{observations.n - 1} (there are "
                         f"{observations.n} observations), got {subsample}")
    if log_lik != "conditional":
        PointwiseLogLik(model, data_dict, observations, log_lik)  # bad sources fail early
    d = obtain_draws(model, draws, nuts, seed=seed, progress=progress)
    unc = d.flat_unconstrained()
    pw = pointwise_source(model, data_dict, observations, log_lik,
                          unc[_check_rows(unc.shape[0])], check=subsample is None)
    r_eff = relative_efficiency(_posterior_values(d))
    t1 = time.perf_counter()
    notes: list[str] = []
    if subsample is None:
        start_pass(pw, progress, unc.shape[0], cond_budget)
        if not pw.checked:
            pw.check(unc[_check_rows(unc.shape[0])])
        ps = _psis_pass(pw, d, r_eff, None, _keep_above(k_threshold))
        sample_index = None
        est = _full_estimates(ps)
    else:
        sample_index, est, ps = _subsampled(pw, d, r_eff, subsample, seed, progress,
                                            _keep_above(k_threshold))
    notes.extend(pw.notes() if hasattr(pw, "notes") else [])  # quadrature / sums over y_i
    if pw.source == "log_lik":
        warn = pw.compare_log_lik(unc[_check_rows(unc.shape[0], 2)])
        if warn:
            notes.append(warn)
    t_pointwise = time.perf_counter() - t1
    threshold = ps.threshold if k_threshold is None else float(k_threshold)
    index = np.arange(observations.n) if sample_index is None else sample_index
    # mis re-estimates from k-hat 0.5 up: PSIS values kept between 0.5 and 0.7 undercovered
    # (benchmarks/mixture_loo.py), and one mixture run serves them all
    bad = index[ps.khat > (min(threshold, 0.5) if fix == "mis" else threshold)]
    fixed: list[FixedPoint] = []
    if fix != "none" and bad.size:
        fixed, why = _fix(pw, d, bad, ps, index, fix, threshold, r_eff, nuts, ups_options,
                          seed, n_workers, progress, mm_budget)
        notes.extend(why)
    elpd_i = ps.elpd_i.copy()
    pos = {int(o): j for j, o in enumerate(index)}
    for f in fixed:
        elpd_i[pos[f.index]] = f.elpd
    est = (_full_estimates(ps, elpd_i) if sample_index is None
           else subsample_estimates(est["approx"], sample_index, elpd_i, ps, fixed,
                                    est["certain"]))
    warns = _sampler_warnings(d)
    res = LooResult(
        model=model.name, elpd_loo=est["elpd"], se=est["se"], p_loo=est["p_loo"],
        elpd_i=elpd_i, psis_elpd_i=ps.elpd_i, lppd_i=ps.lppd_i, khat=ps.khat,
        threshold=threshold, n_samples=ps.n_samples, r_eff=r_eff, fix=fix,
        log_lik_source=pw.source, observations=observations, fixed=fixed,
        seconds=time.perf_counter() - t0, warnings=warns + notes, psis_mcse_i=ps.mcse_i,
        p_loo_se=est["p_loo_se"], sample_index=sample_index,
        subsampling_se=est.get("subsampling_se", 0.0),
        subsampling_factor=est.get("subsampling_factor", 1.0),
        approximation=None if sample_index is None else f"psis{APPROX_DRAWS}",
        pointwise_seconds=t_pointwise,
        program=model, data=data_dict, draws=d)
    grow, replaced = est.get("expansion", 1.0), [pos[f.index] for f in fixed]
    res.mcse_psis = ps.total_mcse(replaced) * grow
    res.mcse_bias = ps.total_bias(replaced) * grow
    res.mcse_elpd_loo = math.sqrt(res.mcse_psis**2 + res.mcse_bias**2
                                  + fixed_variance(fixed) * grow**2)
    res.warnings.extend(_warnings(res))
    res.warnings = list(dict.fromkeys(res.warnings))  # refits sharing the draws repeat theirs
    return res


def _full_estimates(ps: PsisLoo, elpd_i: np.ndarray | None = None) -> dict[str, float]:
    """elpd = Σ elpd_i, its se (:func:`~stanlogz.crossval.refit.cv_se.elpd_se`), p_loo."""
    elpd_i = ps.elpd_i if elpd_i is None else elpd_i
    p_i = ps.lppd_i - elpd_i
    return {"elpd": float(elpd_i.sum()), "se": elpd_se(elpd_i), "p_loo": float(p_i.sum()),
            "p_loo_se": sum_se(p_i)}


def _keep_above(k_threshold: float | None) -> float:
    """k̂ above which a PSIS value may be replaced by a fix-up (its influence is kept)."""
    return 0.5 if k_threshold is None else min(0.5, float(k_threshold))


def _subsampled(pw: PointwiseLogLik, d: Draws, r_eff: float, m: int, seed: int | None,
                progress: Any, keep_above: float = 0.5
                ) -> tuple[np.ndarray, dict[str, Any], PsisLoo]:
    """PSIS on ``m`` observations drawn without replacement, and the approximation of every
    observation: PSIS-LOO on ``APPROX_DRAWS`` evenly thinned draws. (The point estimate
    log p(y_i | θ̄) left heavy-tailed differences on influential observations, whose sample
    variance underestimated the subsampling variance: its ±2 se covered 39–77%.)"""
    n = pw.obs.n
    unc = d.flat_unconstrained()
    rows = np.unique(np.linspace(0, unc.shape[0] - 1, min(APPROX_DRAWS, unc.shape[0]))
                     .astype(int))
    if progress:
        progress(f"approximate PSIS-LOO of {n} observations on {rows.size} thinned draws; "
                 f"PSIS on {m} observations drawn at random")
    at_points = np.concatenate([b for _, b in pw.chunks(unc[rows])], axis=1)
    pw.check(unc[rows[_check_rows(rows.size)]], at_points[_check_rows(rows.size)])
    ap = psis_loo(at_points, r_eff)
    rng = np.random.default_rng(child_sequence(seed, SUBSAMPLE_STREAM))
    index, certain = draw_sample(ap.khat, m, rng)
    ps = _psis_pass(pw, d, r_eff, index, keep_above)
    return index, {"approx": ap.elpd_i, "certain": certain}, ps


def _fix(pw: PointwiseLogLik, d: Draws, bad: np.ndarray, ps: PsisLoo, index: np.ndarray,
         fix: str, threshold: float, r_eff: float, nuts: NutsArgs,
         ups_options: dict[str, Any] | None, seed: int | None, n_workers: int, progress: Any,
         mm_budget: float | None = None) -> tuple[list[FixedPoint], list[str]]:
    """Fix-ups of the observations ``bad`` (0-based), and warnings for those that cannot be.
    ``mm`` keeps every moment-matched value; ``auto`` keeps those it brings under the
    threshold and refits (``exact``) the rest."""
    pos = {int(o): j for j, o in enumerate(index)}
    fixed: list[FixedPoint] = []
    if fix == "mis":
        return mixture_fixup(pw, d, bad, ps, pos, nuts, seed, progress)
    if fix in ("mm", "auto"):
        if progress:
            progress(f"moment matching {bad.size} observation(s) with k-hat > {threshold:.2f}: "
                     f"{', '.join(str(i + 1) for i in bad)}")
        log_post = pw.model.log_density_many(d.flat_unconstrained())  # shared by all points
        matched, mm_notes, _ = moment_match_points(
            bad, lambda i, deadline, on_map: _moment_matched(
                pw, d, log_post, i, ps, pos[i], threshold, r_eff, deadline=deadline,
                on_map=on_map), progress, mm_budget)
        fixed = [f for f in matched if fix == "mm" or f.khat_after <= threshold]
        bad = np.array([f.index for f in matched if f.khat_after > threshold], dtype=int)
        if fix == "mm" or not bad.size or any(n.startswith("interrupted") for n in mm_notes):
            return fixed, mm_notes
    method = "exact" if fix == "auto" else fix
    try:
        for i in bad:
            pw.held_out_model(int(i))  # build data instances (and check dims) before workers
    except InputError as exc:
        if method != "exact":
            return fixed, [f"{bad.size} observation(s) have Pareto k-hat above "
                           f"{threshold:.2f}; {method} cannot refit them one at a time ({exc}); "
                           "use --fix exact"]
        try:
            return fixed + _exact_with_latents(pw, d, bad, ps, pos, nuts, seed, n_workers,
                                               progress), []
        except SplitError as err:
            return fixed, [refit_refusal(err, bad.size, threshold)]
    refused = (exact_split_error(pw, d.flat_unconstrained(), int(bad[0]))
               if method == "exact" else None)
    if refused is not None:
        return fixed, [refit_refusal(refused, bad.size, threshold)]
    if progress:
        progress(f"refitting {bad.size} observation(s) with k-hat > {threshold:.2f} "
                 f"({method}): {', '.join(str(i + 1) for i in bad)}")
    tasks = [FixTask(int(i), method, float(ps.khat[pos[int(i)]]),
                     float(ps.elpd_i[pos[int(i)]]), nuts, dict(ups_options or {}))
             for i in bad]
    unc = d.unconstrained
    with steps(progress, len(tasks), f"{method} refits", unit="refit") as bar:
        fixed += run_parallel(lambda task, rng: fix_observation(pw, unc, task, rng), tasks,
                              seed, n_workers=n_workers,
                              backend="thread" if n_workers > 1 else "serial",
                              on_done=bar.update)
    return fixed, []


def _exact_with_latents(pw: PointwiseLogLik, d: Draws, bad: np.ndarray, ps: PsisLoo,
                        pos: dict[int, int], nuts: NutsArgs, seed: int | None,
                        n_workers: int, progress: Any) -> list[FixedPoint]:
    """Exact log p(y_i | y₋ᵢ) for a program with one latent per observation: the held-out
    observation's latents are integrated out by the augmented bridge of :mod:`.heldout`."""
    if progress:
        progress(f"refitting {bad.size} observation(s) without their own parameters (exact, "
                 f"augmented bridge): {', '.join(str(i + 1) for i in bad)}")
    found = heldout_many(pw.model, pw.data, pw.obs, [[int(i)] for i in bad], full_draws=d,
                         settings=nuts, seed=child_sequence(seed, HELDOUT_STREAM),
                         n_workers=n_workers, progress=progress)
    return [FixedPoint(int(i), h.elpd, h.se, h.method, float(ps.khat[pos[int(i)]]),
                       float(ps.elpd_i[pos[int(i)]]), h.n_gradient_evals, h.n_evals, h.seconds,
                       warnings=list(h.warnings), diagnostics={SHARED_SE: h.shared_se})
            for i, h in zip(bad, found, strict=True)]


def _moment_matched(pw: PointwiseLogLik, d: Draws, log_post: np.ndarray, i: int, ps: PsisLoo,
                    j: int, threshold: float, r_eff: float, **options: Any) -> FixedPoint:
    """Observation ``i`` (``j``-th pointwise entry) fixed by moment matching; ``log_post`` is
    the full-data log density at the draws."""
    mm = moment_match_observation(pw, d.unconstrained, i, r_eff=r_eff, k_threshold=threshold,
                                  k_target=MM_K_TARGET, log_post_draws=log_post,
                                  log_lik_draws=pw.column(i, d.flat_unconstrained()),
                                  **options)
    warns = list(mm.warnings)
    if mm.khat_after > threshold:
        warns.append(f"observation {i + 1}: moment matching lowered k-hat from "
                     f"{mm.khat_before:.2f} to {mm.khat_after:.2f}, still above "
                     f"{threshold:.2f}")
    return FixedPoint(i, mm.elpd, mm.se, "mm", float(ps.khat[j]), float(ps.elpd_i[j]), 0,
                      mm.n_evals, mm.seconds, warnings=warns, khat_after=mm.khat_after)
