"""K-fold, stratified, grouped and leave-one-group-out cross-validation of a Stan program with
exact held-out predictive densities: :func:`kfold`, :func:`make_folds` and :class:`KFoldResult`.

Every fold is refit with NUTS on the training data; log p(y_V | y_T) (the fold's joint
predictive density) and every held-out observation's log p(y_i | y_T) come from
:func:`stanlogz.crossval.refit.heldout.heldout_elpd`, so programs with per-observation latent
parameters are handled too. elpd_kfold = Σ_i log p(y_i | y_T(i)) (loo's ``kfold``
convention); with one observation per fold it is exact leave-one-out. Leave-one-group-out
(``group`` with ``k=None``) headlines elpd_logo = Σ_g log p(y_g | y₋g), each held-out group's
joint density, as ``loo(group=...)`` does, with elpd_kfold (the observations' sum) beside it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar, Unpack

import numpy as np

from ... import arviz_compat
from ..._util.argcheck import check_arguments
from ..._util.seeds import Stream, stream, stream_int_seed, stream_rng
from ..._util.sum_se import sum_se
from ...draws import Draws, obtain_draws
from ...errors import DataError, InputError, option
from ...parallel import with_client
from ...stan.program import ProgramLike
from ...stan.settings import NutsArgs, NutsKeywords, nuts_from_keywords
from ..elpd.base import ElpdResult
from ..names import KFoldNames
from ..observations.observations import Observations, load_observed, observation_labels
from .cv_se import ElpdInterval, elpd_interval, kfold_se
from .cv_tail import add_cv_warnings
from .fold_sums import folds_sum_se
from .folds import make_folds
from .heldout import HeldOut, heldout_many
from .kfold_modes import missed_modes
from .kfold_target import check_target, kfold_to_target
from .kfold_time import (
    HEAVY_SHARE,
    anytime_refits,
    budget_warning,
    estimate_line,
    fill_by_psis,
    heavy_count,
    held_out_price,
    refit_seconds,
)


@dataclass(repr=False)
class KFoldResult(KFoldNames, ElpdResult):
    """K-fold cross-validation of one program: elpd_kfold with loo's se (sqrt(N var(elpd_i))),
    the fold-aware calibrated ``se_fold_aware`` beside it, its Monte Carlo se, pointwise values,
    and every fold's exact held-out result.

    Attributes
    ----------
    model : str
        The program's name.
    scheme : str
        ``"random"``, ``"stratified"``, ``"grouped"``, ``"leave-one-group-out"`` or
        ``"leave-one-out"``.
    k : int
        The number of folds.
    fold_of : ndarray of int
        The fold (0-based) of each observation.
    elpd_i : ndarray
        log p(y_i | y_T(i)), each observation given the other folds.
    folds : list of HeldOut
        Every fold's exact held-out result.
    group, stratify : str or None
        The data arrays the folds were made by.
    warnings : list of str
        What to do about problems found.

    See Also
    --------
    stanlogz.kfold : makes it; :doc:`/tutorials/kfold_lfo` shows one.
    """

    kind: ClassVar[str] = "kfold"
    model: str
    scheme: str  # random, stratified, grouped, leave-one-group-out, leave-one-out
    k: int
    fold_of: np.ndarray  # fold (0-based) of each observation
    elpd_i: np.ndarray  # log p(y_i | y_T(i))
    folds: list[HeldOut]
    observations: Observations
    n_samples: int
    group: str | None = None
    stratify: str | None = None
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)
    #: the refits' seconds estimated before the first (:mod:`.kfold_time`; None: unknown)
    estimated_seconds: float | None = None
    #: what the time budget ended: ``{"folds_refit", "folds", "estimated_by": "psis", "khat":
    #: {fold: k-hat}, "unreliable": [folds]}``; None when every fold was refit
    budget_stop: dict[str, Any] | None = None
    #: a precision target's run (``kfold(mcse_target=...)``, :mod:`.kfold_target`): the
    #: target, what ended it (``ended_by``), the draws per chain and every round's mcse
    precision: dict[str, Any] | None = None
    #: why :attr:`mcse` is NaN (modes the full-data chains missed: :mod:`.kfold_modes`)
    mcse_na_note: str | None = None

    @property
    def elpd_kfold(self) -> float:
        """Σ_i log p(y_i | y_T(i))."""
        return float(self.elpd_i.sum())

    @property
    def fold_elpd(self) -> np.ndarray:
        """Each fold's contribution Σ_{i in fold} log p(y_i | y_T)."""
        return np.array([self.elpd_i[f.index].sum() for f in self.folds])

    @property
    def _measured(self) -> tuple[np.ndarray, float]:
        """The observations whose values were estimated (not the folds a budget left to the
        refit folds' rate, ``fold-sample``: their values are that rate, not estimates) and
        sqrt(N / their count), which carries a spread over them to all N."""
        keep = np.ones(self.elpd_i.size, dtype=bool)
        for f in self.folds:
            if f.method == "fold-sample":
                keep[f.index] = False
        return keep, float(np.sqrt(keep.size / max(int(keep.sum()), 1)))

    @property
    def se(self) -> float:
        """loo's se of elpd_kfold (R loo's ``kfold`` and ArviZ's): sqrt(N var(elpd_i)), ddof 1,
        over the N observations of ``elpd_i`` (where a budget left folds to the refit folds'
        rate, the variance over the observations estimated). At few folds or few observations
        it undercovers; :attr:`se_fold_aware` is the calibrated spread beside it."""
        keep, up = self._measured
        return up * sum_se(self.elpd_i[keep])

    @cached_property
    def se_fold_aware(self) -> float:
        """se of elpd_kfold as an estimate of the full-data posterior's expected log score on
        N new observations, at least :attr:`se`: the pointwise variance with a small-N
        bootstrap-t calibration plus the between-fold excess
        (:func:`stanlogz.crossval.refit.cv_se.kfold_se`); elpd_kfold ± 2 se_fold_aware is the
        interval whose coverage ``benchmarks/coverage_cv.py`` measures."""
        keep, up = self._measured
        return up * kfold_se(self.elpd_i[keep], self.fold_of[keep])

    @property
    def se_between_folds(self) -> float:
        """sqrt(K var(fold contributions)) (K − 1 degrees of freedom: undercovers at few
        folds; kept for comparison)."""
        keep = np.array([f.method != "fold-sample" for f in self.folds], dtype=bool)
        return float(np.sqrt(keep.size / max(int(keep.sum()), 1))) * sum_se(self.fold_elpd[keep])

    @property
    def se_pointwise(self) -> float:
        """The former name of :attr:`se` (loo's sqrt(N var(elpd_i)), ddof 1)."""
        return self.se

    @property
    def mcse(self) -> float:
        """Monte Carlo se of elpd_kfold: the folds' own errors are independent; the full-data
        draws every fold mixes in add their influence draw by draw over the folds
        (:func:`.fold_sums.folds_sum_se`); the error of the log Z of the full data that
        evidence-difference folds share moves each fold's sum by ∂Σ elpd_i/∂log r times
        itself, and these parts add linearly. NaN with :attr:`mcse_na_note`."""
        return math.nan if self.mcse_na_note else folds_sum_se(self.folds)

    @property
    def elpd_joint(self) -> float:
        """Σ over folds of the joint log p(y_V | y_T)."""
        return float(sum(f.elpd for f in self.folds))

    @property
    def elpd_joint_mcse(self) -> float:
        """Monte Carlo se of :attr:`elpd_joint`."""
        return folds_sum_se(self.folds, joint=True)

    @property
    def is_logo(self) -> bool:
        """Whether the folds are the groups (leave-one-group-out, ``k=None`` with ``group``)."""
        return self.scheme == "leave-one-group-out"

    @property
    def elpd_logo(self) -> float:
        """Leave-one-group-out's headline, Σ_g log p(y_g | y₋g): each held-out group's joint
        predictive density (:attr:`elpd_joint`), the quantity ``loo(group=...)`` estimates without
        refits; NaN unless the folds are the groups."""
        return self.elpd_joint if self.is_logo else math.nan

    @property
    def elpd_logo_se(self) -> float:
        """se of :attr:`elpd_logo` over groups: sqrt(G var(log p(y_g | y₋g))), ddof 1 (loo's
        definition with groups as the units, as ``loo(group=...)``'s ``se``); NaN unless LOGO."""
        return sum_se(self.group_elpd) if self.is_logo else math.nan

    @property
    def mcse_elpd_logo(self) -> float:
        """Monte Carlo se of :attr:`elpd_logo` (:attr:`elpd_joint_mcse`); NaN unless LOGO."""
        return self.elpd_joint_mcse if self.is_logo else math.nan

    @property
    def group_elpd(self) -> np.ndarray:
        """Each fold's joint log p(y_V | y_T) (one per group under leave-one-group-out)."""
        return np.array([f.elpd for f in self.folds])

    @property
    def elpd_logo_interval(self) -> ElpdInterval:
        """The calibrated interval beside :attr:`elpd_logo_se` (±2 se times the small-count
        factor of the group values, as ``loo(group=...)``'s); NaN bounds unless LOGO."""
        if not self.is_logo:
            return ElpdInterval(math.nan, math.nan, math.nan, math.nan)
        return elpd_interval(self.group_elpd, self.elpd_logo)

    def table(self) -> list[list[Any]]:
        """Summary rows: (quantity, estimate, se, Monte Carlo se); leave-one-group-out leads
        with elpd_logo and logoic, elpd_kfold (the per-observation sum) beside them."""
        if self.is_logo:
            return [["elpd_logo", round(self.elpd_logo, 3), round(self.elpd_logo_se, 3),
                     round(self.mcse_elpd_logo, 4)],
                    ["logoic", round(-2 * self.elpd_logo, 3), round(2 * self.elpd_logo_se, 3),
                     round(2 * self.mcse_elpd_logo, 4)],
                    ["elpd_kfold (sum of log p(y_i | y_-g(i)))", round(self.elpd_kfold, 3),
                     round(self.se, 3), round(self.mcse, 4)]]
        rows = [["elpd_kfold", round(self.elpd_kfold, 3), round(self.se, 3),
                 round(self.mcse, 4)],
                ["kfoldic", round(-2 * self.elpd_kfold, 3), round(2 * self.se, 3),
                 round(2 * self.mcse, 4)],
                ["elpd_kfold (se: se_fold_aware)",
                 round(self.elpd_kfold, 3), round(self.se_fold_aware, 3), None]]
        if any(f.index.size > 1 for f in self.folds):
            rows.append(["elpd_joint (sum of log p(y_V | y_T))", round(self.elpd_joint, 3),
                         None, round(self.elpd_joint_mcse, 4)])
        return rows

    def fold_rows(self) -> list[list[Any]]:
        """One row per fold: fold, size, Σ elpd_i, its mc se, joint elpd, its se, method,
        k-hat of the bridge (full side, training side), NUTS gradient evaluations (the
        seconds are in ``to_dict``: a printed table is the same for the same seed)."""
        return [[j + 1, f.index.size, round(float(self.elpd_i[f.index].sum()), 4),
                 round(f.elpd_i_mcse, 4), round(f.elpd, 4), round(f.mcse, 4), f.method,
                 f"{f.khat[0]:.2f}/{f.khat[1]:.2f}", f.n_gradient_evals]
                for j, f in enumerate(self.folds)]

    @property
    def point_refits(self) -> np.ndarray:
        """The observations (0-based) whose importance weights in their fold were heavy-tailed
        (Pareto k̂ above 0.5), each refit on its own (:mod:`.heldout_points`)."""
        return np.sort(np.concatenate([np.zeros(0, int)] + [
            np.asarray(f.refit_observations, dtype=int) for f in self.folds]))

    def pointwise(self) -> list[dict[str, Any]]:
        """One row per observation: number (from 1), fold (from 1), elpd, how its fold was
        held out (``method``: the refit's ``bridge``, ``augmented-bridge`` or
        ``evidence-difference``, ``psis`` from the full fit, or ``fold-sample`` where a time
        budget left the fold to the refit folds' elpd per observation: that value is the
        folds' rate, not an estimate for this observation), the Pareto k̂ of its importance
        weights in its fold (``khat``, None where not importance-sampled) and whether it was
        refit on its own (``refit_alone``: k̂ above 0.5)."""
        method = np.empty(self.n_obs, dtype=object)
        khat = np.full(self.n_obs, np.nan)
        for f in self.folds:
            method[f.index] = f.method
            if f.khat_i is not None:
                khat[f.index] = f.khat_i
        alone = np.isin(np.arange(self.n_obs), self.point_refits)
        return [{"observation": i + 1, "fold": int(self.fold_of[i]) + 1,
                 "elpd": float(self.elpd_i[i]), "method": method[i],
                 "khat": float(khat[i]) if np.isfinite(khat[i]) else None,
                 "refit_alone": bool(alone[i])}
                for i in range(self.n_obs)]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable dict."""
        return {"model": self.model, "scheme": self.scheme, "k": self.k,
                "group": self.group, "stratify": self.stratify,
                "elpd_kfold": self.elpd_kfold, "se": self.se, "mcse": self.mcse,
                "se_fold_aware": self.se_fold_aware, "se_pointwise": self.se_pointwise,
                "se_between_folds": self.se_between_folds, "kfoldic": -2 * self.elpd_kfold,
                "elpd_joint": self.elpd_joint, "elpd_joint_mcse": self.elpd_joint_mcse,
                "n_obs": self.n_obs, "n_samples": self.n_samples,
                "observations": {"size": self.observations.size_name,
                                 "fields": list(self.observations.fields)},
                "folds": [f.to_dict() for f in self.folds], "pointwise": self.pointwise(),
                "point_refits": [int(i) + 1 for i in self.point_refits],
                "seconds": self.seconds, "estimated_seconds": self.estimated_seconds,
                "budget_stop": self.budget_stop, "precision": self.precision,
                "warnings": self.warnings, **self._logo_dict()}

    def precision_note(self) -> str:
        """The line of a precision-targeted run: what ended it, the draws and the rounds."""
        p = self.precision or {}
        why = {"target": "the target was met", "budget": "the time budget ended it",
               "max_draws": "the draws reached their cap",
               "max_rounds": "the rounds reached their cap",
               "mcse_na": "its mcse is NA (see the warnings), which more draws do not change"}
        trail = ", ".join(f"{r['draws']}: {r['mcse']:.3g}" for r in p.get("rounds", []))
        return (f"mcse target {p.get('mcse_target', float('nan')):g}: "
                f"{why.get(p.get('ended_by'), p.get('ended_by'))} with {p.get('draws')} draws "
                f"per chain (the full fit's and every refit's chains continued from "
                f"{p.get('draws_first')}; mcse by draws per chain: {trail}).")

    def _logo_dict(self) -> dict[str, Any]:
        """The elpd_logo keys of ``to_dict`` under leave-one-group-out (none otherwise)."""
        if not self.is_logo:
            return {}
        iv = self.elpd_logo_interval
        return {"elpd_logo": self.elpd_logo, "elpd_logo_se": self.elpd_logo_se,
                "mcse_elpd_logo": self.mcse_elpd_logo, "logoic": -2 * self.elpd_logo,
                "elpd_logo_interval": iv.to_dict() if np.isfinite(iv.low) else None}

    def to_arviz(self) -> Any:
        """ArviZ's K-fold ELPD object (``ELPDDataLOOKFold`` in 1.x, ``ELPDData`` in 0.x) with
        ArviZ's se, sqrt(N var(elpd_i)) (:attr:`se`); ``p`` is NaN (stanlogz does not compute
        p_kfold)."""
        return arviz_compat.elpd_object("kfold", elpd=self.elpd_kfold, se=self.se,
                                        p=float("nan"), n_samples=self.n_samples,
                                        elpd_i=self.elpd_i, warning=bool(self.warnings),
                                        extra={"n_folds": self.k})


@with_client
def kfold(
    model: ProgramLike,
    data: Any = None,
    *,
    k: int | None = 10,
    stratify: str | None = None,
    group: str | None = None,
    obs: str | None = None,
    obs_fields: list[str] | None = None,
    draws: Any = None,
    settings: NutsArgs | None = None,
    seed: int | None = None,
    n_workers: int = 1,
    progress: Callable[[str], None] | None = None,
    warm_refits: bool = True,
    mcse_target: float | None = None,
    **nuts_keywords: Unpack[NutsKeywords],
) -> KFoldResult:
    """K-fold cross-validation of a Stan program: each fold refit without its observations.

    The held-out densities of each fold are exact up to Monte Carlo error
    (:func:`heldout_elpd`); ``group`` with ``k=None`` is leave-one-group-out.

    Parameters
    ----------
    model : str, Path or StanModel
        The program refit on each fold's training data (a ``.stan`` file or a built
        :class:`~stanlogz.StanModel`).
    data : dict or str, optional
        Its data (a dict or a Stan JSON file), split into folds by observation.
    k : int or None, default 10
        Number of folds (random, or balanced over ``stratify``); ``None`` with ``group``:
        one fold per group.
    stratify : str, optional
        A per-observation data array whose labels each fold balances.
    group : str, optional
        A per-observation integer data array: whole groups go into a fold.
    obs, obs_fields : str, list of str, optional
        The observation count and the data variables indexed by observation (inferred when
        omitted).
    draws : Draws, cmdstanpy fit, CSV paths or InferenceData, optional
        Existing draws of the full-data posterior, instead of a NUTS run on all data.
    settings : NutsArgs, optional
        Settings of every NUTS run; ``chains``, ``warmup``, ``n_draws``, ``adapt_delta`` and
        ``max_treedepth`` replace single fields.
    seed : int, optional
        Random seed (folds and every refit's seed derive from it).
    n_workers : int, default 1
        Folds refit at once.
    progress : callable, optional
        Called with one line of text per step.
    warm_refits : bool, default True
        Start every refit at the full fit's last draws with a short warmup
        (:func:`~stanlogz.draws.continuation.refit_draws`; cold where a fold changes the
        parameters); False runs every refit's full warmup from random inits.
    mcse_target : float, optional
        Continue the chains of the full fit and of every refit until the Monte Carlo se of
        elpd_kfold (elpd_logo under leave-one-group-out) is at most this, or the time budget
        ends (:mod:`~stanlogz.crossval.refit.kfold_target`; ``precision`` says which).
    **nuts_keywords
        ``chains``, ``warmup``, ``n_draws``, ``adapt_delta``, ``max_treedepth``.

    Returns
    -------
    KFoldResult
        ``elpd_kfold``, ``se`` (loo's), ``se_fold_aware``, ``mcse``, the pointwise
        ``elpd_i``, the folds (``folds``, ``fold_of``) and ``warnings``; leave-one-group-out
        (``k=None``) headlines ``elpd_logo`` (Σ_g log p(y_g | y₋g), as ``loo`` with ``group=``)
        with ``elpd_logo_se``, ``elpd_logo_interval`` and ``mcse_elpd_logo``.

    Raises
    ------
    InputError
        Bad folds or groups, or a fold whose training data the program rejects; before the
        refits run.

    See Also
    --------
    stanlogz.loo : leave-one-out without refits.
    stanlogz.lfo : leave-future-out, for time series.

    Examples
    --------
    The executed tutorial :doc:`/tutorials/kfold_lfo` runs leave-one-group-out
    (``group="g", k=None``); the ``kfold`` command with the group option and ``k`` groups is
    the same from a shell.
    """
    t0 = time.perf_counter()
    check_arguments("kfold", model=model, draws=draws, progress=progress, k=k,
                    stratify=stratify, group=group, obs=obs, obs_fields=obs_fields,
                    n_workers=n_workers)
    nuts = nuts_from_keywords(settings, nuts_keywords, "kfold")
    if n_workers < 1:
        raise InputError(f"n_workers must be >= 1, got {n_workers}")
    if not isinstance(warm_refits, bool):
        raise InputError(f"warm_refits must be True or False, got {warm_refits!r}")
    target = None if mcse_target is None else check_target(mcse_target)
    model, data_dict, observations = load_observed(model, data, obs, obs_fields, seed=seed,
                                                   progress=progress, settings=nuts,
                                                   labels={"stratify": stratify, "group": group})
    strata = None if stratify is None else observation_labels(
        data_dict, observations, stratify, str(option("stratify")), integer=False)
    groups = None if group is None else observation_labels(data_dict, observations, group,
                                                           str(option("group")))
    fold_of = make_folds(observations.n, k, stream_rng(seed, Stream.FOLDS),
                         strata=strata, groups=groups)
    n_folds = int(fold_of.max()) + 1
    if n_folds < 2:
        raise InputError(f"{option('group')} {group}: every observation is in one group; "
                         "nothing to hold out")
    scheme = ("leave-one-out" if n_folds == observations.n and groups is None and strata is None
              else "leave-one-group-out" if groups is not None and k is None
              else "grouped" if groups is not None
              else "stratified" if strata is not None else "random")
    held = [np.flatnonzero(fold_of == j) for j in range(n_folds)]
    for j, v in enumerate(held):  # every training instance must be a valid data set
        try:
            model.with_data(observations.without(data_dict, v))
        except DataError as exc:
            raise InputError(f"fold {j + 1} leaves a training set the program rejects: "
                             f"{exc}") from None
    if progress:
        progress(f"{scheme} cross-validation: {observations.n} observations in "
                 f"{n_folds} folds" + ("" if draws is not None else "; NUTS on all data"))
    full = obtain_draws(model, draws, nuts, seed=stream_int_seed(seed, Stream.NUTS))
    estimate, points, whole = None, None, None
    if full.sampling_cost_known:
        terms, whole = held_out_price(model, data_dict, observations, full)
        estimate = refit_seconds(full, observations.n, held, n_workers, warm=warm_refits,
                                 terms=terms, whole=whole)
        # the observations the folds will likely refit on their own, where cheap to count
        points = None if estimate is None else heavy_count(
            model, data_dict, observations, full, terms, HEAVY_SHARE * estimate)
        if points:
            estimate = refit_seconds(full, observations.n, held, n_workers, warm=warm_refits,
                                     terms=terms, points=points, dim=model.dim, whole=whole)
    if progress:
        progress(estimate_line(estimate, n_folds, full, points))
    anytime = anytime_refits(model, data_dict, observations, full, n_folds, estimate, whole,
                             n_workers)  # a budget ends the refits, not the command
    folds = heldout_many(model, data_dict, observations, held, full_draws=full,
                         settings=nuts, seed=stream(seed, Stream.REFIT), n_workers=n_workers,
                         progress=progress, anytime=anytime,
                         expected=None if estimate is None else
                         estimate * min(n_workers, n_folds) / n_folds,
                         warm_refits=warm_refits, keep_draws=target is not None)
    folds, budget_stop = fill_by_psis(model, data_dict, observations, held, folds, full,
                                      progress, estimate, difference=whole is None)
    # the sampler's diagnostics of the parameters alone (not of every generated quantity: 2 s
    # of roaches' 12 s for its 262 log_lik columns; the refits sample the parameters)
    only = list(model.param_names())

    def result(folds: list[HeldOut], full: Draws) -> KFoldResult:
        elpd_i = np.empty(observations.n)
        for f in folds:
            elpd_i[f.index] = f.elpd_i
        warns = list(full.summary(only).warnings) if full.source == "stanlogz-nuts" else []
        for f in folds:
            warns.extend(w for w in f.warnings if w not in warns)
        return KFoldResult(model.name, scheme, n_folds, fold_of, elpd_i, folds, observations,
                           full.n_chains * full.n_draws, group=group, stratify=stratify,
                           seconds=time.perf_counter() - t0, warnings=warns,
                           estimated_seconds=estimate, budget_stop=budget_stop)

    res = result(folds, full) if target is None else kfold_to_target(
        model, data_dict, observations, held, folds, full, nuts, seed, target, result,
        progress)
    res.seconds = time.perf_counter() - t0
    res.mcse_na_note = missed_modes(model, full, nuts, seed)  # modes the refits miss as well
    res.warnings += [w for w in (budget_stop and budget_warning(budget_stop),
                                 res.mcse_na_note) if w]
    add_cv_warnings(res, res.elpd_i, "elpd_kfold", unrefit_mcse=float(np.sum(
        [f.elpd_i_mcse for f in res.folds if f.method == "fold-sample"])))
    return res


