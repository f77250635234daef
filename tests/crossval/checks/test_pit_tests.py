"""The dependence-aware LOO-PIT tests (stanlogz.crossval.checks.pit_tests): each pointwise
p-value against its closed form, the (truncated) Cauchy combination on known p-values, the
Shapley contributions against brute force, the simultaneous band's coverage, and the
calibrated tests' level on LOO-PIT of well-specified fits (PSIS weights of exact posterior
draws, continuous and randomized discrete)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import special, stats

from benchmarks.pit_calibration import normal_fit, poisson_fit
from stanlogz.crossval.checks.pit_tests import (
    cauchy_combination_test,
    piet_pvalues,
    pit_tests,
    pot_pvalues,
    prit_pvalues,
    shapley_contributions,
    simultaneous_band,
    uniformity_test,
)
from stanlogz.errors import InputError


def test_pointwise_p_values_match_their_closed_forms() -> None:
    # n = 2: u_(1) ~ Beta(1, 2), CDF 1 − (1 − u)²; u_(2) ~ Beta(2, 1), CDF u². At (0.5, 0.25)
    # (observation order kept): u_(1) = 0.25 → CDF 0.4375 → p 0.875; u_(2) = 0.5 → 0.25 → 0.5
    np.testing.assert_allclose(pot_pvalues([0.5, 0.25]), [0.5, 0.875], rtol=1e-14)
    # every order statistic at its Beta median: every p-value is 1
    n = 9
    i = np.arange(1, n + 1)
    np.testing.assert_allclose(pot_pvalues(special.betaincinv(i, n - i + 1, 0.5)), 1.0,
                               atol=1e-12)
    # PIET: the Exp(1) CDF at −log u is 1 − u, so p = 2 min(u, 1 − u)
    np.testing.assert_allclose(piet_pvalues([0.1, 0.7, 0.5]), [0.2, 0.6, 1.0], rtol=1e-14)
    # PRIT at (0.25, 0.5): k = (1, 2). Bin(2, .25): P(K<1) = .5625, P(K=1) = .375 → mid .75 →
    # p .5; Bin(2, .5): P(K<2) = .75, P(K=2) = .25 → mid .875 → p .25
    np.testing.assert_allclose(prit_pvalues([0.25, 0.5]), [0.5, 0.25], rtol=1e-14)
    # ties count every equal value: k = 2 for both; Bin(2, .3): P(K<2) = .91, P(K=2) = .09
    np.testing.assert_allclose(prit_pvalues([0.3, 0.3]), 2 * (1 - (0.91 + 0.045)), rtol=1e-13)


def test_cauchy_combination_on_known_p_values() -> None:
    p = np.array([0.01, 0.6, 0.5])
    c = np.tan((0.5 - p) * np.pi)
    t, pv = cauchy_combination_test(p, truncate=False)
    assert t == pytest.approx(c.mean(), rel=1e-14)
    assert pv == pytest.approx(0.5 - math.atan(c.mean()) / math.pi, rel=1e-14)
    t, pv = cauchy_combination_test(p, truncate=True)  # p >= 1/2 count as 0
    assert t == pytest.approx(c[0] / 3, rel=1e-14)
    assert pv == pytest.approx(stats.cauchy.sf(c[0] / 3), rel=1e-12)
    # equal p-values combine to themselves (untruncated; truncated where p < 1/2)
    for q in (1e-6, 0.03, 0.3, 0.8):
        assert cauchy_combination_test(np.full(7, q), truncate=False)[1] == pytest.approx(q)
    assert cauchy_combination_test(np.full(7, 0.03), truncate=True)[1] == pytest.approx(0.03)
    # truncated: no p-value below 1/2 gives T = 0, p = 1/2; a p-value of 0 rejects outright
    assert cauchy_combination_test([0.7, 0.9], truncate=True) == (0.0, 0.5)
    assert cauchy_combination_test([0.0, 0.9], truncate=True) == (math.inf, 0.0)
    with pytest.raises(InputError, match="p-values"):
        cauchy_combination_test([0.2, 1.5])


def test_shapley_contributions_match_brute_force() -> None:
    """v(S) = mean of the Cauchy values over S, v(∅) = 0: the Shapley value averaged over all
    coalitions equals the closed form, and the values sum to v(N)."""
    c = np.array([3.0, -1.0, 0.5, 10.0, -4.0])
    n = c.size
    brute = np.zeros(n)
    for i in range(n):
        others = [j for j in range(n) if j != i]
        for k in range(n):
            for s in itertools.combinations(others, k):
                w = math.factorial(k) * math.factorial(n - k - 1) / math.factorial(n)
                before = np.mean(c[list(s)]) if s else 0.0
                brute[i] += w * (np.mean(c[list(s) + [i]]) - before)
    phi = shapley_contributions(c)
    np.testing.assert_allclose(phi, brute, rtol=1e-13)
    assert phi.sum() == pytest.approx(c.mean(), rel=1e-13)


def test_test_results_follow_the_observations() -> None:
    rng = np.random.default_rng(5)
    u = rng.uniform(size=25) ** 1.5
    perm = rng.permutation(25)
    for name in ("pot", "piet", "prit"):
        a, b = uniformity_test(u, name), uniformity_test(u[perm], name)
        assert a.p_value == pytest.approx(b.p_value, rel=1e-12)
        np.testing.assert_allclose(b.contributions, a.contributions[perm], rtol=1e-12)
        np.testing.assert_allclose(b.pointwise_p, a.pointwise_p[perm], rtol=1e-12)
        # the statistic is the combination of the pointwise p-values it reports
        t, p = cauchy_combination_test(a.pointwise_p, a.truncate)
        assert (a.statistic, a.p_value) == (pytest.approx(t), pytest.approx(p))
    assert [uniformity_test(u, t).truncate for t in ("pot", "piet", "prit")] == [True, False,
                                                                                  True]
    with_nan = uniformity_test(np.concatenate([u, [np.nan]]), "pot")
    assert with_nan.n == 25 and np.isnan(with_nan.contributions[-1])
    assert with_nan.p_value == pytest.approx(uniformity_test(u, "pot").p_value, rel=1e-14)
    with pytest.raises(InputError, match="one of"):
        uniformity_test(u, "anderson")
    with pytest.raises(InputError, match=r"\[0, 1\]"):
        uniformity_test([0.2, 1.2], "pot")


def test_simultaneous_band_covers_at_its_level() -> None:
    """2,000 fresh sets of 30 uniforms lie wholly inside the 90% band about 90% of the time:
    the band's pointwise level is a quantile of 4,000 simulations (coverage sd 0.0047) and the
    count's sd is 0.0067, so [binom.ppf(5e-5, 2000, 0.88), binom.isf(5e-5, 2000, 0.92)]
    fails with probability < 1e-4."""
    lo, hi = simultaneous_band(30, 0.9)
    assert np.all(lo < hi) and np.all(np.diff(lo) > 0)
    u = np.sort(np.random.default_rng(7).random((2000, 30)), axis=1)
    inside = int(np.sum(np.all((u >= lo) & (u <= hi), axis=1)))
    assert stats.binom.ppf(5e-5, 2000, 0.88) <= inside <= stats.binom.isf(5e-5, 2000, 0.92)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["continuous", "discrete"])
def test_calibrated_level_on_loo_pit_of_well_specified_fits(kind: str) -> None:
    """200 continuous or 150 discrete fits (N = 30, S = 400, PSIS weights of exact draws;
    benchmarks/pit_calibration.py has 1,000 per row and N = 50). Each calibrated test rejects
    at α = 0.05 at most binom.isf(5e-5, reps, 0.09) times, and at α = 0.25 between
    binom.ppf(5e-5, reps, 0.17) and binom.isf(5e-5, reps, 0.33) times (at α = 0.05 a lower
    bound for so few fits would be 0): each bound fails with probability < 5e-5 for a level
    within 0.04 (α = 0.05) or 0.08 (α = 0.25) of α. The analytic p-values reject 0–2% at
    α = 0.05 and would fail the α = 0.25 lower bound."""
    rng = np.random.default_rng(11 if kind == "continuous" else 12)
    reps = 200 if kind == "continuous" else 150
    p = {name: [] for name in ("pot", "piet", "prit")}
    for k in range(reps):
        fit = (normal_fit(rng, 30, 400) if kind == "continuous"
               else poisson_fit(rng, 30, 400, seed=k))
        for name, t in pit_tests(fit[0], p_loo=fit[1], floor=fit[2], widths=fit[3]).items():
            p[name].append(t.p_value_calibrated)
    for name, v in p.items():
        at05, at25 = int(np.sum(np.array(v) < 0.05)), int(np.sum(np.array(v) < 0.25))
        assert at05 <= stats.binom.isf(5e-5, reps, 0.09), (name, at05)
        assert (stats.binom.ppf(5e-5, reps, 0.17) <= at25
                <= stats.binom.isf(5e-5, reps, 0.33)), (name, at25)


def test_predictive_checks_report_the_tests_and_the_plot_marks_their_drivers() -> None:
    """Data with sd 2 fitted with sd 1 (exact posterior draws of μ): LOO-PIT piles up at 0 and
    1; every calibrated test rejects (p ≈ 1e-3 or below at N = 40) and the POT drivers are the
    observations nearest 0 and 1, drawn as the plot's red points."""
    import json

    import matplotlib.pyplot as plt

    from stanlogz.crossval.checks.checks import predictive_checks
    from stanlogz.report import plot_loo_pit

    rng = np.random.default_rng(0)
    n, s = 40, 1000
    y = 2.0 * rng.normal(size=n)
    mu = y.mean() + rng.normal(size=s) / math.sqrt(n + 1)
    ll = -0.5 * (y[None] - mu[:, None]) ** 2
    ch = predictive_checks(ll, mu[:, None] + rng.normal(size=(s, n)), y, metrics=False,
                           crps=False)
    d = json.loads(json.dumps(ch.to_dict()))["pit_tests"]
    assert set(d) == {"pot", "piet", "prit"} and len(d["pot"]["contributions"]) == n
    rows = {r[0]: r[1] for r in ch.table()}
    for name in ("pot", "piet", "prit"):
        assert rows[f"pit_{name}_c_p_value_calibrated"] < 0.01
        assert rows[f"pit_{name}_c_p_value"] == ch.pit_tests[name].p_value
    drivers = ch.pit_tests["pot"].drivers(alpha=0.01)
    extreme = np.minimum(ch.pit, 1 - ch.pit)
    assert drivers.size and np.max(extreme[drivers]) < np.median(extreme)
    assert any("drive it most" in w for w in ch.warnings)
    # the untruncated pointwise-order test reuses POT's pointwise p-values: the same numbers
    # as pit_uniformity computes from the PIT values themselves
    from stanlogz.crossval.checks.predictive import pit_uniformity
    direct = pit_uniformity(ch.pit)
    assert ch.uniformity.n == direct.n == n
    assert abs(ch.uniformity.statistic - direct.statistic) < 1e-9 * abs(direct.statistic)
    fig, ax = plt.subplots()
    plot_loo_pit(ch, ax=ax)
    assert len(ax.collections[-1].get_offsets()) == drivers.size
    plt.close(fig)


