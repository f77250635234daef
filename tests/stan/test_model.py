"""StanModel: log densities against analytic values, Jacobians, transforms, data errors,
thread safety and compatibility with the PyPI bridgestan class."""

from __future__ import annotations

import json
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from stanlogz.densities.target import Target
from stanlogz.errors import DataError, InputError
from stanlogz.stan.model import StanModel
from stanlogz.toolchain import build_count

MODELS = Path(__file__).resolve().parents[2] / "stan_models" / "tests"
NORMAL_DATA = json.loads((MODELS / "normal.json").read_text())
TRANSFORMS_DATA = json.loads((MODELS / "transforms.json").read_text())


@pytest.fixture(scope="module")
def normal(compiled) -> StanModel:
    return compiled("normal")


@pytest.fixture(scope="module")
def transforms(compiled) -> StanModel:
    return compiled("transforms")


def normal_log_joint(mu: float, d: dict) -> float:
    y = np.asarray(d["y"])
    return float(stats.norm(d["mu0"], d["tau0"]).logpdf(mu)
                 + stats.norm(mu, d["sigma"]).logpdf(y).sum())


def test_normal_full_density_keeps_all_constants(normal):
    # propto=False must give the normalized log joint exactly (up to rounding).
    assert isinstance(normal, Target)
    assert normal.dim == 1 and normal.param_names() == ["mu"]
    for mu in (-1.3, 0.0, 0.7, 2.5):
        assert normal.log_density(np.array([mu])) == pytest.approx(
            normal_log_joint(mu, NORMAL_DATA), rel=1e-12, abs=1e-12)


def test_normal_propto_drops_constants(normal):
    # propto=True keeps only the terms that depend on mu: the two quadratic forms.
    d = NORMAL_DATA
    y = np.asarray(d["y"])
    for mu in (-0.5, 1.0, 3.0):
        expected = -0.5 * ((mu - d["mu0"]) / d["tau0"]) ** 2 - 0.5 * np.sum(
            ((y - mu) / d["sigma"]) ** 2)
        got = normal.log_density(np.array([mu]), propto=True)
        assert got == pytest.approx(expected, rel=1e-12, abs=1e-12)
        assert got != pytest.approx(normal.log_density(np.array([mu])), abs=1e-3)


def test_normal_gradient_and_hessian_analytic(normal):
    d = NORMAL_DATA
    y = np.asarray(d["y"])
    n = len(y)
    mu = 0.4
    lp, g = normal.log_density_gradient(np.array([mu]))
    expected_g = -(mu - d["mu0"]) / d["tau0"] ** 2 + np.sum(y - mu) / d["sigma"] ** 2
    assert lp == pytest.approx(normal_log_joint(mu, d), rel=1e-12)
    assert g[0] == pytest.approx(expected_g, rel=1e-12)
    lp2, g2, h = normal.log_density_hessian(np.array([mu]))
    assert lp2 == pytest.approx(lp) and g2 == pytest.approx(g)
    # Hessian is a central difference of exact gradients; the density is quadratic, so only
    # rounding error (~eps/h ~ 1e-10) remains.
    assert h[0, 0] == pytest.approx(-1 / d["tau0"] ** 2 - n / d["sigma"] ** 2, rel=1e-7)


def test_domain_error_gives_minus_inf_and_wrong_dim_raises(normal):
    assert normal.log_density(np.array([np.nan])) == -np.inf
    lp, g = normal.log_density_gradient(np.array([np.inf]))
    assert lp == -np.inf and np.isnan(g).all()
    many = normal.log_density_many(np.array([[0.0], [np.nan], [1.0]]))
    assert np.isfinite(many[[0, 2]]).all() and many[1] == -np.inf
    with pytest.raises(InputError, match=r"shape \(1,\)"):
        normal.log_density(np.zeros(3))
    for bad in (0.5, np.zeros((1, 1)), [[0.5]]):  # no silent broadcasting
        with pytest.raises(InputError, match=r"shape \(1,\)"):
            normal.log_density_gradient(bad)
    with pytest.raises(InputError, match=r"\(n, 1\)"):
        normal.log_density_many(np.zeros((4, 2)))


