"""Draws: CmdStan CSV / cmdstanpy readers, unconstraining, summary, InferenceData, CSV writer.

The CSV fixtures are real CmdStan 2.35 output (4 chains x 1000 draws). Tests that need the Stan
programs take them from the session fixture ``compiled`` (tests/conftest.py); the CSV-parsing
tests also run against a small pure-Python stand-in of the coin program.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from stanlogz import draws as D
from stanlogz.errors import DataError, InputError, ToolchainError
from tests.helpers import ar1_chains, se_ratio_z

FIX = Path("/work/shared/fixtures/cmdstan")
if not FIX.is_dir():  # a clone elsewhere: the fixtures are shared under the repository's parent
    FIX = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "cmdstan"
COIN_CSV = sorted((FIX / "coin").glob("coin-*.csv"))
SCHOOLS_CSV = sorted((FIX / "schools").glob("schools-*.csv"))


class FakeCoin:
    """The coin program's parameter interface in Python: theta in (0, 1), logit transform."""

    name = "coin"
    dim = 1
    stan_file = None

    def param_names(self, include_tp: bool = False, include_gq: bool = False) -> list[str]:
        return ["theta"] + ([f"log_lik.{i}" for i in range(1, 11)] if include_gq else [])

    def param_unc_names(self) -> list[str]:
        return ["theta"]

    def unconstrain_many(self, theta: np.ndarray) -> np.ndarray:
        theta = np.asarray(theta, dtype=float)
        with np.errstate(divide="ignore"):
            return np.log(theta) - np.log1p(-theta)

    def constrain_many(self, x: np.ndarray, include_tp: bool = False,
                       include_gq: bool = False) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-np.asarray(x, dtype=float)))


@pytest.fixture(scope="module")
def coin_model(compiled):
    return compiled(FIX / "coin" / "coin.stan", str(FIX / "coin" / "coin.data.json"))


@pytest.fixture(scope="module")
def schools_model(compiled):
    return compiled(FIX / "schools" / "schools.stan", str(FIX / "schools" / "schools.data.json"))


def test_fixtures_present():
    assert len(COIN_CSV) == 4 and len(SCHOOLS_CSV) == 4


def test_flat_name_and_grouping_is_column_major():
    assert D.flat_name("beta[1,2]") == "beta.1.2"
    assert D.flat_name("lp__") == "lp__"
    names = ["a", "b.1.1", "b.2.1", "b.1.2", "b.2.2", "b.1.3", "b.2.3", "z.real"]
    g = D.group_flat_names(names)
    assert g["a"] == ((), [0])
    assert g["b"][0] == (2, 3)
    # Column c of the flat list lands at b[i, j] after a Fortran-order reshape.
    vals = np.arange(len(names), dtype=float)[None, None, :]
    b = vals[:, :, g["b"][1]].reshape((1, 1, 2, 3), order="F")[0, 0]
    assert b[1, 0] == 2 and b[0, 1] == 3 and b[1, 2] == 6
    assert g["z.real"] == ((), [7])


def test_coin_csv_moments_match_beta_3_9():
    d = D.from_csv([str(p) for p in COIN_CSV], FakeCoin())
    assert d.source == "csv" and (d.n_chains, d.n_draws, d.dim) == (4, 1000, 1)
    theta = d.constrained[:, :, d.constrained_names.index("theta")]
    s = {r["name"]: r for r in d.summary().rows}["theta"]
    mean, sd = 3 / 12, math.sqrt(3 * 9 / (12**2 * 13))  # Beta(3, 9): 0.25, 0.1201
    # MCSE of the mean is sd/sqrt(ESS) ~ 0.0033 here; of the sd about sd/sqrt(2 ESS) ~ 0.0023.
    # Five MCSE keeps the false-alarm rate negligible for a fixed file anyway.
    mcse_mean = sd / math.sqrt(s["ess_bulk"])
    assert abs(theta.mean() - mean) < 5 * mcse_mean
    assert abs(theta.std() - sd) < 5 * sd / math.sqrt(2 * s["ess_bulk"])
    assert s["r_hat"] < 1.01
    # The fake model's logit is the coin program's unconstraining transform.
    np.testing.assert_allclose(d.unconstrained[..., 0], np.log(theta / (1 - theta)))
    # Adaptation, timing and cost are read from the files.
    assert d.step_size.shape == (4,) and d.inv_metric.shape == (4, 1)
    assert d.step_size[0] == pytest.approx(0.904924)
    assert d.max_treedepth == 10
    assert d.n_gradient_evals == int(d.sampler["n_leapfrog__"].sum()) > 4000
    assert 0 < d.seconds < 1


