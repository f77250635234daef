"""Gaussianized bridge sampling: accuracy, honest error bars, autocorrelation, bad input.

Every random check holds for the method with probability >= 1 - 1e-4 on any seed; bounds are
derived from the estimator's error (or, where marked, from its spread over 200 seeds with a wide
margin), not from what one seed happened to give.
"""

import json
import math

import numpy as np
import pytest
from scipy import integrate, special

from stanlogz.densities.gaussian import GaussianTarget
from stanlogz.densities.target import FunctionTarget
from stanlogz.errors import EstimationError, InputError
from stanlogz.estimators.bridge.bridge import CHAIN_ALARM_P, DRIFT_ALARM_Z, gbs, solve_bridge
from stanlogz.estimators.common import autocorr_time, pareto_k

Q = 0.3  # banana width

# z-tests of an estimate against the truth allow 4.5 reported standard errors: two-sided
# P = 7e-6 for an honest se, and still < 1e-4 when the se understates the error by 15%
# (P(|Z| > 3.9) = 1e-4). Over 200 seeds of each problem below (gbs with both orientations and
# the validated flow), (estimate - truth) / se had sd 0.89 (banana) and 1.03 (funnel), max |z|
# 3.35, and the se stayed within a factor 2.5 of its mean, so the caps on it sit far above its
# spread.
Z_TOL = 4.5


def banana_target(c=2.5):
    """exp(c) N(x0; 0, 1) N(x1; x0^2, Q^2), written as an unnormalized log density."""

    def many(x):
        return c - 0.5 * x[:, 0] ** 2 - 0.5 * ((x[:, 1] - x[:, 0] ** 2) / Q) ** 2

    return FunctionTarget(2, lambda x: float(many(x[None])[0]), log_density_many=many)


def banana_draws(rng, n):
    x0 = rng.standard_normal(n)
    return np.column_stack([x0, x0**2 + Q * rng.standard_normal(n)])


def banana_log_z(c=2.5):
    # by quadrature over the inner variable first (a Gaussian integral would do, but this checks
    # the closed form log(2 pi Q) + c independently)
    inner = lambda x0: integrate.quad(  # noqa: E731
        lambda x1: math.exp(-0.5 * x0**2 - 0.5 * ((x1 - x0**2) / Q) ** 2),
        x0**2 - 12 * Q, x0**2 + 12 * Q)[0]
    val = integrate.quad(inner, -12, 12, limit=200)[0]
    return c + math.log(val)


def test_gaussian_exact_draws():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((5, 5))
    t = GaussianTarget(rng.standard_normal(5), a @ a.T / 5 + np.eye(5), log_z=-3.2)
    r = gbs(t, t.sample(rng, 4000).reshape(4, 1000, 5), seed=1)
    assert r.method == "gbs" and r.n_draws == 4000 and r.n_evals >= 2000 + 2000
    # with the flow close to the posterior the bridge error is ~ 1/sqrt(n) * (tiny mismatch):
    # over 200 seeds the se was 7.2e-4 +- 1.2e-4 (max 1.1e-3); 0.003 is 19 sd above its mean
    assert r.log_z_se < 0.003
    assert abs(r.log_z + 3.2) < Z_TOL * r.log_z_se
    d = r.diagnostics
    assert d["converged"] and d["n_p"] == 2000 and d["n_q"] >= 2000
    # No warning but, possibly, the consistency alarms, which are designed to fire on clean
    # draws with probability ~4e-3 (tested on their own below).
    assert not [w for w in r.warnings if w not in _consistency_messages(r)]


def test_banana_against_quadrature():
    truth = banana_log_z()
    assert truth == pytest.approx(2.5 + math.log(2 * math.pi * Q), abs=1e-6)
    rng = np.random.default_rng(1)
    r = gbs(banana_target(), banana_draws(rng, 4000), seed=2)
    assert r.log_z_se < 0.02  # 200 seeds: se 0.0027 +- 0.0008, max 0.0066; |z| sd 0.89, max 3.25
    assert abs(r.log_z - truth) < Z_TOL * r.log_z_se


