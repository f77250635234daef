"""stanlogz's LOO predictive measures and LOO-PIT tests agree with arviz-stats to 1e-10 on
shared inputs. arviz-stats needs Python ≥ 3.12 and is not installable beside ArviZ 0.x, so its
values were computed once by benchmarks/measures_agreement.py (arviz-stats 1.3.3, recorded in
the fixture) and are stored in benchmarks/data/arviz_stats_reference.json; the inputs are
regenerated here from the same seeds and their checksums checked first.

The tolerance 1e-10 is far above the rounding of sums of a few hundred terms (~1e-13) and far
below any difference of definition. The se's of MAE, MSE, RMSE and accuracy share their
formulas; balanced accuracy's se does not (arviz-stats: √((tp(1 − tp) + tn(1 − tn)) / 4N),
loo's per-class formula here), nor PRIT's pointwise p-value (arviz-stats 1.3.3 drops R
posterior's mid-p; stanlogz follows posterior, checked against the mid-p closed form).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from benchmarks.measures_agreement import checksums, shared_inputs
from stanlogz.crossval.checks.measures import loo_measures
from stanlogz.crossval.checks.pit_tests import uniformity_test

FIXTURE = Path(__file__).parents[3] / "benchmarks" / "data" / "arviz_stats_reference.json"
TOL = 1e-10


@pytest.fixture(scope="module")
def ref() -> dict:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def inputs(ref: dict) -> dict[str, np.ndarray]:
    d = shared_inputs()
    got = checksums(d)
    for k, v in ref["checksums"].items():
        assert got[k] == pytest.approx(v, rel=1e-12), f"input {k} changed: regenerate fixture"
    return d


def test_crps_scrps_pointwise_equal_loo_score(ref: dict, inputs: dict) -> None:
    d = inputs
    ms = {m.name: m for m in loo_measures(d["lw"], d["y"], d["yr"], ["crps", "scrps"])}
    for kind in ("crps", "scrps"):
        np.testing.assert_allclose(ms[kind].pointwise, ref[kind], rtol=0, atol=TOL)
        assert abs(ms[kind].estimate - np.mean(ref[kind])) < TOL


def test_point_metrics_equal_arviz_metrics(ref: dict, inputs: dict) -> None:
    d = inputs
    ms = {m.name: m for m in loo_measures(d["lw"], d["y"], d["yr"], ["mae", "mse", "rmse"])}
    for kind in ("mae", "mse", "rmse"):
        assert abs(ms[kind].estimate - ref[kind]["estimate"]) < TOL, kind
        assert abs(ms[kind].se - ref[kind]["se"]) < TOL, kind


def test_accuracies_equal_arviz_metrics(ref: dict, inputs: dict) -> None:
    d = inputs
    ms = {m.name: m for m in loo_measures(d["lwb"], d["yb"], None, ["acc", "bacc"], mu=d["p"])}
    assert abs(ms["acc"].estimate - ref["acc"]["estimate"]) < TOL
    assert abs(ms["acc"].se_parts["se_binomial"] - ref["acc"]["se"]) < TOL
    assert abs(ms["bacc"].estimate - ref["bacc"]["estimate"]) < TOL


@pytest.mark.parametrize("test", ["pot", "piet"])
def test_pot_piet_equal_uniformity_test(ref: dict, inputs: dict, test: str) -> None:
    got = uniformity_test(inputs["pit"], test)
    assert abs(got.p_value - ref[test]["p_value"]) < TOL
    np.testing.assert_allclose(got.contributions, ref[test]["shapley"], rtol=0, atol=TOL)


def test_prit_is_posteriors_mid_p_not_arviz_stats(ref: dict, inputs: dict) -> None:
    u = np.sort(inputs["pit"])
    n = u.size
    k = np.arange(1, n + 1)                      # no ties in continuous draws
    mid = stats.binom.cdf(k - 1, n, u) + 0.5 * stats.binom.pmf(k, n, u)
    got = uniformity_test(u, "prit")
    np.testing.assert_allclose(got.pointwise_p, 2 * np.minimum(mid, 1 - mid), rtol=0, atol=TOL)
    assert abs(got.p_value - ref["prit"]["p_value"]) > 1e-3   # the two definitions differ
