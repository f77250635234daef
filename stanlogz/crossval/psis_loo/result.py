"""The result of a leave-one-out cross-validation of one program (:class:`LooResult`): its
estimates, pointwise values and fixed points, its ArviZ object with the table's k̂ (loo's k̂
after fix-ups beside it), and the warnings its values call for. PSIS-LOO of a program
(:func:`~stanlogz.crossval.psis_loo.loo.loo`), of a fit
(:func:`~stanlogz.crossval.psis_loo.fitloo.loo_from_fit`) and mixture LOO
(:func:`~stanlogz.crossval.psis_loo.mixture_loo.mixture_loo`) all return one."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar

import numpy as np

from ... import arviz_compat
from ..._util.arrays import even_rows
from ..._util.gpd import KHAT_HEAVY
from ...draws import Draws
from ...errors import InputError, Route, StanlogzError
from ..elpd.base import ElpdResult
from ..elpd.routes import mm_route, refit_data_error
from ..fixups.fixups import FixedPoint
from ..fixups.registry import FIX_LABELS
from ..names import LooNames
from ..observations.checked import Verification
from ..observations.integrated import IntegratedSource
from ..observations.observations import Observations
from ..observations.splitcheck import check_split, split_route
from ..refit.cv_se import ElpdInterval, elpd_interval


@dataclass(repr=False)
class LooResult(LooNames, ElpdResult):
    """Leave-one-out cross-validation of one program: elpd_loo with its se, its Monte Carlo se,
    p_loo, and the pointwise values (PSIS, or fixed where k̂ was above the threshold). With
    subsampling the pointwise arrays hold the sampled observations (``sample_index``) only.

    Attributes
    ----------
    model : str
        The program's (or fit's) name.
    elpd_loo : float
        The expected log pointwise predictive density, Σ_i log p(y_i | y₋i).
    se : float
        Its se over observations, sqrt(N var(elpd_i)), as loo and ArviZ report it.
    p_loo : float
        The effective number of parameters, lppd − elpd_loo.
    elpd_i, lppd_i, khat : ndarray
        Per observation: the final values (fixed ones replaced), the in-sample log
        predictive densities and the Pareto k̂ of the PSIS weights.
    psis_elpd_i : ndarray
        The PSIS values before any fix.
    threshold : float
        The k̂ above which a PSIS value is not trusted.
    fixed : list of FixedPoint
        The observations recomputed (moment matching, mixture, refit, ...).
    warnings : list of str
        What to do about problems found.
    modes : list of dict or None
        Where the chains sat in modes NUTS does not move between (:mod:`.modes`): each mode's
        ``chains``, ``log_z``, ``log_z_se``, ``weight`` (its share of the evidence),
        ``elpd_loo`` and ``mcse_elpd_loo``; elpd_loo is then their mixture. None for one mode.

    Examples
    --------
    >>> import numpy as np, stanlogz
    >>> r = stanlogz.loo(np.random.default_rng(0).normal(-1.0, 0.3, size=(4, 100, 12)))
    >>> type(r).__name__, r.elpd_i.shape, bool(np.isclose(r.elpd_loo, r.elpd_i.sum()))
    ('LooResult', (12,), True)
    """

    kind: ClassVar[str] = "loo"
    _fix_labels: ClassVar[Mapping[str, str]] = FIX_LABELS
    model: str
    elpd_loo: float
    se: float  # loo's se_elpd_loo, sqrt(N var(elpd_i)) (ddof 1), as R loo and ArviZ 1.x
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
    #: complete Monte Carlo se: sqrt(mcse_psis² + mcse_bias² + Σ fixed points' se²); NaN (loo's
    #: NA) while any observation's k̂ after the fix-ups stays above the threshold
    #: (:meth:`still_bad`, :meth:`mcse_na_reason`)
    mcse_elpd_loo: float = 0.0
    #: Monte Carlo se of the PSIS values' part of elpd_loo, from the draws' summed influence
    #: (accounts for the observations sharing the draws; :meth:`PsisLoo.total_mcse`)
    mcse_psis: float = 0.0
    #: estimated bias of the PSIS values' part (k̂ above 0.5;
    #: :func:`~stanlogz.crossval.elpd.psis.half_bias`), included in mcse_elpd_loo (elpd_loo is
    #: left as PSIS gives it, as loo and ArviZ do)
    mcse_bias: float = 0.0
    #: why mcse_elpd_loo is NaN when a self-check of the pointwise values failed (None: none)
    mcse_na_note: str | None = None
    sample_index: np.ndarray | None = None  # subsampled observations (0-based), or None
    subsampling_se: float = 0.0  # se of the subsampling (difference) estimator
    #: the small-sample (bootstrap-t) factor included in subsampling_se (1 when not subsampled)
    subsampling_factor: float = 1.0
    approximation: str | None = None  # the cheap pointwise approximation used to subsample
    pointwise_seconds: float = 0.0  # building and smoothing the pointwise values
    #: what the time budget ended (:func:`~.anytime.budget_flags`): sampling after some
    #: draws, the pointwise pass after some observations; None when it ended nothing
    budget_stop: dict[str, Any] | None = None
    #: a precision target's run (``loo(mcse_target=...)``, :mod:`.target`): the target, what
    #: ended it (``ended_by``) and each round's draws and mcse; None without a target
    precision: dict[str, Any] | None = None
    #: the self-check's outcome (``loo(verify=...)``; :mod:`.verify`), None when off
    verification: Verification | None = None
    #: the k̂ band's difference estimator (:mod:`.band_refit`), None when it did not run
    band: Any = None
    #: where the chains sat in several modes (:mod:`.modes`): each mode's chains, evidence,
    #: weight and elpd_loo; None for one mode
    modes: list[dict[str, Any]] | None = None
    #: one mode's PSIS values with every observation's draw influence (:mod:`.modes`), None
    #: otherwise (not serialized)
    psis: Any = field(default=None, repr=False)
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

    @cached_property
    def elpd_loo_interval(self) -> ElpdInterval | None:
        """The calibrated interval beside loo's ``se``: elpd_loo ± 2 c se, c the small-N
        bootstrap-t factor (:func:`~stanlogz.crossval.refit.cv_se.elpd_interval`), for the
        data-sampling error (the Monte Carlo one is ``mcse_elpd_loo``); None when subsampled
        (no interval with the subsampling error has been calibrated)."""
        if self.sample_index is not None:
            return None
        return elpd_interval(self.elpd_i, self.elpd_loo)

    def mcse_na_reason(self) -> str | None:
        """Why ``mcse_elpd_loo`` is NaN (loo prints NA), or None when it is given."""
        if self.mcse_na_note is not None:  # values wrong beyond their error: first
            return self.mcse_na_note
        if left := self.still_bad():
            return (f"{len(left)} observation(s) still have Pareto k-hat above "
                    f"{self.threshold:.2f} after the fix-ups: PSIS's error on them is not "
                    "estimable from the draws (their own mc se understates it), so the total "
                    "has none")
        v = self.verification
        if v is not None and v.status == "withheld":
            bad = ", ".join(f"{p.index + 1} ({p.z_text})" for p in v.failed)
            if v.sum_failed:  # the checked values too high together (one-sided sum test)
                bad = ", ".join([*([bad] if bad else []), "the sum of "
                                 + "+".join(str(i + 1) for i in v.sum_points)
                                 + (" (z NA)" if math.isnan(v.sum_z)
                                    else f" (z = {v.sum_z:+.1f})")])
            return (f"the self-check found value(s) {bad} outside their error bars: PSIS's "
                    "Monte Carlo se does not hold here")
        return None if np.isfinite(self.mcse_elpd_loo) else "unreliable fix-ups (see warnings)"

    @property
    def mcse_i(self) -> np.ndarray:
        """Complete Monte Carlo se of each pointwise value: PSIS's, or the fix-up's."""
        out = (np.zeros(self.elpd_i.size) if self.psis_mcse_i is None
               else np.array(self.psis_mcse_i, dtype=float))
        pos = {int(o): j for j, o in enumerate(self.index)}
        for f in self.fixed:
            out[pos[f.index]] = f.mcse
        return out

    def khat_counts(self) -> dict[str, int]:
        """Observations per k̂ band: (-inf, threshold], (threshold, 1], (1, inf); a NaN k̂ (a
        likelihood constant over the draws, where PSIS is exact) counts as good."""
        k = self.khat
        bad, very = int(np.sum((k > self.threshold) & (k <= 1.0))), int(np.sum(k > 1.0))
        return {"good": int(k.size) - bad - very, "bad": bad, "very bad": very}

    def unfixed_bad(self) -> list[int]:
        """0-based indices of observations above the threshold that were not fixed."""
        done = {f.index for f in self.fixed}
        return [int(self.index[j]) for j in np.nonzero(self.khat > self.threshold)[0]
                if int(self.index[j]) not in done]

    def still_bad(self) -> list[int]:
        """0-based indices of observations whose k̂ after the fix-ups (loo's: a moment-matched
        point's k̂ after matching, 0 for a refit; :func:`fixed_khat`) is above the threshold:
        the unfixed ones and those moment matching left above it. While there are any, loo's
        ``mcse_loo`` is NA and ``mcse_elpd_loo`` NaN."""
        k_after, _ = fixed_khat(self.khat, self.index, self.fixed)
        return [int(self.index[j]) for j in np.nonzero(k_after > self.threshold)[0]]

    def pointwise(self) -> list[dict[str, Any]]:
        """One row per (sampled) observation: number (from 1), elpd, its Monte Carlo se, k̂,
        method."""
        method = {f.index: f.method for f in self.fixed}
        se = self.mcse_i
        return [{"observation": int(o) + 1, "elpd": float(self.elpd_i[j]),
                 "mcse": float(se[j]), "psis_elpd": float(self.psis_elpd_i[j]),
                 "khat": float(self.khat[j]), "method": method.get(int(o), "psis")}
                for j, o in enumerate(self.index)]

    def table(self) -> list[list[Any]]:
        """The loo-style summary rows: (quantity, estimate, se)."""
        return [["elpd_loo", round(self.elpd_loo, 3), round(self.se, 3)],
                ["p_loo", round(self.p_loo, 3), round(self.p_loo_se, 3)],
                ["looic", round(-2 * self.elpd_loo, 3), round(2 * self.se, 3)]]

    def precision_note(self) -> str:
        """The line of a precision-targeted run: what ended it, the draws and the rounds."""
        p = self.precision or {}
        why = {"target": "the target was met", "budget": "the time budget ended it",
               "max_draws": "the draws reached their cap", "mcse_na": "mcse_elpd_loo is NA"}
        trail = ", ".join(f"{r['draws']}: " + ("NA" if r["mcse_elpd_loo"] is None
                                                 else f"{r['mcse_elpd_loo']:.3g}")
                          for r in p.get("rounds", []))
        return (f"mcse target {p.get('mcse_target', float('nan')):g}: "
                f"{why.get(p.get('ended_by'), p.get('ended_by'))} with {p.get('draws')} draws "
                f"(chains continued from {p.get('draws_first')}, no new warmup; mcse by "
                f"draws: {trail}).")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable dict (pointwise rows included)."""
        iv = self.elpd_loo_interval
        mcse = self.mcse_elpd_loo if np.isfinite(self.mcse_elpd_loo) else None
        return {**self.elpd_dict(), "model": self.model, "elpd_loo": self.elpd_loo, "se": self.se,
                "se_elpd_loo": self.se, "elpd_loo_interval": None if iv is None else iv.to_dict(),
                "mcse_elpd_loo": mcse, "mcse_elpd_loo_na": self.mcse_na_reason(),
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
                "budget_stop": self.budget_stop, "precision": self.precision,
                "verification": None if self.verification is None else self.verification.to_dict(),
                "band": None if self.band is None else self.band.to_dict(),
                "modes": self.modes, "warnings": self.warnings}

    def to_arviz(self) -> Any:
        """ArviZ's ELPD object (0.x ``ELPDData``, 1.x ``ELPDDataLOO``) with the fixed values.
        ``pareto_k`` is the table's k̂ (every PSIS k̂, before fix-ups: ``khat``), so ArviZ's
        diagnostic counts are those of ``print(result)``; beside it the before/after pair:
        ``influence_pareto_k`` (the same PSIS k̂, loo's name for it after moment matching) and
        ``pareto_k_after`` (loo's k̂ after fix-ups: a moment-matched point's k̂ after matching,
        0 for a refit as brms' ``reloo``); ``fixed``, ``fix_method``."""
        import xarray as xr

        if self.sample_index is not None:
            raise InputError("a subsampled LOO has pointwise values for the sampled "
                             "observations only; run without subsample for an ArviZ object")
        k_after, methods = fixed_khat(self.khat, self.index, self.fixed)
        khat = np.asarray(self.khat, dtype=float)
        extra = {"influence_pareto_k": xr.DataArray(khat, dims=["obs"],
                                                    name="influence_pareto_k"),
                 "pareto_k_after": xr.DataArray(k_after, dims=["obs"], name="pareto_k_after"),
                 "fixed": xr.DataArray(methods != "", dims=["obs"], name="fixed"),
                 "fix_method": xr.DataArray(methods, dims=["obs"], name="fix_method")}
        return arviz_compat.elpd_object(
            "loo", elpd=self.elpd_loo, se=self.se, p=self.p_loo, n_samples=self.n_samples,
            elpd_i=self.elpd_i, warning=bool(self.still_bad()), good_k=self.threshold,
            extra=extra, pareto_k=khat, p_i=self.lppd_i - self.elpd_i)


def fixed_khat(khat: np.ndarray, index: np.ndarray, fixed: Sequence[FixedPoint]
               ) -> tuple[np.ndarray, np.ndarray]:
    """loo's Pareto k̂ after fix-ups, and each point's fix method (``""``: not fixed): a
    moment-matched point gets the k̂ of the ratios its estimate uses (loo's
    ``loo_moment_match``), an exactly recomputed one (refit, bridge, UPS) gets 0 (brms'
    ``reloo``); the other points keep their PSIS k̂."""
    k = np.array(khat, dtype=float)
    methods = np.full(k.size, "", dtype=object)
    where = {int(o): j for j, o in enumerate(np.asarray(index))}
    for f in fixed:
        j = where.get(int(f.index))
        if j is None:
            continue
        after = f.khat_after
        k[j] = float(after) if after is not None and np.isfinite(after) else 0.0
        methods[j] = f.method
    return k, methods.astype(str)


def loo_warnings(r: LooResult) -> list[str]:
    """What the estimates and k-hat values of a LOO result call for (the fix-ups' own warnings
    included)."""
    out = []
    left = r.unfixed_bad()
    if left:
        nums = ", ".join(str(i + 1) for i in left[:10])
        what = (_refit_advice(r, left[0]) if r.fix == "none" else
                f"the {r.fix} fix-up did not replace them (see the warnings above)")
        out.append(f"{len(left)} observation(s) have Pareto k-hat above {r.threshold:.2f} "
                   f"({nums}): their PSIS values are unreliable; {what}"
                   + _integrated_offer(r))
    for f in r.fixed:
        out.extend(f.warnings)
        if f.mcse > 0.1:
            out.append(f"observation {f.index + 1}: the fixed value has Monte Carlo se "
                       f"{f.mcse:.2f}; run more draws for it")
    offer = _integrated_offer(r) if np.any(_psis_khat(r) > KHAT_HEAVY) else ""
    if (abs(r.mcse_bias) > 0.5 * r.mcse_psis and abs(r.mcse_bias) > 0.1) or offer:
        out.append(f"PSIS values with k-hat above 0.5: their bias on elpd_loo, estimated from "
                   f"the draws' two halves, is {r.mcse_bias:+.2f} at {r.n_samples} draws "
                   "(included in its Monte Carlo se), an estimate that takes the ratios' tail "
                   "to be as light as k-hat says and understates a heavier one (tenfold for a "
                   "log_lik conditional on a latent per observation); k_threshold=0.5 "
                   "moment-matches them, or more draws shrink it" + offer)
    if r.mcse_elpd_loo > 0.5:
        out.append(f"the Monte Carlo se of elpd_loo is {r.mcse_elpd_loo:.2f}: run more draws "
                   "(it falls as 1/sqrt(draws))")
    if r.sample_index is None and r.pointwise_seconds > 30 and r.n_obs > 5000:
        out.append(f"the pointwise log-likelihood of {r.n_obs} observations took "
                   f"{r.pointwise_seconds:.0f} s: {Route(options={'subsample': 1000})} "
                   "estimates elpd_loo from 1000 of them with a subsampling se")
    if r.p_loo > 0.4 * r.n_obs and r.n_obs > 10:
        out.append(f"p_loo = {r.p_loo:.1f} is large against {r.n_obs} observations: the model "
                   "may be misspecified or too flexible")
    return out


def _refit_advice(r: LooResult, i: int) -> str:
    """What recomputes the unreliable values: exact refits, or moment matching where the program
    cannot be refitted without observation ``i`` (0-based): it refuses the shorter data, or
    deleting the observation would give another model (the split check at a few draws)."""
    exact = f"recompute them by exact refits ({Route(options={'fix': 'exact'})})"
    if r.program is None or r.data is None or r.observations is None or r.sample_index is not None:
        return exact
    why = refit_data_error(r.program, r.data, r.observations)
    if why is None and r.draws is not None:
        unc = r.draws.flat_unconstrained()
        rows = even_rows(len(unc), 3)
        try:
            check_split(r.program, r.data, r.observations, i, unc[rows])
        except StanlogzError as err:
            why = str(err).replace(f"; {split_route()}", "")
        except Exception:  # the check itself failed: the advice stays exact refits
            why = None
    return exact if why is None else f"exact refits cannot recompute them ({why}); {mm_route()}"


def _psis_khat(r: LooResult) -> np.ndarray:
    """k̂ of the values left on PSIS (the fixed ones taken out)."""
    done = {f.index for f in r.fixed}
    k = np.asarray(r.khat, dtype=float)
    left = np.array([int(o) not in done for o in r.index], dtype=bool)
    return np.where(left & np.isfinite(k), k, -np.inf)


def _integrated_offer(r: LooResult) -> str:
    """The integrated route, offered when the log-likelihood is conditional on one latent per
    observation (:mod:`~stanlogz.crossval.observations.integrated`) and the program accepts
    the data instances that route needs."""
    if r.log_lik_source != "log_lik" or r.program is None or r.data is None:
        return ""
    try:
        IntegratedSource(r.program, r.data, r.observations)  # one latent each, its baselines
    except StanlogzError:
        return ""
    return (f"; the program has one latent per observation: "
            f"{Route(options={'log_lik': 'integrated'})} integrates it out instead of "
            "conditioning on it")