def _transforms_constrained_parts(model: StanModel, x: np.ndarray) -> dict:
    theta = model.constrain(x, include_tp=True)
    names = model.param_names(include_tp=True)
    get = {n: v for n, v in zip(names, theta, strict=True)}
    L = np.array([[get[f"L.{i}.{j}"] for j in (1, 2, 3)] for i in (1, 2, 3)])
    return {"b": get["b"], "w": np.array([get[f"w.{i}"] for i in (1, 2, 3)]), "L": L,
            "k": get["k"], "b2": get["b2"]}


def transforms_log_density_no_jacobian(p: dict) -> float:
    """The transforms program's density without the LKJ normalizing constant."""
    d = TRANSFORMS_DATA
    ts = np.asarray(d["ts"])
    lkj = 3 * np.log(p["L"][1, 1]) + 2 * np.log(p["L"][2, 2])  # (K - k + 2 eta - 2) log L_kk
    return float(stats.norm(0.5, 1).logpdf(p["b"])
                 + stats.dirichlet(d["alpha"]).logpdf(p["w"])
                 + lkj
                 + stats.lognorm(0.5).logpdf(p["k"])
                 + stats.norm(np.exp(-p["k"] * ts), 0.1).logpdf(d["obs"]).sum())


def test_transforms_density_matches_analytic_up_to_lkj_constant(transforms):
    rng = np.random.default_rng(0)
    xs = rng.normal(scale=0.7, size=(5, transforms.dim))
    ours = np.array([transforms.log_density(x, jacobian=False) for x in xs])
    ref = np.array([transforms_log_density_no_jacobian(_transforms_constrained_parts(transforms, x))
                    for x in xs])
    # Only the LKJ normalizing constant differs, and it is the same at every point. The ODE is
    # solved to 1e-10, so the residual is rounding-level.
    diff = ours - ref
    assert np.ptp(diff) < 1e-6
    parts = _transforms_constrained_parts(transforms, xs[0])
    assert parts["w"].sum() == pytest.approx(1.0, abs=1e-14)
    assert np.allclose(np.sum(parts["L"] ** 2, axis=1), 1.0, atol=1e-14)
    assert -1 < parts["b"] < 2 and parts["k"] > 0 and parts["b2"] == pytest.approx(parts["b"] ** 2)


def test_transforms_jacobian_equals_log_det_of_constrain_map(transforms):
    # lp(jacobian=True) - lp(jacobian=False) must be log|det d(free constrained coords)/dx|:
    # b, the first K-1 simplex entries, the strictly lower Cholesky entries, and k.
    names = transforms.param_names()
    free = [names.index(n) for n in ("b", "w.1", "w.2", "L.2.1", "L.3.1", "L.3.2", "k")]
    rng = np.random.default_rng(1)
    for x in rng.normal(scale=0.6, size=(3, transforms.dim)):
        h = 1e-5
        J = np.empty((len(free), transforms.dim))
        for j in range(transforms.dim):
            e = np.zeros(transforms.dim)
            e[j] = h
            up, down = transforms.constrain(x + e), transforms.constrain(x - e)
            J[:, j] = (up[free] - down[free]) / (2 * h)
        log_det = np.linalg.slogdet(J)[1]
        jac = transforms.log_density(x) - transforms.log_density(x, jacobian=False)
        # Central differences with h=1e-5 are accurate to ~1e-9 per entry.
        assert jac == pytest.approx(log_det, abs=1e-6)


@pytest.mark.parametrize("propto,jacobian", [(False, True), (True, True), (False, False)])
def test_transforms_gradient_matches_finite_differences(transforms, propto, jacobian):
    rng = np.random.default_rng(2)
    x = rng.normal(scale=0.5, size=transforms.dim)
    lp, g = transforms.log_density_gradient(x, propto=propto, jacobian=jacobian)
    # The ODE solver's adaptive steps differ when it also integrates sensitivities, so values
    # from the double and the autodiff paths agree to the solver tolerance (1e-10), not bitwise.
    assert lp == pytest.approx(transforms.log_density(x, propto=propto, jacobian=jacobian),
                               rel=1e-9)
    h = 1e-5
    fd = np.array([
        (transforms.log_density(x + h * e, propto=propto, jacobian=jacobian)
         - transforms.log_density(x - h * e, propto=propto, jacobian=jacobian)) / (2 * h)
        for e in np.eye(transforms.dim)])
    # Central-difference truncation error ~h^2 * f''' ~ 1e-8 on O(100) third derivatives.
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-5)
    _, _, H = transforms.log_density_hessian(x, propto=propto, jacobian=jacobian)
    np.testing.assert_allclose(H, H.T, atol=1e-12)
    fdh = np.array([(transforms.log_density_gradient(x + h * e, propto=propto,
                                                     jacobian=jacobian)[1]
                     - transforms.log_density_gradient(x - h * e, propto=propto,
                                                       jacobian=jacobian)[1]) / (2 * h)
                    for e in np.eye(transforms.dim)])
    np.testing.assert_allclose(H, 0.5 * (fdh + fdh.T), rtol=1e-4, atol=1e-4)


