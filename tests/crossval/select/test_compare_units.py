"""One comparison for every elpd result (issue 43): ``loo_compare`` pairs leave-one-group-out
results by group as it pairs LOO results by observation, with loo's se of a paired difference
over the units, sqrt(G var(d_g)); results of different kinds or over different groups are
refused in one line. Deterministic group values, so every number is exact."""

from __future__ import annotations

import math

import numpy as np
import pytest

import stanlogz
from stanlogz.crossval.logo.result import GroupValue, LogoResult
from stanlogz.crossval.observations.observations import Observations
from stanlogz.crossval.select.compare import loo_compare
from stanlogz.errors import InputError


def _logo(elpd_g: np.ndarray, model: str, rows: int = 2, mcse: float = 0.01) -> LogoResult:
    """A leave-one-group-out result of ``len(elpd_g)`` groups of ``rows`` observations."""
    groups = [GroupValue(g + 1, np.arange(rows * g, rows * (g + 1)), float(e), mcse, 0.1,
                         "psis", "laplace", 0.0, float(e), 0.0) for g, e in enumerate(elpd_g)]
    se = math.sqrt(len(elpd_g)) * float(np.std(elpd_g, ddof=1))
    return LogoResult(model, "g", float(np.sum(elpd_g)), se, mcse * math.sqrt(len(elpd_g)),
                      groups, None, Observations("N", ("y",), rows * len(elpd_g)), 4000, 0.7)


def test_logo_results_pair_by_group():
    a = np.array([-3.0, -4.5, -2.0, -5.0, -3.5, -4.0])
    b = a - np.array([0.5, 2.0, 0.1, 3.0, 0.4, 1.0])  # 7 nats worse in total
    c = loo_compare([_logo(b, "b"), _logo(a, "a")])
    d = b - a
    assert c.best == 1 and c.order() == [1, 0] and c.unit == "groups" and c.n_units == 6
    assert c.elpd_diff[0] == pytest.approx(d.sum(), abs=1e-12)
    # loo's se of a paired difference, the group the unit: sqrt(G var(d_g)), ddof 1
    assert c.diff_se[0] == pytest.approx(math.sqrt(6) * np.std(d, ddof=1), rel=1e-12)
    assert c.diff_mcse[0] == pytest.approx(math.hypot(0.01 * math.sqrt(6),
                                                      0.01 * math.sqrt(6)), rel=1e-12)
    assert c.diag_diff[0] == "N < 100" and any("only 6 groups" in w for w in c.warnings())
    assert c.header[1] == "elpd_logo" and c.table()[0][1] == pytest.approx(a.sum())
    out = c.to_dict()
    assert out["kind"] == "logo" and out["group"] == "g" and out["n_units"] == 6
    assert out["models"][0]["elpd_g"] == pytest.approx(list(b))
    assert "LooComparison: leave-one-group-out over 6 groups of 2 programs" in repr(c)


def test_results_of_other_kinds_or_groups_are_refused():
    a = np.array([-3.0, -4.5, -2.0, -5.0, -3.5, -4.0])
    ll = np.random.default_rng(1).normal(-1.0, 0.1, size=(2, 50, 12))
    with pytest.raises(InputError, match="one kind over the same units; got logo, loo"):
        loo_compare([_logo(a, "a"), stanlogz.loo(ll)])
    other = _logo(a - 1.0, "b")
    other.groups[0].rows, other.groups[1].rows = other.groups[1].rows, other.groups[0].rows
    with pytest.raises(InputError, match="the programs' groups differ"):
        loo_compare([_logo(a, "a"), other])
    with pytest.raises(InputError, match="same groups for every program; got 6, 3 groups"):
        loo_compare([_logo(a, "a"), _logo(a[:3], "b", rows=4)])
