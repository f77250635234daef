"""Prior normalization: bounded parameters whose prior has mass other than 1 inside their bounds
(half-Cauchy without T[0, ], implicit uniform) are found in the code, named, and their log mass
is the closed form; the prior-normalized log Z equals the quadrature truth; parameters without
a prior are named before any sampling."""

import json
import math

import numpy as np
import pytest
from scipy import integrate, stats

from stanlogz.api import evidence, mass_warnings, prior_warnings
from stanlogz.estimators.base import EvidenceResult
from stanlogz.stan.priors import check_priors, evaluate, program_priors
from stanlogz.toolchain import find_toolchain
from stanlogz.toolchain.stanc import parameters_without_prior
from tests.conftest import MODELS

TESTS = MODELS / "tests"
DATA = json.loads((TESTS / "scale.json").read_text())

CODE = """
data { int K; real s; real lo; }
parameters {
  real mu;
  real<lower=0> tau;            // half-Cauchy written without T[0, ]: mass 1/2
  real<lower=0, upper=10> sig;  // implicit uniform: mass 10
  vector<lower=0>[K] lam;       // half-normal with a data scale, K elements: mass 2^-K
  real<lower=-1, upper=1> r;    // uniform on its own bounds: mass 1
  real<lower=0> e;              // exponential: support is the bound, mass 1
  real<lower=lo> h;             // normal(1, 2) above a data bound
  real<lower=0> t;              // truncated: normalized
  real<lower=0> u;              // bound depends on nothing, prior in a loop of indices
  real<lower=mu> v;             // bound depends on a parameter: not checked
}
model {
  tau ~ cauchy(0, 5);
  lam ~ normal(0, s);
  r ~ uniform(-1, 1);
  target += exponential_lpdf(e | 1.5);
  h ~ normal(1, 2);
  t ~ normal(0, 1) T[0, ];
  for (k in 1:K) u ~ normal(0, k);
  v ~ normal(mu, 1);
  mu ~ normal(0, 1);
}
"""


def test_masses_are_the_closed_forms():
    c = check_priors(CODE, {"K": 3, "s": 2.0, "lo": 0.5}, no_prior=["sig", "lam"])
    got = {m.name: m for m in c.masses}
    assert set(got) == {"tau", "sig", "lam", "h"}
    assert got["tau"].log_mass == pytest.approx(-math.log(2), abs=1e-12)
    assert got["sig"].log_mass == pytest.approx(math.log(10), abs=1e-12)
    assert got["sig"].prior == "implicit uniform"
    assert got["lam"].n_elements == 3
    assert got["lam"].log_mass == pytest.approx(-3 * math.log(2), abs=1e-12)
    # P(X > 0.5) for X ~ normal(1, 2) is Phi(0.25).
    assert got["h"].log_mass == pytest.approx(math.log(stats.norm.cdf(0.25)), abs=1e-12)
    assert c.log_mass == pytest.approx(sum(m.log_mass for m in c.masses))
    assert set(c.normalized) == {"r", "e", "t"}
    assert set(c.unchecked) == {"u", "v"}
    # lam has a prior statement (its scale is data, which is what pedantic mode flags): only
    # parameters without any statement on themselves count as having no prior.
    assert c.no_prior == ["sig"]
    text = {m.name: m.describe() for m in c.masses}
    assert "mass 0.5" in text["tau"] and "log 2" in text["tau"] and "T[0, ]" in text["tau"]
    assert "no prior statement" in text["sig"] and "log 10" in text["sig"]


def test_implicit_uniform_on_a_unit_interval_has_mass_one():
    c = check_priors("parameters { real<lower=0, upper=1> p; } model { }", no_prior=["p"])
    assert c.masses == [] and c.normalized == ["p"] and c.no_prior == ["p"]


def test_prior_through_a_transformed_parameter_is_a_prior():
    # posteriordb's bball_drive_event_0-hmm_drive_0: theta1, theta2 get their Dirichlet priors
    # through theta (target += dirichlet_lpdf(theta[k] | ...)); stanc's pedantic mode lists
    # them without a prior, which is not a reason to warn. rho, copied into an unused
    # transformed parameter, keeps its warning.
    code = """
    data { int K; matrix[K, K] alpha; }
    parameters { simplex[K] theta1; simplex[K] theta2; simplex[K] rho; }
    transformed parameters {
      array[K] simplex[K] theta;
      vector[K] r = rho;
      theta[1] = theta1;
      theta[2] = theta2;
    }
    model {
      for (k in 1:K) {
        target += dirichlet_lpdf(theta[k] | alpha[k, :]');
      }
    }
    """
    c = check_priors(code, {"K": 2, "alpha": [[1, 1], [1, 1]]},
                     no_prior=["theta2", "theta1", "rho"])
    assert c.no_prior == ["rho"]
    assert len(prior_warnings(c)) == 1 and "parameter rho has no prior" in prior_warnings(c)[0]


