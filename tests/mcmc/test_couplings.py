"""Couplings keep each chain's marginal law and make chains meet and stay met.

Distributional checks use KS tests that reject only at p < 1e-5; no test makes more than 4 of
them, so each test fails falsely with probability below 4e-5 on any seed (KS with atoms, as after
MH rejections, is conservative). Other random checks state their own failure probabilities.
"""

import numpy as np
import pytest
from scipy import stats

from stanlogz.densities.gaussian import GaussianTarget
from stanlogz.errors import InputError
from stanlogz.estimators.common import autocorr_time
from stanlogz.mcmc import couplings, hmc, rwmh
from stanlogz.mcmc.rwmh import scale_from_cov

P_MIN = 1e-5
TARGET = GaussianTarget(np.array([0.5, -1.0]), np.array([[1.0, 0.6], [0.6, 2.0]]))
SCALE = scale_from_cov(np.array([[0.8, 0.2], [0.2, 0.5]]), 2)


@pytest.mark.parametrize(
    "couple", [couplings.gaussian_maximal_coupling, couplings.reflection_maximal_coupling]
)
def test_gaussian_couplings_have_right_marginals_and_meeting_probability(couple):
    rng = np.random.default_rng(0)
    mu1, mu2 = np.array([0.0, 0.0]), np.array([0.7, -0.4])
    n = 4000
    out = [couple(rng, mu1, mu2, SCALE) for _ in range(n)]
    xs = np.array([o[0] for o in out])
    ys = np.array([o[1] for o in out])
    met = np.array([o[2] for o in out])
    assert np.array_equal(met, np.all(xs == ys, axis=1))
    # marginals: whitened coordinates are N(0, I)
    wx = np.linalg.solve(SCALE, (xs - mu1).T).T
    wy = np.linalg.solve(SCALE, (ys - mu2).T).T
    for w in (wx, wy):
        assert stats.kstest(w[:, 0], "norm").pvalue > P_MIN
        assert stats.kstest(w[:, 1], "norm").pvalue > P_MIN
    # P(X = Y) = 1 - TV = 2 Phi(-|z|/2) for equal-covariance Gaussians; binomial sd <= 0.0079,
    # 0.04 is 5 sd (P < 1e-6).
    z = np.linalg.solve(SCALE, mu1 - mu2)
    p_meet = 2 * stats.norm.cdf(-np.linalg.norm(z) / 2)
    assert abs(met.mean() - p_meet) < 0.04


def test_generic_maximal_coupling_matches_gaussian_overlap():
    rng = np.random.default_rng(1)
    p, q = stats.norm(0, 1), stats.norm(1, 1)
    out = [
        couplings.maximal_coupling(
            rng, lambda r: r.normal(0, 1), p.logpdf, lambda r: r.normal(1, 1), q.logpdf
        )
        for _ in range(4000)
    ]
    x = np.array([o[0] for o in out])
    y = np.array([o[1] for o in out])
    assert stats.kstest(x, p.cdf).pvalue > P_MIN
    assert stats.kstest(y, q.cdf).pvalue > P_MIN
    assert abs(np.mean(x == y) - 2 * stats.norm.cdf(-0.5)) < 0.04  # 5 binomial sd


def _marginal_check(single, coupled, x0, y0, n=3000, steps=3, seed=2):
    """Coupled chains from (x0, y0) vs independent single chains from x0 and from y0."""
    rng = np.random.default_rng(seed)
    cx, cy, sx, sy = [], [], [], []
    for _ in range(n):
        a, b = x0, y0
        for _ in range(steps):
            a, b = coupled(rng, a, b)
        cx.append(a.position)
        cy.append(b.position)
        a, b = x0, y0
        for _ in range(steps):
            a = single(rng, a)
            b = single(rng, b)
        sx.append(a.position)
        sy.append(b.position)
    for c, s in ((cx, sx), (cy, sy)):
        c, s = np.array(c), np.array(s)
        for j in range(2):
            assert stats.ks_2samp(c[:, j], s[:, j]).pvalue > P_MIN


