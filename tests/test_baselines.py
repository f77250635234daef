"""Baseline estimators on problems with known log Z."""

import math

import numpy as np
import pytest

from stanlogz.errors import EstimationError, InputError
from stanlogz.estimators import get_method
from stanlogz.estimators.baselines import bridge_gaussian, bridge_warp3, ghm, gis, laplace
from stanlogz.target import FunctionTarget
from stanlogz.targets import GaussianTarget

Q = 0.3


def gaussian_problem(seed=0, d=4, log_z=1.3):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((d, d))
    t = GaussianTarget(rng.standard_normal(d), a @ a.T / d + np.eye(d), log_z=log_z)
    return t, t.sample(rng, 4000).reshape(2, 2000, d)


def banana():
    def many(x):
        return -0.5 * x[:, 0] ** 2 - 0.5 * ((x[:, 1] - x[:, 0] ** 2) / Q) ** 2

    rng = np.random.default_rng(1)
    x0 = rng.standard_normal(4000)
    x = np.column_stack([x0, x0**2 + Q * rng.standard_normal(4000)])
    t = FunctionTarget(2, lambda x: float(many(x[None])[0]), log_density_many=many)
    return t, x, math.log(2 * math.pi * Q)


@pytest.mark.parametrize("name", ["gis", "ghm", "bridge-gaussian", "bridge-warp3"])
def test_monte_carlo_baselines_on_gaussian(name):
    t, x = gaussian_problem()
    r = get_method(name)(t, x, seed=3)
    assert r.method == name and r.n_evals > 0 and r.seconds > 0
    # every proposal here is (nearly) the exact Gaussian, so errors are ~1e-3
    assert 0 < r.log_z_se < 0.02
    assert abs(r.log_z - 1.3) < 4 * r.log_z_se


def test_laplace_exact_on_gaussian_and_se_is_nan():
    t, x = gaussian_problem()
    r = laplace(t, x)
    assert abs(r.log_z - 1.3) < 1e-4  # exact up to the finite-difference Hessian
    assert math.isnan(r.log_z_se) and r.warnings


def test_baselines_on_banana():
    t, x, truth = banana()
    # importance sampling from the flow is accurate with an honest se (error < 4 se)
    r = gis(t, x, seed=5)
    assert r.log_z_se < 0.05 and abs(r.log_z - truth) < 4 * r.log_z_se
    # the harmonic mean's weights q/p are heavy-tailed wherever the flow's tails exceed the
    # posterior's: its se is then not to be trusted, and it must say so
    r = ghm(t, x, seed=5)
    assert abs(r.log_z - truth) < 4 * r.log_z_se or any("Pareto" in w for w in r.warnings)
    # Gaussian proposals overlap poorly with a banana: larger se, still an honest one (seeded:
    # errors of 0.5 and 0.2 se, with se 0.037 and 0.024)
    for f in (bridge_gaussian, bridge_warp3):
        r = f(t, x, seed=5)
        assert abs(r.log_z - truth) < 4 * r.log_z_se, f.__name__
    # this banana is a unit-Jacobian shear of a Gaussian, so Laplace happens to be exact
    assert abs(laplace(t, x).log_z - truth) < 1e-4


def test_warp3_is_invariant_to_a_sign_flip_of_the_draws():
    # warp-III symmetrizes the standardized posterior, so a skewed 1-D target is handled
    # better than with a plain Gaussian proposal: the gamma(3) log density on R
    def many(x):
        y = x[:, 0]
        return np.where(y > 0, 2 * np.log(np.abs(y) + 1e-300) - y, -np.inf)

    t = FunctionTarget(1, lambda x: float(many(x[None])[0]), log_density_many=many)
    x = np.random.default_rng(6).gamma(3.0, size=(4000, 1))
    truth = math.log(2.0)  # Gamma(3) = 2
    r3 = bridge_warp3(t, x, seed=1)
    rg = bridge_gaussian(t, x, seed=1)
    assert abs(r3.log_z - truth) < 4 * r3.log_z_se and abs(rg.log_z - truth) < 4 * rg.log_z_se
    assert r3.log_z_se < rg.log_z_se
    # Laplace is off by Stirling's error: log 2 - (3 log 2 - 2 + log(2 pi)/2) = 0.041
    assert laplace(t, x).log_z - truth == pytest.approx(-0.0413, abs=2e-3)


def test_bad_input_is_a_typed_error_naming_it():
    t, x = gaussian_problem()
    nan_draws = x.copy()
    nan_draws[0, 5, 1] = np.nan
    nowhere = FunctionTarget(4, lambda v: np.nan,
                             log_density_many=lambda v: np.full(len(v), np.nan))
    for f in (gis, ghm, bridge_gaussian, bridge_warp3, laplace):
        with pytest.raises(InputError, match="dimension 3 but the target has 4"):
            f(t, np.zeros((10, 3)))
        with pytest.raises(InputError, match="too few draws|at least 2 draws per chain"):
            f(t, x[0, :6] if f is not laplace else x[:, :1])
        with pytest.raises(InputError, match="NaN"):
            f(t, nan_draws)
        with pytest.raises(InputError, match="coordinate 2 of the draws never changes"):
            f(t, np.where(np.arange(4) == 2, 0.7, x))
        with pytest.raises(EstimationError, match="non-finite"):
            f(nowhere, x)
    for f in (gis, bridge_gaussian, bridge_warp3):
        with pytest.raises(InputError, match="n_q must be a positive number"):
            f(t, x, n_q=0)
