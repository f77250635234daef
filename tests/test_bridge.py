"""Gaussianized bridge sampling: accuracy, honest error bars, autocorrelation, bad input."""

import json
import math

import numpy as np
import pytest
from scipy import integrate, special

from stanlogz.errors import EstimationError, InputError
from stanlogz.estimators.bridge import gbs, solve_bridge
from stanlogz.estimators.common import autocorr_time, pareto_k
from stanlogz.target import FunctionTarget
from stanlogz.targets import GaussianTarget

Q = 0.3  # banana width


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
    # with the flow close to the posterior the bridge error is ~ 1/sqrt(n) * (tiny mismatch)
    assert r.log_z_se < 0.01
    assert abs(r.log_z + 3.2) < 4 * r.log_z_se
    d = r.diagnostics
    assert d["converged"] and d["n_p"] == 2000 and d["n_q"] >= 2000 and not r.warnings


def test_banana_against_quadrature():
    truth = banana_log_z()
    assert truth == pytest.approx(2.5 + math.log(2 * math.pi * Q), abs=1e-6)
    rng = np.random.default_rng(1)
    r = gbs(banana_target(), banana_draws(rng, 4000), seed=2)
    assert r.log_z_se < 0.02
    assert abs(r.log_z - truth) < 4 * r.log_z_se


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
    assert r.log_z_se < 0.03
    assert abs(r.log_z) < 4 * r.log_z_se


def test_coverage_of_two_se_intervals():
    # 30 replicates on the banana with 1000 draws each. If the se is honest each interval covers
    # with probability ~0.95, and P(fewer than 24 of 30 cover) = P(Bin(30, .05) >= 7) ~ 4e-4.
    truth = 2.5 + math.log(2 * math.pi * Q)
    rng = np.random.default_rng(4)
    t = banana_target()
    hits, ses = 0, []
    for i in range(30):
        r = gbs(t, banana_draws(rng, 1000), seed=100 + i, n_layers=5)
        hits += abs(r.log_z - truth) < 2 * r.log_z_se
        ses.append(r.log_z_se)
    assert hits >= 24
    assert max(ses) < 0.1


def test_relative_mse_matches_replicate_variance():
    # p = N(0, 1), q = N(0.3, 1.2^2) in 2-d, iid draws: the spread of log r over 300 replicates
    # estimates the true se to ~4% (sd of a sd from 300 draws), so eq. (9) should agree to 20%.
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
    assert np.mean(est) == pytest.approx(1.0 + np.log(2 * np.pi), abs=4 * np.std(est) / 17)


def ar1_chains(rng, rho, chains, n, dim):
    x = np.empty((chains, n, dim))
    x[:, 0] = rng.standard_normal((chains, dim))
    e = math.sqrt(1 - rho**2) * rng.standard_normal((chains, n, dim))
    for i in range(1, n):
        x[:, i] = rho * x[:, i - 1] + e[:, i]
    return x


def test_autocorrelation_time_of_ar1():
    # tau of AR(1) is (1 + rho)/(1 - rho) = 19 for rho = 0.9; 4 chains x 20000 give ~5% error
    x = ar1_chains(np.random.default_rng(6), 0.9, 4, 20000, 1)[..., 0]
    assert autocorr_time(x) == pytest.approx(19.0, rel=0.15)
    assert autocorr_time(np.random.default_rng(7).standard_normal((4, 5000))) == pytest.approx(
        1.0, abs=0.15)


def test_autocorrelated_draws_use_tau():
    # A strongly autocorrelated chain (rho = 0.95) with a deliberately crude proposal (a Gaussian
    # wider than p) makes the posterior term dominate: the bridge must inflate it by tau, and
    # the resulting se must match the replicate spread (to 30% with 60 replicates).
    rng = np.random.default_rng(8)
    est, ses, taus = [], [], []
    for _ in range(60):
        xp = ar1_chains(rng, 0.95, 4, 500, 2)
        xq = 2.0 * rng.standard_normal((2000, 2))
        lp = lambda x: -0.5 * np.sum(x**2, -1)  # noqa: E731   log Z = log 2pi
        lq = lambda x: -0.5 * np.sum(x**2, -1) / 4 - np.log(8 * np.pi)  # noqa: E731
        sol = solve_bridge(lp(xp) - lq(xp), lp(xq) - lq(xq))
        est.append(sol.log_r)
        ses.append(sol.se)
        taus.append(sol.tau)
    assert np.mean(taus) > 5
    assert np.std(est) == pytest.approx(np.mean(ses), rel=0.3)
    # and gbs itself reports tau > 1 on such a chain
    t = GaussianTarget(np.zeros(2))
    r = gbs(t, ar1_chains(rng, 0.95, 4, 2000, 2), seed=9)
    assert r.diagnostics["tau"] > 3 and abs(r.log_z) < 4 * r.log_z_se


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
    assert abs(r.log_z - np.log(special.ndtr(1.5))) < 4 * r.log_z_se
    assert r.log_z_se < 0.02