def test_far_tail_mass_is_accurate():
    # P(X > 40) for X ~ normal(0, 1): the complement 1 - cdf would round to 0.
    c = check_priors("parameters { real<lower=40> a; } model { a ~ normal(0, 1); }")
    assert c.masses[0].log_mass == pytest.approx(stats.norm.logsf(40), rel=1e-9)


def test_expressions_from_literals_and_data():
    assert evaluate("2.5e-1 * s^2 + sqrt(4)", {"s": 2}) == pytest.approx(3.0)
    assert evaluate("-lo", {"lo": 1.5}) == -1.5
    assert evaluate("mu", {}) is None  # a parameter, not data
    assert evaluate("y[1]", {"y": [1.0]}) is None


def test_stanc_pedantic_names_parameters_without_prior():
    code = (TESTS / "flat_mean.stan").read_text()
    assert parameters_without_prior(find_toolchain().stanc, code) == ["mu"]
    assert parameters_without_prior(find_toolchain().stanc, "parameters { real x }") is None


def test_no_prior_warning_names_the_parameter(compiled):
    m = compiled(TESTS / "flat_mean.stan", DATA)
    ws = prior_warnings(program_priors(m))
    assert len(ws) == 1 and "parameter mu has no prior" in ws[0], ws


def _log_z_scale_model(log_prior, upper=np.inf):
    """log of int prior(sigma) prod normal(y | 0, sigma) dsigma by adaptive quadrature."""
    y = np.array(DATA["y"])

    def log_f(s):
        return log_prior(s) + float(np.sum(stats.norm.logpdf(y, 0, s)))

    grid = np.linspace(0.05, 8, 400)
    shift = max(log_f(s) for s in grid)
    val, err = integrate.quad(lambda s: math.exp(log_f(s) - shift), 0, upper, limit=500,
                              epsabs=0, epsrel=1e-10)
    return shift + math.log(val)


@pytest.mark.parametrize("program, log_prior, upper, log_mass", [
    ("half_cauchy_scale", lambda s: stats.halfcauchy.logpdf(s, 0, DATA["s"]), np.inf,
     -math.log(2)),
    ("implicit_uniform_scale", lambda s: -math.log(10.0), 10.0, math.log(10)),
])
def test_prior_normalized_log_z_equals_the_closed_form(program, log_prior, upper, log_mass):
    truth = _log_z_scale_model(log_prior, upper)  # the model with a normalized prior
    r = evidence(TESTS / f"{program}.stan", DATA, seed=11)
    assert r.diagnostics["prior_check"]["log_mass"] == pytest.approx(log_mass, abs=1e-12)
    assert any(w.startswith("parameter sigma") for w in r.warnings), r.warnings
    fixed = r.diagnostics["log_z_prior_normalized"]
    # gbs's se on a 1-D posterior from 4000 NUTS draws: |error| < 4.5 se fails with probability
    # < 1e-5 for a calibrated se; the program's own log Z is off by exactly the log mass.
    assert abs(fixed - truth) < 4.5 * r.log_z_se, (fixed, truth, r.log_z_se)
    assert r.log_z - fixed == pytest.approx(log_mass, abs=1e-12)
    n = evidence(TESTS / f"{program}.stan", DATA, seed=11, normalize_prior=True)
    assert n.log_z == pytest.approx(fixed, abs=1e-12)
    assert n.diagnostics["log_z_program"] == pytest.approx(r.log_z, abs=1e-12)


def test_compare_warns_when_prior_masses_differ():
    def res(lm):
        return EvidenceResult("gbs", 0.0, 0.1, diagnostics={"prior_check": {"log_mass": lm}})

    assert mass_warnings(["a", "b"], [res(0.0), res(0.0)]) == []
    (w,) = mass_warnings(["a", "b"], [res(-math.log(2)), res(0.0)])
    assert "a -0.6931" in w and "b 0" in w


def test_cli_warns_before_sampling_and_normalizes(capsys):
    from stanlogz.cli import main

    rc = main(["--json", "--seed", "3", "evidence", str(TESTS / "half_cauchy_scale.stan"),
               "--data", str(TESTS / "scale.json"), "--chains", "2", "--warmup", "200",
               "--draws", "300", "--normalize-prior"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    d = json.loads(out)
    assert d["log_z"] == pytest.approx(d["diagnostics"]["log_z_prior_normalized"], abs=1e-12)
    assert d["log_z"] - d["diagnostics"]["log_z_program"] == pytest.approx(math.log(2))
    # The parameter is named once, before the sampling's progress lines end.
    assert err.count("parameter sigma: cauchy(0, 2.5) has mass 0.5") == 1, err