def test_funnel_low_dim_ancestral_draws():
    d, rng = 4, np.random.default_rng(2)

    def many(x):  # Neal's funnel, normalized: log Z = 0
        v = x[:, 0]
        return (-0.5 * v**2 - 0.5 * math.log(2 * math.pi)
                - 0.5 * np.sum(x[:, 1:] ** 2, axis=1) * np.exp(-v)
                - 0.5 * (d - 1) * (v + math.log(2 * math.pi)))

    t = FunctionTarget(d, lambda x: float(many(x[None])[0]), log_density_many=many)
    v = rng.standard_normal(8000)
    x = np.column_stack([v, np.exp(v / 2)[:, None] * rng.standard_normal((8000, d - 1))])
    r = gbs(t, x, seed=3)
    assert r.log_z_se < 0.01  # 200 seeds: se 0.0018 +- 0.0006, max 0.0042
    assert abs(r.log_z) < Z_TOL * r.log_z_se


@pytest.mark.slow
def test_coverage_of_two_se_intervals():
    # 30 replicates on the banana with 1000 draws each. If the se is honest each interval covers
    # with probability >= 0.95 (over 200 seeds: 0.99, the two-orientation se is conservative),
    # and P(fewer than 22 of 30 cover) = P(Bin(30, .05) >= 9) = 1.1e-5 (4.5e-5 even at a true
    # miss rate of 0.06).
    truth = 2.5 + math.log(2 * math.pi * Q)
    rng = np.random.default_rng(4)
    t = banana_target()
    hits, ses = 0, []
    for i in range(30):
        r = gbs(t, banana_draws(rng, 1000), seed=100 + i, n_layers=5)
        hits += abs(r.log_z - truth) < 2 * r.log_z_se
        ses.append(r.log_z_se)
    assert hits >= 22
    # 200 seeds: se 0.0081 +- 0.0021, max 0.0177; 0.03 is 10 sd above the mean
    assert max(ses) < 0.03


def test_relative_mse_matches_replicate_variance():
    # p = N(0, 1), q = N(0.3, 1.2^2) in 2-d, iid draws: the spread of log r over 300 replicates
    # estimates the true se to ~4% (sd of a sd from 300 draws), so eq. (9) should agree to 20%
    # (over 100 seeds the ratio was 0.991 +- 0.046: 20% is > 4.1 sd, P < 3e-5). The mean of the
    # replicates is a z-test at 4.5 se (its z-score was -0.23 +- 1.03: the O(1/n) bias of the
    # bridge shows; P(|z| > 4.5) < 2e-5).
    rng = np.random.default_rng(5)
    est, ses = [], []
    for _ in range(300):
        xp = rng.standard_normal((500, 2))
        xq = 0.3 + 1.2 * rng.standard_normal((1500, 2))
        lp = lambda x: -0.5 * np.sum(x**2, 1) + 1.0  # noqa: E731  (log Z = 1 + log 2pi)
        lq = lambda x: -0.5 * np.sum(((x - 0.3) / 1.2) ** 2, 1) - np.log(2 * np.pi * 1.44)  # noqa: E731
        sol = solve_bridge((lp(xp) - lq(xp))[None], lp(xq) - lq(xq))
        est.append(sol.log_r)
        ses.append(sol.se)
    assert np.std(est) == pytest.approx(np.mean(ses), rel=0.2)
    assert np.mean(est) == pytest.approx(1.0 + np.log(2 * np.pi),
                                         abs=4.5 * np.std(est) / np.sqrt(len(est)))


def ar1_chains(rng, rho, chains, n, dim):
    x = np.empty((chains, n, dim))
    x[:, 0] = rng.standard_normal((chains, dim))
    e = math.sqrt(1 - rho**2) * rng.standard_normal((chains, n, dim))
    for i in range(1, n):
        x[:, i] = rho * x[:, i - 1] + e[:, i]
    return x


