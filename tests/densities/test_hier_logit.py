"""The hierarchical logistic whose log Z is a 2-D quadrature of products of 1-D ones: checked
against a brute-force tensor Gauss-Legendre rule over every parameter (no factorization, tau
rather than log tau, a fixed box), against the Stan program's density, and its gradient
against finite differences. Everything here is deterministic: no failure probability."""

import math

import numpy as np
import pytest
from scipy import special

from stanlogz.densities.hier_logit import HierarchicalLogitTarget, hier_logit_data
from stanlogz.errors import InputError
from tests.conftest import MODELS


def brute_log_z(n, y, nodes, z_nodes=None):
    """log p(y) by a tensor Gauss-Legendre rule over (mu, tau, z_1..J), mu in [-12, 12]
    (6 prior sd), tau in [0, 6.5] (half-normal tail mass 8e-11), z_j in [-8.5, 8.5]. The
    log integrand is summed over the full tensor grid; each term is evaluated on the axes it
    depends on and broadcast (the same numbers as on a meshgrid, at a fraction of the cost)."""
    rules = [np.polynomial.legendre.leggauss(nodes)] * 2 + [
        np.polynomial.legendre.leggauss(z_nodes or nodes)] * len(n)
    axes = [(-12.0, 12.0), (0.0, 6.5)] + [(-8.5, 8.5)] * len(n)
    k = len(axes)

    def on_axis(v, i):  # v along axis i of the k-D grid
        return v.reshape([-1 if m == i else 1 for m in range(k)])

    pts = [on_axis(0.5 * (b - a) * g + 0.5 * (b + a), i)
           for i, ((a, b), (g, _)) in enumerate(zip(axes, rules, strict=True))]
    logw = sum(np.log(on_axis(0.5 * (b - a) * w, i))
               for i, ((a, b), (_, w)) in enumerate(zip(axes, rules, strict=True)))
    mu, tau = pts[0], pts[1]
    lp = (-0.5 * (mu / 2) ** 2 - math.log(2 * math.sqrt(2 * math.pi))
          + math.log(2) - 0.5 * tau**2 - 0.5 * math.log(2 * math.pi))
    for j, (nj, yj) in enumerate(zip(n, y, strict=True)):
        z = pts[2 + j]
        a = mu + tau * z
        lp = lp + (-0.5 * z * z - 0.5 * math.log(2 * math.pi) + special.gammaln(nj + 1)
                   - special.gammaln(yj + 1) - special.gammaln(nj - yj + 1)
                   + yj * a - nj * np.logaddexp(0.0, a))
    return float(special.logsumexp(lp + logw))


@pytest.mark.parametrize(("n", "y", "nodes", "z_nodes"),
                         [([5], [4], 160, 160), ([10, 5], [2, 5], 80, 56)])
def test_log_z_matches_a_brute_force_rule_over_every_parameter(n, y, nodes, z_nodes):
    # The brute-force rule's own error, measured by raising its nodes: J = 1, 160 -> 220 moved
    # it by 1e-14 (and the two agree to 4e-12); J = 2, outer 80 -> 110 by 3e-10 and z 40 -> 56
    # by 9e-6 (Gauss-Legendre converges geometrically: 56 is within ~1e-6). 1e-5 leaves room
    # for that and nothing else.
    assert abs(HierarchicalLogitTarget(n, y).log_z - brute_log_z(n, y, nodes, z_nodes)) < 1e-5


@pytest.fixture(scope="module")
def four_groups():
    """Data (n = 5, 10, 5, 10; y = 5, 0, 2, 1: both trial counts, y = 0 and y = n) and target
    shared by the gradient and Stan-density checks: building the target runs the log Z
    quadrature, the expensive part, which neither check needs."""
    d = hier_logit_data(4, seed=3)
    return d, HierarchicalLogitTarget(d["n"], d["y"])


def test_gradient_matches_finite_differences(four_groups):
    _, t = four_groups
    x = np.random.default_rng(0).standard_normal(t.dim) * 0.7
    lp, g = t.log_density_gradient(x)
    assert lp == pytest.approx(t.log_density(x))
    h = 1e-6
    fd = np.array([(t.log_density(x + h * e) - t.log_density(x - h * e)) / (2 * h)
                   for e in np.eye(t.dim)])
    # central differences: error ~ h^2 f''' ~ 1e-11 plus rounding ~ 1e-16 * |f| / h ~ 1e-9
    assert np.allclose(g, fd, rtol=0, atol=1e-6)


def test_bad_counts_are_refused_in_one_line():
    with pytest.raises(InputError, match="0 <= y <= n"):
        HierarchicalLogitTarget([5, 5], [6, 1])
    with pytest.raises(InputError, match="at least one group"):
        hier_logit_data(0)


@pytest.mark.stan
def test_the_stan_program_has_the_same_normalized_density(compiled, four_groups):
    d, t = four_groups
    model = compiled(MODELS / "highdim" / "hier_logit_nc.stan", data=d)
    xs = np.random.default_rng(1).standard_normal((5, t.dim))
    ours = t.log_density_many(xs)
    stan = np.array([model.log_density(x) for x in xs])
    assert np.allclose(ours, stan, rtol=0, atol=1e-9)
