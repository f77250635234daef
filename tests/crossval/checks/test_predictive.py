"""Predictive checks from PSIS-LOO weights against closed forms: LOO-PIT, E_loo, CRPS/SCRPS on a
conjugate normal model (exact posterior draws, exact leave-one-out predictives), LOO-PIT
uniformity over seeds (continuous and randomized discrete), metrics on constructed cases."""

from __future__ import annotations

import argparse
import math

import numpy as np
import pytest
from scipy import stats

from stanlogz.commands.arguments import checks_requested
from stanlogz.crossval.checks.checks import (
    generated_quantity,
    outcome_name,
    predictive_checks,
    run_checks,
)
from stanlogz.crossval.checks.predictive import (
    e_loo,
    loo_crps,
    loo_log_weights,
    loo_metrics,
    loo_pit,
    pit_uniformity,
)
from stanlogz.errors import InputError
from stanlogz.report.crossval_plots import plot_pit

PRIOR_SD = 10.0


def normal_case(seed: int, n: int = 50, s: int = 4000, true_sd: float = 1.0):
    """y_i ~ N(mu, 1) with mu ~ N(0, 10²) fitted to data with sd ``true_sd``: exact posterior
    draws of mu, log-lik, y_rep, and the exact LOO predictive N(m_i, v_i) of each y_i."""
    rng = np.random.default_rng(seed)
    y = rng.normal(0.7, true_sd, n)
    prec = 1 / PRIOR_SD**2 + n
    mu = rng.normal(y.sum() / prec, 1 / math.sqrt(prec), s)
    ll = stats.norm.logpdf(y[None, :], mu[:, None], 1.0)
    y_rep = rng.normal(mu[:, None], 1.0, (s, n))
    prec_i = 1 / PRIOR_SD**2 + n - 1
    return y, ll, y_rep, (y.sum() - y) / prec_i, 1 + 1 / prec_i


def test_loo_pit_and_e_loo_match_the_exact_loo_predictive():
    y, ll, y_rep, m_i, v_i = normal_case(1)
    lw = loo_log_weights(ll)
    pit = loo_pit(lw, y, y_rep)
    # a weighted mean of indicators: se <= 0.5 / sqrt(ESS) with ESS > 3000 of 4000 draws,
    # 0.0091; 4.5 se = 0.041 over 50 observations has P(fail) < 50 * 7e-6
    assert np.max(np.abs(pit - stats.norm.cdf(y, m_i, math.sqrt(v_i)))) < 0.041
    e = e_loo(lw, y_rep)
    # mean: 5 of its own Monte Carlo se per observation (P(fail) < 50 * 6e-7)
    assert np.all(np.abs(e.mean - m_i) < 5 * e.mean_mcse)
    # variance 1.02: relative se sqrt(2 / ESS) <= 2.6%; 13% is 5 se
    assert e.variance == pytest.approx(np.full(50, v_i), rel=0.13)
    # median: se ~ sqrt(0.25 / ESS) / phi(0) * sd = 0.023; 0.115 is 5 se
    assert np.max(np.abs(e.quantiles[0.5] - m_i)) < 0.115
    q95 = m_i + stats.norm.ppf(0.95) * math.sqrt(v_i)
    # 95% quantile: se sqrt(.95 * .05 / ESS) / phi(1.645) = 0.038; 5 se
    assert np.max(np.abs(e.quantiles[0.95] - q95)) < 0.19


def test_e_loo_withholds_the_mcse_where_k_hat_is_above_07():
    """Deterministic: the mean's Monte Carlo se is NaN exactly where the given k̂ exceeds 0.7
    (JSON: null), the other values unchanged; a k̂ of the wrong length is refused."""
    y, ll, y_rep, _, _ = normal_case(1)
    lw = loo_log_weights(ll)
    plain = e_loo(lw, y_rep)
    k = np.full(y.size, 0.2)
    k[[3, 7]] = [0.71, 1.4]
    e = e_loo(lw, y_rep, khat=k)
    assert np.flatnonzero(np.isnan(e.mean_mcse)).tolist() == [3, 7]
    keep = np.setdiff1d(np.arange(y.size), [3, 7])
    assert np.array_equal(e.mean_mcse[keep], plain.mean_mcse[keep])
    assert np.array_equal(e.mean, plain.mean)
    out = e.to_dict()
    assert out["mean_mcse"][3] is None and out["khat"][7] == 1.4
    with pytest.raises(InputError, match="khat"):
        e_loo(lw, y_rep, khat=k[:-1])