def test_autocorrelation_time_of_ar1():
    # tau of AR(1) is (1 + rho)/(1 - rho) = 19 for rho = 0.9. Over 200 seeds of 4 chains x
    # 20000 the estimate was 19.2 +- 0.93 (4.9%); 4 x 80000 halve that to ~2.5%, so 15% is ~6
    # sd (Gaussian P ~ 1e-9). White noise (4 x 5000): 1.01 +- 0.027, so 0.15 is > 5 sd.
    x = ar1_chains(np.random.default_rng(6), 0.9, 4, 80000, 1)[..., 0]
    assert autocorr_time(x) == pytest.approx(19.0, rel=0.15)
    assert autocorr_time(np.random.default_rng(7).standard_normal((4, 5000))) == pytest.approx(
        1.0, abs=0.15)


def test_autocorrelated_draws_use_tau():
    # A strongly autocorrelated chain (rho = 0.95) with a deliberately crude proposal (a Gaussian
    # wider than p) makes the posterior term dominate: the bridge must inflate it by tau (~20;
    # without it the se would be ~4.5 times too small), and the resulting se must match the
    # replicate spread. Over 150 seeds the ratio spread / mean se was 0.98 +- 0.066 with 120
    # replicates (0.98 +- 0.096 with 60, too wide for a 30% tolerance), so 35% is 5 sd away.
    rng = np.random.default_rng(8)
    est, ses, taus = [], [], []
    for _ in range(120):
        xp = ar1_chains(rng, 0.95, 4, 500, 2)
        xq = 2.0 * rng.standard_normal((2000, 2))
        lp = lambda x: -0.5 * np.sum(x**2, -1)  # noqa: E731   log Z = log 2pi
        lq = lambda x: -0.5 * np.sum(x**2, -1) / 4 - np.log(8 * np.pi)  # noqa: E731
        sol = solve_bridge(lp(xp) - lq(xp), lp(xq) - lq(xq))
        est.append(sol.log_r)
        ses.append(sol.se)
        taus.append(sol.tau)
    assert np.mean(taus) > 5  # 20.0 +- 0.8 over 150 seeds
    assert np.std(est) == pytest.approx(np.mean(ses), rel=0.35)
    # and gbs itself reports tau > 1 on such a chain (over 300 seeds: 30 +- 13, min 7; its log
    # has sd ~0.45, so 3 is ~5 sd below)
    t = GaussianTarget(np.zeros(2))
    r = gbs(t, ar1_chains(rng, 0.95, 4, 2000, 2), seed=9)
    assert r.diagnostics["tau"] > 3 and abs(r.log_z) < Z_TOL * r.log_z_se


def test_nonfinite_log_density_at_flow_samples():
    # N(0, 1) truncated to x0 < 1.5 (log density -inf beyond): log Z = log Phi(1.5)
    def many(x):
        return np.where(x[:, 0] < 1.5, -0.5 * np.sum(x**2, 1) - np.log(2 * np.pi), -np.inf)

    t = FunctionTarget(2, lambda x: float(many(x[None])[0]), log_density_many=many)
    rng = np.random.default_rng(10)
    x0 = special.ndtri(rng.uniform(0, special.ndtr(1.5), 4000))
    x = np.column_stack([x0, rng.standard_normal(4000)])
    r = gbs(t, x, seed=11)
    assert r.diagnostics["n_nonfinite_q"] > 0
    assert any("non-finite" in w for w in r.warnings)
    assert abs(r.log_z - np.log(special.ndtr(1.5))) < Z_TOL * r.log_z_se
    assert r.log_z_se < 0.02  # 200 seeds: se 7.7e-4 +- 0.9e-4, max 1.3e-3


def test_pareto_k_separates_light_and_heavy_tails():
    # k-hat from M = 3 sqrt(n) tail draws has sd ~ (1 + k) / sqrt(M). Over 400 seeds: lognormal
    # weights (true k ~ 0) from n = 16000 gave 0.011 +- 0.052 (0.3 is 5.6 sd away); Pareto weights
    # with k = 2 from n = 4000 gave 1.91 +- 0.21 (0.7 is 5.9 sd away). (With k = 1 and n = 4000
    # the estimate is 0.98 +- 0.14, which misses 0.7 one time in 50.)
    rng = np.random.default_rng(12)
    assert pareto_k(rng.standard_normal(16000) * 0.3) < 0.3
    assert pareto_k(np.log(rng.pareto(0.5, 4000) + 1)) > 0.7  # weights with k = 2


