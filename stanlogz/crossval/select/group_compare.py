"""Programs compared by leave-one-group-out (elpd_logo), as :func:`.compare.loo_compare` compares
them by elpd_loo, with the groups in the place of the observations: the differences come from
the same :func:`.compare.paired_differences` (a :class:`LogoResult` is an elpd result whose
units are the groups) and the weights from the same :func:`.weights.pointwise_weights`.

Each program's :class:`~stanlogz.crossval.logo.result.LogoResult` gives one value per group,
log p(y_g | y₋g); the pointwise differences to the best program are per group, so

* ``diff_se`` = sqrt(G var(d_g)) over the G groups (loo's se of a paired difference with the
  groups as the units: a new group is what LOGO predicts);
* ``p_worse``, ``diag_diff``, ``khat_diff`` and ``diff_interval`` follow loo's conventions and
  :mod:`.compare`'s, with G in the place of N: nothing but loo's se below |elpd_diff| = 4 (no
  ``p_worse``, no interval), ``"N < 100"`` flags G < 100 groups, no calibrated interval below
  20 groups, ``khat_diff`` needs 20 groups;
* ``diag_elpd`` counts the groups of a program left above the k̂ threshold (``fix="none"``);
* ``diff_mcse``: both programs' Monte Carlo se of elpd_logo in quadrature (independent runs);
* stacking weights (and pseudo-BMA(+) on request) over the per-group values: the weights of
  the programs' mixture that predicts a new group best.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..._util.seeds import SeedLike
from ...errors import InputError, Route
from ..logo.result import LogoResult
from .compare import MIN_OBS, difference_warnings, json_number, json_pair, paired_differences
from .weights import ModelWeights, pointwise_weights

#: Weight methods over groups (``bma`` needs the evidence, which a group comparison does not
#: compute).
GROUP_WEIGHTS = ("stacking", "pseudo-bma", "pseudo-bma+")


@dataclass(repr=False)
class LogoComparison:
    """elpd_logo per program, differences to the best over groups, their se and weights.

    Attributes
    ----------
    names : list of str
        The programs' names, in the order given.
    results : list of LogoResult
        Each program's leave-one-group-out.
    elpd_diff, diff_se, diff_mcse : ndarray
        elpd_logo − best's, sqrt(G var(d_g)) of the per-group differences, and the Monte
        Carlo se of the difference (0 for the best).
    best : int
        Index of the program with the highest elpd_logo.
    p_worse, khat_diff, diff_interval : ndarray
        As in :class:`~stanlogz.crossval.select.compare.LooComparison`, over groups.
    diag_diff, diag_elpd : list of str
        loo's diagnostics of each difference and of each program's elpd_logo.
    model_weights : dict
        :class:`~stanlogz.crossval.select.weights.ModelWeights` by method, over groups.
    """

    names: list[str]
    results: list[LogoResult]
    elpd_diff: np.ndarray
    diff_se: np.ndarray
    best: int
    p_worse: np.ndarray
    khat_diff: np.ndarray
    diag_diff: list[str]
    diag_elpd: list[str]
    diff_mcse: np.ndarray
    diff_interval: np.ndarray
    model_weights: dict[str, ModelWeights] = field(default_factory=dict)

    header = ("model", "elpd_logo", "se", "mcse", "elpd_diff", "diff_se", "diff_mcse",
              "p_worse", "diag_diff", "diag_elpd")

    @property
    def n_groups(self) -> int:
        """The number of groups G."""
        return len(self.results[0].groups)

    def order(self) -> list[int]:
        """Program indices, best elpd_logo first."""
        return [int(i) for i in np.argsort(-np.array([r.elpd_logo for r in self.results]),
                                           kind="stable")]

    def table(self) -> list[list[Any]]:
        """One row per program, best first, in the order of :attr:`header`."""
        return [[self.names[i], self.results[i].elpd_logo, self.results[i].se,
                 self.results[i].mcse_elpd_logo, float(self.elpd_diff[i]),
                 json_number(self.diff_se, i), json_number(self.diff_mcse, i),
                 json_number(self.p_worse, i),
                 self.diag_diff[i], self.diag_elpd[i]] for i in self.order()]

    def weights_table(self) -> list[list[Any]]:
        """Rows ``[model, weight, se, ...]`` per program (best first), one pair per method."""
        return [[self.names[i]] + [v for w in self.model_weights.values()
                                   for v in (float(w.weights[i]), float(w.se[i]))]
                for i in self.order()]

    def warnings(self) -> list[str]:
        """What the diagnostics mean for this comparison, and what to do."""
        out = []
        g = self.n_groups
        if g < MIN_OBS:
            out.append(f"only {g} groups: diff_se is loo's over groups, but no calibrated "
                       "diff_interval is given (too few groups for the small-N factor)")
        elif "N < 100" in self.diag_diff:
            out.append(f"only {g} groups: loo's diff_se is too optimistic at this many units "
                       "(diag_diff 'N < 100'); diff_interval carries the small-N factor")
        out.extend(difference_warnings(self.names, self.diag_diff, self.diag_elpd,
                                       self.khat_diff, unit="groups", elpd_name="elpd_logo",
                                       rerun=f"rerun with {Route(options={'fix': 'auto'})} "
                                             "to refit those groups"))
        return out

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable dict: the keys of the LOO comparison's, with ``elpd_logo`` and
        ``mcse_elpd_logo`` per program, ``weights`` by method and ``warnings``."""
        models = []
        for j, (n, r) in enumerate(zip(self.names, self.results, strict=True)):
            models.append({
                "name": n, "elpd_logo": r.elpd_logo, "se": r.se,
                "mcse_elpd_logo": r.mcse_elpd_logo, "elpd_diff": float(self.elpd_diff[j]),
                "diff_se": json_number(self.diff_se, j),
                "diff_interval": json_pair(self.diff_interval, j),
                "diff_mcse": json_number(self.diff_mcse, j),
                "fixed": [g.label for g in r.groups if g.method == "refit"],
                "warnings": r.warnings, "p_worse": json_number(self.p_worse, j),
                "khat_diff": json_number(self.khat_diff, j), "diag_diff": self.diag_diff[j],
                "diag_elpd": self.diag_elpd[j],
                "elpd_g": [float(v) for v in r.elpd_g],
                "mcse_g": [g.mcse for g in r.groups]})
        return {"best": self.names[self.best], "scheme": "leave-one-group-out",
                "group": self.results[0].group, "n_groups": self.n_groups,
                "logo": {"models": models},
                "weights": {m: w.to_dict(self.names) for m, w in self.model_weights.items()},
                "choice_warnings": self.warnings()}

    def __repr__(self) -> str:
        rows = "; ".join(f"{r[0]} {r[1]:.2f} (diff {r[4]:.2f})" for r in self.table())
        return f"LogoComparison({len(self.names)} programs by elpd_logo over " \
               f"{self.n_groups} groups: {rows})"