def test_crps_and_scrps_match_their_closed_forms():
    y, ll, y_rep, m_i, v_i = normal_case(2)
    c = loo_crps(loo_log_weights(ll), y, y_rep)
    s = math.sqrt(v_i)
    z = (y - m_i) / s
    e_xy = s * (z * (2 * stats.norm.cdf(z) - 1) + 2 * stats.norm.pdf(z))  # E|X - y|
    e_xx = 2 * s / math.sqrt(math.pi)  # E|X - X'|
    # each expectation has Monte Carlo se ~ sd(|X - y|) / sqrt(ESS) < 1.2 / 55 = 0.022 for
    # |z| < 3; 0.11 is 5 se
    assert np.max(np.abs(c.crps_i - (0.5 * e_xx - e_xy))) < 0.11
    assert np.max(np.abs(c.scrps_i - (-e_xy / e_xx - 0.5 * math.log(e_xx)))) < 0.11 / e_xx
    assert c.crps == pytest.approx(float(np.mean(c.crps_i)))


def _expected_abs(a: np.ndarray | float, s: np.ndarray | float) -> np.ndarray | float:
    """E|W| for W ~ N(a, s²) (folded normal mean)."""
    return s * math.sqrt(2 / math.pi) * np.exp(-a * a / (2 * s * s)) + a * (
        1 - 2 * stats.norm.cdf(-a / s))


def test_crps_and_scrps_se_cover_the_expected_score_of_new_data():
    """crps_se and scrps_se against the exact expected score of the posterior predictive
    N(m, v) on a new y ~ N(0.7, 1) (folded-normal closed form), over 200 data sets of 50
    observations (200 exact posterior draws each, exact LOO importance weights 1/p(y_i | mu)).
    Over 20000 data sets with the exact (Monte Carlo free) LOO values, ±2 se covered 93.1%
    (CRPS) and 92.9% (SCRPS): the count covered is below the Binomial(200, 0.90) 5e-5
    quantile (162) with probability < 5e-5 for any coverage >= 90% (6e-9 at 93%), so the two
    checks fail with probability < 1e-4. sd(error) / mean(se) was 1.03 (up to ~1.06 with the
    Monte Carlo error of 200 draws); 199 var_hat / var ~ chi-square(199), so the ratio leaves
    [1/1.3, 1.3] with probability < 1e-5 per score; an se off by sqrt(2) (ratio 1.45 or 0.73)
    fails it with probability > 0.98."""
    reps, n = 200, 50
    err, se = np.empty((reps, 2)), np.empty((reps, 2))
    for r in range(reps):
        y, ll, y_rep, _, _ = normal_case(1000 + r, n=n, s=200)
        c = loo_crps(-ll, y, y_rep)
        prec = 1 / PRIOR_SD**2 + n
        m, v = y.sum() / prec, 1 + 1 / prec
        e_xy, e_xx = _expected_abs(m - 0.7, math.sqrt(v + 1)), 2 * math.sqrt(v / math.pi)
        err[r] = (c.crps - (0.5 * e_xx - e_xy), c.scrps - (-e_xy / e_xx - 0.5 * math.log(e_xx)))
        se[r] = (c.crps_se, c.scrps_se)
    covered = np.sum(np.abs(err) <= 2 * se, axis=0)
    assert np.all(covered >= stats.binom.ppf(5e-5, reps, 0.90)), covered
    ratio = np.std(err, axis=0, ddof=1) / np.mean(se, axis=0)
    assert np.all((1 / 1.3 < ratio) & (ratio < 1.3)), ratio


