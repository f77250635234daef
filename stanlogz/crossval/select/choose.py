"""Choosing between Stan programs: one result that holds the LOO comparison (elpd_loo, elpd_diff,
se_diff, p_worse, diagnostics), the evidence comparison (log Z, posterior model probabilities)
and model weights (stacking, pseudo-BMA(+), BMA), each with its standard error.

:func:`choose` combines results already computed (``stanlogz.compare(..., with_loo=True,
weights=[...])`` computes them from one NUTS run per program and calls it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ... import arviz_compat
from ...errors import InputError, Route
from ..checks.checks import generated_quantity, predictive_checks
from ..names import ChoiceNames
from ..observations.observations import find_observations
from .compare import LooComparison, loo_compare
from .scores import (
    MeasureComparison,
    ScoreComparison,
    compare_measures,
    compare_scores,
    mix_draws,
    predictive_inputs,
    program_measures,
    program_pointwise,
    selection_warning,
)
from .weights import WEIGHT_METHODS, ModelWeights, bma_weights, pointwise_weights

#: What each weight method needs: the LOO comparison or the evidence.
NEEDS = {"stacking": "loo", "pseudo-bma": "loo", "pseudo-bma+": "loo", "bma": "evidence"}


def parse_weights(weights: str | Sequence[str] | None) -> list[str]:
    """Weight methods from ``"stacking,pseudo-bma+,bma"`` or a list (checked, lower case)."""
    if weights is None:
        return []
    items = weights.split(",") if isinstance(weights, str) else list(weights)
    out = []
    for w in items:
        m = str(w).strip().lower()
        if not m:
            continue
        if m not in WEIGHT_METHODS:
            raise InputError(f"unknown weight method {m!r}; choose from "
                             f"{', '.join(WEIGHT_METHODS)}")
        if m not in out:
            out.append(m)
    if not out and isinstance(weights, str):
        raise InputError("no weight method given; choose from " + ", ".join(WEIGHT_METHODS))
    return out


def check_request(weights: Sequence[str], *, loo: bool, evidence: bool) -> None:
    """Raise :class:`InputError` when a weight method lacks what it is computed from."""
    if not (loo or evidence):
        raise InputError("nothing to compare: ask for the LOO comparison, the evidence, or both")
    for m in weights:
        if NEEDS[m] == "loo" and not loo:
            raise InputError(f"{m} weights need the LOO comparison (pointwise elpd): add "
                             f"{Route(options={'with_loo': True})}")
        if NEEDS[m] == "evidence" and not evidence:
            raise InputError("bma weights need the evidence of every program: add "
                             f"{Route(options={'use_evidence': True})}")


def check_same_data(datas: Sequence[Mapping[str, Any] | None], names: Sequence[str],
                    obs: str | None = None, obs_fields: Sequence[str] | None = None) -> None:
    """Raise :class:`InputError` unless every program has the same observations: the same
    number N and equal values in every per-observation array they share."""
    if any(d is None for d in datas):
        raise InputError("comparing predictions needs the data of every program")
    found = [find_observations(d, obs, list(obs_fields) if obs_fields else None) for d in datas]
    ns = [o.n for o in found]
    if len(set(ns)) > 1:
        detail = ", ".join(f"{n} = {k}" for n, k in zip(names, ns, strict=True))
        raise InputError(f"the programs were fitted to different data: {found[0].size_name} "
                         f"differs ({detail})")
    common = set(found[0].fields).intersection(*(o.fields for o in found[1:]))
    if not common:
        raise InputError("the programs share no per-observation data array to compare on")
    for f in sorted(common):
        ref = np.asarray(datas[0][f], dtype=float)
        for n, d in zip(names[1:], datas[1:], strict=True):
            if not np.array_equal(np.asarray(d[f], dtype=float), ref):
                raise InputError(f"the programs were fitted to different data: {f!r} differs "
                                 f"between {names[0]} and {n}")


def _through(name: str, doc: str) -> Any:
    """A read-only property: attribute ``name`` of the evidence comparison (AttributeError when
    the evidence was not compared)."""

    def get(self: ProgramChoice) -> Any:
        if self.evidence is None:
            raise AttributeError(f"{name}: the programs were not compared by their evidence "
                                 "(compare with use_evidence=True)")
        return getattr(self.evidence, name)

    return property(get, doc=doc)


@dataclass(repr=False)
class ProgramChoice(ChoiceNames):
    """Programs compared by PSIS-LOO and/or evidence, with model weights: what
    :func:`stanlogz.compare` returns.

    ``loo``: :class:`~stanlogz.crossval.select.compare.LooComparison` (or None), by PSIS-LOO or,
    with ``compare(..., group=)``, by leave-one-group-out over the groups; ``evidence``: the
    evidence comparison (``stanlogz.ComparisonResult``: log Z, log Bayes factors, posterior
    model probabilities; or None), whose values it reads through (``log_bf``, ``log_bf_se``,
    ``post_probs``, ``post_probs_se``, ``prior_probs``, ``results``, ``log_z``, ``log_z_se``,
    ``unbiased_bf``, ``unbiased_table()``); ``model_weights``: :class:`ModelWeights` by method.
    Compared by the evidence alone, it prints as the evidence table.
    """

    names: list[str]
    loo: LooComparison | None = None
    evidence: Any = None
    model_weights: dict[str, ModelWeights] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    #: per program (model, data, draws) behind the LOO results, for predictive checks
    fits: list[tuple[Any, Any, Any]] | None = field(default=None, repr=False)
    _predictive: dict[tuple[Any, ...], tuple[np.ndarray, ...]] = field(
        default_factory=dict, repr=False)

    log_bf = _through("log_bf", "log Z_i − log Z_best of the evidence comparison.")
    log_bf_se = _through("log_bf_se", "The se of ``log_bf``.")
    post_probs = _through("post_probs", "Posterior model probabilities (from the evidence).")
    post_probs_se = _through("post_probs_se", "The se of ``post_probs``.")
    prior_probs = _through("prior_probs", "Prior model probabilities of the evidence comparison.")
    results = _through("results", "Each program's evidence result (``EvidenceResult``).")
    log_z = _through("log_z", "log Z of each program (in the order given).")
    log_z_se = _through("log_z_se", "se of each program's log Z (in the order given).")
    unbiased_bf = _through("unbiased_bf", "Unbiased Z_i / Z_best, when asked for (else None).")

    @property
    def evidence_only(self) -> bool:
        """Whether the programs were compared by their evidence alone (no LOO, no weights)."""
        return self.evidence is not None and self.loo is None and not self.model_weights

    def unbiased_table(self) -> list[list[Any]]:
        """The evidence comparison's rows of unbiased Bayes factors (empty when not asked for)."""
        return self.evidence.unbiased_table() if self.evidence is not None else []

    def weights(self, method: str = "stacking") -> ModelWeights:
        """The weights of one method (``"stacking"``, ``"pseudo-bma"``, ``"pseudo-bma+"``,
        ``"bma"``), as computed by :func:`choose`."""
        m = method.lower()
        if m not in self.model_weights:
            raise InputError(f"{method} weights were not computed; available: "
                             f"{', '.join(self.model_weights) or 'none'}")
        return self.model_weights[m]

    @property
    def best(self) -> int:
        """Index of the best program: by elpd_loo when compared by LOO, else by log Z."""
        return self.loo.best if self.loo is not None else int(self.evidence.best)

    @property
    def header(self) -> list[str]:
        """Column names of :meth:`table` (the evidence comparison's when it was compared by
        the evidence alone)."""
        if self.evidence_only:
            return list(self.evidence.header)
        cols = ["model"]
        if self.loo is not None:
            cols += [self.loo.results[0].elpd_name, "se", "elpd_diff", "diff_se", "p_worse",
                     "diag_diff", "diag_elpd"]
        if self.evidence is not None:
            cols += ["log_z", "log_z_se", "post_prob", "post_prob_se"]
        for m in self.model_weights:
            cols += [f"w_{m}", f"w_{m}_se"]
        return cols

    def order(self) -> list[int]:
        """Program indices, best first."""
        if self.loo is not None:
            return self.loo.order()
        lz = np.array([r.log_z for r in self.evidence.results])
        return [int(i) for i in np.argsort(-lz, kind="stable")]

    def table(self) -> list[list[Any]]:
        """One row per program (best first) in the order of :attr:`header`; compared by the
        evidence alone, the evidence comparison's table (programs in the order given)."""
        if self.evidence_only:
            return self.evidence.table()
        rows = []
        for i in self.order():
            row: list[Any] = [self.names[i]]
            if self.loo is not None:
                r = self.loo.results[i]
                pw = self.loo.p_worse[i] if self.loo.p_worse is not None else np.nan
                row += [r.elpd, r.se, float(self.loo.elpd_diff[i]),
                        (None if np.isnan(self.loo.diff_se[i]) else float(self.loo.diff_se[i])),
                        None if np.isnan(pw) else float(pw),
                        (self.loo.diag_diff or [""] * len(self.names))[i],
                        (self.loo.diag_elpd or [""] * len(self.names))[i]]
            if self.evidence is not None:
                e = self.evidence.results[i]
                row += [e.log_z, e.log_z_se, float(self.evidence.post_probs[i]),
                        float(self.evidence.post_probs_se[i])]
            for w in self.model_weights.values():
                row += [float(w.weights[i]), float(w.se[i])]
            rows.append(row)
        return rows

    def weights_table(self) -> list[list[Any]]:
        """Rows ``[model, weight, se, ...]`` per program (best first), one pair per method."""
        return [[self.names[i]] + [v for w in self.model_weights.values()
                                   for v in (float(w.weights[i]), float(w.se[i]))]
                for i in self.order()]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable dict: the evidence comparison's keys (when computed, its
        ``warnings`` among them), ``loo``, ``weights`` by method and ``choice_warnings`` (the
        choice's warnings that the evidence comparison's do not hold)."""
        out: dict[str, Any] = dict(self.evidence.to_dict()) if self.evidence is not None else {
            "best": self.names[self.best]}
        if self.loo is not None:  # under its kind: "loo", or "logo" by groups
            out[self.loo.kind] = self.loo.to_dict()
        out["weights"] = {m: w.to_dict(self.names) for m, w in self.model_weights.items()}
        held = self.evidence.warnings if self.evidence is not None else []
        out["choice_warnings"] = [w for w in self.warnings if w not in held]
        return out

    def to_arviz(self, method: str | None = None) -> Any:
        """A pandas DataFrame shaped like ArviZ's ``compare`` output on the installed ArviZ
        (index: program names, best first; elpd_diff with that version's sign; ``weight`` from
        ``method``, default stacking if computed), which ``arviz.plot_compare`` accepts."""
        import pandas as pd

        if self.loo is None:
            raise InputError("to_arviz needs the LOO comparison (compare(..., with_loo=True))")
        if method is None:
            method = next((m for m in ("stacking", "pseudo-bma+", "pseudo-bma", "bma")
                           if m in self.model_weights), None)
        w = (self.weights(method).weights if method is not None
             else np.full(len(self.names), np.nan))
        cols = arviz_compat.compare_columns()
        sign = arviz_compat.compare_diff_sign()
        lc = self.loo
        rows = []
        for rank, i in enumerate(self.order()):
            r = lc.results[i]
            p_worse = np.nan if lc.p_worse is None or i == lc.best else float(lc.p_worse[i])
            values = {"rank": rank, "elpd": r.elpd, "elpd_loo": r.elpd, "p": r.p,
                      "p_loo": r.p, "elpd_diff": -sign * float(lc.elpd_diff[i]),
                      "weight": float(w[i]), "se": r.se, "dse": float(lc.diff_se[i]),
                      "warning": bool(r.unfixed_bad()), "scale": "log", "p_worse": p_worse,
                      "diag_diff": (lc.diag_diff or [""] * len(self.names))[i],
                      "diag_elpd": (lc.diag_elpd or [""] * len(self.names))[i]}
            rows.append([values[c] for c in cols])
        df = pd.DataFrame(rows, index=[self.names[i] for i in self.order()], columns=cols)
        df["rank"] = df["rank"].astype(int)
        if "warning" in df:
            df["warning"] = df["warning"].astype(bool)
        return df

    def compare_score(self, score: str = "elpd", yrep: str | None = None,
                      outcome: str | None = None) -> ScoreComparison:
        """The programs compared on ``score`` (elpd, rmse, mae, crps, scrps) with paired se
        (:func:`stanlogz.crossval.select.scores.compare_scores`); scores other than elpd need the
        posterior-predictive quantity ``yrep`` and the observed ``outcome``."""
        if self.loo is None or (score != "elpd" and not self.fits):
            raise InputError(f"comparing on {score} needs the LOO comparison of fitted "
                             f"programs ({Route('compare', {'with_loo': True})})")
        fits = self.fits or [(None, None, None)] * len(self.names)
        vals = [program_pointwise(score, r, *f, yrep, outcome)
                for r, f in zip(self.loo.results, fits, strict=True)]
        return compare_scores(vals, self.names, score)

    def compare_measures(self, measures: Sequence[Any], yrep: str | None = None,
                         outcome: str | None = None, rank_by: str | None = None
                         ) -> MeasureComparison:
        """The programs compared on several measures at once (names of
        :data:`stanlogz.crossval.checks.measures.MEASURES`, ``"elpd"``, or
        :class:`~stanlogz.crossval.checks.measures.CustomMeasure`), ranked by ``rank_by``, with
        paired differences on the utility scale
        (:func:`stanlogz.crossval.select.scores.compare_measures`); measures other than elpd
        need the posterior-predictive quantity ``yrep`` and the observed ``outcome``."""
        wanted = list(measures)
        if self.loo is None or (any(m != "elpd" for m in wanted) and not self.fits):
            raise InputError("comparing on measures needs the LOO comparison of fitted "
                             f"programs ({Route('compare', {'with_loo': True})})")
        fits = self.fits or [(None, None, None)] * len(self.names)
        beyond = any(m != "elpd" for m in wanted) and yrep is not None
        per = [program_measures(wanted, r, *f, yrep, outcome,
                                self._inputs(i, yrep, outcome) if beyond else None)
               for i, (r, f) in enumerate(zip(self.loo.results, fits, strict=True))]
        return compare_measures(per, self.names, rank_by)

    def _inputs(self, i: int, yrep: str, outcome: str | None) -> tuple[np.ndarray, ...]:
        """Program i's outcome, log-likelihood, PSIS log weights and ``yrep`` draws, computed
        once per (program, yrep, outcome) and kept for later measures and checks."""
        key = (i, yrep, outcome)
        if key not in self._predictive:
            self._predictive[key] = predictive_inputs(self.loo.results[i], *self.fits[i], yrep,
                                                      outcome)
        return self._predictive[key]

    def pit_checks(self, yrep: str, outcome: str | None = None, seed: int | None = None
                   ) -> dict[str, Any]:
        """Each program's LOO-PIT checks of ``outcome`` (default: ``yrep`` without _rep) by
        its ``yrep`` draws: the LOO-PIT values, the pointwise-order test and the
        dependence-aware POT, PIET and PRIT with calibrated p-values and per-observation
        contributions (:func:`stanlogz.crossval.checks.checks.predictive_checks`), by name."""
        if self.loo is None or not self.fits:
            raise InputError("LOO-PIT checks need the LOO comparison of fitted programs "
                             "(compare(..., with_loo=True))")
        out = {}
        for i, (name, r) in enumerate(zip(self.names, self.loo.results, strict=True)):
            y, ll, _, y_rep = self._inputs(i, yrep, outcome)
            out[name] = predictive_checks(ll, y_rep, y, r_eff=r.r_eff, metrics=False,
                                          crps=False, yrep_name=yrep,
                                          outcome=outcome or yrep.removesuffix("_rep"),
                                          seed=seed)
        return out

    def averaged_draws(self, yrep: str, method: str | None = None, *,
                       n_draws: int | None = None, seed: int | None = None) -> np.ndarray:
        """Model-averaged posterior-predictive draws ``(n_draws, N)`` of the quantity ``yrep``:
        each program supplies its weight's share of the draws (``method``: a computed weight
        method, default stacking or the first computed)."""
        if not self.model_weights:
            raise InputError("averaged draws need model weights: add "
                             f"{Route(options={'weights': 'stacking'})}")
        method = method or ("stacking" if "stacking" in self.model_weights
                            else next(iter(self.model_weights)))
        if not self.fits:
            raise InputError("averaged draws need the programs' draws "
                             "(compare(..., with_loo=True))")
        n = self.loo.results[0].n_obs if self.loo is not None else None
        reps = []
        for (model, data, draws), name in zip(self.fits, self.names, strict=True):
            size = n if n is not None else int(np.size(data[yrep]))
            try:
                reps.append(generated_quantity(model, draws, yrep, size))
            except InputError as exc:
                raise InputError(f"{name}: {exc}") from None
        return mix_draws(reps, self.weights(method).weights, n_draws=n_draws, seed=seed)


def choose(names: Sequence[str], *, loo: Sequence[Any] | None = None, evidence: Any = None,
           weights: str | Sequence[str] | None = None, n_boot: int = 1000,
           seed: int | None = None, fits: Sequence[tuple[Any, Any, Any]] | None = None
           ) -> ProgramChoice:
    """Combine per-program results into a :class:`ProgramChoice`.

    ``loo``: one elpd result per program over the same units (:class:`~stanlogz.crossval.LooResult`
    s, or leave-one-group-out results over the same groups);
    ``evidence``: the evidence comparison (``stanlogz.ComparisonResult``); ``weights``: methods
    among stacking, pseudo-bma, pseudo-bma+ (``n_boot`` Bayesian-bootstrap draws; stacking's se
    from n_boot // 5 re-solved draws) and bma (from log Z and its se, with the evidence
    comparison's prior model probabilities). ``fits``: per program (model, data, draws),
    kept for predictive checks.
    """
    names = list(names)
    methods = parse_weights(weights)
    check_request(methods, loo=loo is not None, evidence=evidence is not None)
    lc = loo_compare(list(loo), names) if loo is not None else None
    out = ProgramChoice(names=names, loo=lc, evidence=evidence,
                        fits=list(fits) if fits is not None else None)
    if lc is not None:
        out.warnings.extend(lc.warnings())
        elpd_i = np.column_stack([r.elpd_i for r in lc.results])
        out.model_weights.update(pointwise_weights(elpd_i, methods, n_boot=n_boot, seed=seed))
    if evidence is not None and "bma" in methods:
        out.model_weights["bma"] = bma_weights([r.log_z for r in evidence.results],
                                               [r.log_z_se for r in evidence.results],
                                               evidence.prior_probs)
    k = len(names)
    spread = (lc.diff_se if lc is not None else np.asarray(evidence.log_bf_se, dtype=float))
    best = lc.best if lc is not None else int(evidence.best)
    many = selection_warning(k, np.delete(spread, best), lc.results[0].elpd_name
                             if lc is not None else "log Z")
    if many:
        out.warnings.append(many)
    if lc is not None and evidence is not None:
        by_loo, by_z = names[lc.best], names[int(evidence.best)]
        if by_loo != by_z:
            out.warnings.append(f"LOO prefers {by_loo} but the evidence prefers {by_z}: they "
                                "answer different questions (prediction of new data vs. prior "
                                "times likelihood); check the priors' influence on log Z")
    return out
