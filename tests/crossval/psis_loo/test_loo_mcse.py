"""Monte Carlo se of the PSIS-LOO total Σ elpd_i from the draws' summed influence
(crossval.elpd.psis.draw_influence / total_mcse / PsisLoo.total_mcse), against the spread of the
total over independent draw sets of a conjugate normal model with exact posterior draws."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from stanlogz.crossval.elpd.psis import psis_loo, relative_efficiency_pointwise, total_mcse
from stanlogz.crossval.refit.cv_se import MAX_FACTOR, calibration_factor
from stanlogz.errors import InputError
from tests.helpers import ar1_chains, se_ratio_z

# y_j ~ N(mu, 1), mu ~ N(0, 10²): the posterior of mu is N(M, V) exactly. Every elpd_i is
# estimated from the same draws of mu, so their errors are correlated (all of them move with
# the draws' mean): the total's error is not the root sum of squares of the pointwise ones.
N_OBS = 30
Y = np.random.default_rng(11).normal(size=N_OBS)
Y[:3] = [3.2, -2.9, 2.6]  # outliers: k-hat ~ 0.2-0.4
PREC = 1 / 100 + N_OBS
M, V = Y.sum() / PREC, 1 / PREC
Z_LIMIT = 4.5  # two-sided P(|z| > 4.5) = 6.8e-6 per comparison


@pytest.mark.slow
@pytest.mark.parametrize("phi", [0.0, 0.6])
def test_total_mcse_matches_spread_over_independent_draw_sets(phi: float) -> None:
    # 200 draw sets of 4 x 250 draws, independent (phi = 0) or AR(1) chains (phi = 0.6, ESS
    # ~ S/4), whose efficiency the ESS of the influence series must pick up. The z-test of
    # mean se against the sd of the totals fails with probability 6.8e-6 when the se is right
    # (1.4e-5 for the two cases; seeds 21, 27).
    rng = np.random.default_rng(21 + int(10 * phi))
    reps, chains, n = 200, 4, 250
    mu = ar1_chains(rng, reps, chains, n, phi, M, V)
    totals, ses, naive = [], [], []
    for k in range(reps):
        ll = norm.logpdf(Y[None, None, :], mu[k][..., None], 1.0)  # (chains, n, N)
        r_eff = float(relative_efficiency_pointwise(ll).mean())
        ps = psis_loo(ll, r_eff)
        assert ps.chains == chains
        totals.append(ps.elpd_i.sum())
        ses.append(ps.total_mcse())
        naive.append(math.sqrt(np.sum(ps.mcse_i**2)))
    totals, ses, naive = np.array(totals), np.array(ses), np.array(naive)
    z = se_ratio_z(totals, ses)
    assert abs(z) < Z_LIMIT, (ses.mean(), totals.std(ddof=1))
    # the root sum of squares of the pointwise se treats the shared draws as independent:
    # with independent draws it understates the sd of the total about 1.4-fold; the sd over
    # 200 sets has relative error 1/sqrt(2 * 199) = 5%, so a ratio below 1.15 is a > 4-sigma
    # event (with the AR(1) chains the per-point r_eff happens to offset it)
    if phi == 0.0:
        assert naive.mean() < totals.std(ddof=1) / 1.15, (naive.mean(), totals.std(ddof=1))


def test_replaced_points_leave_the_total() -> None:
    # Leaving out replaced observations gives exactly the se of the remaining columns' PSIS.
    rng = np.random.default_rng(5)
    ll = norm.logpdf(Y[None, None, :], ar1_chains(rng, 1, 2, 500, 0.3, M, V)[0][..., None], 1.0)
    ps = psis_loo(ll, 1.0, keep_above=-np.inf)  # keep every observation's influence
    rest = psis_loo(ll[..., 3:], 1.0)
    assert ps.total_mcse([0, 1, 2]) == pytest.approx(rest.total_mcse(), rel=1e-10)
    # blocks of columns concatenated give the total of all
    from stanlogz.crossval.elpd.psis import PsisLoo

    both = PsisLoo.concatenate([psis_loo(ll[..., :3], 1.0, keep_above=-np.inf), rest])
    assert both.total_mcse() == pytest.approx(ps.total_mcse(), rel=1e-10)
    assert both.total_mcse([0, 1, 2]) == pytest.approx(rest.total_mcse(), rel=1e-10)
    # only observations above keep_above (default 0.5) carry their own influence
    plain = psis_loo(ll, 1.0)
    with pytest.raises(InputError, match="no draw influence kept"):
        plain.total_mcse([0])
    # a likelihood constant over the draws is estimated exactly
    assert total_mcse(np.zeros(1000), chains=4) == 0.0
    with pytest.raises(InputError):
        total_mcse(np.ones(10), chains=4)
    with pytest.raises(InputError):
        psis_loo(ll.reshape(-1, N_OBS), 1.0, chains=7)


@pytest.mark.slow
def test_half_sample_bias_estimate_tracks_the_psis_bias() -> None:
    # 12 observations, four of them far out: k-hat 0.4-0.8, where the log of PSIS's mean of
    # heavy-tailed ratios is biased upward. Over 300 sets of 4 x 250 exact draws the mean
    # total error (about +0.25, its se ~0.023 from the spread) must be positive beyond 4.5
    # se (P < 3.4e-6 if there were no bias), and the mean estimated bias must be within
    # [0.5, 2.2] times it: the mean error lies in [0.14, 0.35] but with probability 6.8e-6
    # and the mean estimate (~0.27) varies by ~4%, so the ratio falls in [0.77, 1.9] unless
    # the estimator is off. The truth is the closed form (seed 3).
    y = np.random.default_rng(11).normal(size=12)
    y[:4] = [7.5, -6.5, 6.0, 4.5]
    prec = 1 / 100 + y.size
    mean, sd = y.sum() / prec, math.sqrt(1 / prec)
    prec_loo = prec - 1
    exact = norm.logpdf(y, (y.sum() - y) / prec_loo, np.sqrt(1 + 1 / prec_loo)).sum()
    rng = np.random.default_rng(3)
    err, bias = [], []
    for _ in range(300):
        mu = mean + sd * rng.normal(size=(4, 250))
        ps = psis_loo(norm.logpdf(y[None, None, :], mu[..., None], 1.0), 1.0)
        err.append(ps.elpd_i.sum() - exact)
        bias.append(ps.total_bias())
    err, bias = np.array(err), np.array(bias)
    assert err.mean() > 4.5 * err.std(ddof=1) / math.sqrt(err.size), err.mean()
    assert 0.5 < bias.mean() / err.mean() < 2.2, (bias.mean(), err.mean())


class _Sub:
    """What loo_compare reads from a (subsampled) LooResult (its elpd interface)."""

    def __init__(self, elpd_j: np.ndarray, index: np.ndarray | None, mcse: float) -> None:
        self.elpd_i, self.sample_index, self.mcse_elpd_loo = elpd_j, index, mcse
        self.model, self.threshold, self.fixed = "m", 0.7, []
        self.n_obs = self.n_units = 400
        self.kind, self.unit = "loo", "observations"
        self.elpd_loo = float(elpd_j.sum() * (self.n_obs / elpd_j.size))
        self.elpd, self.mcse = self.elpd_loo, mcse  # the elpd interface's names of both

    def unfixed_bad(self) -> list[int]:
        return []


def test_compare_adds_both_monte_carlo_se_and_pairs_only_shared_subsamples() -> None:
    from stanlogz.crossval.select.compare import loo_compare

    rng = np.random.default_rng(2)
    idx = np.sort(rng.choice(400, 100, replace=False))
    a = _Sub(rng.normal(-1.0, 0.5, 100), idx, 0.3)
    b = _Sub(a.elpd_i - 0.2 + rng.normal(0, 0.1, 100), idx, 0.4)
    c = loo_compare([a, b])
    d = b.elpd_i - a.elpd_i
    assert c.diff_mcse[1] == pytest.approx(0.5)  # hypot(0.3, 0.4)
    # loo's diff_se: the sampled differences' variance scaled to all 400 observations, the
    # Monte Carlo se beside it; the interval carries the small-N factor of the differences
    # (elpd_diff = -80: far from |elpd_diff| < 4)
    se = math.sqrt(400 * np.var(d, ddof=1))
    assert c.diff_se[1] == pytest.approx(se)
    assert c.diff_interval[1] == pytest.approx(
        c.elpd_diff[1] + np.array([-2, 2]) * calibration_factor(d) * se)
    other = _Sub(b.elpd_i, np.sort(rng.choice(400, 100, replace=False)), 0.4)
    with pytest.raises(InputError, match="same sampled observations"):
        loo_compare([a, other])
    with pytest.raises(InputError, match="same sampled observations"):
        loo_compare([a, _Sub(rng.normal(size=400), None, 0.1)])


@pytest.mark.slow
def test_subsample_estimator_with_certain_observations_is_unbiased_and_its_se_right() -> None:
    # 60 observations; the approximation is close except at three whose approximation k-hat
    # is high, which draw_sample takes with certainty. Over 2500 random samples of the rest
    # the estimate's mean lies within 4.5 sd/sqrt(2500) of the true sum (P ~ 6.8e-6), and the
    # mean subsampling variance (unbiased under simple random sampling) is within 15% of
    # the estimates' variance: the log of their ratio has sd 2.8% over 2500 samples (the
    # estimates' kurtosis 2.9 and the spread of the variances: sqrt((2.9 - 1) / 2500 +
    # var(var) / (2500 mean(var)^2))), and the ratio is 1.014 +- 0.008 (two runs of 20000),
    # so leaving (0.85, 1.15) is a 4.4-sigma event (P ~ 5e-6; 4e-5 were it 1.03).
    from stanlogz.crossval.psis_loo.subsample import draw_sample, subsample_estimates

    rng = np.random.default_rng(4)
    n, m = 60, 20
    truth = rng.normal(-1.0, 0.6, n)
    approx = truth + rng.normal(0, 0.05, n)
    khat = np.full(n, 0.2)
    khat[[5, 17, 40]] = [0.9, 1.2, 0.8]
    approx[[5, 17, 40]] -= [3.0, 5.0, 2.0]  # the unreliable approximations

    class _Ps:
        lppd_i = np.zeros(m)

    est, var, se = [], [], []
    for _ in range(2500):
        index, certain = draw_sample(khat, m, rng)
        assert set(index[certain]) == {5, 17, 40} and index.size == m
        out = subsample_estimates(approx, index, truth[index], _Ps(), [], certain)
        assert 1.0 <= out["subsampling_factor"] <= MAX_FACTOR
        est.append(out["elpd"])
        var.append((out["subsampling_se"] / out["subsampling_factor"]) ** 2)
        se.append(out["subsampling_se"])
    est, var, se = np.array(est), np.array(var), np.array(se)
    assert abs(est.mean() - truth.sum()) < 4.5 * est.std() / math.sqrt(est.size)
    assert abs(var.mean() / est.var() - 1) < 0.15, (var.mean(), est.var())
    # the reported se (with the bootstrap-t factor) covers: ±2 se holds with probability
    # >= 0.95 for a bootstrap-t interval of these near-normal differences (0.969 over 2 x
    # 20000); the coverage over 2500 samples has sd <= 0.0044, so below 0.93 fails with
    # probability < 1e-5
    cover = float(np.mean(np.abs(est - truth.sum()) <= 2 * se))
    assert cover >= 0.93, cover