@pytest.mark.slow
def test_loo_pit_is_uniform_for_a_well_specified_model_and_not_for_a_misspecified_one():
    # 20 data sets: the KS p-values of a well-specified model are (close to) uniform, so each
    # is above 5e-6 except with probability 20 * 5e-6 = 1e-4 (Bonferroni)
    for seed in range(20):
        y, ll, y_rep, _, _ = normal_case(100 + seed, n=400, s=1000)
        assert pit_uniformity(loo_pit(loo_log_weights(ll), y, y_rep)).p_value > 5e-6
    # data with sd 3 fitted with sd 1: PIT piles up at 0 and 1; the KS distance is ~0.24 while
    # p = 1e-4 needs only 0.11 at N = 400
    for seed in range(3):
        y, ll, y_rep, _, _ = normal_case(200 + seed, n=400, s=1000, true_sd=3.0)
        assert pit_uniformity(loo_pit(loo_log_weights(ll), y, y_rep)).p_value < 1e-4


@pytest.mark.slow
def test_randomized_pit_is_uniform_for_a_discrete_outcome():
    # y_i ~ Poisson(lam), lam ~ Gamma(2, 1): exact posterior draws; the randomized PIT
    # P(Y < y) + u P(Y = y) is uniform under the model; p > 5e-6 in all 20 sets: P(fail) 1e-4
    for seed in range(20):
        rng = np.random.default_rng(300 + seed)
        lam_true = rng.gamma(2.0, 1.0)
        y = rng.poisson(lam_true, 300)
        lam = rng.gamma(2.0 + y.sum(), 1.0 / (1.0 + y.size), 2000)
        ll = stats.poisson.logpmf(y[None, :], lam[:, None])
        y_rep = rng.poisson(lam[:, None], (2000, y.size))
        pit = loo_pit(loo_log_weights(ll), y, y_rep, seed=seed)
        assert pit_uniformity(pit).p_value > 5e-6
    # without randomization the discrete PIT is not uniform (ties at the observed value)
    assert pit_uniformity(loo_pit(loo_log_weights(ll), y, y_rep, discrete=False)).p_value < 1e-4


def test_metrics_on_constructed_predictions():
    # equal weights and constant draws: the LOO mean is the draw value itself
    y = np.array([1.0, 1.0, 1.0, 0.0, 0.0])
    p = np.array([0.9, 0.6, 0.2, 0.1, 0.7])  # P(y = 1) per observation
    s = 1000
    y_rep = (np.arange(s)[:, None] < p[None, :] * s).astype(float)  # exact fractions
    lw = np.zeros((s, 5))
    m = {x.name: x for x in loo_metrics(lw, y, y_rep, seed=1)}
    err = y - p
    assert m["mae"].estimate == pytest.approx(np.mean(np.abs(err)))
    assert m["rmse"].estimate == pytest.approx(math.sqrt(np.mean(err**2)))
    assert m["r2"].estimate == pytest.approx(1 - np.sum(err**2) / np.sum((y - 0.6) ** 2))
    # predictions 1[p > 0.5] = (1, 1, 0, 0, 1): 3 of 5 right; class rates 2/3 and 1/2
    assert m["accuracy"].estimate == pytest.approx(0.6)
    assert m["accuracy"].se == pytest.approx(math.sqrt(0.24 / 5))
    assert m["balanced_accuracy"].estimate == pytest.approx((2 / 3 + 1 / 2) / 2)
    assert m["balanced_accuracy"].se == pytest.approx(
        math.sqrt(2 / 9 / 3 + 1 / 4 / 2) / 2)
    assert m["mae"].se == pytest.approx(np.std(np.abs(err), ddof=1) / math.sqrt(5))


def test_check_inputs_raise_one_line_errors():
    with pytest.raises(InputError, match=r"y_rep must be \(draws, 3\)"):
        loo_pit(np.zeros((4, 3)), np.zeros(3), np.zeros((4, 2)))
    with pytest.raises(InputError, match="4 weight draws but 5 y_rep draws"):
        loo_pit(np.zeros((4, 3)), np.zeros(3), np.zeros((5, 3)))
    with pytest.raises(InputError, match="must be finite"):
        loo_crps(np.zeros((4, 2)), [0.0, np.nan], np.zeros((4, 2)))
    with pytest.raises(InputError, match="vary"):
        loo_crps(np.zeros((4, 2)), [0.0, 1.0], np.zeros((4, 2)))
    with pytest.raises(InputError, match="quantiles must be in"):
        e_loo(np.zeros((4, 2)), np.zeros((4, 2)), quantiles=(1.5,))
    with pytest.raises(InputError, match="no observed outcome"):
        outcome_name("z_rep", {"y": [1, 2]}, 2)
    assert outcome_name("y_rep", {"y": [1, 2]}, 2) == "y"
    args = argparse.Namespace(pit=True, metrics=False, crps=False, pit_plot=None, yrep=None,
                              e_loo=None, outcome=None)
    with pytest.raises(InputError, match="need --yrep NAME"):
        checks_requested(args)


