"""Error bars that say what they are worth (issue 21): the tempered bridge's bound warnings, a
rule fixed in advance for gbs's tempered fallback, degrees of freedom of replicate-based se,
SMC and Gaussian bridges that widen or withhold an se their own diagnostics distrust,
``--target-se`` sized from the previous round, and the flow's gradient count."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats

from stanlogz.densities.gaussian import GaussianTarget
from stanlogz.estimators.base import EvidenceResult
from stanlogz.estimators.bridge import bridge as bridge_module
from stanlogz.estimators.bridge.tempered import sandwich, tempered_bridge
from stanlogz.flows.gaussianize import GaussianizingFlow


def _target(dim: int = 3, log_z: float = -1.5) -> GaussianTarget:
    a = np.random.default_rng(0).standard_normal((dim, dim))
    return GaussianTarget(np.ones(dim), a @ a.T / dim + np.eye(dim), log_z=log_z)


# ---------------------------------------------------------------- audit item 1


def test_sandwich_warnings_fire_on_a_gap_and_on_inverted_bounds():
    # The old rule (gap > 2 se with se = max(hypot, |gap|) / 2) could never fire.
    from stanlogz.estimators.bridge.tempered import sandwich_warnings

    lo, lo_se, up, up_se = -3.0, 0.05, -2.0, 0.05
    # half the gap and the spread in quadrature: 0.5 * sqrt(1 + 2 * 0.05^2)
    assert sandwich(lo, lo_se, up, up_se) == pytest.approx((-2.5, 0.5 * math.sqrt(1.005)),
                                                           rel=1e-12)
    (w,) = sandwich_warnings(lo, lo_se, up, up_se, n_temps=50)
    assert "1.00 nats apart" in w and "n_temps (now 50)" in w
    (w,) = sandwich_warnings(up, up_se, lo, lo_se, n_temps=50)
    assert "inverted" in w and "R-hat" in w
    # bounds within their noise, or closer than 0.1 nats: nothing to say
    assert sandwich_warnings(-3.0, 0.3, -2.5, 0.3, n_temps=50) == []
    assert sandwich_warnings(-3.0, 0.001, -2.95, 0.001, n_temps=50) == []


def test_tempered_bridge_passes_the_bound_warnings_on(monkeypatch):
    # AIS stand-ins with bounds 1 nat apart and spreads of 0.05: the old check compared the
    # gap with twice an se that is at least half the gap, so it never fired.
    from stanlogz.estimators.bridge import tempered as tempered_module

    def bound(log_z):
        return lambda *a, **k: SimpleNamespace(log_z=log_z, log_z_se=0.05, warnings=[],
                                               n_evals=1, acceptance=0.9)

    t = _target(2)
    draws = t.sample(np.random.default_rng(1), 800).reshape(4, 200, 2)
    proposal = GaussianizingFlow(t.mean, 2.0 * np.eye(2), [])
    monkeypatch.setattr(tempered_module, "ais", bound(-3.0))
    monkeypatch.setattr(tempered_module, "reverse_ais", bound(-2.0))
    r = tempered_bridge(t, draws, seed=2, proposal=proposal, n_temps=7)
    assert (r.log_z, r.log_z_se) == pytest.approx((-2.5, 0.5 * math.sqrt(1.005)), rel=1e-12)
    assert any("1.00 nats apart" in w and "now 7" in w for w in r.warnings)
    monkeypatch.setattr(tempered_module, "ais", bound(-1.0))
    r = tempered_bridge(t, draws, seed=2, proposal=proposal, n_temps=7)
    assert any("inverted" in w for w in r.warnings)


def _metropolis(t: GaussianTarget, start: np.ndarray, n: int, rng: np.random.Generator,
                scale: float = 0.8) -> np.ndarray:
    """A random-walk Metropolis chain on ``t`` (autocorrelated draws, as from MCMC)."""
    x, lp, out = start, t.log_density(start), np.empty((n, start.size))
    for i in range(n):
        y = x + scale * rng.standard_normal(x.size)
        ly = t.log_density(y)
        if math.log(rng.uniform()) < ly - lp:
            x, lp = y, ly
        out[i] = x
    return out


@pytest.mark.slow
def test_tempered_bridge_from_mcmc_draws_brackets_log_z():
    # Reverse AIS started from MCMC draws (random-walk chains, autocorrelated, not exact
    # draws): the upper bound is then approximate, yet midpoint +- 4.5 se must contain the exact
    # log Z (the se spans both bounds; a normal |z| > 4.5 has probability 7e-6; seeds fixed).
    t = _target(3)
    rng = np.random.default_rng(5)
    chains = np.stack([_metropolis(t, t.mean + rng.standard_normal(3), 1200, rng)[200:]
                       for _ in range(4)])
    proposal = GaussianizingFlow(t.mean + 0.3, 1.5 * np.eye(3), [])
    r = tempered_bridge(t, chains, seed=6, proposal=proposal, n_temps=100)
    assert abs(r.log_z - t.log_z) < 4.5 * r.log_z_se, (r.log_z, r.log_z_se)


# ---------------------------------------------------------------- audit item 2


def test_gbs_reports_the_tempered_bridge_whenever_it_runs(monkeypatch):
    # A fixed rule: once the single bridge's diagnostics trigger the tempered bridge, its
    # result is reported, even with a larger se (choosing the smaller of two noisy error
    # bars undercovers). Poor overlap is forced here so that "auto" triggers.
    from stanlogz.estimators.bridge import tempered as tempered_module

    t = _target(2)
    draws = t.sample(np.random.default_rng(3), 1600).reshape(4, 400, 2)
    monkeypatch.setattr(bridge_module, "pareto_k", lambda lw: 0.9)
    monkeypatch.setattr(bridge_module, "combine_orientations",
                        lambda est, ses, correlated=False: (float(np.mean(est)), 0.01, 10.0))
    seen = []

    def fake_tempered(target, chains, **kw):
        seen.append(chains.shape)
        return EvidenceResult("tempered", -7.0, 0.5, n_evals=3,
                              diagnostics={"lower": -7.5, "upper": -6.5})

    monkeypatch.setattr(tempered_module, "tempered_bridge", fake_tempered)
    for mode in ("auto", "always"):
        r = bridge_module.gbs(t, draws, seed=4, tempered=mode)
        assert (r.log_z, r.log_z_se) == (-7.0, 0.5), mode
        assert r.diagnostics["single_bridge"]["log_z_se"] == 0.01
        assert any("tempered bridge" in w for w in r.warnings)
    r = bridge_module.gbs(t, draws, seed=4, tempered="never")
    assert r.log_z_se == 0.01 and len(seen) == 2


# ---------------------------------------------------------------- audit item 9


def test_evidence_interval_uses_student_t_with_few_degrees_of_freedom():
    """The 95% interval against the exact sampling distribution: 4000 estimates that are the
    mean of 8 iid N(truth, 1) runs with se = sd / sqrt(8) and df 7 cover the truth with
    probability exactly 0.95 (Student's t); with a known se (no df) the normal interval does.
    Each count of covered is Binomial(4000, 0.95): outside its 2.5e-5 and 1 - 2.5e-5
    quantiles with probability < 5e-5, < 1e-4 for both. A normal interval for the df-7 case
    (coverage 0.909) or a t interval for the known-se case (0.982) is far outside."""
    reps, runs, truth = 4000, 8, -10.0
    rng = np.random.default_rng(12)
    x = rng.normal(truth, 1.0, (reps, runs))
    mean, se = x.mean(axis=1), x.std(axis=1, ddof=1) / math.sqrt(runs)
    lo, hi = stats.binom.ppf(2.5e-5, reps, 0.95), stats.binom.isf(2.5e-5, reps, 0.95)
    with_df = [EvidenceResult("smc", m, s, log_z_df=runs - 1)
               for m, s in zip(mean, se, strict=True)]
    known_se = [EvidenceResult("gbs", m, 1 / math.sqrt(runs)) for m in mean]
    for results in (with_df, known_se):
        bounds = np.array([r.interval(0.95) for r in results])
        covered = int(np.sum((bounds[:, 0] <= truth) & (truth <= bounds[:, 1])))
        assert lo <= covered <= hi, (covered, lo, hi)
    r = EvidenceResult("smc", -10.0, 0.5, log_z_df=7)
    assert "(df 7)" in str(r) and r.to_dict()["log_z_df"] == 7


@pytest.mark.slow
def test_smc_and_ais_report_degrees_of_freedom():
    from stanlogz.estimators.annealing.ais import ais_estimate
    from stanlogz.estimators.annealing.smc import smc_estimate

    t = _target(2)
    draws = t.sample(np.random.default_rng(8), 400)
    r = smc_estimate(t, draws, seed=9, n_runs=6, n_particles=64)
    # smc folds its runs' t quantile into the se (±1.96 se is the t_5 95% interval): no df
    raw = r.diagnostics["se_untransformed"]
    assert r.log_z_df is None and r.to_dict()["log_z_df"] is None
    assert r.log_z_se == pytest.approx(raw * stats.t.ppf(0.975, 5) / stats.norm.ppf(0.975))
    a = ais_estimate(t, draws, seed=9, n_chains=12, n_temps=20)
    assert a.log_z_df == pytest.approx(11.0)
    # both against the exact log Z: with an honest se and df, |error| / se exceeds the t_df
    # quantile 1 - 2.5e-5 with probability 5e-5 per estimator (1e-4 for both)
    for res, df, se in ((r, 5, raw), (a, a.log_z_df, a.log_z_se)):
        q = stats.t.isf(2.5e-5, df)
        assert abs(res.log_z - t.log_z) < q * se, (res.method, res.log_z, t.log_z)


def test_smc_widens_an_se_carried_by_one_run(monkeypatch):
    # Runs whose Z is dominated by one (log Z of runs: one at +3, seven at 0): the delta-method
    # se of log mean Z is small exactly then, but the mean is known no better than one run.
    from stanlogz.estimators.annealing import smc as smc_module

    run_log_z = np.array([3.0] + [0.0] * 7)
    lme, se, ess = smc_module.log_mean_exp_with_se(run_log_z)
    assert ess < 4 and se < np.std(run_log_z, ddof=1)
    monkeypatch.setattr(smc_module, "smc", lambda *a, **k: {
        "log_z": lme, "log_z_se": se, "run_log_z": run_log_z, "run_ess": ess,
        "betas": np.array([0.0, 1.0]), "acceptance": 0.8, "n_evals": 10})
    t = _target(2)
    r = smc_module.smc_estimate(t, t.sample(np.random.default_rng(0), 200), seed=1, reverse=False)
    assert r.log_z_se == pytest.approx(np.std(run_log_z, ddof=1))
    assert r.diagnostics["delta_method_se"] == se and r.log_z_df is None
    assert any("widened" in w for w in r.warnings)


# ---------------------------------------------------------------- poor overlap


def test_gaussian_bridges_withhold_an_se_without_overlap(monkeypatch):
    # With Pareto k above 0.7 on both sides the bridge's own se (eq. 9) does not bound the
    # error (bridge-warp3 was 11 se off on posteriordb's Mh_model), so none is reported.
    from stanlogz.estimators.bridge import baselines

    t = _target(2)
    draws = t.sample(np.random.default_rng(3), 800).reshape(4, 200, 2)
    good = baselines.bridge_warp3(t, draws, seed=3)
    assert good.log_z_se == good.diagnostics["bridge_se"] > 0  # exact draws: overlap is fine
    monkeypatch.setattr(baselines.common, "pareto_k", lambda lw: 0.9)
    for method in (baselines.bridge_gaussian, baselines.bridge_warp3):
        r = method(t, draws, seed=3)
        assert math.isnan(r.log_z_se) and r.diagnostics["bridge_se"] > 0
        assert any("no standard error" in w and "use gbs" in w for w in r.warnings)


# ---------------------------------------------------------------- audit item 6


def test_target_se_reports_the_sized_round_instead_of_waiting_for_a_lucky_se(monkeypatch):
    # se readings by round: 0.02 at 400 draws, then a noisy 0.0105 after the round sized for
    # 0.9 x 0.01. The old loop kept going until a reading dipped below 0.01 (optional stopping);
    # now the sized round is reported, with a warning that it missed the target.
    import stanlogz.api as api

    readings = iter([0.0105, 0.0095, 0.0095])
    monkeypatch.setattr(api, "more_draws", lambda m, d, per_chain, *a, **kw: SimpleNamespace(
        n_chains=d.n_chains, n_draws=d.n_draws + per_chain, unconstrained=None,
        n_gradient_evals=0, sampling_cost_known=False))
    monkeypatch.setattr(api, "_call_estimator", lambda *a, **k: EvidenceResult(
        "gbs", -1.0, next(readings), seconds=1.0))
    d = SimpleNamespace(n_chains=4, n_draws=100)
    res, d2 = api._refine_to_target(None, d, EvidenceResult("gbs", -1.0, 0.02), "gbs", 0.01,
                                    None, 1, None, {})
    rounds = res.diagnostics["target_se_rounds"]
    assert len(rounds) == 2 and res.log_z_se == 0.0105
    assert any("target se 0.01 not reached" in w and "sized from the one before" in w
               for w in res.warnings)


# ---------------------------------------------------------------- audit item 10


def test_validated_flow_counts_the_gradients_it_computed():
    from stanlogz.flows.selection import fit_validated_flow

    class _Counting(GaussianTarget):
        calls = 0

        def log_density_gradient(self, x):
            type(self).calls += 1
            lp, g = super().log_density_gradient(x)
            return lp, g * math.nan if type(self).calls == 5 else g  # one gradient fails

    t = _Counting(np.zeros(2), np.eye(2))
    chains = np.random.default_rng(4).standard_normal((4, 300, 2))
    _, info = fit_validated_flow(t, chains, np.random.default_rng(5))
    assert info["validated"] and info["n_gradient_evals"] == _Counting.calls > 0


# ---------------------------------------------------------------- audit item 8


class _NormalLoo:
    """Stand-in for PointwiseLogLik: theta ~ N(0, 1) without y_i, y_i = 0.5 ~ N(theta, 1);
    ``minus`` holds the refit's draws (chains, n, 1)."""

    def __init__(self, minus: np.ndarray) -> None:
        self.minus = minus

    def held_out_model(self, i):
        fit = SimpleNamespace(unconstrained=self.minus, n_gradient_evals=0,
                              sampler={"divergent__": np.zeros(self.minus.shape[:2])})
        return SimpleNamespace(nuts=lambda *a, **kw: fit)

    def column(self, i, x):
        return stats.norm.logpdf(0.5, loc=np.asarray(x)[:, 0], scale=1.0)


def test_exact_fix_up_checks_overlap_and_convergence(monkeypatch):
    from stanlogz.crossval.fixups import fixups

    rng = np.random.default_rng(21)
    minus = rng.standard_normal((4, 500, 1))
    full = 0.25 + math.sqrt(0.5) * rng.standard_normal((4, 500, 1))
    from stanlogz.stan.settings import NutsArgs

    # the refit's draws are the stand-in's (no NUTS run: its warm or cold start is not tested
    # here, tests/crossval/refit/test_warm_refits.py is)
    monkeypatch.setattr(fixups, "refit_draws",
                        lambda held_out, settings, seed, warm: (held_out.nuts(), False))
    task = fixups.FixTask(0, "exact", 0.9, -1.0, NutsArgs(chains=4, warmup=10, draws=500), {})
    fp = fixups.fix_observation(_NormalLoo(minus), full, task, rng)
    # exact log p(y_i | y_-i) = N(0.5 | 0, sqrt 2); within 4.5 se (bridge se from 4000 iid
    # draws: a normal |z| > 4.5 has probability 7e-6)
    exact = stats.norm.logpdf(0.5, 0.0, math.sqrt(2.0))
    assert abs(fp.elpd - exact) < 4.5 * fp.mcse, (fp.elpd, fp.mcse, exact)
    d = fp.to_dict()["diagnostics"]
    assert d["converged"] and d["pareto_k_minus"] < 0.7 and d["rhat_minus"] < 1.05
    assert fp.warnings == []
    # chains of the refit stuck 1 sd apart: split R-hat of log p(y_i | theta) about 1.3
    stuck = minus + np.arange(4.0)[:, None, None]
    fp = fixups.fix_observation(_NormalLoo(stuck), full, task, rng)
    assert fp.diagnostics["rhat_minus"] > 1.2
    assert any("R-hat" in w for w in fp.warnings)
    # no overlap on either side (forced): the se is flagged
    monkeypatch.setattr(fixups, "pareto_k", lambda lw: 0.95)
    fp = fixups.fix_observation(_NormalLoo(minus), full, task, rng)
    assert any("overlaps poorly" in w and "fix='ups'" in w for w in fp.warnings)


def test_split_rhat():
    from stanlogz.crossval.fixups.fixups import split_rhat

    x = np.random.default_rng(2).standard_normal((4, 1000))
    assert abs(split_rhat(x) - 1.0) < 0.01  # 8 halves of 500 iid draws: sd of R-hat ~ 0.002
    # a drift within each chain: the halves disagree
    assert split_rhat(x + np.linspace(0, 3, 1000)) > 1.2  # sqrt(1 + 0.64 / 1.19) = 1.24


# ---------------------------------------------------------------- biased draws, tight se


def test_flagged_draws_say_log_z_may_be_off_beyond_its_se(compiled):
    import json

    import stanlogz
    from stanlogz.draws import Draws
    from tests.conftest import MODELS

    # Exact posterior draws of the conjugate normal model, labelled with 3 divergences: the
    # draws are fine, but the result must still say the se does not cover a sampler's bias.
    model = compiled("normal")
    d = json.loads((MODELS / "tests" / "normal.json").read_text())
    prec = 1 / d["tau0"] ** 2 + d["N"] / d["sigma"] ** 2
    mean = (d["mu0"] / d["tau0"] ** 2 + sum(d["y"]) / d["sigma"] ** 2) / prec
    mu = mean + np.random.default_rng(6).standard_normal((4, 500, 1)) / math.sqrt(prec)
    divergent = np.zeros((4, 500))
    divergent[0, :3] = 1
    draws = Draws(unconstrained=mu, constrained=mu, constrained_names=["mu"], unc_names=["mu"],
                  sampler={"divergent__": divergent}, source="array")
    r = stanlogz.evidence(model, draws=draws, seed=2)
    trust = r.diagnostics["draws_trust"]
    assert trust["flags"] == ["3 divergences"] and math.isfinite(trust["split_shift"])
    (w,) = [w for w in r.warnings if "may be off by more than its se" in w]
    assert "3 divergences" in w and "adapt_delta" in w and "moved" in w
    clean = Draws(unconstrained=mu, constrained=mu, constrained_names=["mu"],
                  unc_names=["mu"], sampler={"divergent__": np.zeros((4, 500))}, source="array")
    r = stanlogz.evidence(model, draws=clean, seed=2)
    assert r.diagnostics["draws_trust"]["flags"] == []
    assert not any("may be off by more than its se" in w for w in r.warnings)


# ---------------------------------------------------------------- compare(unbiased_bf=True)


def test_compare_with_unbiased_bayes_factors_through_the_api():
    import stanlogz
    from tests.conftest import MODELS

    ex = MODELS / "examples"
    c = stanlogz.compare([ex / "regression.stan", ex / "regression_null.stan"],
                         ex / "regression.data.json", n_draws=500, seed=4, unbiased_bf=True)
    assert c.names[c.best] == "regression"
    (row,) = c.unbiased_table()
    name, bf, bf_se, log_bf, log_bf_se, positive, tail_k = row
    # exact log Bayes factor -5.938734 (README, 1-D quadrature); the unbiased replicates'
    # mean over 200 replicates: |z| < 4.5 (t with 199 dof: probability 1.2e-5)
    truth = math.exp(-5.938734)
    assert name == "regression_null" and abs(bf - truth) < 4.5 * bf_se, (bf, bf_se, truth)
    assert 0.0 < positive <= 1.0 and math.isfinite(tail_k)
    models = c.to_dict()["models"]
    assert models[1]["unbiased_bf_tail_k"] == tail_k and "unbiased_bf" not in models[0]


def test_cli_prints_the_degrees_of_freedom_of_a_replicate_se(capsys):
    import json

    from stanlogz.cli import main
    from tests.conftest import MODELS

    args = ["evidence", str(MODELS / "tests" / "normal.stan"), "--data",
            str(MODELS / "tests" / "normal.json"), "--method", "ais", "--option", "n_chains=8",
            "--draws", "200", "--warmup", "200", "--seed", "5", "--quiet"]
    assert main(args) == 0
    out = capsys.readouterr().out
    # (smc folds its runs' t quantile into the se and reports no df; AIS's chains have one)
    assert "(ais; se from 7 degrees of freedom, 95% interval" in out
    assert main(args + ["--json"]) == 0
    assert json.loads(capsys.readouterr().out)["log_z_df"] == 7  # 8 independent AIS chains


# ---------------------------------------------------------------- audit item 3


def test_cross_fitting_folds_cover_a_fit_dependent_error():
    from stanlogz.estimators.bridge.crossfit import combine_folds

    # Fold estimates that share no error beyond their bridges' se: the bridges' se decides
    # (large-sample, df None) and equals sqrt(sum se^2) / K.
    log_z, se, z, df = combine_folds([1.0, 1.01, 0.99, 1.0], [0.1] * 4)
    assert log_z == pytest.approx(1.0) and se == pytest.approx(0.05) and df is None
    # Folds that disagree far beyond their se: the spread decides, with K - 1 dof.
    log_z, se, z, df = combine_folds([0.0, 1.0, 2.0, 3.0], [0.01] * 4)
    assert se == pytest.approx(np.std([0, 1, 2, 3], ddof=1) / 2) and df == 3 and z > 10
    # Coverage of the 95% t interval with a fit-dependent error 3 times the bridges' se that
    # no se includes: measured 94.6% (5000 draws of 4 folds); two orientations with +-2 se
    # cover about 77% here. Binomial sd over 2000 draws 0.005: < 0.9 fails with p < 1e-16.
    rng = np.random.default_rng(33)
    inside = 0
    for e in rng.normal(0.0, math.sqrt(10.0), size=(2000, 4)):
        log_z, se, z, df = combine_folds(list(e), [1.0] * 4)
        q = stats.t.ppf(0.975, df) if df else stats.norm.ppf(0.975)
        inside += abs(log_z) < q * se
    assert inside / 2000 > 0.9


def test_gbs_with_four_folds():
    t = _target(3, log_z=-2.5)
    draws = t.sample(np.random.default_rng(8), 2400).reshape(4, 600, 3)
    r = bridge_module.gbs(t, draws, seed=9, folds=4)
    assert len(r.diagnostics["half_swap_log_z"]) == 4 and r.n_draws == 2400
    lo, hi = r.interval(0.9999)  # t_3 or normal quantile: fails with probability 1e-4
    assert lo < t.log_z < hi, (r.log_z, r.log_z_se, r.log_z_df)
    with pytest.raises(stanlogz_input_error(), match="too few draws for 4 folds"):
        bridge_module.gbs(t, draws[:, :8], seed=9, folds=4)  # 8 draws per fold
    with pytest.raises(stanlogz_input_error(), match="folds must be"):
        bridge_module.gbs(t, draws, seed=9, folds=1)


def stanlogz_input_error():
    from stanlogz.errors import InputError

    return InputError


def test_an_infinite_bridge_se_is_a_warning_not_a_crash():
    # ldaK2 (posteriordb) on 4 x 500 draws: one side's weights were all zero, se = inf, and the
    # advice's draw count (n se² / target²) raised OverflowError
    from types import SimpleNamespace

    from stanlogz.estimators.bridge.bridge import bridge_warnings

    sol = SimpleNamespace(se=math.inf, converged=True)
    out = bridge_warnings(sol, 0.3, 0.3, 0, 0, 2000, "flow", n_draws=2000)
    assert len(out) == 1 and out[0].startswith("infinite standard error")
    big = bridge_warnings(SimpleNamespace(se=1.0, converged=True), 0.3, 0.3, 0, 0, 2000, "flow",
                          n_draws=2000)
    assert big == [f"large standard error (1.00 nats): run more posterior draws (about "
                   f"{2000 * 100} in all for an se of 0.1 nats)"]