def test_batched_calls_match_single_calls(transforms):
    rng = np.random.default_rng(3)
    xs = rng.normal(size=(20, transforms.dim))
    lps, grads = transforms.log_density_gradient_many(xs)
    values = transforms.log_density_many(xs)
    # Double and autodiff ODE solves agree to the solver tolerance (see the gradient test).
    np.testing.assert_allclose(lps, values, rtol=1e-9)
    for i in (0, 7, 19):
        lp, g = transforms.log_density_gradient(xs[i])
        assert lp == lps[i] and transforms.log_density(xs[i]) == values[i]
        np.testing.assert_array_equal(g, grads[i])
    thetas = transforms.constrain_many(xs)
    np.testing.assert_array_equal(thetas[4], transforms.constrain(xs[4]))


def test_constrain_unconstrain_round_trip(transforms):
    rng = np.random.default_rng(4)
    xs = rng.normal(size=(10, transforms.dim))
    thetas = transforms.constrain_many(xs)
    np.testing.assert_allclose(transforms.unconstrain_many(thetas), xs, atol=1e-8)
    parts = _transforms_constrained_parts(transforms, xs[0])
    from_dict = transforms.unconstrain_dict(
        {"b": parts["b"], "w": parts["w"], "L": parts["L"], "k": parts["k"]})
    np.testing.assert_allclose(from_dict, xs[0], atol=1e-8)
    with pytest.raises(InputError, match="shape"):
        transforms.unconstrain(np.zeros(3))
    with pytest.raises(InputError, match="variable 'k'.*line 19"):
        transforms.unconstrain_dict({"b": 0.1, "w": parts["w"], "L": parts["L"], "k": -1.0})


def test_constrain_generated_quantities_seeded(transforms):
    x = np.zeros(transforms.dim)
    names = transforms.param_names(include_tp=True, include_gq=True)
    assert names[-2:] == ["b2", "k_rep"]
    a = transforms.constrain(x, include_tp=True, include_gq=True, seed=5)
    b = transforms.constrain(x, include_tp=True, include_gq=True, seed=5)
    c = transforms.constrain(x, include_tp=True, include_gq=True, seed=6)
    assert a.shape == (transforms.param_num(include_tp=True, include_gq=True),)
    assert a[-1] == b[-1] and a[-1] != c[-1] and a[-1] > 0


