"""Programs compared by elpd_loo, as ``loo_compare`` does: differences to the best program with
the se of the paired pointwise differences."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InputError
from .loo import LooResult


@dataclass
class LooComparison:
    """elpd_loo per program, differences to the best and their standard errors."""

    names: list[str]
    results: list[LooResult]
    elpd_diff: np.ndarray
    diff_se: np.ndarray
    best: int

    header = ("model", "elpd_loo", "se", "elpd_diff", "diff_se", "p_loo", "fixed")

    def table(self) -> list[list[Any]]:
        """One row per program, best first."""
        order = np.argsort(-np.array([r.elpd_loo for r in self.results]), kind="stable")
        return [[self.names[i], self.results[i].elpd_loo, self.results[i].se,
                 float(self.elpd_diff[i]), float(self.diff_se[i]), self.results[i].p_loo,
                 len(self.results[i].fixed)] for i in order]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable dict."""
        return {"best": self.names[self.best],
                "models": [{"name": n, "elpd_loo": r.elpd_loo, "se": r.se,
                            "elpd_diff": float(d), "diff_se": float(s), "p_loo": r.p_loo,
                            "fixed": [f.index + 1 for f in r.fixed], "warnings": r.warnings}
                           for n, r, d, s in zip(self.names, self.results, self.elpd_diff,
                                                 self.diff_se, strict=True)]}


def loo_compare(results: Sequence[LooResult], names: Sequence[str] | None = None
                ) -> LooComparison:
    """Compare :class:`LooResult` s of programs on the same observations: elpd_diff = elpd_loo −
    best, se = sqrt(N var(elpd_i − best_i) + Monte Carlo variances of both programs' fixed
    points)."""
    results = list(results)
    if len(results) < 2:
        raise InputError(f"loo comparison needs at least two results, got {len(results)}")
    n = {r.n_obs for r in results}
    if len(n) != 1:
        raise InputError("loo comparison needs the same observations for every program; "
                         f"got {', '.join(str(r.n_obs) for r in results)} observations")
    names = list(names) if names is not None else [r.model for r in results]
    if len(names) != len(results):
        raise InputError(f"{len(names)} names for {len(results)} results")
    best = int(np.argmax([r.elpd_loo for r in results]))
    b = results[best]
    diff = np.array([r.elpd_loo - b.elpd_loo for r in results])
    se = np.zeros(len(results))
    for j, r in enumerate(results):
        if j != best:
            d_i = r.elpd_i - b.elpd_i
            se[j] = math.sqrt(d_i.size * np.var(d_i) + np.sum(r.mc_se_i**2)
                              + np.sum(b.mc_se_i**2))
    return LooComparison(names=names, results=results, elpd_diff=diff, diff_se=se, best=best)
