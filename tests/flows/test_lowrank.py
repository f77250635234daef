"""The structured (diagonal plus low rank) whitening: exact linear algebra against the dense
matrix, and a flow built on it that is still a normalized, invertible density."""

import numpy as np
import pytest
from scipy import stats

from stanlogz.flows.gaussianize import GaussianizingFlow
from stanlogz.flows.lowrank import DiagLowRank, low_rank_candidates


def small_case(d=9, r=3, seed=0):
    rng = np.random.default_rng(seed)
    return DiagLowRank("t", rng.standard_normal(d), rng.uniform(0.3, 3.0, d),
                       rng.standard_normal((d, r))), rng


def test_log_det_solves_and_whitening_equal_the_dense_ones():
    f, rng = small_case()
    s = f.dense()
    # exact identities (determinant lemma, Woodbury): only rounding separates them
    assert f.log_det() == pytest.approx(np.linalg.slogdet(s)[1], abs=1e-10)
    v = rng.standard_normal((9, 4))
    np.testing.assert_allclose(f.solve(v), np.linalg.solve(s, v), rtol=0, atol=1e-10)
    np.testing.assert_allclose(f.solve(v[:, 0]), np.linalg.solve(s, v[:, 0]), rtol=0, atol=1e-10)
    x = rng.standard_normal((6, 9))
    z = f.whiten(x)
    maha = np.einsum("ij,ij->i", x - f.mean, np.linalg.solve(s, (x - f.mean).T).T)
    np.testing.assert_allclose(np.sum(z * z, axis=1), maha, rtol=0, atol=1e-10)
    np.testing.assert_allclose(f.unwhiten(z), x, rtol=0, atol=1e-10)
    lt = f.unwhiten(np.eye(9)) - f.mean  # rows are L e_i, i.e. L^T
    np.testing.assert_allclose(lt.T @ lt, s, rtol=0, atol=1e-10)
    np.testing.assert_allclose(f.log_density_many(x), stats.multivariate_normal(f.mean, s)
                               .logpdf(x), rtol=0, atol=1e-10)
    g = rng.standard_normal((3, 9))
    # the chain rule from whitened to original coordinates: rows g L^{-1}
    np.testing.assert_allclose(f.whiten_transpose(g), g @ np.linalg.inv(lt.T), rtol=0, atol=1e-10)


def test_rank_zero_is_the_diagonal_gaussian():
    f = DiagLowRank("d", np.zeros(3), np.array([1.0, 4.0, 9.0]), np.zeros((3, 0)))
    assert f.rank == 0 and f.log_det() == pytest.approx(np.log(36.0), abs=1e-12)
    np.testing.assert_allclose(f.whiten(np.array([[1.0, 2.0, 3.0]])), [[1.0, 1.0, 1.0]])


def test_candidates_find_the_spike_from_fewer_draws_than_dimensions():
    # d = 400 > n = 300: a dense covariance is singular, the rank-1 spike (variance 1 + 36 on
    # the direction v) stands far above the noise bulk (1 + sqrt(400/300))^2 = 4.6
    rng = np.random.default_rng(3)
    d, n = 400, 300
    v = rng.standard_normal(d)
    v /= np.linalg.norm(v)
    x = rng.standard_normal((n, d)) + 6.0 * rng.standard_normal((n, 1)) * v
    cands = {c.name: c for c in low_rank_candidates(x)}
    assert "diagonal" in cands and "diagonal+rank-1" in cands
    assert all(c.rank <= n // 4 for c in cands.values())
    one = cands["diagonal+rank-1"]
    u = one.W[:, 0] / np.linalg.norm(one.W[:, 0])
    # the sample eigenvector's squared overlap with v is about 1 - gamma / 36^2 (~1); 0.9 is
    # many standard errors below it
    assert abs(u @ v) ** 2 > 0.9
    xv = rng.standard_normal((500, d)) + 6.0 * rng.standard_normal((500, 1)) * v
    # held out, the spike is worth about log(37) / 2 ~ 1.8 nats a draw over the diagonal alone
    # (+ what the diagonal fit loses); the mean over 500 draws has sd ~ 0.1
    gain = np.mean(one.log_density_many(xv)) - np.mean(cands["diagonal"].log_density_many(xv))
    assert gain > 1.0


def test_flow_on_structured_whitening_is_normalized_and_invertible():
    rng = np.random.default_rng(4)
    d, n = 60, 400
    x = rng.standard_normal((n, d))
    x[:, 0] = x[:, 0] ** 3  # one strongly non-Gaussian coordinate for the layers to map
    x[:, 1] += 0.8 * x[:, 2]
    w = low_rank_candidates(x)[-1]
    flow = GaussianizingFlow.fit(x, rng=0, whitening=w, n_layers=2)
    assert flow.affine is w and len(flow.layers) >= 1
    z, _ = flow.forward(x)
    np.testing.assert_allclose(flow.inverse(z), x, rtol=0, atol=1e-8)
    s, lq = flow.sample_with_log_density(rng, 50)
    np.testing.assert_allclose(lq, flow.log_density_many(s), rtol=0, atol=1e-8)
    # analytic gradient against central differences (step 1e-5: error ~1e-9 on O(1) curvature)
    lq0, g = flow.log_density_gradient_many(x[:3])
    np.testing.assert_allclose(lq0, flow.log_density_many(x[:3]), atol=1e-10)
    e = np.eye(d)[5] * 1e-5
    fd = (flow.log_density_many(x[:3] + e) - flow.log_density_many(x[:3] - e)) / 2e-5
    np.testing.assert_allclose(g[:, 5], fd, rtol=1e-5, atol=1e-6)
    # no layers: the flow is the structured Gaussian itself
    plain = GaussianizingFlow(w.mean, w, [])
    np.testing.assert_allclose(plain.log_density_many(x[:5]), w.log_density_many(x[:5]),
                               atol=1e-10)
