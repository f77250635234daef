import json
from pathlib import Path

import numpy as np
import pytest

import stanlogz.bdmc as bd
from stanlogz.bdmc import TestbedResult, bdmc, plot_testbed, simulate, split_variables
from stanlogz.errors import DataError, InputError
from stanlogz.estimators import METHODS
from stanlogz.report import format_table
from stanlogz.targets import GaussianTarget

D = 3
_rng = np.random.default_rng(4)
_A = _rng.normal(size=(D, D))
POST = GaussianTarget(_rng.normal(size=D), 0.5 * (_A @ _A.T / D + 0.3 * np.eye(D)), log_z=-3.2)
BASE = GaussianTarget(np.zeros(D), 3.0 * np.eye(D))


def test_split_variables_column_major():
    names = ["mu", "beta.1", "beta.2", "L.1.1", "L.2.1", "L.1.2", "L.2.2", "y.1"]
    vals = np.arange(8.0)
    out = split_variables(names, vals)
    assert out["mu"] == 0.0
    np.testing.assert_array_equal(out["beta"], [1.0, 2.0])
    # Stan writes matrices column-major: L.2.1 is the second value of L.
    np.testing.assert_array_equal(out["L"], [[3.0, 5.0], [4.0, 6.0]])
    assert out["y"].shape == (1,)
    with pytest.raises(DataError):
        split_variables(names, vals[:3])


def test_bdmc_sandwiches_the_truth_and_doubles_until_the_gap_closes():
    x_true = POST.sample(np.random.default_rng(1), 1)[0]
    res = bdmc(POST, BASE, x_true, n_chains=12, n_temps=10, gap_tol=0.5, max_temps=800, seed=3)
    ts = [h["n_temps"] for h in res.history]
    assert ts[0] == 10 and all(b == 2 * a for a, b in zip(ts, ts[1:], strict=False))
    assert len(ts) >= 2  # T=10 does not close the gap on this problem
    assert res.gap < 0.5 or ts[-1] * 2 > 800
    # Stochastic bounds: each within 3 of its spreads on the wrong side of the truth.
    assert res.lower.log_z < POST.log_z + 3 * res.lower.log_z_se
    assert res.upper.log_z > POST.log_z - 3 * res.upper.log_z_se
    assert abs(res.midpoint - POST.log_z) < 0.5
    # Chains double only after a round with low weight ESS.
    ks = [h["n_chains"] for h in res.history]
    assert ks[0] == 12 and all(b in (a, 2 * a) for a, b in zip(ks, ks[1:], strict=False))
    d = res.to_dict()
    assert d["n_temps"] == ts[-1] and len(d["history"]) == len(ts)
    assert res.n_evals == sum(h["n_evals"] for h in res.history) > 0
    with pytest.raises(InputError):
        bdmc(POST, BASE, x_true, gap_tol=0.0)


def test_inverted_sandwich_is_flagged_not_presented(capsys):
    from dataclasses import replace

    from stanlogz.commands.bdmc import print_result
    from stanlogz.report import Reporter

    x_true = POST.sample(np.random.default_rng(1), 1)[0]
    res = bdmc(POST, BASE, x_true, n_chains=4, n_temps=20, gap_tol=None, seed=3)
    # A genuine sandwich at T=20 (gap ~1.8 nats, ~3.7 spreads above zero) is not flagged.
    assert res.gap > 0 and not res.inverted
    # Push the lower bound 1 nat above the upper: far beyond 2 spreads of the gap.
    bad = bd.BDMCResult(replace(res.lower, log_z=res.upper.log_z + 1.0, log_z_se=0.1),
                        replace(res.upper, log_z_se=0.1), res.history)
    assert bad.inverted and bad.gap == pytest.approx(-1.0)
    assert "inverted" in bad.warnings[0] and "not yet valid" in bad.warnings[0]
    d = bad.to_dict()
    assert d["inverted"] and not d["valid"] and d["warnings"][0] == bad.warnings[0]
    # Noise-sized inversion (within 2 spreads) is not flagged.
    ok = bd.BDMCResult(replace(res.lower, log_z=res.upper.log_z + 0.1, log_z_se=0.1),
                       replace(res.upper, log_z_se=0.1), res.history)
    assert not ok.inverted
    print_result(Reporter(), TestbedResult(sandwich=bad, rows=[], n_draws=0))
    out = capsys.readouterr()
    assert "NOT VALID" in out.out and "BDMC bounds are inverted" in out.err


