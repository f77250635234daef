"""Gaussianizing flow: a normalized, invertible, exactly sampleable density."""

import numpy as np
import pytest
from scipy import integrate

from stanlogz.densities.gaussian import GaussianTarget
from stanlogz.densities.target import SampleableDensity
from stanlogz.errors import InputError
from stanlogz.flows.gaussianize import GaussianizingFlow


def banana_draws(rng, n, q=0.3):
    x0 = rng.standard_normal(n)
    return np.column_stack([x0, x0**2 + q * rng.standard_normal(n)])


def test_inverse_inverts_and_samples_roundtrip():
    rng = np.random.default_rng(0)
    x = np.column_stack([banana_draws(rng, 3000), rng.standard_t(3, size=(3000, 3))])
    flow = GaussianizingFlow.fit(x, n_layers=6, rng=1)
    assert isinstance(flow, SampleableDensity)
    z, _ = flow.forward(x)
    assert np.max(np.abs(flow.inverse(z) - x)) < 1e-8
    s = flow.sample(rng, 2000)
    zs, _ = flow.forward(s)
    assert np.max(np.abs(flow.inverse(zs) - s)) < 1e-8
    # far tails (linear spline tails) invert too
    zt = 8.0 * rng.standard_normal((200, 5))
    assert np.max(np.abs(flow.forward(flow.inverse(zt))[0] - zt)) < 1e-8


def test_density_integrates_to_one_1d_and_2d():
    rng = np.random.default_rng(1)
    f1 = GaussianizingFlow.fit(rng.standard_normal((2000, 1)) ** 3, rng=0)
    # the cube of a normal has tails to |x| ~ 60 at this sample size; the flow's tails are
    # Gaussian in z, so [-400, 400] holds all the mass and a 400k-point trapezoid rule on the
    # smooth (C1) density is accurate to well below 1e-4
    t = np.linspace(-400, 400, 400_001)
    val = integrate.trapezoid(np.exp(f1.log_density_many(t[:, None])), t)
    assert abs(val - 1.0) < 1e-4
    f2 = GaussianizingFlow.fit(banana_draws(rng, 2000), rng=0)
    # 2-D midpoint rule on a box holding all but ~1e-6 of the mass; a smooth integrand makes the
    # rule's error far below the 2e-3 tolerance (this 351 x 701 grid and one twice as fine in
    # each direction agree on the mass to 1.2e-5; the coarser grid costs 6x less)
    g0 = np.linspace(-7, 7, 351)
    g1 = np.linspace(-6, 40, 701)
    xx, yy = np.meshgrid(g0, g1, indexing="ij")
    pts = np.column_stack([xx.ravel(), yy.ravel()])
    mass = np.exp(f2.log_density_many(pts)).sum() * (g0[1] - g0[0]) * (g1[1] - g1[0])
    assert abs(mass - 1.0) < 2e-3


def test_importance_weights_of_a_normalized_target_average_to_one():
    rng = np.random.default_rng(2)
    p = GaussianTarget(np.array([1.0, -2.0, 0.5]), np.diag([1.0, 4.0, 0.25]))
    flow = GaussianizingFlow.fit(p.sample(rng, 4000), rng=3)
    xs = flow.sample(rng, 20000)
    w = np.exp(p.log_density_many(xs) - flow.log_density_many(xs))
    se = w.std() / np.sqrt(w.size)
    # Over 100 seeds: se 3.2e-4 +- 0.8e-4 (max 5.9e-4), the largest weight < 2 (light tails, so
    # the se is reliable), z-scores with sd 1.05. A 4.5-se z-test: P(|Z| > 4.5 / 1.05) = 2e-5.
    assert se < 0.01
    assert abs(w.mean() - 1.0) < 4.5 * se


def test_flow_of_gaussian_data_is_that_gaussian():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((6, 6))
    p = GaussianTarget(rng.standard_normal(6), a @ a.T / 6 + np.eye(6))
    flow = GaussianizingFlow.fit(p.sample(rng, 5000), rng=4)
    xt = p.sample(rng, 5000)
    kl = np.mean(p.log_density_many(xt) - flow.log_density_many(xt))
    # a Gaussian fitted from 5000 draws in 6-d has KL ~ d(d+3)/(4n) ~ 3e-3 (over 100 seeds:
    # 0.0028 +- 0.0013, max 0.0065)
    assert abs(kl) < 0.02
    s = flow.sample(rng, 20000)
    # The flow's moments err by the fitting draws' sampling error (n = 5000) plus the flow
    # samples' (20000): se of a mean sqrt(S_ii f), of a covariance sqrt((S_ii S_jj + S_ij^2) f),
    # f = 1/5000 + 1/20000. 27 checks at 4.8 se: P < 27 * 1.6e-6 = 4e-5 (union bound). Over 100
    # seeds the largest |z| was 2.9 (means) and 3.4 (covariances), as for exact Gaussian
    # moments: the flow adds no visible error of its own.
    f = 1 / 5000 + 1 / 20000
    d = np.diag(p.cov)
    assert np.all(np.abs(s.mean(0) - p.mean) < 4.8 * np.sqrt(d * f))
    cov_se = np.sqrt((np.outer(d, d) + p.cov**2) * f)
    assert np.all(np.abs(np.cov(s, rowvar=False) - p.cov) < 4.8 * cov_se)


