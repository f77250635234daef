"""loo / ArviZ names and loo-style displays of the cross-validation results.

Each mixin adds the names a loo or ArviZ user looks for (``looic``, ``pareto_k``, ``loo_i``,
``elpd_diff``, ``dse`` ...) as read-only aliases, and a printed table like loo's ``print(loo)``
(:class:`~stanlogz._util.display.Display`) to :class:`~stanlogz.crossval.psis_loo.result.LooResult`,
:class:`~stanlogz.crossval.refit.kfold.KFoldResult`,
:class:`~stanlogz.crossval.refit.lfo_result.LfoResult`,
:class:`~stanlogz.crossval.refit.unbiased.CVResult`,
:class:`~stanlogz.crossval.logo.result.LogoResult` and
:class:`~stanlogz.crossval.select.compare.LooComparison`. The command line prints these tables
as they are (``print(result)``).
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping
from typing import Any, ClassVar

from .._util.display import Display, Section, View, alias, per_result

#: Below this many observations the se of elpd_loo is flagged as approximate (the coverage
#: of ±2 se measured in benchmarks/coverage_ddof.py at N = 10 is quoted in the note).
FEW_OBS = 20


def _notes(warnings: list[str]) -> list[str]:
    return [f"warning: {w}" for w in warnings]


def group_se_notes(interval: Any, n_groups: int) -> list[str]:
    """The lines beside elpd_logo's se over groups: its calibrated interval
    (:class:`~stanlogz.crossval.refit.cv_se.ElpdInterval`), and the note that the se
    understates the error with fewer than 20 groups (``loo``'s note for observations)."""
    if not interval.low == interval.low:  # NaN: no interval
        return []
    notes = [f"{100 * interval.level:.1f}% interval for elpd_logo: [{interval.low:.1f}, "
             f"{interval.high:.1f}] (+-2 SE times the small-count factor "
             f"{interval.factor:.2f}; elpd_logo_interval)."]
    if n_groups < FEW_OBS:
        notes.append(f"Only {n_groups} groups: the SE over groups understates the error; use "
                     "the interval.")
    return notes


class LooNames(Display):
    """loo's and ArviZ's names on :class:`~stanlogz.crossval.psis_loo.result.LooResult`, and its
    table."""

    #: how the table names the values each fix-up method recomputed (set by the result from
    #: the fix-up registry, which sits above this floor)
    _fix_labels: ClassVar[Mapping[str, str]] = {}

    looic = alias("elpd_loo", "−2 elpd_loo (loo's information-criterion scale).", scale=-2.0)

    se_looic = alias("se", "loo's se of ``looic``: 2 se.", scale=2.0)

    se_elpd_loo = alias("se", "loo's name for ``se``: sqrt(N var(elpd_i)), ddof 1.", float)

    se_p_loo = alias("p_loo_se", "loo's name for ``p_loo_se``.", float)

    mcse = alias("mcse_elpd_loo", "stanlogz's one name for a result's Monte Carlo se "
                 "(``mcse_elpd_loo``, loo's).", float)

    pareto_k = alias("khat", "ArviZ's name for ``khat`` (the PSIS Pareto k̂ before any fix-up).")

    loo_i = alias("elpd_i", "ArviZ's name for ``elpd_i`` (pointwise elpd, fixed values included).")

    n_data_points = alias("n_obs", "ArviZ's name for ``n_obs``.", int)

    good_k = alias("threshold", "ArviZ's name for the k̂ threshold (``threshold``).", float)

    def pointwise_dataframe(self) -> Any:
        """The pointwise values as a pandas DataFrame indexed by observation (from 1): ``elpd``
        (fixed values included), ``mcse``, ``psis_elpd``, ``khat``, ``method`` (the rows of
        ``to_dict()["pointwise"]``).

        Examples
        --------
        >>> import numpy as np, stanlogz
        >>> ll = np.random.default_rng(0).normal(-1.0, 0.1, size=(4, 100, 5))
        >>> stanlogz.loo(ll).pointwise_dataframe().columns.tolist()
        ['elpd', 'mcse', 'psis_elpd', 'khat', 'method']
        """
        import pandas as pd

        return pd.DataFrame(self.pointwise()).set_index("observation")

    def se_notes(self) -> list[str]:
        """The calibrated interval beside loo's SE, and when loo's SE is too small."""
        iv = self.elpd_loo_interval
        if iv is None:
            return []
        notes = [f"{100 * iv.level:.1f}% interval for elpd_loo: [{iv.low:.1f}, {iv.high:.1f}] "
                 f"(+-2 SE times the small-N factor {iv.factor:.2f}; elpd_loo_interval)."]
        if self.n_obs < FEW_OBS:
            notes.append(f"Only {self.n_obs} observations: loo's SE understates the error; "
                         "use the interval.")
        return notes

    def mcse_note(self) -> str:
        """loo's line on the Monte Carlo se of elpd_loo (NA with the reason when withheld)."""
        why = self.mcse_na_reason()
        if why is not None:
            return f"MCSE of elpd_loo is NA: {why}."
        return f"MCSE of elpd_loo is {self.mcse_elpd_loo:.2f}."

    def _display(self) -> View:
        n_draws = int(self.n_samples)
        what = (f"subsampled PSIS-LOO from {self.sample_index.size} of {self.n_obs} observations"
                if self.sample_index is not None else
                f"computed from {n_draws} by {self.n_obs} log-likelihood matrix")
        head = f"{type(self).__name__} of {self.model}: {what} ({self.log_lik_source})"
        main = Section("", ["", "Estimate", "SE"],
                       [[name, f"{v:.1f}", f"{se:.1f}"] for name, v, se in (
                           ("elpd_loo", self.elpd_loo, self.se),
                           ("p_loo", self.p_loo, self.p_loo_se),
                           ("looic", self.looic, self.se_looic))])
        t = self.threshold
        counts = self.khat_counts()
        n = max(int(self.khat.size), 1)
        bands = [[f"(-Inf, {t:.2f}]", "(good)", counts["good"]],
                 [f"({t:.2f}, 1]", "(bad)", counts["bad"]],
                 ["(1, Inf)", "(very bad)", counts["very bad"]]]
        ktab = Section(f"Pareto k diagnostic values (before fix-ups; threshold {t:.2f}):",
                       ["", "Count", "Pct."],
                       [[f"{b:13s} {lab}", c, f"{100.0 * c / n:.1f}%"] for b, lab, c in bands])
        notes = [self.mcse_note(), *self.se_notes()]
        if getattr(self, "precision", None) is not None:  # loo(mcse_target=...)
            notes.append(self.precision_note())  # type: ignore[attr-defined]
        if self.sample_index is not None:
            notes.append(f"Subsampling se of elpd_loo is {self.subsampling_se:.2f}.")
        if self.fixed:
            by: dict[str, int] = {}
            for f in self.fixed:
                by[f.method] = by.get(f.method, 0) + 1
            done = ", ".join(f"{c} by {self._fix_labels.get(m, m)}" for m, c in by.items())
            above = sum(f.khat > t for f in self.fixed)
            matched = sum(f.khat <= t and f.method == "mm" for f in self.fixed)
            checked = len(self.fixed) - above - matched  # the self-check's or band's refits
            parts = [f"{above} above the threshold"]
            if matched:
                parts.append(f"{matched} just below it moment matched (k-hat reads low at "
                             "these draws)")
            if checked:
                parts.append(f"{checked} below it refit by the self-check or the k-hat band's "
                             "correction")
            which = "above the threshold" if len(parts) == 1 else f"({', '.join(parts)})"
            notes.append(f"{len(self.fixed)} observation(s) {which} recomputed "
                         f"({done}); elpd_loo includes them.")
        band = getattr(self, "band", None)  # loo's k-hat band difference estimator
        if band is not None and band.note and band.status != "skipped":  # else a warning
            notes.append(band.note + ".")
        if not self.fixed and counts["bad"] + counts["very bad"] == 0:
            notes.append(f"All Pareto k estimates are good (k <= {t:.2f}).")
        left = self.unfixed_bad()
        if left:
            notes.append(f"{len(left)} observation(s) still above the threshold: "
                         f"{', '.join(str(i + 1) for i in left[:10])}"
                         + (" ..." if len(left) > 10 else ""))
        sections = [main, ktab]
        if self.fixed:
            sections.append(Section(
                f"Observations recomputed because k-hat > {t:.2f}:"
                if all(f.khat > t for f in self.fixed) else
                f"Observations recomputed (k-hat > {t:.2f}, or below it: moment matched, or "
                "refit by the self-check or the k-hat band's correction):",
                ["obs", "k-hat", "after", "psis elpd", "fixed elpd", "mc se", "method",
                 "grad evals", "seconds"],
                [[f.index + 1, round(f.khat, 2),
                  "" if f.khat_after is None else round(f.khat_after, 2), f.psis_elpd, f.elpd,
                  f.mcse, f.method, f.n_gradient_evals, round(f.seconds, 2)]
                 for f in self.fixed]))
        ver = getattr(self, "verification", None)
        if ver is not None:
            if ver.points:
                sections.append(Section(f"Self-check ({ver.status}; {ver.seconds:.1f} s, "
                                        f"{100 * ver.share:.0f}% of the run):",
                                        list(ver.HEADER), ver.rows()))
            if ver.status in ("passed", "skipped"):  # a failure's note is among the warnings
                notes.append(ver.note + ".")
        return View(head, sections, notes + _notes(self.warnings))


class KFoldNames(Display):
    """loo's names on :class:`~stanlogz.crossval.refit.kfold.KFoldResult`, and its table."""

    kfoldic = alias("elpd_kfold", "−2 elpd_kfold.", scale=-2.0)

    mc_se = alias("mcse", "The former name of ``mcse``, kept for compatibility.", float)

    se_elpd_kfold = alias("se", "loo's name for ``se`` (loo's ``kfold()`` se: sqrt(N "
                          "var(elpd_i)), ddof 1; ``se_fold_aware`` is the calibrated one).",
                          float)

    @property
    def p_kfold(self) -> float:
        """Not defined without the in-sample lppd; NaN (loo reports it only when it has one)."""
        return float("nan")

    def _display(self) -> View:
        what = (f" by {self.group}" if self.group else f" stratified by {self.stratify}"
                if self.stratify else "")
        head = (f"{type(self).__name__} of {self.model}: {self.scheme} {self.k}-fold "
                f"cross-validation{what} of {self.n_obs} observations, {self.n_samples} draws "
                "per fit")
        main = Section("", ["", "Estimate", "SE", "MCSE"], [list(r) for r in self.table()])
        folds = Section("Folds:", ["fold", "n", "sum elpd_i", "mc se", "log p(y_V|y_T)",
                                   "mc se", "method", "k-hat", "grad evals"],
                        self.fold_rows())
        if getattr(self, "is_logo", False):
            notes = ["elpd_logo: sum over groups of log p(y_g | y_-g), each held-out group's "
                     "joint density (leave-one-group-out's headline); elpd_kfold beside it sums "
                     "log p(y_i | y_-g(i)) over observations.",
                     "elpd_logo's SE is sqrt(G var) over the groups' log p(y_g | y_-g); "
                     "elpd_kfold's is loo's sqrt(N var(elpd_i)).",
                     *group_se_notes(self.elpd_logo_interval, self.k)]
        else:
            notes = ["SE is loo's sqrt(N var(elpd_i)); it undercovers at few folds or "
                     "observations, where +-2 se_fold_aware is the calibrated interval."]
        if not math.isfinite(float(getattr(self, "mcse", 0.0))):  # loo's NA: where to look
            notes.append("MCSE of elpd_kfold is NA: a fold's value has no Monte Carlo se (see "
                         "the warnings).")
        alone = getattr(self, "point_refits", ())
        if len(alone):
            shown = ", ".join(str(int(i) + 1) for i in alone[:8])
            notes.append(f"{len(alone)} observation(s) whose importance weights in their fold "
                         f"were heavy-tailed (k-hat > 0.5) were refit on their own: {shown}"
                         f"{f' and {len(alone) - 8} more' if len(alone) > 8 else ''}.")
        if getattr(self, "precision", None) is not None:  # kfold(mcse_target=...)
            notes.append(self.precision_note())  # type: ignore[attr-defined]
        return View(head, [main, folds], notes + _notes(self.warnings))


class LfoNames(Display):
    """loo's names on :class:`~stanlogz.crossval.refit.lfo_result.LfoResult`, and its table."""

    se_elpd_lfo = alias("se", "loo's name for ``se``.", float)

    mc_se = alias("mcse", "The former name of ``mcse``, kept for compatibility.", float)

    @property
    def p_lfo(self) -> float:
        """Not defined for forecasts; NaN."""
        return float("nan")

    def _display(self) -> View:
        head = (f"{type(self).__name__} of {self.model}: leave-future-out ({self.method}) from "
                f"{self.min_train} observations, {len(self.origins)} forecast origins, "
                f"{len(self.refits)} refit(s)")
        main = Section("", ["", "Estimate", "SE", "MCSE"], [list(r) for r in self.table()])
        origins = Section("Forecast origins:", ["t", "predicts", "elpd", "mc se", "k-hat",
                                                "refit"],
                          [[p["t"], f"{p['predicts'][0]}..{p['predicts'][1]}",
                            round(p["elpd"], 4), round(p["mcse"], 4),
                            None if p["khat"] is None else round(p["khat"], 2),
                            "yes" if p["refit"] else ""] for p in self.pointwise()])
        return View(head, [main, origins], _notes(self.warnings))


class LogoNames(Display):
    """The table of :class:`~stanlogz.crossval.logo.result.LogoResult`: elpd_logo and logoic,
    the Monte Carlo se note, the interval beside the se, one row per group."""

    def _display(self) -> View:
        head = (f"{type(self).__name__} of {self.model}: leave-one-group-out over "
                f"{len(self.groups)} groups of {self.group} ({self.observations.n} "
                f"observations), latents integrated out, PSIS on {self.n_samples} draws")
        main = Section("", ["", "Estimate", "SE", "MCSE"], [list(r) for r in self.table()])
        groups = Section(f"Per group (refit where k-hat > {self.threshold:.2f}):",
                         ["group", "n", "elpd", "mc se", "k-hat", "method",
                          "integration error"], self.group_rows())
        return View(head, [main, groups],
                    [self.mcse_note(), *self.se_notes()] + _notes(self.warnings))


class CVNames(Display):
    """Display of :class:`~stanlogz.crossval.refit.unbiased.CVResult`: the objective (a mean
    per split) and, for leave-one-out with the log score, elpd (the sum), each with its Monte
    Carlo se over the replicates."""

    def _display(self) -> View:
        head = (f"{type(self).__name__} of {self.model}: unbiased leave-{self.n_valid}-out "
                f"cross-validation, {len(self.replicates)} splits")
        lo = f"{100 * self.ci_level:.0f}% CI low"
        main = Section("", ["", "Estimate", "MCSE", lo, "high"], [list(r) for r in self.table()])
        return View(head, [main], _notes(self.warnings))


class LooComparisonNames(Display):
    """loo's / ArviZ's names on :class:`~stanlogz.crossval.select.compare.LooComparison`."""

    dse = alias("diff_se", "ArviZ's name for ``diff_se``.")

    se_diff = alias("diff_se", "loo's name for ``diff_se``.")

    elpd = per_result("elpd", "elpd of each program (in the order given).")

    elpd_loo = per_result("elpd_loo", "elpd_loo of each program (in the order given).")

    se = per_result("se", "se of each program's elpd (in the order given).")

    def describe(self) -> str:
        """What the programs were compared by, in a few words."""
        if self.unit == "groups":
            return f"leave-one-group-out over {self.n_units} groups"
        name = self.results[0].elpd_name
        return "PSIS-LOO" if name == "elpd_loo" else name

    def _display(self) -> View:
        cols = ["", *self.header[1:]]
        rows = self.table()
        # columns with nothing to say (p_logo, never computed) are left out
        keep = [0] + [j for j in range(1, len(cols)) if any(
            r[j] is not None and not (isinstance(r[j], float) and r[j] != r[j]) for r in rows)]
        digits = {"p_worse": 2, "mcse": 2, "diff_mcse": 2}
        shown = [[r[0], *(f"{r[j]:.{digits.get(cols[j], 1)}f}" if isinstance(r[j], float)
                          else r[j] for j in keep[1:])] for r in rows]
        return View(f"{type(self).__name__}: {self.describe()} of {len(self.names)} programs, "
                    "best first", [Section("", [cols[j] for j in keep], shown)],
                    list(self.warnings()))


class ChoiceNames(Display):
    """Printed tables of :class:`~stanlogz.crossval.select.choose.ProgramChoice`: the evidence,
    the PSIS-LOO comparison and the weights as three tables, as ``stanlogz compare`` prints
    them (``table()`` is every column in one row per program); compared by the evidence alone,
    the evidence comparison's own table."""

    def _display(self) -> View:
        if self.evidence_only:  # the evidence table, as the evidence comparison prints it
            ev = self.evidence._display()
            own = [f"warning: {w}" for w in self.warnings if w not in self.evidence.warnings]
            return View(ev.headline, ev.sections, ev.notes + own)
        what = " and ".join(([self.loo.describe()] if self.loo is not None else [])
                            + (["evidence"] if self.evidence is not None else []))
        head = f"{type(self).__name__}: {len(self.names)} programs by {what}, best first"
        sections, notes = [], []
        if self.evidence is not None:
            ev = self.evidence.table()
            order = [self.names.index(r[0]) for r in ev]
            pos = {i: ev[j] for j, i in enumerate(order)}
            sections.append(Section("evidence; log_bf = log Z - log Z_best",
                                    ["", *self.evidence.header[1:]],
                                    [list(pos[i]) for i in self.order()]))
            notes += [f"warning ({self.names[i]}): {w}"
                      for i, r in enumerate(self.evidence.results) for w in r.warnings]
        if self.loo is not None:
            t = LooComparisonNames._display(self.loo).sections[0]
            # diagnostics columns with nothing to say are left out (table() has every column)
            keep = [j for j, c in enumerate(t.columns) if c not in ("diag_diff", "diag_elpd")
                    or any(r[j] for r in t.rows)]
            name = self.loo.results[0].elpd_name
            sections.append(Section(f"{self.loo.describe()}; elpd_diff = {name} - best; "
                                    "diff_se of the paired differences",
                                    [t.columns[j] for j in keep],
                                    [[r[j] for j in keep] for r in t.rows]))
            notes += [f"warning ({n}): {w}" for n, r in zip(self.names, self.loo.results,
                                                            strict=True) for w in r.warnings]
        if self.model_weights:
            sections.append(Section(
                "model weights (se: Bayesian bootstrap, or delta method for pseudo-BMA, BMA)",
                ["", *(h for m in self.model_weights for h in (m, f"{m}_se"))],
                [[r[0], *(f"{v:.3f}" for v in r[1:])] for r in self.weights_table()]))
        notes = [textwrap.fill(n, 100, subsequent_indent="  ", break_on_hyphens=False)
                 for n in notes + [f"warning: {w}" for w in self.warnings]]
        return View(head, sections, notes)
