"""Prior-normalization check (stanlogz.stan.priors) on multi-name declarations and on
truncations whose bounds differ from the declared ones (issue 35, item 7). Masses are closed
forms from scipy's normal and Cauchy CDFs."""

import math

import pytest
from scipy import stats

from stanlogz.stan.priors import check_priors

CODE = """
parameters {
  real<lower=0> a, b;                 // two half-densities without T[0, ]: mass 1/2 each
  vector<lower=0, upper=2>[3] c, d;   // c uniform on its bounds; d normal(0, 1) cut to (0, 2)
  real<lower=0> t_wide;               // T[-1, ]: wider than the declared range
  real<lower=0> t_same;               // T[0, ]: exactly the declared range
  real<lower=0> t_inside;             // T[1, 3]: inside the declared range, normalized
  real<lower=0> t_both;               // T[-2, 2]: half of it below the declared bound
  real<lower=0> t_data;               // T[lo, ] with lo from the data
  real<lower=0> t_param;              // T[mu, ]: a bound that is a parameter
  real mu;
}
model {
  a ~ cauchy(0, 5);
  b ~ normal(0, 1);
  c ~ uniform(0, 2);
  d ~ normal(0, 1);
  t_wide ~ normal(0, 1) T[-1, ];
  t_same ~ normal(0, 1) T[0, ];
  t_inside ~ normal(0, 1) T[1, 3];
  t_both ~ normal(0, 1) T[-2, 2];
  t_data ~ normal(0, 1) T[lo, ];
  t_param ~ normal(0, 1) T[mu, ];
  mu ~ normal(0, 1);
}
"""


@pytest.fixture(scope="module")
def check():
    return check_priors(CODE, {"lo": -0.5})


def test_every_name_of_a_multi_name_declaration_is_checked(check):
    got = {m.name: m for m in check.masses}
    # before the fix `a` was skipped and `b` unchecked ("?" type)
    assert got["a"].log_mass == pytest.approx(-math.log(2), abs=1e-12)
    assert got["b"].log_mass == pytest.approx(-math.log(2), abs=1e-12)
    assert got["d"].n_elements == 3
    assert got["d"].log_mass == pytest.approx(
        3 * math.log(stats.norm.cdf(2) - 0.5), abs=1e-12)
    assert "c" in check.normalized and "a" not in check.unchecked


def test_a_truncation_normalizes_only_the_mass_inside_the_declared_range(check):
    got = {m.name: m for m in check.masses}
    n = stats.norm
    # T[L, U] divides by P(L < X < U); the declared lower bound 0 keeps P(0 < X < U)
    assert got["t_wide"].log_mass == pytest.approx(math.log(0.5 / n.sf(-1)), abs=1e-12)
    assert got["t_both"].log_mass == pytest.approx(
        math.log((n.cdf(2) - 0.5) / (n.cdf(2) - n.cdf(-2))), abs=1e-12)
    assert got["t_data"].log_mass == pytest.approx(math.log(0.5 / n.sf(-0.5)), abs=1e-12)
    assert {"t_same", "t_inside"} <= set(check.normalized)
    assert "T[" in check.unchecked["t_param"]
    # the advice is the declared range's truncation, not a second T[...]
    line = got["t_wide"].describe()
    assert "normal(0, 1) T[-1, ] has mass" in line and "t_wide ~ normal(0, 1) T[0, ]" in line
