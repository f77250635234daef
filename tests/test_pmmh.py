"""Pseudo-marginal MH with unbiased 1/Z on the continuous spin chain, against its exact posterior
(transfer operator on a quadrature grid), and its bad-input errors."""

import json
import math

import numpy as np
import pytest

from stanlogz.cli import main
from stanlogz.densities.testing import (
    spin_chain_log_p,
    spin_chain_log_z,
    spin_chain_posterior,
)
from stanlogz.errors import InputError
from stanlogz.pmmh.pseudo_marginal import InnerProgram, pmmh, signed_moments
from tests.conftest import MODELS

EX = MODELS / "examples"
OUTER, INNER, DATA = (EX / "spin_chain_outer.stan", EX / "spin_chain_inner.stan",
                      EX / "spin_chain.data.json")


@pytest.fixture(scope="module")
def data():
    return json.loads(DATA.read_text())


def test_transfer_operator_log_z(data):
    from scipy import integrate

    # J = 0 factorizes: Z = z1(h)^L with z1 by adaptive quadrature.
    z1 = integrate.quad(lambda x: math.exp(-0.5 * x * x - 0.25 * x**4 + 0.3 * x), -np.inf,
                        np.inf, epsabs=1e-14)[0]
    assert spin_chain_log_z(0.3, 0.0, 7) == pytest.approx(7 * math.log(z1), abs=1e-10)
    # L = 2: a 2-D integral.
    z2 = integrate.dblquad(lambda a, b: math.exp(-0.5 * (a * a + b * b) - 0.25 * (a**4 + b**4)
                                                 + 0.2 * (a + b) + 0.4 * a * b),
                           -7, 7, -7, 7, epsabs=1e-12)[0]
    assert spin_chain_log_z(0.2, 0.4, 2) == pytest.approx(math.log(z2), abs=1e-8)


def test_inner_program_density_matches_the_python_chain(compiled, data):
    model = compiled(INNER, {**data, "h": 0.3, "J": -0.2})
    x = np.random.default_rng(0).normal(size=(5, data["L"]))
    np.testing.assert_allclose(model.log_density_many(x), spin_chain_log_p(x, 0.3, -0.2),
                               rtol=1e-12)


def test_signed_moments_against_plain_weighting():
    rng = np.random.default_rng(0)
    h = rng.normal(size=400)
    s = np.where(rng.uniform(size=400) < 0.9, 1, -1)
    m = signed_moments(h, s)
    assert m["mean"] == pytest.approx(np.sum(h * s) / np.sum(s))
    assert m["sd"] == pytest.approx(math.sqrt(np.sum(h * h * s) / np.sum(s) - m["mean"] ** 2))


def test_pmmh_matches_the_exact_posterior(data):
    # Exact posterior of (h, J) on a grid fine enough that its moments are within 1e-3 of the
    # continuum (grid spacing 0.025; the posterior sd is ~0.25).
    hg, jg = np.linspace(-1, 1, 81), np.linspace(-0.5, 0.5, 41)
    post = spin_chain_posterior(np.array(data["y"]), hg, jg)
    ph, pj = post.sum(axis=1), post.sum(axis=0)
    exact = {"h": float(ph @ hg), "J": float(pj @ jg)}
    r = pmmh(OUTER, INNER, DATA, estimator="rbbce", iter=3000, warmup=1000, batch=40, seed=None)
    rows = {row["name"]: row for row in r.summary_rows()}
    # Each sign-corrected mean is within 4.5 MCSE of the exact one (batch means over ~54
    # batches of 55: a t statistic with 53 dof exceeds 4.5 with probability 4e-5), plus the
    # grid's 1e-3.
    for name, truth in exact.items():
        assert abs(rows[name]["mean"] - truth) < 4.5 * rows[name]["mcse"] + 1e-3, (name, rows)
    assert r.draws.constrained.shape == (1, 3000, 2)
    assert set(r.draws.sampler) >= {"lp__", "sign__", "accept_stat__"}
    assert 0 < r.acceptance < 1 and 0 < r.fraction_positive <= 1
    idata = r.to_inference_data()
    from stanlogz import arviz_compat

    stats = arviz_compat.group(idata, "sample_stats")
    np.testing.assert_array_equal(np.asarray(stats["sign"].values)[0], r.signs)


# ---------------------------------------------------------------- bad input


def test_inner_program_that_does_not_read_theta(compiled):
    normal = compiled("normal")
    with pytest.raises(InputError, match="does not read the outer parameter 'h'") as exc:
        InnerProgram(normal, json.loads(normal.data_json), {"h": 0.1})
    assert "\n" not in str(exc.value)


def test_theta_outside_the_inner_support(compiled, data):
    model = compiled(INNER, {**data, "h": 0.0, "J": 0.0})
    inner = InnerProgram(model, data, {"h": 0.0, "J": 0.1})
    with pytest.raises(InputError, match="outside the inner program's support") as exc:
        inner.at({"h": 0.0, "J": 0.9})
    assert "\n" not in str(exc.value)


def test_bad_options_fail_before_any_work():
    with pytest.raises(InputError, match="unknown 1/Z estimator"):
        pmmh(OUTER, INNER, DATA, estimator="roulette")
    with pytest.raises(InputError, match="fce only"):
        pmmh(OUTER, INNER, DATA, estimator="rbbce", burn_in=5)
    with pytest.raises(InputError, match="weight source"):
        pmmh(OUTER, INNER, DATA, weights="smc")


def test_cli_errors_are_one_line(capsys, tmp_path):
    rc = main(["pmmh", str(OUTER), "--inner", str(EX / "normal_mean.stan"), "--data", str(DATA),
               "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("stanlogz: error:") and err.count("\n") == 1
    rc = main(["pmmh", str(OUTER), "--inner", str(INNER), "--data", str(DATA), "--plot",
               str(tmp_path / "p.txt")])
    err = capsys.readouterr().err
    assert rc == 2 and "--plot" in err and err.count("\n") == 1


def test_cli_runs_and_prints_signs(capsys, tmp_path):
    plot = tmp_path / "trace.png"
    rc = main(["pmmh", str(OUTER), "--inner", str(INNER), "--data", str(DATA), "--iter", "200",
               "--warmup", "100", "--seed", "1", "--quiet", "--json", "--plot", str(plot)])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and plot.is_file()
    assert out["iterations"] == 200 and 0 <= out["n_positive"] <= 200
    assert [p["name"] for p in out["parameters"]] == ["h", "J"]