def test_flow_improves_on_gaussian_for_banana():
    rng = np.random.default_rng(4)
    x, xt = banana_draws(rng, 4000), banana_draws(rng, 4000)
    true = (-0.5 * xt[:, 0] ** 2 - 0.5 * ((xt[:, 1] - xt[:, 0] ** 2) / 0.3) ** 2
            - np.log(2 * np.pi * 0.3))
    kl0 = np.mean(true - GaussianizingFlow.fit(x, n_layers=0, rng=0).log_density_many(xt))
    kl8 = np.mean(true - GaussianizingFlow.fit(x, n_layers=8, rng=0).log_density_many(xt))
    # KL(p || q) in nats, by Monte Carlo on 4000 test draws: over 100 seeds the Gaussian
    # (0 layers) missed the banana by 1.58 +- 0.03, the flow by 0.176 +- 0.014 (max 0.23); the
    # bounds are 19 and 9 sd away
    assert kl0 > 1.0 and kl8 < 0.3


def test_fit_is_deterministic_given_rng():
    rng = np.random.default_rng(5)
    x = banana_draws(rng, 1000)
    a = GaussianizingFlow.fit(x, rng=7).log_density_many(x[:50])
    b = GaussianizingFlow.fit(x, rng=np.random.default_rng(7)).log_density_many(x[:50])
    assert np.array_equal(a, b)


def test_gradient_matches_finite_differences():
    rng = np.random.default_rng(6)
    x = np.column_stack([banana_draws(rng, 2000), rng.standard_normal(2000)])
    flow = GaussianizingFlow.fit(x, rng=0)
    for x0 in x[:5]:
        lp, g = flow.log_density_gradient(x0)
        assert lp == pytest.approx(flow.log_density(x0))
        num = np.array([(flow.log_density(x0 + e) - flow.log_density(x0 - e)) / 2e-6
                        for e in 1e-6 * np.eye(3)])
        # central differences with h = 1e-6: rounding ~1e-16 |f| / h ~ 1e-9, and the density is
        # C1 (its 2nd derivative jumps at spline knots), so a step across a knot errs by ~h times
        # the jump; both are far below rtol 1e-4 / atol 1e-5, which a wrong formula would exceed
        assert np.allclose(g, num, rtol=1e-4, atol=1e-5)


def test_bad_input():
    with pytest.raises(InputError):
        GaussianizingFlow.fit(np.zeros((10, 8)))
    with pytest.raises(InputError):
        GaussianizingFlow.fit(np.zeros(100))
    with pytest.raises(InputError, match="do not vary"):
        GaussianizingFlow.fit(np.ones((100, 2)))


def test_sample_with_log_density_matches_forward():
    rng = np.random.default_rng(7)
    flow = GaussianizingFlow.fit(banana_draws(rng, 2000), rng=0)
    x, lq = flow.sample_with_log_density(np.random.default_rng(1), 3000)
    assert np.array_equal(x, flow.sample(np.random.default_rng(1), 3000))
    assert np.allclose(lq, flow.log_density_many(x), atol=1e-9)


def test_spline_bins_at_a_few_rows_are_searchsorteds(monkeypatch):
    # The few-rows path (one comparison with every knot) gives the bins of the per-map sorted
    # search, at values on knots, between them and beyond both ends.
    from stanlogz.flows import splines

    rng = np.random.default_rng(3)
    xk = np.sort(rng.normal(size=(60, 12)), axis=1)
    sp = splines.RQSpline(xk, np.sort(rng.normal(size=(60, 12)), axis=1),
                          rng.uniform(0.5, 2.0, (60, 12)))
    for n in (1, 5, splines.FEW_ROWS):
        v = 3 * rng.normal(size=(n, 60))
        v[:, 0] = xk[0, np.arange(n) % 12]  # the first map's values exactly on its knots
        v[-1, 1] = xk[1, -1] + 1.0
        fast = sp._bins(xk, v)
        monkeypatch.setattr(splines, "FEW_ROWS", 0)
        np.testing.assert_array_equal(fast, sp._bins(xk, v))
        monkeypatch.setattr(splines, "FEW_ROWS", 16)
