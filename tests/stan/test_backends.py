"""The interpreted density backend (stanli) against closed forms and the compiled backend.

Densities are compared to 1e-10 relative: both backends run stan-math's same double-precision
code (measured differences <= 5e-15, benchmarks/backends.py), so only rounding separates them.
The loo and evidence comparisons run NUTS on each backend (different chains): their answers
must agree within 4 combined Monte Carlo standard errors (two independent estimates: failure
probability 6e-5 per comparison when the se's are right).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

import stanlogz
from stanlogz.errors import BackendUnsupported, StanCompileError
from stanlogz.stan.backend import check_points
from stanlogz.stan.constants import blank_comments, keep_constants
from stanlogz.stan.interpreted import InterpretedModel
from stanlogz.stan.load import load_model

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "stan_models" / "examples"
PROGRAM = ROOT / "stan_models" / "tests" / "constants_rewrite.stan"
DATA = {"N": 4, "y": [0.3, 1.9, 0.8, 2.5], "k": [2, 0, 5, 1], "L": 0.1}

pytestmark = pytest.mark.stan


def exact_full_log_density(x: np.ndarray) -> float:
    """constants_rewrite.stan's log density with every constant, on the unconstrained scale
    (lam = exp(x[1]), Jacobian log lam)."""
    mu, lam = x[0], np.exp(x[1])
    y, k = np.array(DATA["y"]), np.array(DATA["k"])
    return float(stats.norm.logpdf(mu, 0, 3)
                 + np.sum(stats.norm.logpdf(y, mu, 1) - stats.norm.logsf(DATA["L"], mu, 1))
                 + np.sum(stats.poisson.logpmf(k, lam)) + stats.expon.logpdf(lam)
                 + stats.norm.logpdf(y[0], mu, 2) + stats.poisson.logpmf(k[0], lam)
                 + np.log(lam))


def test_rewrite_keeps_every_constant_of_truncation_user_functions_and_lupdf():
    m = InterpretedModel(PROGRAM.read_text(), DATA, name="constants_rewrite")
    for x in ([0.4, -0.3], [1.2, 0.7], [-0.5, 1.5]):
        x = np.array(x)
        full = m.log_density(x)
        assert full == pytest.approx(exact_full_log_density(x), rel=1e-10, abs=1e-10)
        # propto=True drops a parameter-free constant only: the same difference at every point
        assert full - m.log_density(x, propto=True) == pytest.approx(
            exact_full_log_density(np.zeros(2)) - m.log_density(np.zeros(2), propto=True),
            rel=1e-10)
    code = keep_constants(PROGRAM.read_text())
    assert blank_comments(code).count("~") == 1  # only the truncated statement keeps its '~'
    assert code.count("\n") == PROGRAM.read_text().count("\n")  # error lines keep their number


def test_normal_mean_evidence_interpreted_equals_the_exact_log_z():
    # Laplace is exact for this Gaussian posterior: log Z = -13.275816 (scipy's MVN, the
    # program's header); the Hessian by differences of the gradient is exact for a quadratic
    data = json.loads((EX / "normal_mean.data.json").read_text())
    cov = data["sigma"] ** 2 * np.eye(data["N"]) + data["prior_sd"] ** 2
    exact = stats.multivariate_normal(np.zeros(data["N"]), cov).logpdf(data["y"])
    r = stanlogz.evidence(str(EX / "normal_mean.stan"), data, method="laplace", seed=3,
                          backend="interpreted", chains=2, warmup=200, n_draws=200)
    assert r.log_z == pytest.approx(exact, abs=1e-8)
    assert round(exact, 6) == -13.275816


def test_missing_capabilities_are_refused_in_one_line_and_auto_builds_for_them():
    path = EX / "normal_mean.stan"
    data = EX / "normal_mean.data.json"
    m = load_model(path, data, backend="interpreted")
    x = np.array([0.4])
    with pytest.raises(BackendUnsupported, match=r"jacobian=False.*backend='compiled'") as err:
        m.log_density(x, jacobian=False)
    assert err.value.routes[0].options == {"backend": "compiled"}
    notes: list[str] = []
    auto = load_model(path, data, backend="auto", progress=notes.append)
    compiled = load_model(path, data, backend="compiled")
    assert isinstance(auto, InterpretedModel) and not isinstance(compiled, InterpretedModel)
    assert auto.log_density(x, jacobian=False) == compiled.log_density(x, jacobian=False)
    assert [n for n in notes if "compiled backend for jacobian=False" in n]
    # the Hessian by differences of the gradient: -N / sigma^2 - 1 / prior_sd^2 exactly
    assert m.log_density_hessian(x)[2][0, 0] == pytest.approx(-10.25, rel=1e-9)


def test_program_the_interpreter_cannot_parse_is_refused_or_falls_back(tmp_path, monkeypatch):
    path = tmp_path / "pairs.stan"
    path.write_text("parameters { tuple(real, real) p; }\nmodel { p.1 ~ normal(0, 1); "
                    "p.2 ~ normal(0, 1); }\n")
    with pytest.raises(StanCompileError, match="interpreter cannot run this program") as exc:
        load_model(path, backend="interpreted")
    assert "\n" not in str(exc.value)
    built = []
    monkeypatch.setattr("stanlogz.stan.backend.StanModel.from_file",
                        lambda p, d, **kw: built.append(p) or "compiled stand-in")
    notes: list[str] = []
    assert load_model(path, backend="auto", progress=notes.append) == "compiled stand-in"
    assert built == [path] and len(notes) == 1 and notes[0].startswith("note: pairs: compiled")


def test_loo_and_evidence_agree_across_backends_within_their_error_bars():
    path, data = str(EX / "normal_mean.stan"), str(EX / "normal_mean.data.json")
    kw = {"chains": 2, "warmup": 300, "n_draws": 1000}
    ev = [stanlogz.evidence(path, data, seed=5, backend=b, **kw)
          for b in ("interpreted", "compiled")]
    assert abs(ev[0].log_z - ev[1].log_z) <= 4 * np.hypot(ev[0].log_z_se, ev[1].log_z_se)
    lo = [stanlogz.loo(path, data, seed=6, backend=b, **kw) for b in ("interpreted", "compiled")]
    mcse = np.hypot(lo[0].mcse_elpd_loo, lo[1].mcse_elpd_loo)
    assert abs(lo[0].elpd_loo - lo[1].elpd_loo) <= 4 * mcse


CORPUS = ROOT.parent / "shared" / "corpus" / "posteriordb"
#: cheap corpus programs (each built in ~15 s once, then cached)
SAMPLE = ["eight_schools-eight_schools_centered", "Rate_4_data-Rate_4_model",
          "gp_pois_regr-gp_regr", "kilpisjarvi_mod-kilpisjarvi",
          "seeds_data-seeds_centered_model", "sblri-blr", "GLMM_Poisson_data-GLMM_Poisson_model"]


@pytest.mark.corpus
@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"no corpus at {CORPUS}")
@pytest.mark.parametrize("name", SAMPLE)
def test_corpus_programs_agree_across_backends(name, compiled):
    folder = CORPUS / name
    data = json.loads((folder / "data.json").read_text())
    ref = compiled(folder / "model.stan", data)
    m = InterpretedModel((folder / "model.stan").read_text(), data, name="model",
                         stan_file=folder / "model.stan", seed=1)
    xs = check_points(m.dim)
    for propto in (True, False):
        lp, g = m.log_density_gradient_many(xs, propto=propto)
        lp_ref, g_ref = ref.log_density_gradient_many(xs, propto=propto)
        assert np.all(np.isfinite(lp_ref))
        np.testing.assert_allclose(lp, lp_ref, rtol=1e-10)
        np.testing.assert_allclose(g, g_ref, rtol=1e-10, atol=1e-10 * np.abs(g_ref).max())


def test_auto_maps_points_where_the_interpreter_has_another_simplex_transform(compiled):
    # transforms.stan declares a simplex: stanli's newer Stan maps the same unconstrained point
    # to another simplex, so auto's compiled fallback evaluates the interpreter's points
    # through their constrained values (densities), and refuses a gradient on the other scale
    from stanlogz.stan.backend import same_transform

    ref = compiled("transforms")
    path = ROOT / "stan_models" / "tests" / "transforms.stan"
    data = json.loads(path.with_suffix(".json").read_text())
    m = load_model(path, data, backend="auto")
    assert not same_transform(m, ref)
    xs = check_points(m.dim)
    theta = m.constrain_many(xs)[:, :m.param_num()]
    np.testing.assert_allclose(m.log_density_many(xs, jacobian=False),
                               ref.log_density_many(ref.unconstrain_many(theta),
                                                    jacobian=False), rtol=1e-12)
    with pytest.raises(BackendUnsupported, match="transform"):
        m.log_density_gradient(xs[0], jacobian=False)
    # the constant its rewrite keeps differs from the compiled build's by 0.5493 = log(3) / 2
    # (a normalizing constant of Stan Math changed between the two Stan versions): the check
    # against the cached compiled build catches it; interpreted refuses, auto falls back
    with pytest.raises(BackendUnsupported, match="every constant.*the constant it keeps"):
        load_model(path, data, backend="interpreted").log_density(xs[0])
    np.testing.assert_allclose(m.log_density_many(xs),
                               ref.log_density_many(ref.unconstrain_many(theta)), rtol=1e-12)


def test_auto_builds_where_the_interpreter_would_run_part_of_the_program_slowly():
    # ordinal_logit's generated quantities call ordered_logistic_rng, which the interpreter
    # cannot compile: its MIR fallback fails there and would drop them, so auto builds
    path, data = EX / "ordinal_logit.stan", EX / "ordinal.data.json"
    notes: list[str] = []
    auto = load_model(path, data, backend="auto", progress=notes.append)
    assert not isinstance(auto, InterpretedModel)
    assert [n for n in notes if "compiled backend (the interpreter has no compiled path for "
            "part of this program: generated quantities" in n and "ordered_logistic_rng" in n]
    assert isinstance(load_model(path, data, backend="interpreted"), InterpretedModel)


def test_data_the_interpreter_cannot_type_go_to_the_compiled_build_under_auto():
    # binom_re's trials as an empty int array (a data instance with no observation): JSON
    # cannot say it is an integer array, and the interpreter refuses it as real
    path = ROOT / "stan_models" / "tests" / "binom_re.stan"
    full = {"I": 2, "n": [4, 5], "y": [1, 3], "sigma": 1.0}
    empty = {"I": 0, "n": [], "y": [], "sigma": 1.0}
    strict = InterpretedModel(path.read_text(), full, name="binom_re", stan_file=path)
    with pytest.raises(BackendUnsupported, match=r"offers no typing of these data.*"
                       r"backend='compiled'"):
        strict.with_data(empty)
    auto = InterpretedModel(path.read_text(), full, name="binom_re", stan_file=path, auto=True)
    inst = auto.with_data(empty)
    assert not isinstance(inst, InterpretedModel)
    # the prior of mu alone: log N(mu | 0, 1) with every constant
    assert inst.log_density(np.array([0.3])) == pytest.approx(stats.norm.logpdf(0.3), rel=1e-12)


def test_generated_quantities_that_fail_their_checks_leave_the_parameters_to_compiled():
    # gq_unassigned's generated integer fails its lower bound at almost every point. stanli
    # checks it even when asked for the parameters alone, and its sampler then writes no
    # parameters at all (NaN draws); Stan transforms the parameters alone and keeps them.
    path = ROOT / "stan_models" / "tests" / "gq_unassigned.stan"
    xs = np.array([[0.3], [-1.2]])
    strict = InterpretedModel(path.read_text(), {}, name="gq_unassigned", stan_file=path)
    with pytest.raises(BackendUnsupported, match=r"transform of the parameters alone.*"
                       r"backend='compiled'"):
        strict.constrain_many(xs)
    with pytest.raises(BackendUnsupported, match=r"sampling here.*loses the parameters"):
        strict.nuts(chains=1, warmup=50, draws=20, seed=3)
    auto = InterpretedModel(path.read_text(), {}, name="gq_unassigned", stan_file=path,
                            auto=True)
    np.testing.assert_array_equal(auto.constrain_many(xs), xs)
    compiled = load_model(path, {}, backend="compiled")
    got = auto.nuts(chains=2, warmup=100, draws=50, seed=3)
    ref = compiled.nuts(chains=2, warmup=100, draws=50, seed=3)
    # the compiled sampler served it: the same draws as a compiled run with the same seed
    np.testing.assert_array_equal(got.unconstrained, ref.unconstrained)
    assert np.all(np.isfinite(got.unconstrained))


@pytest.mark.parametrize("backend", ["interpreted", "compiled"])
def test_an_instance_with_one_variable_moved_is_the_data_with_it_moved(backend):
    m = load_model(PROGRAM, DATA, backend=backend)
    moved = [0.3, -1.1, 0.8, 2.5]
    a, b = m.with_field("y", moved), m.with_data({**DATA, "y": moved})
    assert a.data_json == b.data_json
    x = np.array([0.4, -0.3])
    assert a.log_density(x) == b.log_density(x) != m.log_density(x)


def test_the_constants_compared_at_a_point_both_backends_reject_raise_no_warning():
    # posteriordb sir printed "RuntimeWarning: invalid value encountered in subtract" on
    # every run: at a check point the ODE's states are negative, both backends' densities are
    # -inf, and -inf - -inf is nan. Such a point is skipped (the comparison holds at the
    # others): no warning, and the finite points still decide
    import warnings
    from types import SimpleNamespace

    from stanlogz.stan.interpreted_constants import disagreement

    n = len(check_points(2))

    def native(values):
        return SimpleNamespace(dim=2, _native_many=lambda xs: np.array(values, dtype=float))

    rejected = [-np.inf] + [0.0] * (n - 1)
    compiled = SimpleNamespace(log_density_many=lambda xs, propto: np.array(
        [-np.inf] + [(-1.0 if propto else -3.0)] * (n - 1)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert disagreement(native(rejected), native([-np.inf] + [-2.0] * (n - 1)),
                            compiled) is None
        assert "keeps is -2.5" in disagreement(native(rejected),
                                              native([-np.inf] + [-2.5] * (n - 1)), compiled)


def test_the_rewrite_keeps_string_literals_and_comments_out_of_the_match():
    # the rewrite wrote out the text it matched in, where string literals are blanked:
    # reject("no observations") became reject(   ), which no parser reads, so any program
    # with a reject or print lost the interpreter's density with every constant. The
    # strings are kept; a '~' or '//' inside one is still not read as code
    code = ('model {\n  if (N == 0) reject("no ~ observations // here");\n'
            '  y ~ normal(mu, 1); // a comment ~ x\n  print("mu = ", mu);\n}\n')
    out = keep_constants(code)
    assert 'reject("no ~ observations // here");' in out
    assert 'print("mu = ", mu);' in out
    assert "target += normal_lpdf(y | mu, 1);" in out
    assert out.count("\n") == code.count("\n")
    lup = 'model {\n  print("a_lupdf(");\n  target += foo_lupdf(y | mu);\n}\n'
    assert keep_constants(lup) == lup.replace("foo_lupdf", "foo_lpdf")