@pytest.mark.parametrize("coupling", ["maximal", "reflection"])
def test_coupled_rwmh_marginals_equal_rwmh(coupling):
    k = couplings.rwmh_kernel(TARGET.log_density, SCALE, coupling)
    _marginal_check(k.step, k.coupled_step, k.init(np.array([2.0, 1.0])), k.init(np.zeros(2)))


def test_coupled_hmc_marginals_equal_mixture_kernel():
    k = couplings.hmc_kernel(TARGET.log_density_gradient,
                           couplings.HMCMixture(0.4, 4, np.array([1.0, 2.0]), SCALE, 0.3))
    _marginal_check(
        k.step, k.coupled_step, k.init(np.array([2.0, 1.0])), k.init(np.zeros(2)), n=1500
    )


@pytest.mark.parametrize("kind", ["rwmh", "hmc"])
def test_coupled_chains_meet_and_stay_met(kind):
    if kind == "rwmh":
        k = couplings.rwmh_kernel(TARGET.log_density, SCALE)
    else:
        k = couplings.hmc_kernel(TARGET.log_density_gradient,
                                 couplings.HMCMixture(0.4, 4, 1.0, SCALE, 0.1))
    rng = np.random.default_rng(3)
    a, b = k.init(np.array([3.0, 3.0])), k.init(np.array([-3.0, -3.0]))
    for _ in range(5000):
        a, b = k.coupled_step(rng, a, b)
        if np.array_equal(a.position, b.position):
            break
    else:
        # Over 300 seeds the meeting time was 23 +- 14 steps (rwmh) and 20 +- 14 (hmc), at most
        # 95; meeting times have geometric tails, so 5000 steps are never reached in practice.
        pytest.fail("chains did not meet in 5000 steps")
    for _ in range(200):
        a, b = k.coupled_step(rng, a, b)
        assert np.array_equal(a.position, b.position)
        assert a.log_density == b.log_density


def test_hmc_crn_contracts_chains():
    # common random numbers on a Gaussian contract the distance (no meeting needed): over 300
    # seeds the distance after 60 steps was at most 1e-15 (mostly exactly 0)
    rng = np.random.default_rng(4)
    a = hmc.init(np.array([3.0, 3.0]), TARGET.log_density_gradient)
    b = hmc.init(np.array([-3.0, -2.0]), TARGET.log_density_gradient)
    for _ in range(60):
        a, b = couplings.coupled_hmc_step(
            rng, a, b, TARGET.log_density_gradient,
            couplings.HMCMixture(0.4, 4, 1.0, SCALE, omega=1e-9)
        )
    assert np.linalg.norm(a.position - b.position) < 1e-3


def test_rwmh_step_leaves_target_invariant_moments():
    # 20000 RWMH steps. The Monte Carlo se of each mean comes from the chain's own integrated
    # autocorrelation time: over 150 seeds tau was 12 +- 1 and 28 +- 3, the se 0.024 and 0.053
    # (max 0.066), and the errors in se units had sd 0.99 and 1.08, so a 5-se bound fails with
    # P(|Z| > 5 / 1.08) < 4e-6 per coordinate.
    rng = np.random.default_rng(5)
    s = rwmh.init(np.zeros(2), TARGET.log_density)
    xs = []
    for _ in range(20000):
        s, _ = rwmh.step(rng, s, TARGET.log_density, SCALE)
        xs.append(s.position)
    xs = np.array(xs)
    tau = np.array([autocorr_time(xs[:, j]) for j in range(2)])
    mcse = np.sqrt(xs.var(axis=0) * tau / len(xs))
    assert np.all(mcse < 0.1)  # the chain mixes (14 sd above the larger se's mean)
    assert np.all(np.abs(xs.mean(axis=0) - TARGET.mean) < 5 * mcse)


def test_bad_inputs_raise_typed_errors():
    with pytest.raises(InputError):
        couplings.rwmh_kernel(TARGET.log_density, SCALE, "nope")
    with pytest.raises(InputError):
        scale_from_cov(np.array([[1.0, 2.0], [2.0, 1.0]]), 2)
    with pytest.raises(InputError):
        couplings.HMCMixture(0.1, 3, 1.0, SCALE, omega=0.0)
