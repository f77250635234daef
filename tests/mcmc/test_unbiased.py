"""Lag-1 coupled chains and the unbiased estimator H_{k:m} (eq. 6)."""

import numpy as np
import pytest

from stanlogz.densities.gaussian import GaussianTarget
from stanlogz.errors import EstimationError, InputError
from stanlogz.mcmc.couplings import rwmh_kernel
from stanlogz.mcmc.rwmh import scale_from_cov
from stanlogz.mcmc.unbiased import (
    h_estimate,
    meeting_time,
    sample_coupled_chains,
    unbiased_estimate,
)

TARGET = GaussianTarget(np.array([1.0, -1.0]), np.array([[1.0, 0.5], [0.5, 1.5]]))
KERNEL = rwmh_kernel(TARGET.log_density, scale_from_cov(TARGET.cov, 2) * 0.9)


def test_lag_one_structure_and_meeting():
    rng = np.random.default_rng(0)
    ch = sample_coupled_chains(rng, KERNEL, np.array([5.0, 5.0]), np.array([-5.0, 0.0]), m=40)
    tau = ch.meeting_time
    assert tau >= 1
    assert ch.iterations == max(40, tau)
    assert ch.ys.shape[0] == tau  # Y_0 .. Y_{tau-1}
    assert np.array_equal(ch.xs[tau], ch.ys[tau - 1])
    for t in range(1, tau):
        assert not np.array_equal(ch.xs[t], ch.ys[t - 1])
    assert ch.cost == tau - 1 + max(40, tau)


def test_h_estimate_is_plain_average_when_met_before_k():
    rng = np.random.default_rng(1)
    ch = sample_coupled_chains(rng, KERNEL, np.zeros(2), np.zeros(2) + 0.1, m=200)
    k = ch.meeting_time  # sum over n = k+1 .. tau-1 is empty
    h = h_estimate(ch, lambda x: x, k, 200)
    assert np.allclose(h, ch.xs[k:201].mean(axis=0))


@pytest.mark.slow
def test_h_km_is_unbiased_from_a_far_start():
    # Chains start at N((5, 5), I), far from the target; with k = 2, m = 8 the plain MCMC average
    # is badly biased while H_{k:m} is not. Replicates are i.i.d., so by the CLT (3000
    # replicates) each mean is within 4.5 standard errors of the truth except with P = 7e-6; over
    # 72 seeds the z-scores had sd 1.06 and 0.94 and the se varied by 3%, so even with that
    # spread P(|Z| > 4.5 / 1.06) = 2e-5 per component (4e-5 for both). The plain average's bias
    # was 122 and 64 of its se (sd 1.5), so 10 se is far below it.
    rng = np.random.default_rng(2)

    def init(r):
        return np.array([5.0, 5.0]) + r.standard_normal(2)

    def h(x):
        return np.array([x[0], x[1] ** 2])

    truth = np.array([TARGET.mean[0], TARGET.cov[1, 1] + TARGET.mean[1] ** 2])
    est, plain = [], []
    for _ in range(3000):
        v, ch = unbiased_estimate(rng, KERNEL, init, h, 2, 8)
        est.append(v)
        plain.append(np.mean([h(x) for x in ch.xs[2:9]], axis=0))
    est, plain = np.array(est), np.array(plain)
    se = est.std(axis=0, ddof=1) / np.sqrt(len(est))
    assert np.all(np.abs(est.mean(axis=0) - truth) < 4.5 * se)
    se_plain = plain.std(axis=0, ddof=1) / np.sqrt(len(plain))
    assert np.all(np.abs(plain.mean(axis=0) - truth) > 10 * se_plain)  # the bias H removes


def test_h_estimate_evaluates_h_once_per_state():
    rng = np.random.default_rng(5)
    k, m = 1, 6
    # A run whose bias correction has terms (tau > k + 2): from these starts tau <= 3 has
    # P ~ 1.3e-3 (3000 seeds), so the first or second run almost always qualifies.
    for _ in range(100):
        ch = sample_coupled_chains(rng, KERNEL, np.array([4.0, 4.0]), np.array([-4.0, 0.0]), m=m)
        if ch.meeting_time > k + 2:
            break
    tau = ch.meeting_time
    assert tau > k + 2
    seen = []

    def h(x):
        seen.append(x.tobytes())
        return x[0]

    h_estimate(ch, h, k, m)
    # X_k .. X_max(m, tau-1) once each, plus Y_k .. Y_{tau-2} once each.
    assert len(seen) == (max(m, tau - 1) - k + 1) + (tau - 1 - k)


def test_iteration_cap_raises():
    far = rwmh_kernel(TARGET.log_density, np.array([1e-3, 1e-3]))
    with pytest.raises(EstimationError, match="max_iter"):
        meeting_time(np.random.default_rng(3), far, np.array([5.0, 5.0]), np.zeros(2), 50)


def test_bad_k_m_raise():
    ch = sample_coupled_chains(np.random.default_rng(4), KERNEL, np.zeros(2), np.ones(2), m=10)
    with pytest.raises(InputError):
        h_estimate(ch, lambda x: x[0], 5, 3)
    with pytest.raises(InputError):
        h_estimate(ch, lambda x: x[0], 0, ch.iterations + 1)
