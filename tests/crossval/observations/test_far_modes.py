"""Far modes of p(y_i | y₋ᵢ, θ) beyond a deep trough (issue 35): a zero-inflated Poisson
autoregression whose spike at 0 lies ~40 nats below the mode near y_i ≈ 100, and an AR(1)
series with a contamination component at 0, thousands of nats below. A sum or quadrature that
stops at the first negligible terms misses these modes (0.3-0.6 nats per point); the sum now
runs to the declared bound 0, and the quadrature adds a piece around each far point where the
density is not negligible.

At fixed θ the computation is deterministic, and it is compared with brute force in numpy
(:mod:`benchmarks.truths.crossval.truths_nonfactorized`: the sum over y_i = 0..2999, whose
terms beyond are below e^-5000; the trapezoid rule on a 5e-3 grid over [-60, 400], whose error
is nil for conditional sds of 1 and more). Every column must agree to 1e-6 (the issue's
target), and within the error the computation reports plus 1e-9 for the rounding of a few
hundred density terms: the reported error is a claim tested here."""

from __future__ import annotations

import numpy as np
from scipy import stats

from benchmarks.truths.crossval import truths_nonfactorized as T
from stanlogz.crossval.elpd.psis import psis_loo
from stanlogz.crossval.observations.conditional_nodes import far_points
from stanlogz.crossval.observations.nonfactorized import NonFactorizedSource
from stanlogz.crossval.observations.observations import find_observations
from stanlogz.crossval.psis_loo.loo import loo

ZIP_THETA = [{"alpha": 90.0, "beta": 0.1, "pi": 0.3}, {"alpha": 60.0, "beta": 0.35, "pi": 0.2},
             {"alpha": 95.0, "beta": 0.05, "pi": 0.45}]
MIX_THETA = [{"mu": 90.0, "phi": 0.1, "sigma": 2.0, "pi": 0.1},
             {"mu": 80.0, "phi": 0.2, "sigma": 3.0, "pi": 0.3},
             {"mu": 95.0, "phi": 0.05, "sigma": 1.5, "pi": 0.05}]


def test_far_points_cover_bounds_zero_multiples_and_the_data_range():
    y = np.array([3.0, 100.0, 250.0, -4.0])
    pts = far_points(100.0, y, 10.0, -50.0, None, discrete=False)
    assert {-50.0, 0.0, 50.0, 200.0, 400.0, 1000.0, -4.0, 250.0, 10100.0} <= set(pts)
    assert 100.0 not in pts and pts.min() >= -50.0 and np.all(np.diff(pts) > 0)
    counts = far_points(7.0, np.array([0, 7, 30]), 2.5, 0.0, 40.0, discrete=True)
    assert set(counts) <= set(range(41)) and {0.0, 14.0, 28.0, 30.0, 40.0} <= set(counts)


def test_zip_autoregression_sums_down_to_the_spike_at_zero(compiled):
    data = T.zip_data(20, np.random.default_rng(11))
    m = compiled("zip_ar", data)
    unc = np.array([m.unconstrain_dict(p) for p in ZIP_THETA])
    src = NonFactorizedSource(m, data, find_observations(data, "T"))
    y = np.array(data["y"])
    got = src.columns(np.arange(20), unc)
    for i in range(20):
        want = np.array([T.zip_conditional(y, i, p) for p in ZIP_THETA])
        assert src.method[i] == "sum" and src.quad.support[i][0] == 0.0
        assert src.quad.open_ends[i] == 1  # the upper tail is extrapolated, not bounded
        np.testing.assert_allclose(got[:, i], want, rtol=0, atol=1e-6)
        assert np.max(np.abs(got[:, i] - want)) <= src.quad.error[i] + 1e-9
    # the point the old stop-at-the-trough sum missed by 0.6 nats
    assert abs(got[0, 14] - T.zip_conditional(y, 14, ZIP_THETA[0])) <= 1e-6