def test_glob_directory_and_list_agree():
    a = D.from_csv(str(FIX / "coin" / "coin-*.csv"), FakeCoin())
    b = D.from_csv(FIX / "coin", FakeCoin())
    np.testing.assert_array_equal(a.unconstrained, b.unconstrained)


def test_from_cmdstanpy_matches_csv_reader():
    import cmdstanpy

    fit = cmdstanpy.from_csv(str(FIX / "coin"))
    d = D.from_cmdstanpy(fit, FakeCoin())
    ref = D.from_csv(COIN_CSV, FakeCoin())
    assert d.source == "cmdstanpy" and d.unconstrained.shape == (4, 1000, 1)
    # cmdstanpy may order the chains differently; compare them as sets via sorted step sizes.
    np.testing.assert_allclose(np.sort(d.step_size), np.sort(ref.step_size))
    np.testing.assert_allclose(np.sort(d.unconstrained.ravel()), np.sort(ref.unconstrained.ravel()))
    assert "log_lik.10" in d.constrained_names and d.max_treedepth == 10
    assert d.seconds > 0


def test_inference_data_has_posterior_stats_and_log_lik():
    d = D.from_csv(COIN_CSV, FakeCoin())
    idata = d.to_inference_data()
    assert idata.posterior["theta"].shape == (4, 1000)
    assert "log_lik" not in idata.posterior
    assert idata.log_likelihood["log_lik"].shape == (4, 1000, 10)
    assert idata.sample_stats["diverging"].dtype == bool
    for k in ("lp", "acceptance_rate", "step_size", "tree_depth", "n_steps", "energy"):
        assert idata.sample_stats[k].shape == (4, 1000)
    # log_lik[2] = bernoulli_lpmf(y[2] = 1 | theta) = log(theta)
    np.testing.assert_allclose(idata.log_likelihood["log_lik"][..., 1],
                               np.log(idata.posterior["theta"]), atol=1e-5)


def test_csv_writer_round_trip(tmp_path):
    d = D.from_csv(COIN_CSV, FakeCoin())
    out = tmp_path / "draws.csv"
    D.write_csv(d, out)
    e = D.from_csv(out, FakeCoin())
    np.testing.assert_array_equal(e.unconstrained, d.unconstrained)
    np.testing.assert_array_equal(e.constrained, d.constrained)
    np.testing.assert_array_equal(e.step_size, d.step_size)
    np.testing.assert_array_equal(e.inv_metric, d.inv_metric)
    assert e.constrained_names == d.constrained_names and e.max_treedepth == 10
    # one CmdStan CSV per chain (CmdStan's naming), no temporary left behind
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"draws_{c}.csv" for c in (1, 2, 3, 4)]


def test_bad_csv_inputs(tmp_path):
    with pytest.raises(InputError, match="not found"):
        D.from_csv(tmp_path / "nope.csv", FakeCoin())
    with pytest.raises(InputError, match="no CSV file matches"):
        D.from_csv(str(tmp_path / "x-*.csv"), FakeCoin())
    bad = tmp_path / "bad.csv"
    bad.write_text("lp__,accept_stat__,theta\n1,0.5,0.2\n1,0.5\n")
    with pytest.raises(DataError, match=r"bad.csv:3: 2 values for 3 columns"):
        D.from_csv(bad, FakeCoin())
    opt = tmp_path / "opt.csv"
    opt.write_text("# method = optimize\nlp__,theta\n-1,0.2\n")
    with pytest.raises(DataError, match="not output of Stan's sampler"):
        D.from_csv(opt, FakeCoin())
    edge = tmp_path / "edge.csv"
    edge.write_text("lp__,theta\n-1,0.2\n-1,1\n")
    with pytest.raises(DataError, match="draw 2 of chain 1 lies on the boundary"):
        D.from_csv(edge, FakeCoin())


def test_mismatched_csv_names_the_missing_columns():
    with pytest.raises(DataError) as e:
        D.from_csv(SCHOOLS_CSV, FakeCoin())
    msg = str(e.value)
    assert "missing parameter columns theta" in msg and "mu" in msg and "\n" not in msg


