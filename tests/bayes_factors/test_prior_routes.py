"""Sensitivity and Savage–Dickey on programs without a zero-observation instance (issue 35,
item 6): the prior from ``lprior``, from ``log_lik`` or from one-observation instances, against
closed forms (benchmarks/truths/bayes_factors/truths.py and the conjugate formulas below).

Stochastic assertions use fixed seeds; each test's tolerance and failure probability are stated
where it asserts (at most 1e-4 per test).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from benchmarks.truths.bayes_factors.truths import (
    derivative,
    normal_log_bf01,
    normal_log_z,
    regression_log_bf01,
)
from stanlogz.bayes_factors.common import load_program, mean_se
from stanlogz.bayes_factors.savage_dickey import savage_dickey
from stanlogz.bayes_factors.sensitivity import sensitivity
from stanlogz.errors import InputError
from stanlogz.stan.settings import NutsArgs
from tests.bayes_factors.test_bayes_factors import Z_TOL, _check_sensitivity
from tests.helpers import run_cli

ROOT = Path(__file__).resolve().parents[2]
T = ROOT / "stan_models" / "tests"
EX = ROOT / "stan_models" / "examples"
NORMAL = json.loads((T / "normal.json").read_text())


def _normal_elpd(d):
    from benchmarks.truths.bayes_factors.truths import normal_elpd_loo

    return lambda a, b: normal_elpd_loo(d, a, b)


def _power_scaled_posterior(d: dict) -> dict[str, float]:
    """d mean / d log α and d sd / d log α at α = 1, in posterior sds, of the conjugate normal
    posterior under prior^α (prior precision α/τ0²) and likelihood^β (data precision βn/σ²)."""
    y, s2, t2 = np.asarray(d["y"], float), d["sigma"] ** 2, d["tau0"] ** 2
    n = y.size
    prec = 1 / t2 + n / s2
    m, sd = (d["mu0"] / t2 + y.sum() / s2) / prec, prec**-0.5
    return {"prior_dmean": (d["mu0"] - m) / (t2 * prec * sd),
            "prior_dsd": -sd**2 / (2 * t2),
            "likelihood_dmean": n * (y.mean() - m) / (s2 * prec * sd),
            "likelihood_dsd": -n * sd**2 / (2 * s2)}


def _scaled_derivative_sd(d: dict) -> dict[str, float]:
    """Per-draw sd of each estimator of :func:`_power_scaled_posterior` (z = (θ − m)/sd, g − E g
    = −a(z² − 1) − b z for g = log p or log L): the mean term z(g − ḡ) has variance 10a² + 2b²,
    the sd term (z² − 1)(g − ḡ)/2 has 14a² + 2.5b² (Gaussian moments)."""
    y, s2, t2 = np.asarray(d["y"], float), d["sigma"] ** 2, d["tau0"] ** 2
    n = y.size
    prec = 1 / t2 + n / s2
    m, sd = (d["mu0"] / t2 + y.sum() / s2) / prec, prec**-0.5
    out = {}
    for power, a, b in (("prior", sd**2 / (2 * t2), sd * (m - d["mu0"]) / t2),
                        ("likelihood", n * sd**2 / (2 * s2), n * sd * (m - y.mean()) / s2)):
        out[f"{power}_dmean"] = math.sqrt(10 * a**2 + 2 * b**2)
        out[f"{power}_dsd"] = math.sqrt(14 * a**2 + 2.5 * b**2)
    return out


@pytest.mark.parametrize("name, route", [("normal_n1", "one observation"),
                                         ("normal_n1_lprior", "lprior")])
def test_sensitivity_int_lower_1_program(compiled, name, route) -> None:
    # normal.stan declared int<lower=1> N: the same closed forms as test_sensitivity_conjugate_
    # normal (13 values within 4.5 se: failure probability < 1e-4 by Bonferroni)
    m = compiled(name)
    r = sensitivity(m, NORMAL, seed=11)
    assert r.prior_route == route and r.to_dict()["prior_route"] == route
    _check_sensitivity(r, lambda a, b: normal_log_z(NORMAL, a, b), _normal_elpd(NORMAL))
    # the power-scaled posterior mean and sd: 4 values within 4.5 se, the se from the per-draw
    # sd of each estimator over an ESS of at least 1000 of the 4000 NUTS draws of a 1-D normal
    # posterior (failure probability 4 · 6.8e-6 < 1e-4)
    truth, sds = _power_scaled_posterior(NORMAL), _scaled_derivative_sd(NORMAL)
    row = r.params[0]
    for key, want in truth.items():
        assert abs(row[key] - want) <= Z_TOL * sds[key] / math.sqrt(1000), (key, row[key], want)
    # both sensitivities exceed the threshold (0.164 and 0.466 exactly): priorsense's label
    assert row["variable"] == "mu" and row["diagnosis"] == "potential prior-data conflict"


def test_lprior_without_its_constants_is_named(compiled) -> None:
    # lprior = -(mu - mu0)² / (2 tau0²) drops -log(tau0 sqrt(2 pi)) = -1.612: lprior +
    # sum(log_lik) misses the program's density by that much, which is warned about; the
    # prior's shape is right, so d log Z / d log alpha = E_post[log p] - E_prior[log p] still
    # meets the closed form within 4.5 se (w.p. 1 - 6.8e-6)
    r = sensitivity(compiled("normal_n1_unnormalized"), NORMAL, seed=11)
    assert r.prior_route == "lprior"
    assert any("lprior + sum(log_lik) differs" in w and "1.61" in w for w in r.warnings)
    s = r.quantities["log_z"]["prior"]
    want = derivative(lambda a: normal_log_z(NORMAL, a, 1.0))
    assert abs(s.derivative - want) <= Z_TOL * s.derivative_se


def test_sensitivity_log_lik_route(compiled) -> None:
    # examples/normal_mean.stan: int<lower=1> N with log_lik; prior N(0, prior_sd²)
    f = EX / "normal_mean.data.json"
    m = compiled("normal_mean", data=f)
    raw = json.loads(f.read_text())
    d = {"y": raw["y"], "sigma": raw["sigma"], "mu0": 0.0, "tau0": raw["prior_sd"]}
    r = sensitivity(m, f, seed=11)
    assert r.prior_route == "log_lik"
    _check_sensitivity(r, lambda a, b: normal_log_z(d, a, b), _normal_elpd(d))


@pytest.mark.parametrize("name", ["normal_n1", "normal_n1_lprior"])
def test_savage_dickey_int_lower_1_program_is_exact(compiled, name) -> None:
    # one parameter: the conditional density is the marginal, by quadrature (se ~1e-12)
    m = compiled(name)
    for mu0 in (0.0, 1.5):
        r = savage_dickey(m, NORMAL, at={"mu": mu0}, seed=3, draws=200)
        assert abs(r.log_bf01 - normal_log_bf01(NORMAL, mu0)) <= 3 * r.se + 1e-9


def test_savage_dickey_log_lik_route_with_nuisance_parameters(compiled) -> None:
    # examples/regression.stan (int<lower=1> N, log_lik) on bf_regression's data: alpha and
    # sigma averaged over, a Monte Carlo se; |z| > 4.5 w.p. 7e-6
    d = json.loads((T / "bf_regression.json").read_text())
    m = compiled("regression", data=d)
    r = savage_dickey(m, d, at={"beta": 0.6}, seed=4, n_grid=401)
    assert r.prior_route == "log_lik"
    assert 0 < r.se < 0.1
    assert abs(r.log_bf01 - regression_log_bf01(d, 0.6)) <= Z_TOL * r.se


def test_prior_draws_by_independence_sampler_match_the_prior(compiled) -> None:
    # regression.stan's prior: alpha ~ N(0, 2²), beta ~ N(0, 1), sigma ~ half-N(0, 1), sampled
    # by independence Metropolis-Hastings on log p(θ, y) − Σ log_lik. Its means, and E[log p],
    # are known; 4 values within 4.5 Monte Carlo se (ESS-based): failure probability
    # 4 · 6.8e-6 < 1e-4
    d = json.loads((T / "bf_regression.json").read_text())
    prog = load_program(compiled("regression", data=d), d, seed=2)
    anchor = np.random.default_rng(0).normal([0.4, 0.5, -0.3], 0.15, (400, 3))  # posterior-like
    draws = prog.sample_prior(NutsArgs(chains=4, draws=1000), anchor, seed=5)
    assert draws.unconstrained.shape == (4, 1000, 3) and not draws.warnings
    x = draws.flat_unconstrained()
    theta = prog.model.constrain_many(x)
    c = lambda v: v.reshape(4, -1)  # noqa: E731
    half_normal_e_log = math.log(2) - 0.5 * math.log(2 * math.pi) - 0.5
    e_log_p = (-0.5 * math.log(2 * math.pi * 4) - 0.5) + (-0.5 * math.log(2 * math.pi) - 0.5) \
        + half_normal_e_log
    for values, want in ((theta[:, 0], 0.0), (theta[:, 1], 0.0),
                         (theta[:, 2], math.sqrt(2 / math.pi)), (prog.log_prior(x), e_log_p)):
        v, se = mean_se(c(values))
        assert 0 < se < 0.1 and abs(v - want) <= Z_TOL * se, (v, se, want)


def test_no_way_to_the_prior_is_refused_naming_each_route(compiled) -> None:
    m = compiled("normal_n5")
    with pytest.raises(InputError) as e:
        sensitivity(m, NORMAL, draws=100)
    msg = str(e.value)
    assert "\n" not in msg
    for what in ("lprior", "zero observations", "log_lik", "one observation",
                 "add `real lprior = ...;`", "<lower=0>"):
        assert what in msg, (what, msg)


def test_prior_refusal_has_no_raw_stan_text_and_names_the_lprior_line(compiled) -> None:
    # posteriordb's one_comp_mm_elim_abs (int<lower=1> N_t): the refusal quoted Stan's
    # "variable 'N_t': N_t is 0, but must be greater than or equal to 1.000000 (in
    # 'model.stan', line 32, ...)"; now one clean line whose lprior is the program's own prior
    m = compiled("ar1_n1")
    with pytest.raises(InputError) as e:
        load_program(m, json.loads((T / "ar1_n1.json").read_text()))
    msg = str(e.value)
    assert "\n" not in msg and "(in '" not in msg and "must be greater" not in msg, msg
    assert "refuses N = 0 (its declaration needs N >= 1)" in msg
    assert "add `real lprior = normal_lpdf(phi | 0, 0.5) + normal_lpdf(s | 0, 1);`" in msg


def test_dependent_observations_are_refused_not_given_a_wrong_prior(compiled) -> None:
    # AR(1): the one-observation identity would return the prior minus a transition term; the
    # density-difference check finds the per-observation terms do not add up, and with no
    # lprior, zero-observation instance or log_lik the program is refused
    m = compiled("ar1_n1")
    with pytest.raises(InputError, match="one observation: .*not a pointwise log-likelihood"):
        savage_dickey(m, json.loads((T / "ar1_n1.json").read_text()), at={"phi": 0.0},
                      draws=100)


def test_cli_int_lower_1_program(compiled, capfd) -> None:
    compiled("normal_n1")
    compiled("normal_n5")
    stan, data = str(T / "normal_n1.stan"), str(T / "normal.json")
    rc, stdout, stderr = run_cli(capfd, "sensitivity", stan, "--data", data, "--json",
                                 "--seed", "1", "--quiet")
    assert rc == 0, stderr
    out = json.loads(stdout)
    assert out["prior_route"] == "one observation"
    # d log Z / d log α = 0.2652 (closed form) within 4.5 se (w.p. 1 − 6.8e-6)
    s = out["log_z"]["prior"]
    want = derivative(lambda a: normal_log_z(NORMAL, a, 1.0))
    assert 0 < s["derivative_se"] < 0.1
    assert abs(s["derivative"] - want) <= Z_TOL * s["derivative_se"]
    rc, stdout, stderr = run_cli(capfd, "savage-dickey", stan, "--data", data, "--at", "mu=0",
                                 "--json", "--seed", "1", "--quiet", "--draws", "200")
    assert rc == 0, stderr
    assert abs(json.loads(stdout)["log_bf01"]["value"] - normal_log_bf01(NORMAL, 0.0)) < 1e-8
    rc, _, stderr = run_cli(capfd, "savage-dickey", str(T / "normal_n5.stan"), "--data", data,
                            "--at", "mu=0")
    assert rc == 2 and stderr.count("\n") == 1, stderr
    assert "add `real lprior = ...;`" in stderr