def _labels(r: LogoResult) -> list[int]:
    return [g.label for g in r.groups]


def logo_compare(results: Sequence[LogoResult], names: Sequence[str] | None = None, *,
                 weights: Sequence[str] = ("stacking",), n_boot: int = 1000,
                 seed: SeedLike = None) -> LogoComparison:
    """Compare programs' leave-one-group-out results over the same groups (module docstring).

    Parameters
    ----------
    results : sequence of LogoResult
        At least two results over the same groups of the same observations.
    names : sequence of str, optional
        One name per result (default: each result's program name).
    weights : sequence of str, default ("stacking",)
        Weight methods over groups, among ``"stacking"``, ``"pseudo-bma"``, ``"pseudo-bma+"``.
    n_boot : int, default 1000
        Bayesian-bootstrap draws of pseudo-BMA+ (stacking's se re-solves n_boot // 5).
    seed : int, optional
        Seed of the bootstraps (their streams as in :func:`stanlogz.compare`'s weights).

    Returns
    -------
    LogoComparison
        Differences to the best, their se over groups, their Monte Carlo se, weights.

    Raises
    ------
    InputError
        Fewer than two results, results over different groups or observations, a count of
        ``names`` that is not the number of results, an unknown weight method.
    """
    results = list(results)
    if len(results) < 2:
        raise InputError(f"a group comparison needs at least two results, got {len(results)}")
    first = results[0]
    for r in results[1:]:
        if (_labels(r) != _labels(first) or r.observations.n != first.observations.n
                or any(not np.array_equal(a.rows, b.rows)
                       for a, b in zip(r.groups, first.groups, strict=True))):
            raise InputError("a group comparison needs the same groups of the same "
                             f"observations in every program; {r.model} and {first.model} "
                             "differ")
    names = list(names) if names is not None else [r.model for r in results]
    if len(names) != len(results):
        raise InputError(f"{len(names)} names for {len(results)} results")
    bad = [w for w in weights if w not in GROUP_WEIGHTS]
    if bad:
        raise InputError(f"weights over groups: {', '.join(bad)} not among "
                         f"{', '.join(GROUP_WEIGHTS)} (bma needs the evidence)")
    d = paired_differences(results, len(first.groups))
    diag_elpd = []
    for r in results:
        left = r.bad_groups()
        diag_elpd.append(f"{len(left)} k_psis > {r.threshold:.2f}" if left else "")
    out = LogoComparison(names, results, d.elpd_diff, d.diff_se, d.best, d.p_worse,
                         d.khat_diff, d.diag_diff, diag_elpd, d.diff_mcse, d.diff_interval)
    out.model_weights.update(pointwise_weights(np.column_stack([r.elpd_g for r in results]),
                                               weights, n_boot=n_boot, seed=seed))
    return out