def test_checks_on_a_stan_program_with_a_y_rep_quantity(compiled, tmp_path):
    from stanlogz.crossval.observations.pointwise import log_lik_columns
    from stanlogz.draws import sample

    data = "stan_models/examples/regression.data.json"
    robust = compiled("regression_robust", data)
    d = sample(robust, chains=2, warmup=300, draws=500, seed=3)
    flat = d.constrained.reshape(-1, d.constrained.shape[2])
    ll = flat[:, log_lik_columns(d.constrained_names)]
    y_rep = generated_quantity(robust, d, "y_rep", 25)
    assert y_rep.shape == (1000, 25) and np.std(y_rep) > 0
    import json

    dd = json.load(open(data))
    args = argparse.Namespace(pit=True, metrics=True, crps=True, pit_plot=None, yrep="y_rep",
                              e_loo=["y_rep"], outcome=None)
    assert checks_requested(args)
    ch = run_checks(robust, d, dd, ll, args, seed=4)
    assert ch.outcome == "y" and ch.pit.shape == (25,)
    names = [row[0] for row in ch.table()]
    assert {"pit_pot_p_value", "rmse", "mae", "r2", "crps", "scrps"} <= set(names)
    # the same numbers as the array functions on the same draws
    ref = predictive_checks(ll, y_rep, dd["y"], seed=4)
    assert ch.crps.crps == pytest.approx(ref.crps.crps)
    assert ch.expectations["y_rep"].mean == pytest.approx(
        e_loo(loo_log_weights(ll), y_rep).mean)
    png = tmp_path / "pit.png"
    plot_pit(ch, png)
    assert png.stat().st_size > 0
    # a program without the quantity: one line naming what it has
    null = compiled("regression_null", data)
    d0 = sample(null, chains=1, warmup=100, draws=100, seed=5)
    with pytest.raises(InputError, match="no generated quantity 'y_rep'.*has none with 25"):
        generated_quantity(null, d0, "y_rep", 25)


def test_checks_for_a_loo_result_use_its_log_lik_and_r_eff(compiled):
    import json

    from stanlogz.crossval import loo
    from stanlogz.crossval.checks.checks import checks_for_loo
    from stanlogz.draws import sample

    data = json.load(open("stan_models/examples/regression.data.json"))
    robust = compiled("regression_robust", data)
    d = sample(robust, chains=2, warmup=300, draws=500, seed=6)
    r = loo(robust, data, draws=d, fix="none")
    args = argparse.Namespace(pit=False, metrics=False, crps=True, pit_plot=None, yrep="y_rep",
                              e_loo=None, outcome="y")
    ch = checks_for_loo(r, robust, data, d, args, seed=1)
    assert ch.pit is None and ch.metrics is None and ch.crps is not None
    # the PSIS weights behind the checks are the LOO's own: the weighted predictive density
    # of y_i, sum_s w_is p(y_i | theta_s), is exp(elpd_i) exactly
    flat = d.constrained.reshape(-1, d.constrained.shape[2])
    from stanlogz.crossval.observations.pointwise import log_lik_columns

    ll = flat[:, log_lik_columns(d.constrained_names)]
    w = np.exp(loo_log_weights(ll, r.r_eff))
    assert np.log(np.sum(w * np.exp(ll), axis=0)) == pytest.approx(r.psis_elpd_i, abs=1e-10)
    y_rep = generated_quantity(robust, d, "y_rep", 25)
    assert ch.crps.crps_i == pytest.approx(
        loo_crps(np.log(w), data["y"], y_rep).crps_i, abs=1e-12)