def test_summary_warns_about_rhat_divergences_and_treedepth():
    rng = np.random.default_rng(0)
    u = rng.standard_normal((2, 200, 1))
    u[1] += 3.0  # the second chain sits elsewhere: R-hat >> 1.01
    sampler = {"divergent__": np.zeros((2, 200)), "treedepth__": np.full((2, 200), 3.0)}
    sampler["divergent__"][0, :5] = 1
    sampler["treedepth__"][1, :7] = 10
    d = D.Draws(unconstrained=u, sampler=sampler, max_treedepth=10)
    s = d.summary()
    text = " | ".join(s.warnings)
    assert "R-hat" in text and "run longer" in text
    assert "5 of 400 transitions diverged" in text and "adapt_delta" in text
    assert "7 of 400 transitions hit the maximum tree depth 10" in text
    assert s.diagnostics["divergences"] == 5 and s.diagnostics["max_treedepth_hits"] == 7
    good = D.Draws(unconstrained=rng.standard_normal((4, 500, 2)))
    assert good.summary().warnings == []


def test_one_chain_summary_has_no_rhat_and_logs_nothing(capfd):
    # one chain: R-hat is NaN (ArviZ's too), without the "Shape validation failed" line that
    # ArviZ's own logger writes to stderr, once per refit of `stanlogz.kfold(..., chains=1)`
    rng = np.random.default_rng(1)
    d = D.Draws(unconstrained=rng.standard_normal((1, 400, 2)))
    rows = d.summary().rows
    assert all(math.isnan(r["r_hat"]) for r in rows)
    assert all(r["ess_bulk"] > 100 for r in rows)  # iid draws: ESS near 400 (sd about 20)
    out, err = capfd.readouterr()
    assert "validation" not in out + err


def test_from_array_and_as_draws_dispatch():
    x = np.zeros((3, 5, 1))
    d = D.from_array(x, FakeCoin())
    np.testing.assert_allclose(d.constrained, 0.5)
    assert D.as_draws(d, FakeCoin()) is d
    assert D.as_draws(x[0], FakeCoin()).unconstrained.shape == (1, 5, 1)
    assert D.as_draws(str(FIX / "coin" / "coin-1.csv"), FakeCoin()).n_chains == 1
    assert D.as_draws([str(p) for p in COIN_CSV], FakeCoin()).n_chains == 4
    with pytest.raises(InputError, match="dimension 2"):
        D.as_draws(np.zeros((1, 5, 2)), FakeCoin())
    with pytest.raises(InputError, match="cannot use dict"):
        D.as_draws({"theta": 1}, FakeCoin())


def test_sample_cmdstanpy_needs_cmdstan():
    import cmdstanpy

    try:
        cmdstanpy.cmdstan_path()
        have_cmdstan = True
    except ValueError:
        have_cmdstan = False
    if not have_cmdstan:
        with pytest.raises(ToolchainError, match="no CmdStan installation"):
            D.sample_cmdstanpy(FIX / "coin" / "coin.stan", str(FIX / "coin" / "coin.data.json"))
    else:
        d = D.sample_cmdstanpy(FIX / "coin" / "coin.stan", str(FIX / "coin" / "coin.data.json"),
                               model=FakeCoin(), chains=1, warmup=100, draws=100, seed=1)
        assert d.source == "cmdstanpy"


# --------------------------------------------------------------- with the compiled programs
def test_coin_unconstrained_is_logit_with_real_model(coin_model):
    d = D.from_csv(COIN_CSV, coin_model)
    theta = d.constrained[:, :, d.constrained_names.index("theta")]
    np.testing.assert_allclose(d.unconstrained[..., 0], np.log(theta / (1 - theta)), rtol=1e-10)
    back = coin_model.constrain_many(d.flat_unconstrained())
    np.testing.assert_allclose(np.asarray(back)[:, 0], theta.ravel(), rtol=1e-10)


