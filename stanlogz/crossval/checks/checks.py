"""Predictive checks of a Stan program from its LOO weights: LOO-PIT with a uniformity test and a
plot, point-prediction metrics, CRPS/SCRPS, and E_loo of named generated quantities.

They need posterior-predictive draws: a generated quantity with one draw per observation
(``y_rep``-style: ``array[N] real y_rep;`` filled with ``_rng`` calls), named by the caller.
:func:`predictive_checks` takes arrays; :func:`generated_quantity` reads a quantity from
draws; :func:`run_checks` serves a command's flags (declared in
:mod:`stanlogz.commands.arguments`).
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy import special

from ..._util.gpd import KHAT_BAD
from ..._util.seeds import Stream, stream_int_seed
from ...errors import InputError, option
from ...stan.program import StanProgram
from .pit_tests import PitTest, pit_floor, pit_tests, randomization_widths
from .predictive import (
    CrpsResult,
    LooExpectation,
    Metric,
    UniformityTest,
    e_loo,
    is_discrete,
    loo_crps,
    loo_log_weights_khat,
    loo_metrics,
    loo_pit,
    pot_from_pointwise,
)

#: Suffixes stripped from a posterior-predictive quantity's name to find the observed outcome.
REP_SUFFIXES = ("_rep", "_pred", "_sim", "_new", "_tilde", "_hat")


def vector_quantities(names: Sequence[str], n: int) -> list[str]:
    """Base names of the flat quantities ``a.1 ... a.n`` (one entry per observation)."""
    counts: dict[str, int] = {}
    for nm in names:
        m = re.fullmatch(r"(\w+)\.(\d+)", nm)
        if m:
            counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    return [b for b, c in counts.items() if c == n]


def generated_quantity(model: StanProgram, draws: Any, name: str, n: int) -> np.ndarray:
    """Draws ``(S, n)`` of the program's quantity ``name`` with one entry per observation: taken
    from the draws when they hold it, else computed with the program's generated quantities
    at the unconstrained draws (seeded)."""
    cols = [f"{name}.{i}" for i in range(1, n + 1)]
    have = list(getattr(draws, "constrained_names", None) or [])
    if getattr(draws, "constrained", None) is not None and all(c in have for c in cols):
        idx = [have.index(c) for c in cols]
        return draws.constrained.reshape(-1, draws.constrained.shape[2])[:, idx]
    names = model.param_names(include_tp=True, include_gq=True)
    if not all(c in names for c in cols):
        per_obs = [q for q in vector_quantities(names, n) if q != "log_lik"]
        hint = (f"quantities with {n} entries: {', '.join(per_obs)}" if per_obs else
                f"it has none with {n} entries; add e.g. `array[N] real y_rep;` with "
                "y_rep[n] = normal_rng(...) to its generated quantities")
        raise InputError(f"{model.name} has no generated quantity {name!r} with one entry per "
                         f"observation ({n}); {hint}")
    gq = model.constrain_many(draws.flat_unconstrained(), include_tp=True, include_gq=True,
                              seed=1)
    return gq[:, [names.index(c) for c in cols]]


def check_declares(paths: Sequence[str | Path], name: str) -> None:
    """Before any build or sampling: raise :class:`InputError` when a ``.stan`` file does not
    declare ``name`` in its generated quantities block."""
    for p in paths:
        code = Path(p).read_text() if Path(p).is_file() else ""
        m = re.search(r"generated\s+quantities\s*\{", code)
        block = re.sub(r"//[^\n]*|/\*.*?\*/", " ", code[m.end():], flags=re.S) if m else ""
        if not re.search(rf"\b{re.escape(name)}\s*(;|=)", block):
            raise InputError(f"{Path(p).stem} has no generated quantity {name!r}: add a "
                             f"posterior-predictive draw per observation, e.g. `array[N] real "
                             f"{name};` with {name}[n] = normal_rng(...)")


def outcome_name(yrep_name: str, data: Mapping[str, Any], n: int) -> str:
    """The observed outcome paired with posterior-predictive ``yrep_name``: ``y_rep`` → ``y``
    (suffixes :data:`REP_SUFFIXES`), when the data has that array with ``n`` entries."""
    for suf in REP_SUFFIXES:
        if yrep_name.endswith(suf):
            base = yrep_name[: -len(suf)]
            if base in data and np.size(data[base]) == n:
                return base
    raise InputError(f"no observed outcome for {yrep_name!r}: name it "
                     f"({option('outcome', 'NAME')}), a data array with {n} entries")


@dataclass
class PredictiveChecks:
    """Results of the checks asked for (None where not asked)."""

    yrep_name: str
    outcome: str
    pit: np.ndarray | None = None
    uniformity: UniformityTest | None = None
    #: the dependence-aware tests POT, PIET, PRIT (:mod:`.pit_tests`), by lower-case name
    pit_tests: dict[str, PitTest] | None = None
    metrics: list[Metric] | None = None
    crps: CrpsResult | None = None
    expectations: dict[str, LooExpectation] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable dict."""
        return {"yrep": self.yrep_name, "outcome": self.outcome,
                "pit": None if self.pit is None else [
                    float(v) if np.isfinite(v) else None for v in self.pit],
                "pit_uniformity": None if self.uniformity is None else self.uniformity.to_dict(),
                "pit_tests": None if self.pit_tests is None else {
                    k: v.to_dict() for k, v in self.pit_tests.items()},
                "metrics": None if self.metrics is None else [m.to_dict() for m in self.metrics],
                "crps": None if self.crps is None else self.crps.to_dict(),
                "e_loo": {k: v.to_dict() for k, v in self.expectations.items()},
                "warnings": self.warnings}

    def table(self) -> list[list[Any]]:
        """Rows ``[check, estimate, se]`` of the scalar results."""
        rows: list[list[Any]] = []
        if self.uniformity is not None:
            t = self.uniformity.test
            rows.append([f"pit_{t}_statistic", self.uniformity.statistic, None])
            rows.append([f"pit_{t}_p_value", self.uniformity.p_value, None])
        for name, r in (self.pit_tests or {}).items():
            rows.append([f"pit_{name}_c_statistic", r.statistic, None])
            rows.append([f"pit_{name}_c_p_value", r.p_value, None])
            rows.append([f"pit_{name}_c_p_value_calibrated", r.p_value_calibrated, None])
        for m in self.metrics or []:
            rows.append([m.name, m.estimate, m.se])
        if self.crps is not None:
            rows += [["crps", self.crps.crps, self.crps.crps_se],
                     ["scrps", self.crps.scrps, self.crps.scrps_se]]
        return rows