def test_far_mixture_refuses_the_closed_form_and_integrates_both_modes(compiled):
    # the first 10 values of the series the other tests use (the same draws of the generator):
    # the first, a value in the component at 0 (y_6), the one after it, the last, and values
    # near 100; the brute force's cost grows as T^2, so not all 20
    data = T.mixture_data(10, np.random.default_rng(12))
    m = compiled("far_mixture", data)
    unc = np.array([m.unconstrain_dict(p) for p in MIX_THETA])
    src = NonFactorizedSource(m, data, find_observations(data, "T"))
    y = np.array(data["y"])
    got = src.columns(np.arange(10), unc)
    # near y_i the density is quadratic to rounding: only the far check at 0 refuses it
    assert set(src.method) == {"quadrature"}
    assert np.sum(src.quad.pieces > 1) >= 5
    for i in range(10):
        want = np.array([T.mixture_conditional(y, i, p) for p in MIX_THETA])
        np.testing.assert_allclose(got[:, i], want, rtol=0, atol=1e-6)
        assert np.max(np.abs(got[:, i] - want)) <= src.quad.error[i] + 1e-9


def test_far_mixture_reused_pieces_agree_with_a_fresh_pass(compiled):
    # moment matching asks for one column at many draw sets: the pieces are reused where
    # their checks pass (levels agree, ends negligible, no far point left out)
    data = T.mixture_data(20, np.random.default_rng(12))
    m = compiled("far_mixture", data)
    obs = find_observations(data, "T")
    first = np.array([m.unconstrain_dict(p) for p in MIX_THETA])
    second = first + 0.02 * np.random.default_rng(13).normal(size=first.shape)
    src = NonFactorizedSource(m, data, obs)
    src.column(7, first)
    again = src.column(7, second)
    names = ["mu", "phi", "sigma", "pi"]
    want = [T.mixture_conditional(np.array(data["y"]), 7, dict(zip(names, th, strict=True)))
            for th in m.constrain_many(second)]
    np.testing.assert_allclose(again, want, rtol=0, atol=1e-6)


def test_loo_of_the_zip_autoregression_matches_brute_force_at_its_draws(compiled):
    # the case end to end: on the same NUTS draws, every elpd_i equals PSIS of the
    # brute-force conditionals (a truncated sum was off by 0.3-0.4 nats per point). The
    # comparison is exact at any draws and size: the first 10 counts of the series the other
    # tests use (3 zeros among them, the first value one) and 100 draws, since the
    # brute force costs T^2 x draws
    data = T.zip_data(10, np.random.default_rng(11))
    m = compiled("zip_ar", data)
    r = loo(m, data, obs="T", seed=23, fix="none", chains=2, warmup=200, n_draws=50)
    assert r.log_lik_source == "conditional"
    th = m.constrain_many(r.draws.flat_unconstrained())
    y = np.array(data["y"])
    ll = np.array([[T.zip_conditional(y, i, {"alpha": a, "beta": b, "pi": p})
                    for i in range(10)] for a, b, p in th])
    want = psis_loo(ll, r.r_eff, chains=2)
    np.testing.assert_allclose(r.elpd_i, want.elpd_i, rtol=0, atol=1e-6)
    assert any("declared bound" in w for w in r.warnings)


def test_a_far_mode_on_the_declared_bound_gets_its_own_piece(compiled):
    # the exponential component sits on the lower bound 0 (a far point that is the bound
    # itself); the mixture is normalized, so the conditional is its log density in closed form
    data = {"N": 6, "y": [98.2, 103.5, 0.41, 100.9, 1.7, 96.4]}
    m = compiled("bounded_far", data)
    pars = [(4.6, 0.05, 0.2), (4.58, 0.08, 0.4), (4.62, 0.04, 0.05)]
    unc = np.array([m.unconstrain_dict({"mu": a, "sigma": b, "pi": p}) for a, b, p in pars])
    src = NonFactorizedSource(m, data, find_observations(data, "N"))
    for i in range(6):
        got = src.column(i, unc)
        y = data["y"][i]
        want = [np.logaddexp(np.log(p) + stats.expon.logpdf(y),
                             np.log1p(-p) + stats.lognorm.logpdf(y, b, scale=np.exp(a)))
                for a, b, p in pars]
        assert src.method[i] == "quadrature" and src.quad.bounds(i) == (0.0, None)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)
        assert np.max(np.abs(got - want)) <= src.quad.error[i] + 1e-9
    assert src.quad.pieces[0] == 2  # y = 98.2: the piece around 0 added