def test_bad_input():
    t = GaussianTarget(np.zeros(3))
    with pytest.raises(InputError):
        gbs(t, np.zeros((2, 3, 4, 5)))
    with pytest.raises(InputError):
        gbs(t, np.zeros((100, 2)))  # wrong dimension
    with pytest.raises(InputError):
        gbs(t, np.random.default_rng(0).standard_normal((12, 3)))  # too few for 3-d
    with pytest.raises(InputError, match="n_q must be a positive number"):
        gbs(t, np.random.default_rng(0).standard_normal((400, 3)), n_q=0)
    with pytest.raises(InputError, match="f_err must be a fraction"):
        gbs(t, np.random.default_rng(0).standard_normal((400, 3)), f_err=0.0)
    bad = FunctionTarget(3, lambda x: -np.inf, log_density_many=lambda x: np.full(len(x), np.nan))
    with pytest.raises(EstimationError, match="all log densities at the posterior draws"):
        gbs(bad, np.random.default_rng(0).standard_normal((400, 3)))


def test_to_dict_is_json_and_leaves_out_plot_data():
    r = gbs(banana_target(), banana_draws(np.random.default_rng(18), 1000), seed=1, n_layers=2)
    assert r.detail.flow is not None and r.detail.log_w_p.size > 0 and r.detail.log_w_q.size > 0
    d = json.loads(json.dumps(r.to_dict()))
    assert d["log_z"] == r.log_z and "n_q" in d["diagnostics"]
    assert not [k for k in d["diagnostics"] if k.startswith("_")] and "detail" not in d