def predictive_checks(log_lik: Any, y_rep: Any, y: Any, *, r_eff: float = 1.0,
                      pit: bool = True, metrics: bool = True, crps: bool = True,
                      expectations: Mapping[str, Any] | None = None, yrep_name: str = "y_rep",
                      outcome: str = "y", seed: int | None = None) -> PredictiveChecks:
    """The checks asked for, from the pointwise log-likelihood ``(S, N)``, posterior-predictive
    draws ``y_rep`` ``(S, N)`` and observations ``y`` ``(N,)``; ``expectations``: other
    ``(S, N)`` quantities whose E_loo (mean, variance, 5/50/95% quantiles) to report."""
    lw, khat = loo_log_weights_khat(log_lik, r_eff)
    out = PredictiveChecks(yrep_name=yrep_name, outcome=outcome)
    if pit:
        out.pit = loo_pit(lw, y, y_rep, seed=stream_int_seed(seed, Stream.PIT))
        bad = np.flatnonzero(~(khat <= KHAT_BAD))
        out.pit[bad] = np.nan
        if bad.size:
            shown = ", ".join(str(i + 1) for i in bad[:8]) + (", ..." if bad.size > 8 else "")
            out.warnings.append(f"{bad.size} observation(s) ({shown}) have Pareto k-hat > "
                                f"{KHAT_BAD}: their LOO-PIT values are unreliable and left out "
                                "of the uniformity test; check them with exact LOO (kfold with "
                                "one observation per fold)")
        if bad.size > khat.size - 2:
            raise InputError(f"{bad.size} of {khat.size} observations have Pareto k-hat > "
                             f"{KHAT_BAD}: too few reliable LOO-PIT values for a uniformity "
                             "test; use K-fold cross-validation")
        ll = np.asarray(log_lik, dtype=float)
        ll = ll.reshape(-1, ll.shape[-1])
        lppd = special.logsumexp(ll, axis=0) - math.log(ll.shape[0])
        elpd = special.logsumexp(ll + lw, axis=0) - special.logsumexp(lw, axis=0)
        ok = np.isfinite(out.pit)
        p_loo = float(np.sum((lppd - elpd)[ok]))
        yv, yr = np.asarray(y, dtype=float).ravel(), np.asarray(y_rep, dtype=float)
        widths = randomization_widths(lw, yv, yr) if is_discrete(yv, yr) else None
        out.pit_tests = pit_tests(out.pit, p_loo=p_loo, floor=pit_floor(lw[:, ok]),
                                  widths=widths)
        # the untruncated pointwise-order test from POT's pointwise p-values (computed once)
        out.uniformity = pot_from_pointwise(out.pit_tests["pot"].pointwise_p[ok], p_loo)
        out.uniformity.excluded = bad.tolist()
        if out.uniformity.p_value < 0.01:
            p = out.pit[np.isfinite(out.pit)]
            shape = ("U-shaped: the predictive distributions are too narrow (overconfident)"
                     if np.mean((p < 0.1) | (p > 0.9)) > 0.3 else
                     "hump-shaped: too wide" if np.mean((p > 0.25) & (p < 0.75)) > 0.65 else
                     "skewed: the predictions are biased")
            out.warnings.append(f"LOO-PIT of {outcome} is not uniform (p = "
                                f"{out.uniformity.p_value:.2g}), {shape}; revise the "
                                "observation model")
        pot = out.pit_tests["pot"]
        drivers = pot.drivers(alpha=0.01)
        if drivers.size:
            top = drivers[np.argsort(-pot.contributions[drivers], kind="stable")][:8]
            out.warnings.append(f"LOO-PIT POT test rejects (calibrated p = "
                                f"{pot.p_value_calibrated:.2g}); the observations that drive "
                                "it most (Shapley contribution): "
                                + ", ".join(str(i + 1) for i in top))
    if metrics:
        out.metrics = loo_metrics(lw, y, y_rep, seed=stream_int_seed(seed, Stream.METRICS))
    if crps:
        out.crps = loo_crps(lw, y, y_rep)
    out.expectations = {k: e_loo(lw, v, khat=khat) for k, v in (expectations or {}).items()}
    return out