def test_stalled_gap_is_reported(monkeypatch):
    from dataclasses import replace

    x_true = POST.sample(np.random.default_rng(1), 1)[0]
    ref = bdmc(POST, BASE, x_true, n_chains=4, n_temps=10, gap_tol=None, seed=3)
    # AIS whose bounds do not move with T: a 2-nat gap that doubling T cannot close.
    monkeypatch.setattr(bd, "ais", lambda *a, **k: replace(ref.lower, log_z=-5.0, ess=4.0))
    monkeypatch.setattr(bd, "reverse_ais", lambda *a, **k: replace(ref.upper, log_z=-3.0,
                                                                   ess=4.0))
    res = bdmc(POST, BASE, x_true, n_chains=4, n_temps=10, gap_tol=0.5, max_temps=40, seed=3)
    assert [h["n_temps"] for h in res.history] == [10, 20, 40]
    assert any("did not shrink" in w for w in res.warnings)


def test_budget_fractions():
    assert bd.budget_fractions(1) == (1.0,)
    assert bd.budget_fractions(3) == (0.25, 0.5, 1.0)
    with pytest.raises(InputError):
        bd.budget_fractions(0)


def test_testbed_scores_estimators_and_plots(tmp_path, monkeypatch):
    rng = np.random.default_rng(2)
    draws = POST.sample(rng, 800).reshape(4, 200, D)
    x_true = POST.sample(rng, 1)[0]
    # A registered method whose function is missing: the testbed reports it as failed.
    monkeypatch.setitem(METHODS, "broken", "stanlogz.bdmc:no_such_estimator")
    small = {"n_chains": 8, "n_temps": 100}
    res = bd.testbed(POST, draws, x_true, ["ais", "rais", "broken"], n_chains=8, n_temps=150,
                  gap_tol=None, seed=5, estimator_options={"ais": small, "rais": small})
    assert isinstance(res, TestbedResult)
    rows = {r.method: r for r in res.rows}
    assert rows["broken"].failed.startswith("AttributeError")
    for name in ("ais", "rais"):
        r = rows[name]
        assert not r.failed and r.n_evals > 0 and r.seconds > 0
        assert r.error == pytest.approx(r.log_z - res.sandwich.midpoint)
        lo, hi = bd.sandwich_band(res.sandwich)
        assert lo <= min(res.sandwich.lower.log_z, res.sandwich.upper.log_z)
        assert r.outside == (not lo <= r.log_z <= hi)
        # Base fitted to exact draws: both within 0.5 nat of the truth.
        assert abs(r.log_z - POST.log_z) < 0.5
    table = format_table(TestbedResult.HEADER, res.table_rows())
    assert "bdmc lower" in table and "failed" in table
    json.dumps(res.to_dict())
    out = tmp_path / "testbed.png"
    plot_testbed(res, out)
    assert out.stat().st_size > 1000
    with pytest.raises(InputError):
        bd.testbed(POST, draws, x_true, ["nope"])


class _FakeModel:
    """Stands in for StanModel to test the wiring of :func:`simulate` without a compiler."""

    def __init__(self, data=None):
        self.data = data

    # As the simulation program it has no parameters and generates mu, sigma, y[3], k[2];
    # with data it is the main program, whose parameters are mu and sigma.
    def param_names(self, include_tp=False, include_gq=False):
        if self.data is not None and "y" in self.data:
            return ["mu", "sigma"]
        return ["mu", "sigma", "y.1", "y.2", "y.3", "k.1", "k.2"] if include_gq else []

    def constrain(self, x, include_tp=False, include_gq=False, seed=None):
        r = np.random.default_rng(seed)
        return np.array([r.normal(), 1.5, 2.0, r.normal(), 4.0, 3.0, 0.0])

    def with_data(self, data):
        return _FakeModel(data)

    def unconstrain_dict(self, params):
        return np.array([params["mu"], np.log(params["sigma"])])

    def log_density(self, x):
        return 0.0


def test_simulate_splits_parameters_from_data():
    s = simulate(_FakeModel(), _FakeModel(), seed=3, sim_data={"N": 3})
    assert set(s.params) == {"mu", "sigma"}
    # Integer-valued arrays become ints (Stan int data rejects 3.0); others stay real.
    assert s.data["N"] == 3 and s.data["k"] == [3, 0] and isinstance(s.data["k"][0], int)
    assert isinstance(s.data["y"][0], float) and len(s.data["y"]) == 3
    np.testing.assert_allclose(s.x_true, [s.params["mu"], np.log(1.5)])
    assert s.model.data == s.data


STAN_DIR = Path(__file__).resolve().parents[1] / "stan_models" / "bdmc"
MAIN_STAN = STAN_DIR / "normal_mean.stan"
SIM_STAN = STAN_DIR / "normal_mean_sim.stan"
SIM_DATA = STAN_DIR / "normal_mean_sim.data.json"


def _normal_mean_log_z(data: dict) -> float:
    from scipy import stats

    y = np.asarray(data["y"], float)
    n = y.size
    cov = data["sigma"] ** 2 * np.eye(n) + data["tau"] ** 2 * np.ones((n, n))
    return float(stats.multivariate_normal(np.zeros(n), cov).logpdf(y))