def test_pareto_k_separates_light_and_heavy_tails():
    rng = np.random.default_rng(12)
    assert pareto_k(rng.standard_normal(4000) * 0.3) < 0.3
    assert pareto_k(np.log(rng.pareto(1.0, 4000) + 1)) > 0.7  # weights with k = 1


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
    assert "_flow" in r.diagnostics and "_log_w_p" in r.diagnostics
    d = json.loads(json.dumps(r.to_dict()))
    assert d["log_z"] == r.log_z and "n_q" in d["diagnostics"]
    assert not [k for k in d["diagnostics"] if k.startswith("_")]


def test_plot_evidence_writes_png(tmp_path):
    from stanlogz.plots import plot_evidence

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
    free = gbs(t, x, seed=16, n_layers=1)  # a crude flow: the q-side term is large
    d = free.diagnostics
    assert d["n_q"] > d["n_p"]
    # the extra flow samples shrink the se well beyond what n_q = n_p gives (both terms of
    # eq. 9 shrink: the bridge leans on the cheap side). The q share does not reach f_err = 0.1:
    # the rule holds the weights' relative variances at their n_q = n_p values.
    fixed = gbs(t, x, seed=16, n_layers=1, n_q=d["n_p"])
    assert fixed.diagnostics["n_q"] == d["n_p"]
    assert free.log_z_se < fixed.log_z_se / 1.5
    # with a known sampling cost of 9000 evaluations, f_eva = 0.1 allows at most 1000 more
    capped = gbs(t, x, seed=16, n_layers=1, n_sampling_evals=9000)
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
# drift_z had sd 1.04-1.06 and max |z| 2.85, and the smallest chain p-value was 0.007, so the
# alarm levels (|z| > 3, p < 1e-3) stay silent on clean draws; the seeds below are fixed.
STD2 = GaussianTarget(np.zeros(2), np.eye(2), log_z=0.0)


def _consistency_messages(r):
    return [w for w in r.warnings if "chains disagree" in w or "drifts" in w]


def test_consistency_checks_quiet_on_clean_draws():
    r = gbs(STD2, np.random.default_rng(5).standard_normal((4, 1000, 2)), seed=1)
    d = r.diagnostics
    assert len(d["chain_log_z"]) == 4 and d["chain_log_z_sd"] < 0.01
    assert d["chain_p"] > 0.01 and abs(d["drift_z"]) < 2.5 and len(d["half_log_z"]) == 2
    assert not _consistency_messages(r)


def test_chains_from_different_gaussians_disagree():
    # two chains sample N(0, I), two a copy shifted by 0.5 sd: the flow fits the pooled draws, so
    # per-chain bridges disagree (p ~ 1e-25 here, far beyond the 1e-3 alarm)
    x = np.random.default_rng(5).standard_normal((4, 1000, 2))
    x[2:, :, 0] += 0.5
    r = gbs(STD2, x, seed=1)
    assert r.diagnostics["chain_p"] < 1e-10
    assert any("chains disagree on log Z" in w and "R-hat" in w for w in r.warnings)


def test_trending_chains_drift():
    # every chain still moves: its mean walks 1 sd over the run; the two halves of the bridge
    # draws differ by ~5.8 combined se (alarm at 3)
    x = np.random.default_rng(5).standard_normal((4, 1000, 2))
    x[:, :, 0] += np.arange(1000) / 1000
    r = gbs(STD2, x, seed=1)
    assert r.diagnostics["drift_z"] < -4.5
    assert any("drifts between the first and second half" in w for w in r.warnings)


def test_consistency_checks_single_chain_has_no_chain_test():
    r = gbs(STD2, np.random.default_rng(6).standard_normal((2000, 2)), seed=1)
    assert "chain_p" not in r.diagnostics and "drift_z" in r.diagnostics