def run_checks(model: StanProgram, draws: Any, data: Mapping[str, Any], log_lik: Any,
               args: argparse.Namespace, *, r_eff: float = 1.0,
               seed: int | None = None) -> PredictiveChecks:
    """The checks a command's flags ask for, for one program with its draws, data and
    pointwise log-likelihood ``(S, N)``."""
    ll = np.asarray(log_lik, dtype=float)
    n = ll.shape[1]
    wanted = args.pit or args.metrics or args.crps or args.pit_plot is not None
    exps = {q: generated_quantity(model, draws, q, n) for q in (args.e_loo or [])}
    if not wanted:
        zeros = np.zeros((ll.shape[0], n))
        return predictive_checks(ll, zeros, np.zeros(n), r_eff=r_eff, pit=False,
                                 metrics=False, crps=False, expectations=exps, seed=seed)
    outcome = args.outcome or outcome_name(args.yrep, data, n)
    if outcome not in data or np.size(data[outcome]) != n:
        raise InputError(f"{option('outcome')} {outcome!r} is not a data array with {n} "
                         "entries")
    y_rep = generated_quantity(model, draws, args.yrep, n)
    return predictive_checks(ll, y_rep, np.asarray(data[outcome], dtype=float).ravel(),
                             r_eff=r_eff, pit=args.pit or args.pit_plot is not None,
                             metrics=args.metrics, crps=args.crps, expectations=exps,
                             yrep_name=args.yrep, outcome=outcome, seed=seed)


def checks_for_loo(result: Any, model: StanProgram, data: Mapping[str, Any], draws: Any,
                   args: argparse.Namespace, *, seed: int | None = None) -> PredictiveChecks:
    """:func:`run_checks` for a :class:`~stanlogz.crossval.LooResult` of ``model`` with
    ``data`` and the ``draws`` it was computed from (the pointwise log-likelihood is recomputed
    from the same source and observations, with the same r_eff)."""
    from ..observations.pointwise import PointwiseLogLik

    pw = PointwiseLogLik(model, data, result.observations, result.log_lik_source)
    c = draws.constrained
    ll = pw.matrix(draws.flat_unconstrained(),
                   None if c is None else c.reshape(-1, c.shape[2]), draws.constrained_names)
    return run_checks(model, draws, data, ll, args, r_eff=result.r_eff, seed=seed)