def test_concurrent_threads_agree_with_serial(transforms):
    rng = np.random.default_rng(5)
    xs = rng.normal(scale=0.5, size=(8, 200, transforms.dim))
    serial = [transforms.log_density_gradient_many(chunk) for chunk in xs]
    results: list = [None] * len(xs)

    def work(i: int) -> None:
        singles = [transforms.log_density_gradient(x) for x in xs[i][:50]]
        batch = transforms.log_density_gradient_many(xs[i])
        results[i] = (singles, batch)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(xs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, (singles, (lps, grads)) in enumerate(results):
        np.testing.assert_array_equal(lps, serial[i][0])
        np.testing.assert_array_equal(grads, serial[i][1])
        for j, (lp, g) in enumerate(singles):
            assert lp == serial[i][0][j]
            np.testing.assert_array_equal(g, serial[i][1][j])


def test_with_data_reuses_library(normal):
    before = build_count()
    other = normal.with_data({**NORMAL_DATA, "y": [5.0, 6.0], "N": 2})
    assert build_count() == before and other.lib_path == normal.lib_path
    assert other.log_density(np.array([1.0])) == pytest.approx(
        normal_log_joint(1.0, {**NORMAL_DATA, "y": [5.0, 6.0]}), rel=1e-12)
    # The original keeps its own data.
    assert normal.log_density(np.array([1.0])) == pytest.approx(
        normal_log_joint(1.0, NORMAL_DATA), rel=1e-12)


def test_data_forms_are_equivalent(normal, tmp_path):
    path = tmp_path / "d.json"
    path.write_text(json.dumps(NORMAL_DATA))
    x = np.array([0.3])
    ref = normal.log_density(x)
    arrays = {**NORMAL_DATA, "y": np.array(NORMAL_DATA["y"]), "N": np.int64(5)}
    for data in (path, str(path), json.dumps(NORMAL_DATA), arrays):
        assert normal.with_data(data).log_density(x) == ref


def test_missing_data_field_names_it(normal):
    bad = {k: v for k, v in NORMAL_DATA.items() if k != "sigma"}
    with pytest.raises(DataError, match="variable 'sigma'") as info:
        normal.with_data(bad)
    assert "\n" not in str(info.value)


def test_misshaped_data_names_it(normal):
    with pytest.raises(DataError, match="variable 'y'.*dims declared=\\(5\\); dims found=\\(3\\)"):
        normal.with_data({**NORMAL_DATA, "y": [1.0, 2.0, 3.0]})
    with pytest.raises(DataError, match="variable 'sigma': sigma is -1, but must be greater"):
        normal.with_data({**NORMAL_DATA, "sigma": -1.0})


def test_unreadable_data(normal, tmp_path):
    with pytest.raises(DataError, match="not found"):
        normal.with_data(tmp_path / "missing.json")
    with pytest.raises(DataError, match="JSON"):
        normal.with_data('{"N": ')
    with pytest.raises(DataError, match="not list"):
        normal.with_data([1.0, 2.0])


def test_pypi_bridgestan_class_loads_our_library(transforms):
    import bridgestan

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a version mismatch would warn
        bs = transforms.bridgestan_model()
    assert bs.model_version() == tuple(int(p) for p in bridgestan.__version__.split("."))
    assert bs.param_names(include_tp=True, include_gq=True) == transforms.param_names(True, True)
    assert bs.param_unc_names() == transforms.param_unc_names()
    x = np.random.default_rng(6).normal(size=transforms.dim)
    for propto in (False, True):
        lp, g = bs.log_density_gradient(x, propto=propto, jacobian=True)
        lp2, g2 = transforms.log_density_gradient(x, propto=propto)
        assert lp == lp2
        np.testing.assert_array_equal(g, g2)
    theta = bs.param_constrain(x, include_tp=True)
    np.testing.assert_array_equal(theta, transforms.constrain(x, include_tp=True))
    np.testing.assert_allclose(bs.param_unconstrain(bs.param_constrain(x)), x, atol=1e-8)
    init = bs.param_initialize(bs.new_rng(3), {"k": 0.5})
    assert init[-1] == pytest.approx(np.log(0.5)) and np.isfinite(bs.log_density(init))
    lp, g, H = bs.log_density_hessian(x)
    assert H.shape == (transforms.dim, transforms.dim)
    v = np.ones(transforms.dim)
    _, hvp = bs.log_density_hessian_vector_product(x, v)
    np.testing.assert_allclose(hvp, H @ v, rtol=1e-4, atol=1e-4)


def test_library_without_stanlogz_entries_falls_back_to_bridgestan(transforms):
    # Libraries built with backend="bridgestan" only have the BridgeStan ABI; simulate one.
    from stanlogz.errors import ToolchainError

    plain = transforms.with_data(TRANSFORMS_DATA)
    plain._has_many = False
    plain._has_nuts = False
    xs = np.random.default_rng(7).normal(size=(4, transforms.dim))
    np.testing.assert_array_equal(plain.log_density_many(xs), transforms.log_density_many(xs))
    lps, grads = plain.log_density_gradient_many(xs)
    ref_lps, ref_grads = transforms.log_density_gradient_many(xs)
    np.testing.assert_array_equal(lps, ref_lps)
    np.testing.assert_array_equal(grads, ref_grads)
    np.testing.assert_array_equal(plain.constrain_many(xs), transforms.constrain_many(xs))
    with pytest.raises(ToolchainError, match="cmdstanpy"):
        plain.nuts()
