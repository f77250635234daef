"""Which data values the program's text makes Gaussian (stanlogz.stan.code.gaussian_variate):
the conditional pass skips its far-mode search on them, so every other use of the value must
answer False. Exact (textual) checks."""

from __future__ import annotations

import pytest

from stanlogz.stan.code import gaussian_variate

BASE = ("data {{ int N; vector{bound}[N] y; vector[N] x; }}\n{td}"
        "parameters {{ real a; real<lower=0> s; }}\nmodel {{ {model} }}\n{gq}")


def _code(model: str, bound: str = "", td: str = "", gq: str = "") -> str:
    return BASE.format(model=model, bound=bound, td=td, gq=gq)


@pytest.mark.parametrize("model", [
    "y ~ normal(a + x, s);",
    "for (n in 1:N) y[n] ~ normal(a * x[n], s);",
    "target += normal_lpdf(y | a, s);",
    "target += normal_lupdf(y | a, s); a ~ normal(0, 1); // y ~ student_t(3, a, s);",
    "target += std_normal_lpdf(y);",
    "if (N > 0) y ~ normal(a, s);",
    "target += normal_id_glm_lpdf(y | to_matrix(x), a, [s]', 1);",
])
def test_normal_variates_alone_are_gaussian(model):
    assert gaussian_variate(_code(model), "y")


@pytest.mark.parametrize("model", [
    "for (n in 2:N) y[n] ~ normal(a * y[n - 1], s);",  # a lag: y in the mean
    "target += log_sum_exp(normal_lpdf(y | a, s), normal_lpdf(y | -a, s));",  # a mixture
    "log(y) ~ normal(a, s);",  # a transform of the value
    "(y - a) ~ normal(0, s);",
    "y ~ normal(a, s) T[0, ];",  # truncated
    "target += normal_lpdf(y | a, s) * 2;",  # more than the statement
    "target += normal_lpdf(y | a, s) + normal_lpdf(y | 0, 10);",
    "y ~ student_t(3, a, s);",  # another family
    "y ~ normal(a, s); target += -0.1 * dot_self(y);",
    "y ~ normal(mean(y), s);",
    "if (y[1] > 0) x ~ normal(a, s);",
])
def test_any_other_use_is_not(model):
    assert not gaussian_variate(_code(model), "y")


def test_declaration_and_other_blocks():
    ok = "y ~ normal(a, s);"
    assert not gaussian_variate(_code(ok, bound="<lower=0>"), "y")  # truncated by its bound
    assert gaussian_variate(_code(ok, bound="<lower=0>"), "y", bounded=True)  # caller checks
    assert not gaussian_variate(_code(ok, td="transformed data { real m = mean(y); }\n"), "y")
    assert gaussian_variate(_code(ok, gq="generated quantities { real z = y[1]; }"), "y")
    assert not gaussian_variate(_code(ok), "x") and not gaussian_variate(_code(ok), "yy")
    assert not gaussian_variate(None, "y")
