"""Monte Carlo se of PSIS elpd_i (crossval.elpd.psis.elpd_mcse) and the per-observation relative
efficiency (crossval.elpd.psis.relative_efficiency_pointwise), against the spread of elpd_i over
independent draw sets of a conjugate normal model with exact posterior draws."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import norm

from stanlogz import arviz_compat
from stanlogz.crossval.elpd.psis import elpd_mcse, relative_efficiency_pointwise
from stanlogz.errors import InputError
from tests.helpers import ar1_chains, se_ratio_z

# y_j ~ N(mu, 1), mu ~ N(0, 10²): the posterior of mu is N(M, V) exactly
N_OBS = 20
Y = np.random.default_rng(1).normal(size=N_OBS)
Y[0], Y[1] = 3.0, 0.1  # an outlier (k-hat ~ 0.2) and a central point
PREC = 1 / 100 + N_OBS
M, V = Y.sum() / PREC, 1 / PREC
OBS = [0, 1]
Z_LIMIT = 4.5  # two-sided P(|z| > 4.5) = 6.8e-6 per comparison


@pytest.mark.parametrize("phi", [0.0, 0.7])
def test_mcse_matches_spread_over_independent_draw_sets(phi: float) -> None:
    # 400 draw sets of 4 x 250 draws; independent draws (phi = 0) and AR(1) chains (phi = 0.7,
    # r_eff ~ 0.27) whose efficiency must come from relative_efficiency_pointwise. Each z-test
    # fails with probability 6.8e-6 when the se is right: 2.7e-5 for the four in all (seed 7).
    rng = np.random.default_rng(7 + int(10 * phi))
    reps, chains, n = 400, 4, 250
    mu = ar1_chains(rng, reps, chains, n, phi, M, V)
    ll = norm.logpdf(Y[OBS][None, None, None, :], mu[..., None], 1.0)  # (reps, c, n, obs)
    cols = ll.transpose(1, 2, 0, 3).reshape(chains, n, reps * len(OBS))
    r_eff = relative_efficiency_pointwise(cols)
    rows = cols.reshape(chains * n, -1).T  # (reps * obs, S)
    lw, _ = arviz_compat.psislw(-rows, r_eff=float(r_eff.mean()))
    elpd = logsumexp(lw + rows, axis=1).reshape(reps, len(OBS))
    se = elpd_mcse(lw, rows, r_eff).reshape(reps, len(OBS))
    se_iid = elpd_mcse(lw, rows, 1.0).reshape(reps, len(OBS))
    for j in range(len(OBS)):
        z = se_ratio_z(elpd[:, j], se[:, j])
        assert abs(z) < Z_LIMIT, (phi, OBS[j], se[:, j].mean(), elpd[:, j].std(ddof=1))
        if phi > 0:
            # ignoring the autocorrelation understates the se by about sqrt(r_eff) ~ 0.5
            assert se_iid[:, j].mean() < 0.75 * elpd[:, j].std(ddof=1)


def test_relative_efficiency_of_linear_ar1_likelihood() -> None:
    # p(y_i | theta) = 5 + x with x AR(1), phi = 0.5: the ESS of its mean is S (1-phi)/(1+phi),
    # r_eff = 1/3. Mean over 200 columns: its se (~0.0016) from their spread; z < 4.5 fails
    # with probability 6.8e-6 (seed 3); ArviZ's ESS bias at 4 x 1000 draws is ~0.5 % (0.002).
    rng = np.random.default_rng(3)
    phi, c, n, cols = 0.5, 4, 1000, 200
    e = rng.normal(size=(c, n, cols))
    x = np.empty_like(e)
    x[:, 0] = e[:, 0]
    for t in range(1, n):
        x[:, t] = phi * x[:, t - 1] + math.sqrt(1 - phi**2) * e[:, t]
    r = relative_efficiency_pointwise(np.log(5 + x))
    assert r.shape == (cols,)
    z = (r.mean() - 1 / 3) / (r.std(ddof=1) / math.sqrt(cols))
    assert abs(z) < Z_LIMIT, r.mean()
    # huge log-likelihoods do not overflow; a constant likelihood gets r_eff = 1
    far = relative_efficiency_pointwise(np.concatenate([x[..., :3] - 1000, 0 * x[..., :1]], -1))
    assert np.all(np.isfinite(far)) and far[-1] == 1.0
    assert abs(far[0] - r[0]) > 0  # a different (nonlinear) function of x, still finite


def test_mcse_single_observation_and_degenerate_cases() -> None:
    rng = np.random.default_rng(0)
    ll = norm.logpdf(Y[0], M + math.sqrt(V) * rng.normal(size=1000), 1.0)
    lw, _ = arviz_compat.psislw(-ll)
    one = elpd_mcse(lw, ll, 1.0)
    both = elpd_mcse(np.stack([lw, lw]), np.stack([ll, ll]), np.array([1.0, 0.25]))
    assert one.shape == () and both.shape == (2,)
    assert float(one) == pytest.approx(both[0])
    # r_eff = 1/4 quadruples the variance of the mean: se doubles where the gamma is near normal
    assert both[1] == pytest.approx(2 * both[0], rel=0.01)
    # the se does not depend on the scale of p(y_i | theta)
    assert float(elpd_mcse(lw, ll - 800.0, 1.0)) == pytest.approx(float(one), rel=1e-9)
    # a likelihood constant over the draws is estimated exactly
    assert float(elpd_mcse(lw, np.full(1000, -2.0), 1.0)) < 1e-12
    with pytest.raises(InputError):
        elpd_mcse(lw, ll[:10], 1.0)
    with pytest.raises(InputError):
        elpd_mcse(lw, ll, 0.0)
    with pytest.raises(InputError):
        relative_efficiency_pointwise(ll)
