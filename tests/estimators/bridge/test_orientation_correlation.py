"""The dense route's two orientations combined with a correlation that grows with the dimension
per draw (stanlogz.estimators.bridge.route.orientation_correlation)."""

import math

import numpy as np
import pytest

from stanlogz.densities.gaussian import HierarchicalNormalTarget
from stanlogz.estimators.bridge.bridge import combine_orientations, gbs
from stanlogz.estimators.bridge.route import ORIENTATION_C, choose_route, orientation_correlation


def test_partial_correlation_sits_between_the_two_rules():
    # rho = 0.5, se 0.1 and 0.3: sqrt(0.01 + 0.09 + 2 * 0.5 * 0.03) / 2 = sqrt(0.13) / 2
    assert combine_orientations([1.0, 1.01], [0.1, 0.3], correlated=0.5)[1] == pytest.approx(
        math.sqrt(0.13) / 2)
    # the floor at half the difference still holds
    assert combine_orientations([1.0, 2.0], [0.1, 0.3], correlated=0.5)[1] == pytest.approx(0.5)


@pytest.mark.parametrize("rho", [0.3, 0.6, 0.9])
def test_correlated_orientations_cover_with_their_correlation(rho):
    # Orientations whose errors are N(0, 1) each with correlation rho and right se (1): the
    # mean has variance (1 + rho) / 2, and the rule's se is at least its root, so +-2 se covers
    # at least 0.954 (measured 0.96-0.97). Over 4000 pairs the binomial sd is 0.0033: < 0.935
    # fails with probability < 1e-8. The independent rule's se is sqrt(1 / 2): it covers
    # P(|N| < 2 / sqrt(1 + rho)) = 0.92, 0.88, 0.85 in expectation (< 0.935 by > 4 sd).
    rng = np.random.default_rng(23)
    cov = np.array([[1.0, rho], [rho, 1.0]])
    pairs = rng.multivariate_normal([0.0, 0.0], cov, size=4000)
    cover = np.mean([abs(m) <= 2 * s for m, s, _ in
                     (combine_orientations(list(p), [1.0, 1.0], correlated=rho)
                      for p in pairs)])
    naive = np.mean([abs(m) <= 2 * s for m, s, _ in
                     (combine_orientations(list(p), [1.0, 1.0]) for p in pairs)])
    assert cover >= 0.935 and naive < 0.935


def test_the_correlation_grows_with_the_dimension_per_draw():
    dense = choose_route(2000, 102, "dense")
    assert orientation_correlation(dense, 102, 2000) == pytest.approx(
        102 / (102 + ORIENTATION_C * 2000))
    assert orientation_correlation(dense, 10, 2000) < 0.1 < orientation_correlation(
        dense, 1002, 2000) < 1.0
    assert orientation_correlation(choose_route(2000, 3002), 3002, 2000) == 1.0


def test_gbs_reports_the_correlation_it_used():
    # d = 12, 2 x 400 draws per half: the dense route's rho = 12 / (12 + C * 400); the se is
    # the rule's (deterministic given the halves' estimates and ses)
    rng = np.random.default_rng(5)
    sigma = rng.uniform(0.5, 2.0, 10)
    t = HierarchicalNormalTarget(rng.normal(1.0, 1.5, 10), sigma)
    r = gbs(t, t.sample(rng, 1600).reshape(4, 400, 12), seed=3)
    rho = r.diagnostics["orientation_correlation"]
    assert rho == pytest.approx(12 / (12 + ORIENTATION_C * 800))
    (a, b), (sa, sb) = r.diagnostics["half_swap_log_z"], r.diagnostics["half_swap_se"]
    assert r.log_z_se == pytest.approx(
        0.5 * max(math.sqrt(sa**2 + sb**2 + 2 * rho * sa * sb), abs(a - b)))