def test_plot_evidence_writes_png(tmp_path):
    from stanlogz.report.plots import plot_evidence

    rng = np.random.default_rng(13)
    x = banana_draws(rng, 1000)
    r = gbs(banana_target(), x, seed=14, n_layers=3)
    out = plot_evidence(r, x, tmp_path / "ev.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 5000
    with pytest.raises(InputError):
        plot_evidence(type(r)("laplace", 0.0, float("nan")), x, tmp_path / "no.png")


def test_adaptive_n_q_rule_and_evaluation_cap():
    rng = np.random.default_rng(15)
    x = banana_draws(rng, 2000)
    t = banana_target()
    # one bridge, one crude flow fitted as given (the rule itself, without the second
    # orientation or the validated fit): the q-side term is large
    one = {"n_layers": 1, "swap_halves": False, "validate": False}
    free = gbs(t, x, seed=16, **one)
    d = free.diagnostics
    assert d["n_q"] > d["n_p"]
    # the extra flow samples shrink the se well beyond what n_q = n_p gives (both terms of
    # eq. 9 shrink: the bridge leans on the cheap side). The q share does not reach f_err = 0.1:
    # the rule holds the weights' relative variances at their n_q = n_p values.
    fixed = gbs(t, x, seed=16, n_q=d["n_p"], **one)
    assert fixed.diagnostics["n_q"] == d["n_p"]
    # over 200 seeds the ratio of the two se was 3.13 +- 0.14 (min 2.66): 1.5 is 12 sd below
    assert free.log_z_se < fixed.log_z_se / 1.5
    # with a known sampling cost of 9000 evaluations, f_eva = 0.1 allows at most 1000 more
    capped = gbs(t, x, seed=16, n_sampling_evals=9000, **one)
    assert capped.diagnostics["n_q"] == d["n_p"]  # n_q0 = n_p = 1000 is always kept
    assert capped.n_evals == 2000


def test_seed_determinism():
    rng = np.random.default_rng(17)
    x = banana_draws(rng, 1000)
    a = gbs(banana_target(), x, seed=np.random.SeedSequence(5))
    b = gbs(banana_target(), x, seed=np.random.SeedSequence(5))
    assert a.log_z == b.log_z and a.diagnostics["n_q"] == b.diagnostics["n_q"]


# The consistency checks compare estimates from parts of the draws. On clean draws their
# statistics are calibrated: over 150 seeds of 4x1000 exact draws (3-d Gaussian, 4-d funnel)
# drift_z had sd 1.04-1.06 and max |z| 2.85, and the smallest chain p-value was 0.007; over 200
# seeds of the 2-d draws below, drift_z had sd 1.00 and chain_p looked uniform (mean 0.51, sd
# 0.28). The alarms (|z| > 3, p < 1e-3) therefore fire on clean draws about 4e-3 of the time by
# design, so a test cannot demand silence on random clean draws.
STD2 = GaussianTarget(np.zeros(2), np.eye(2), log_z=0.0)


def _consistency_messages(r):
    return [w for w in r.warnings if "chains disagree" in w or "drifts" in w]


def test_consistency_checks_quiet_on_clean_draws():
    # Deterministically quiet: four copies of one chain whose last quarter repeats its third
    # (the halves of the bridge draws), so every part agrees exactly.
    x = np.random.default_rng(5).standard_normal((1, 1000, 2))
    x[:, 750:] = x[:, 500:750]
    r = gbs(STD2, np.repeat(x, 4, axis=0), seed=1)
    d = r.diagnostics
    assert d["chain_log_z_sd"] == pytest.approx(0.0, abs=1e-12)
    assert d["chain_p"] == pytest.approx(1.0) and d["drift_z"] == pytest.approx(0.0, abs=1e-9)
    assert not _consistency_messages(r)
    # Random clean draws: the statistics are calibrated, so |drift_z| < 4.5 (N(0, 1): P = 7e-6;
    # 4e-5 if its sd were 1.1) and chain_p > 1e-6 (uniform: P = 1e-6; 1.3e-5 if the chain se
    # were 10% low); the chain spread is tiny (200 seeds: 5.6e-5 +- 3.2e-5, max 1.7e-4).
    r = gbs(STD2, np.random.default_rng(5).standard_normal((4, 1000, 2)), seed=1)
    d = r.diagnostics
    assert len(d["chain_log_z"]) == 4 and d["chain_log_z_sd"] < 2e-3
    assert d["chain_p"] > 1e-6 and abs(d["drift_z"]) < 4.5 and len(d["half_log_z"]) == 2
    # An alarm is raised exactly when a statistic crosses its level.
    alarms = [d["chain_p"] < CHAIN_ALARM_P, abs(d["drift_z"]) > DRIFT_ALARM_Z]
    assert len(_consistency_messages(r)) == sum(alarms)


def test_chains_from_different_gaussians_disagree():
    # two chains sample N(0, I), two a copy shifted by 0.5 sd: the flow fits the pooled draws, so
    # per-chain bridges disagree far beyond the 1e-3 alarm. Over 200 seeds sqrt(Cochran's Q) was
    # 11.0 +- 1.1 (min 8.1); p < 1e-6 needs sqrt(Q) > 5.5, 5 sd below the mean.
    x = np.random.default_rng(5).standard_normal((4, 1000, 2))
    x[2:, :, 0] += 0.5
    r = gbs(STD2, x, seed=1)
    assert r.diagnostics["chain_p"] < 1e-6
    assert any("chains disagree on log Z" in w and "R-hat" in w for w in r.warnings)


def test_trending_chains_drift():
    # every chain still moves: its mean walks 2 sd over the run, so the two halves of the bridge
    # draws differ by many combined se (alarm at 3). Over 200 seeds a 1-sd walk gave drift_z
    # -5.2 +- 1.1 (too close to the bound to test); a 2-sd walk gave -11.5 +- 1.3 over 150 seeds
    # (max -8.3), so -4.5 is 5.4 sd away.
    x = np.random.default_rng(5).standard_normal((4, 1000, 2))
    x[:, :, 0] += np.arange(1000) / 500
    r = gbs(STD2, x, seed=1)
    assert r.diagnostics["drift_z"] < -4.5
    assert any("drifts between the first and second half" in w for w in r.warnings)


def test_consistency_checks_single_chain_has_no_chain_test():
    r = gbs(STD2, np.random.default_rng(6).standard_normal((2000, 2)), seed=1)
    assert "chain_p" not in r.diagnostics and "drift_z" in r.diagnostics