def test_bdmc_on_a_stan_program_sandwiches_the_analytic_log_z(compiled):
    from stanlogz.bases import laplace_base

    sim_data = json.loads(SIM_DATA.read_text())
    sim = compiled(SIM_STAN, sim_data)
    main = compiled(MAIN_STAN, {"N": 1, "y": [0.0], "sigma": 1.0, "tau": 1.0})
    s = simulate(main, sim, seed=11, sim_data=sim_data)
    assert set(s.params) == {"mu"} and len(s.data["y"]) == sim_data["N"]
    assert s.x_true == pytest.approx([s.params["mu"]])  # mu is unconstrained
    # Same seed, same simulation (the Stan RNG is seeded).
    assert simulate(main, sim, seed=11, sim_data=sim_data).data == s.data
    truth = _normal_mean_log_z(s.data)
    base, _ = laplace_base(s.model, s.x_true)
    res = bdmc(s.model, base, s.x_true, n_chains=8, n_temps=100, gap_tol=None, seed=2)
    # Laplace base is the exact posterior here, so both bounds are tight: within 3 spreads
    # (plus 0.05 nat for the finite-difference Hessian) of the analytic value.
    assert abs(res.lower.log_z - truth) < 3 * res.lower.log_z_se + 0.05
    assert abs(res.upper.log_z - truth) < 3 * res.upper.log_z_se + 0.05

    # Compiled models do not pickle, so two workers run threads: results are unchanged.
    from stanlogz.estimators.ais import ais

    one = ais(s.model, base, n_chains=4, n_temps=30, seed=8, tuning=res.lower.tuning,
              n_workers=1)
    two = ais(s.model, base, n_chains=4, n_temps=30, seed=8, tuning=res.lower.tuning,
              n_workers=2)
    np.testing.assert_array_equal(one.log_weights, two.log_weights)

    # Prior→posterior path: exact prior draws from the simulation program, prior N(0, tau^2).
    draws = bd.prior_draws(s.model, sim, 2000, seed=4)
    assert draws.shape == (2000, 1)
    # 2000 exact draws: mean se = tau/sqrt(2000) = 0.045, sd relative se = 1/sqrt(4000) = 1.6%;
    # bounds are ~5 se.
    assert abs(draws.mean()) < 0.23 and abs(draws.std() / sim_data["tau"] - 1) < 0.08
    prior = GaussianTarget(np.zeros(1), np.array([[sim_data["tau"] ** 2]]))
    res = bdmc(s.model, prior, s.x_true, n_chains=8, n_temps=200, gap_tol=None, seed=5,
               base_draws=draws)
    # From the prior the path is longer: 3 spreads plus 0.15 nat (observed gap ~0.05).
    assert truth - 3 * res.lower.log_z_se - 0.15 < res.lower.log_z < truth + 3 * res.lower.log_z_se
    assert truth - 3 * res.upper.log_z_se < res.upper.log_z < truth + 3 * res.upper.log_z_se + 0.15


def test_bdmc_command_end_to_end(compiled, capsys, tmp_path):
    from stanlogz.cli import main

    compiled(SIM_STAN, json.loads(SIM_DATA.read_text()))  # build once per session
    plot = tmp_path / "tb.png"
    rc = main(["--json", "--seed", "3", "--quiet", "bdmc", str(MAIN_STAN), "--simulate",
               str(SIM_STAN), "--sim-data", str(SIM_DATA), "--estimators", "laplace,gis,ais",
               "--temps", "60", "--ais-chains", "4", "--chains", "2", "--warmup", "200",
               "--draws", "200", "--budgets", "2", "--plot", str(plot)])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    sw = out["sandwich"]
    truth = _normal_mean_log_z(out["data"])
    assert sw["n_temps"] == 60 and sw["n_chains"] == 4
    # 1-d conjugate model with a base fitted to NUTS draws: 60 temperatures close the gap
    # to well under 0.2 nat, and the truth lies within 0.2 nat of both bounds.
    assert abs(sw["gap"]) < 0.2
    assert abs(sw["midpoint"] - truth) < 0.2
    assert sw["valid"] and not sw["inverted"]
    # Cost sweep: every estimator at half and full cost, the sweep's cost increasing.
    rows = out["estimators"]
    assert [(r["method"], r["budget"]) for r in rows] == [
        (m, b) for m in ("laplace", "gis", "ais") for b in (0.5, 1.0)]
    assert out["budgets"] == [0.5, 1.0]
    for a, b in zip(rows[::2], rows[1::2], strict=True):
        assert a["cost"] < b["cost"] and a["draw_evals"] > 0
    for r in rows:
        assert r["failed"] == "" and abs(r["log_z"] - truth) < 0.2
    assert plot.stat().st_size > 1000
    # One-line errors, status 2.
    assert main(["bdmc", str(MAIN_STAN), "--simulate", str(SIM_STAN),
                 "--estimators", "nope"]) == 2
    assert "unknown estimator" in capsys.readouterr().err