def test_randomized_null_keeps_uniforms_uniform() -> None:
    """Bars of width w tiling [0, 1] from a random offset, a uniform draw on the bar that holds
    each value: uniform in, uniform out (KS at level 2e-5 per column, 1e-4 in all); width 0
    leaves the values, and a value moves by less than its bar's width."""
    from stanlogz.crossval.checks.pit_null import randomized_null

    u = np.random.default_rng(13).random((4000, 5))
    z = randomized_null(u, np.array([0.0, 0.1, 0.3, 0.7, 1.0]))
    assert all(stats.kstest(z[:, j], "uniform").pvalue > 2e-5 for j in range(5))
    np.testing.assert_array_equal(z[:, 0], u[:, 0])
    assert np.all(np.abs(z - u) <= np.array([0.0, 0.1, 0.3, 0.7, 1.0]))
    assert np.corrcoef(z[:, 1], u[:, 1])[0, 1] > 0.98  # narrow bars keep the values' order


def test_floor_widths_and_drivers_on_constructed_cases() -> None:
    from stanlogz.crossval.checks.pit_tests import pit_floor, randomization_widths

    lw = np.log(np.array([[1.0, 1.0], [1.0, 2.0], [1.0, 1.0], [1.0, 4.0]]))
    # normalized weights: (1/4, 1/4, 1/4, 1/4) and (1/8, 2/8, 1/8, 4/8): half the largest is
    # 1/8 and 1/4; the floor is the coarser
    assert pit_floor(lw) == pytest.approx(0.25, rel=1e-14)
    y_rep = np.array([[2.0, 0.0], [2.0, 1.0], [3.0, 1.0], [1.0, 1.0]])
    np.testing.assert_allclose(randomization_widths(lw, [2.0, 1.0], y_rep), [0.5, 7 / 8],
                               rtol=1e-14)
    calm = uniformity_test(np.linspace(0.05, 0.95, 19), "pot", calibrate=True)
    assert calm.p_value_calibrated > 0.5 and calm.drivers().size == 0