def test_schools_csv_converts_to_unconstrained(schools_model):
    d = D.from_csv(SCHOOLS_CSV, schools_model)
    assert d.unconstrained.shape == (4, 1000, 10)
    names = d.constrained_names
    col = {n: d.constrained[:, :, names.index(n)] for n in ("mu", "tau", "z.1", "z.8")}
    # Unconstrained coordinates: mu, log(tau), z[1..8].
    np.testing.assert_allclose(d.unconstrained[..., 0], col["mu"])
    np.testing.assert_allclose(d.unconstrained[..., 1], np.log(col["tau"]), rtol=1e-10)
    np.testing.assert_allclose(d.unconstrained[..., 2], col["z.1"])
    np.testing.assert_allclose(d.unconstrained[..., 9], col["z.8"])
    idata = d.to_inference_data()
    assert idata.posterior["theta"].shape == (4, 1000, 8)
    assert idata.posterior["z"].shape == (4, 1000, 8)
    assert idata.log_likelihood["log_lik"].shape == (4, 1000, 8)
    # theta = mu + tau * z (6 significant digits in the CSV)
    np.testing.assert_allclose(idata.posterior["theta"][..., 2],
                               col["mu"] + col["tau"] * d.constrained[:, :, names.index("z.3")],
                               rtol=1e-4, atol=1e-4)


def test_real_model_rejects_other_programs_csv(coin_model):
    with pytest.raises(DataError, match="missing parameter columns theta"):
        D.from_csv(SCHOOLS_CSV, coin_model)


def test_real_model_reports_draws_outside_the_support(coin_model, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("lp__,accept_stat__,theta\n-7,0.9,0.25\n-7,0.9,1.5\n")
    with pytest.raises(DataError, match="cannot unconstrain the draws") as e:
        D.from_csv(bad, coin_model)
    assert "\n" not in str(e.value)


def test_from_array_with_real_model_constrains(coin_model):
    d = D.from_array(np.array([[[0.0], [np.log(3.0)]]]), coin_model)
    np.testing.assert_allclose(d.constrained[0, :, d.constrained_names.index("theta")],
                               [0.5, 0.75])


def test_inference_data_round_trip_in_memory_and_netcdf(schools_model, tmp_path):
    # Works with ArviZ 0.x (InferenceData) and >= 1.0 (DataTree): the same draws come back.
    d = D.from_csv(SCHOOLS_CSV, schools_model)
    idata = d.to_inference_data()
    back = D.as_draws(idata, schools_model)
    assert back.source == "arviz"
    np.testing.assert_allclose(back.unconstrained, d.unconstrained, rtol=1e-12, atol=1e-12)
    i_ll = back.constrained_names.index("log_lik.8")
    np.testing.assert_array_equal(back.constrained[..., i_ll],
                                  d.constrained[..., d.constrained_names.index("log_lik.8")])
    np.testing.assert_array_equal(back.sampler["divergent__"], d.sampler["divergent__"])
    nc = tmp_path / "draws.nc"
    idata.to_netcdf(str(nc))
    again = D.as_draws([str(nc)], schools_model)  # as `evidence --fit draws.nc` passes it
    np.testing.assert_allclose(again.unconstrained, d.unconstrained, rtol=1e-12, atol=1e-12)
    with pytest.raises(InputError, match="no such file"):
        D.as_draws(str(tmp_path / "missing.nc"), schools_model)
    junk = tmp_path / "junk.nc"
    junk.write_text("not netcdf\n")
    with pytest.raises(DataError, match="not an ArviZ netCDF file") as e:
        D.as_draws(str(junk), schools_model)
    assert "\n" not in str(e.value)


def test_summary_mcse_of_the_mean_matches_the_spread_of_means():
    # 200 independent columns, each 4 AR(1) chains (phi 0.5) with mean 0: the sd of the 200
    # column means is the true Monte Carlo se, sqrt((1 + phi) / (1 - phi) / 4000) = 0.0274.
    # |z| of log(mean mcse / sd of means) <= 4 fails with probability ~6e-5 under a right se.
    rng = np.random.default_rng(37)
    x = ar1_chains(rng, 200, 4, 1000, 0.5, 0.0, 1.0)
    rows = D.Draws(unconstrained=np.transpose(x, (1, 2, 0))).summary().rows
    means = np.array([r["mean"] for r in rows])
    mcse = np.array([r["mcse_mean"] for r in rows])
    assert abs(mcse.mean() / math.sqrt(3 / 4000) - 1) < 0.1
    assert abs(se_ratio_z(means, mcse)) < 4
    one = D.Draws(unconstrained=rng.standard_normal((1, 3, 1))).summary().rows[0]
    assert math.isnan(one["mcse_mean"])  # too few draws for an ESS: nan, not a number
