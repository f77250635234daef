"""Cross-validation: observation splitting, both pointwise log-likelihood sources, PSIS-LOO
against ArviZ, fix-ups against closed forms, unbiased CV by a z-test, comparisons, bad input."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from stanlogz import arviz_compat
from stanlogz.cli import main
from stanlogz.crossval import cv, find_observations, loo, loo_compare
from stanlogz.crossval.elpd.psis import k_threshold, psis_loo
from stanlogz.crossval.observations.observations import Observations
from stanlogz.crossval.observations.pointwise import PointwiseLogLik
from stanlogz.crossval.refit.cv_se import calibration_factor
from stanlogz.errors import InputError

EX = Path(__file__).resolve().parents[2] / "stan_models" / "examples"
NORMAL = EX / "normal_mean.stan"
NORMAL_DATA = json.loads((EX / "normal_mean.data.json").read_text())
STACK_DATA = json.loads((EX / "stackloss.data.json").read_text())


def outlier_data(value: float = 12.0) -> dict:
    """normal_mean's data with its last observation moved far out (PSIS k-hat >> 0.7 there)."""
    return dict(NORMAL_DATA, y=NORMAL_DATA["y"][:-1] + [value])


def normal_predictive(d: dict, valid: list[int]) -> float:
    """Exact log p(y_V | y_T) for normal_mean.stan: y ~ MVN(0, sigma^2 I + prior_sd^2 11')."""
    y = np.asarray(d["y"], dtype=float)
    cov = d["sigma"] ** 2 * np.eye(y.size) + d["prior_sd"] ** 2 * np.ones((y.size, y.size))
    t = [i for i in range(y.size) if i not in valid]

    def logpdf(idx: list[int]) -> float:
        return float(stats.multivariate_normal(np.zeros(len(idx)), cov[np.ix_(idx, idx)])
                     .logpdf(y[idx]))

    return logpdf(sorted(t + list(valid))) - logpdf(t)


@pytest.fixture(scope="module")
def normal(compiled):
    return compiled(NORMAL, NORMAL_DATA)


# ---------------------------------------------------------------------- observations

def test_observations_are_inferred_and_subsets_cut_every_per_observation_array():
    obs = find_observations(STACK_DATA)
    assert obs == Observations("N", ("X", "y"), 21)
    sub = obs.without(STACK_DATA, [0, 20])
    assert sub["N"] == 19 and sub["K"] == 4 and len(sub["X"]) == 19 and len(sub["y"]) == 19
    assert sub["X"][0] == STACK_DATA["X"][1] and sub["y"][-1] == STACK_DATA["y"][19]
    only_y = find_observations(STACK_DATA, obs_fields=["y"])
    assert only_y.fields == ("y",) and only_y.size_name == "N"
    assert obs.subset(STACK_DATA, [3])["y"] == [STACK_DATA["y"][3]]


@pytest.mark.parametrize("data, kwargs, message", [
    ({"sigma": 1.0, "y": [1.0, 2.0]}, {}, "no observation dimension found"),
    ({"N": 2, "M": 3, "w": [1.0, 2.0], "z": [1, 2, 3]}, {},
     r"several possible observation sizes \(N: w; M: z\).*obs='N'"),  # the API's keyword
    ({"n": 4, "k": 2}, {}, r"only scalars \(n, k\).*stanlogz.compare"),
    (dict(NORMAL_DATA), {"obs": "sigma"}, "sigma is not an integer size variable"),
    (dict(NORMAL_DATA), {"obs": "nope"}, "no data variable named nope"),
    (dict(STACK_DATA), {"obs": "K"}, "no data array has leading dimension K = 4"),
    ({"N": 3, "y": [1.0, 2.0, 3.0], "x": [1.0, 2.0]}, {"obs_fields": ["y", "x"]},
     "mixed leading sizes"),
    (dict(NORMAL_DATA), {"obs_fields": ["y", "sigma"]}, "sigma is not an array"),
])
def test_bad_observation_specs_are_one_line_errors(data, kwargs, message):
    with pytest.raises(InputError, match=message) as e:
        find_observations(data, **kwargs)
    assert "\n" not in str(e.value)


def test_the_size_of_y_is_the_observation_size():
    # a brms-style Gaussian process: basis-weight arrays have their own sizes; Y decides
    data = {"N": 5, "Y": [0.1, 0.2, 0.3, 0.4, 0.5], "NBgp_1": 3, "slambda_1": [1.0, 2.0, 3.0],
            "NBgp_sigma_1": 2, "Xgp": [[0.1], [0.2]]}
    assert find_observations(data) == Observations("N", ("Y",), 5)


# ---------------------------------------------------------------------- pointwise and PSIS

def test_log_lik_gq_equals_the_density_difference(normal):
    # normal_mean's observations are conditionally independent and its prior does not depend
    # on the data, so log p̃(θ; y) − log p̃(θ; y₋ᵢ) is exactly normal_lpdf(y_i | mu, sigma).
    obs = find_observations(NORMAL_DATA)
    x = np.linspace(-2.0, 3.0, 7)[:, None]
    gq = PointwiseLogLik(normal, NORMAL_DATA, obs, "log_lik").matrix(x)
    diff = PointwiseLogLik(normal, NORMAL_DATA, obs, "difference").matrix(x)
    want = stats.norm(x, NORMAL_DATA["sigma"]).logpdf(np.asarray(NORMAL_DATA["y"])[None, :])
    np.testing.assert_allclose(gq, want, rtol=1e-10)
    np.testing.assert_allclose(diff, want, rtol=1e-9, atol=1e-9)
    # a log_lik whose length is not the number of observations is refused
    with pytest.raises(InputError, match="log_lik has 10 entries but there are 5 observations"):
        PointwiseLogLik(normal, NORMAL_DATA, Observations("N", ("y",), 5), "log_lik")


def test_psis_loo_matches_arviz_on_the_same_matrix():
    # Same log-likelihood matrix and r_eff: ArviZ's own loo and ours use the same smoothing,
    # so they agree to rounding (deterministic; ArviZ 0.x and 1.x alike).
    rng = np.random.default_rng(0)
    mu = rng.normal(0.3, 0.3, size=(4, 500))
    y = np.array([0.1, -0.4, 0.8, 2.5, 0.0, 1.1])
    ll = stats.norm(mu[..., None], 1.0).logpdf(y)
    idata = arviz_compat.from_dict({"posterior": {"mu": mu}, "log_likelihood": {"y": ll}})
    ours = psis_loo(ll, r_eff=1.0)
    ref = _arviz_loo(idata, 1.0)
    np.testing.assert_allclose(ours.elpd_i, ref["elpd_i"], rtol=1e-10)
    np.testing.assert_allclose(ours.khat, ref["pareto_k"], rtol=1e-10)
    assert ours.elpd_i.sum() == pytest.approx(ref["elpd"], rel=1e-10)
    assert ours.p_loo_i.sum() == pytest.approx(ref["p_loo"], rel=1e-8)
    assert k_threshold(4000) == 0.7 and k_threshold(100) == pytest.approx(0.5)


def _arviz_loo(idata, reff: float) -> dict:
    import warnings

    az = arviz_compat.arviz()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = az.loo(idata, pointwise=True, reff=reff)
    if arviz_compat.arviz_major() >= 1:
        return {"elpd": float(r.elpd), "p_loo": float(r.p), "elpd_i": np.ravel(r.elpd_i),
                "pareto_k": np.ravel(r.pareto_k)}
    return {"elpd": float(r.elpd_loo), "p_loo": float(r.p_loo), "elpd_i": np.ravel(r.loo_i),
            "pareto_k": np.ravel(r.pareto_k)}


def test_loo_from_draws_agrees_with_arviz_default_and_inference_data(normal):
    from stanlogz.draws import sample

    d = sample(normal, chains=4, warmup=500, draws=500, seed=3)
    r = loo(normal, NORMAL_DATA, draws=d, fix="none")
    ref = arviz_compat.loo(d.to_inference_data())  # ArviZ's own r_eff from the posterior group
    assert r.elpd_loo == pytest.approx(ref["elpd"], rel=1e-9)
    assert r.p_loo == pytest.approx(ref["p_loo"], rel=1e-6)
    np.testing.assert_allclose(r.khat, ref["pareto_k"], rtol=1e-8)
    again = loo(normal, NORMAL_DATA, draws=d.to_inference_data(), fix="none")
    assert again.elpd_loo == pytest.approx(r.elpd_loo, rel=1e-12)
    elpd = r.to_arviz()
    assert float(elpd.elpd if arviz_compat.arviz_major() >= 1 else elpd["elpd_loo"]) \
        == pytest.approx(r.elpd_loo)
    row = r.to_dict()
    assert row["khat_counts"]["good"] + row["khat_counts"]["bad"] \
        + row["khat_counts"]["very bad"] == 10
    assert [p["observation"] for p in row["pointwise"]] == list(range(1, 11))


# ---------------------------------------------------------------------- fix-ups

def exact_loo_terms(d: dict) -> np.ndarray:
    return np.array([normal_predictive(d, [i]) for i in range(len(d["y"]))])


@pytest.mark.parametrize("fix", ["exact", "ups", "mm", "auto"])
def test_fixups_land_on_the_closed_form(normal, fix):
    d = outlier_data(12.0)
    # UPS: 30 pilot chains per stage and grid point instead of 100 (the pilot, not the 60
    # replicates, is most of its cost); the pilot only tunes k, m and the proposals, and the
    # estimate stays unbiased with its se from the replicates (seeds 5-10: |z| <= 1.3, se 0.11
    # to 0.2).
    r = loo(normal, d, fix=fix, seed=5, k_threshold=0.5,
            ups_options={"n_replicates": 60, "n_pilot": 30} if fix == "ups" else None)
    exact = exact_loo_terms(d)
    # The outlier moves the posterior ~3.5 posterior sds when left out: its importance ratios
    # have infinite variance (true k > 1), so k-hat above 0.5 has failure probability << 1e-6.
    assert 9 in [f.index for f in r.fixed]
    for f in r.fixed:
        # Bridge / UPS / moment-matched IS se are asymptotically normal (the last once its
        # k-hat is below 0.7, asserted): |error| < 5 se fails with prob ~6e-7 per point (UPS:
        # se from 60 i.i.d. replicates, t with 59 dof, P(|t| > 5) = 6e-6 per point); the
        # se cap (10x the ~0.08 seen for 4x1000 draws) catches an inflated se.
        assert abs(f.elpd - exact[f.index]) < 5 * f.mcse, (f, exact[f.index])
        assert 0 < f.mcse < 0.8
        if fix in ("mm", "auto"):
            # one parameter, Gaussian posterior: an affine map reaches the LOO posterior
            assert f.method == "mm" and f.n_gradient_evals == 0 and f.khat_after < 0.7
        else:
            assert f.method == fix and f.n_gradient_evals > 0
        assert r.elpd_i[f.index] == f.elpd
    # The se of elpd_loo against the closed form's: sqrt(N / (N - 1) sum (e_i - mean e)^2) (the
    # ddof-1 se) is sqrt(N / (N - 1))-Lipschitz in e (Euclidean norm), so with every
    # |elpd_i - exact_i| < 5 mcse_i (fixed points: as asserted above; PSIS points have k-hat
    # < 0.5 here, where PSIS's bias is far below its Monte Carlo se) the reported se lies
    # within 5 sqrt(N / (N - 1)) ||mcse|| of the exact-data se.
    mc = r.mcse_i
    exact_se = float(np.sqrt(10 * np.var(exact, ddof=1)))
    assert abs(r.se - exact_se) < 5 * math.sqrt(10 / 9) * float(np.linalg.norm(mc)), (
        r.se, exact_se, mc)
    assert r.elpd_loo_interval.high - r.elpd_loo == pytest.approx(
        2 * calibration_factor(r.elpd_i) * r.se, rel=1e-12)
    # The Monte Carlo se combines the fixed points' se with PSIS's for the others.
    assert mc[[f.index for f in r.fixed]] == pytest.approx([f.mcse for f in r.fixed])
    # (the PSIS part from the draws' summed influence, tests/crossval/psis_loo/test_loo_mcse.py)
    assert r.mcse_elpd_loo == pytest.approx(math.sqrt(
        r.mcse_psis**2 + r.mcse_bias**2 + sum(f.mcse**2 for f in r.fixed)))
    assert r.mcse_psis > 0
    assert not r.unfixed_bad()


def test_parameters_that_depend_on_n_are_integrated_out(compiled):
    # One latent per observation (z_i ~ N(0, 1), y_i ~ N(z_i, 1)): loo integrates z_i out of
    # p(y_i | y_-i, z_-i) = N(y_i; 0, sqrt 2) exactly at every draw, so PSIS is exact.
    code_dir = Path(__file__).resolve().parents[2] / "stan_models" / "tests"
    data = {"N": 3, "y": [0.1, 0.5, -0.2]}
    model = compiled(code_dir / "per_obs.stan", data)
    r = loo(model, data, fix="none", chains=1, warmup=50, n_draws=50, seed=1)
    assert r.log_lik_source == "conditional"
    want = -0.5 * np.log(4 * np.pi) - np.array(data["y"]) ** 2 / 4
    np.testing.assert_allclose(r.elpd_i, want, atol=1e-8)


# ---------------------------------------------------------------------- unbiased CV

def test_unbiased_cv_z_test_against_closed_form(normal):
    # CV over all 45 splits with |V| = 2, in closed form.
    pairs = list(itertools.combinations(range(10), 2))
    truth = -np.mean([normal_predictive(NORMAL_DATA, list(v)) for v in pairs])
    r = cv(normal, NORMAL_DATA, n_valid=2, splits=120, seed=11, chains=2, warmup=300,
           n_draws=300)
    # Each replicate is unbiased for the objective (random split, random lambda, coupled
    # chains); the se comes from 120 iid replicates, so z is t with 119 dof under the CLT:
    # |t| > 4.4 has probability 2.4e-5.
    z = (r.estimate - truth) / r.estimate_mcse
    assert abs(z) < 4.4, (r.estimate, r.estimate_mcse, truth)
    # split-to-split spread of -log p(y_V | y_T) alone is ~0.9 here, so se ~ 0.9/sqrt(120)
    # ~ 0.08; 0.5 catches a blown-up estimator without depending on the stream.
    assert r.estimate_mcse < 0.5
    assert r.splits.shape == (120, 2) and np.all(r.splits[:, 0] < r.splits[:, 1])
    assert r.ci[0] < r.estimate < r.ci[1] and np.isnan(r.elpd)
    with pytest.raises(InputError, match="n_valid must be an integer in 1..9"):
        cv(normal, NORMAL_DATA, n_valid=10, splits=5)


# ---------------------------------------------------------------------- comparison

def test_loo_compare_uses_paired_pointwise_differences(normal):
    from stanlogz.draws import sample

    a = loo(normal, NORMAL_DATA, draws=sample(normal, chains=2, warmup=300, draws=300, seed=1),
            fix="none")
    wide = dict(NORMAL_DATA, prior_sd=20.0)
    b_model = normal.with_data(wide)
    b = loo(b_model, wide, draws=sample(b_model, chains=2, warmup=300, draws=300, seed=2),
            fix="none")
    c = loo_compare([a, b], ["narrow", "wide"])
    best, other = (a, b) if a.elpd_loo >= b.elpd_loo else (b, a)
    d_i = other.elpd_i - best.elpd_i
    j = 1 - c.best
    assert c.elpd_diff[c.best] == 0 and c.elpd_diff[j] == pytest.approx(d_i.sum())
    # the paired differences' spread and both programs' complete Monte Carlo se
    assert c.diff_mcse[j] == pytest.approx(math.hypot(a.mcse_elpd_loo, b.mcse_elpd_loo))
    assert c.diff_mcse[c.best] == 0 and c.diff_mcse[j] > 0
    # loo's se_diff: the paired differences only (N = 10: no calibrated interval)
    assert c.diff_se[j] == pytest.approx(np.sqrt(10 * np.var(d_i, ddof=1)))
    assert np.all(np.isnan(c.diff_interval[j]))
    if abs(c.elpd_diff[j]) < 4:
        assert np.isnan(c.p_worse[j]) and c.diag_diff[j] == "|elpd_diff| < 4"
    assert c.table()[0][0] == c.names[c.best]
    with pytest.raises(InputError, match="same observations"):
        short = dict(NORMAL_DATA, N=9, y=NORMAL_DATA["y"][:9])
        m9 = normal.with_data(short)
        loo_compare([a, loo(m9, short, draws=sample(m9, chains=1, warmup=100, draws=100,
                                                     seed=3), fix="none")])


# ---------------------------------------------------------------------- CLI

def test_cli_loo_and_cv_on_shipped_examples(capsys, normal, tmp_path):
    data = tmp_path / "outlier.json"
    data.write_text(json.dumps(outlier_data(12.0)))
    png = tmp_path / "loo.png"
    rc = main(["--json", "--quiet", "--seed", "2", "loo", str(NORMAL), "--data", str(data),
               "--plot", str(png)])
    out, err = capsys.readouterr()
    assert rc == 0, err
    res = json.loads(out)
    assert res["fix"] == "auto" and res["observations"]["size"] == "N"
    assert 10 in [f["observation"] for f in res["fixed"]] and png.stat().st_size > 0
    exact = exact_loo_terms(outlier_data(12.0))
    f10 = next(f for f in res["fixed"] if f["observation"] == 10)
    assert abs(f10["elpd"] - exact[9]) < 5 * f10["mcse"]  # as in test_fixups_...: P ~ 6e-7
    rc = main(["--quiet", "--seed", "3", "cv", str(NORMAL), "--data",
               str(EX / "normal_mean.data.json"), "--splits", "10", "--draws", "200",
               "--warmup", "200", "--chains", "2", "--plot", str(tmp_path / "cv.png")])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "elpd_loo (= -N cv)" in out and (tmp_path / "cv.png").is_file()
    # bad input: one line, exit 2, nothing written
    bad_png = tmp_path / "bad.png"
    rc = main(["loo", str(NORMAL), "--data", str(data), "--obs", "sigma", "--plot",
               str(bad_png)])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "not an integer size variable" in err
    assert not bad_png.exists()
    rc = main(["cv", str(NORMAL), "--data", str(data), "--n-valid", "10"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "n_valid" in err


def test_cli_compare_with_loo(capsys, compiled):
    compiled(EX / "regression.stan", EX / "regression.data.json")
    compiled(EX / "regression_null.stan", EX / "regression.data.json")
    rc = main(["--json", "--quiet", "--seed", "4", "compare", str(EX / "regression.stan"),
               str(EX / "regression_null.stan"), "--data", str(EX / "regression.data.json"),
               "--loo", "--draws", "500", "--warmup", "500"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    res = json.loads(out)
    models = {m["name"]: m for m in res["loo"]["models"]}
    assert set(models) == {"regression", "regression_null"}
    assert res["loo"]["best"] in models
    assert min(m["elpd_diff"] for m in models.values()) < 0 < max(m["diff_se"]
                                                                  for m in models.values())


def test_loo_example_lands_on_the_closed_form():
    import re
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run([sys.executable, str(root / "examples" / "loo_cross_validation.py")],
                          cwd=root, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    num = r"(-?\d+\.\d+)"
    fixes = re.findall(rf"k-hat {num}, PSIS {num}, fixed {num} ± {num}, exact {num}",
                       proc.stdout)
    # Which points exceed k-hat 0.5 is random (observation 21, k-hat ~0.65, usually does);
    # test_fixups_land_on_the_closed_form asserts that a high-k point is fixed. Every line the
    # example prints for a fixed point must parse (else the loop below checks nothing).
    assert len(fixes) == proc.stdout.count("  observation ")
    for khat, _, fixed, se, exact in fixes:
        assert float(khat) > 0.5
        # bridge se is asymptotically normal: 5 se fails with prob ~6e-7; 1e-3 covers rounding
        assert abs(float(fixed) - float(exact)) < 5 * float(se) + 1e-3
    est, se = map(float, re.search(rf"unbiased CV: {num} ± {num}", proc.stdout).groups())
    exact_cv = float(re.search(rf"exact CV:\s+{num}", proc.stdout)[1])
    assert abs(est - exact_cv) < 4.4 * se + 1e-3  # i.i.d. unbiased replicates: P ~ 1e-5


def test_unbiased_squared_error_cv_z_test_against_closed_form(normal):
    # E[(y_j - y_rep_j)^2 | y_T] = sigma^2 + v_T + (m_T - y_j)^2 (normal posterior N(m_T, v_T)),
    # averaged over all 45 splits with |V| = 2.
    y, d = np.asarray(NORMAL_DATA["y"]), NORMAL_DATA

    def expected(valid: tuple[int, ...]) -> float:
        t = [i for i in range(10) if i not in valid]
        prec = 1 / d["prior_sd"] ** 2 + len(t) / d["sigma"] ** 2
        m_t = y[t].sum() / d["sigma"] ** 2 / prec
        return sum(d["sigma"] ** 2 + 1 / prec + (m_t - y[j]) ** 2 for j in valid)

    truth = np.mean([expected(v) for v in itertools.combinations(range(10), 2)])
    r = cv(normal, d, n_valid=2, splits=60, seed=12, criterion="squared_error", chains=2,
           warmup=300, n_draws=300)
    # unbiased replicates (unbiased MCMC of a test function under p(θ | y_T)): the se comes
    # from 60 of them, so z is t with 59 dof under the CLT and |t| > 4.4 has probability
    # 4.6e-5; the se of ~0.17 at 60 splits is mostly split spread.
    assert abs(r.estimate - truth) < 4.4 * r.estimate_mcse and r.estimate_mcse < 1.0, (
        r.estimate, r.estimate_mcse, truth)
    assert r.criterion == "squared_error" and np.isnan(r.elpd) and np.all(r.lambdas == 0)
    with pytest.raises(InputError, match="outcome 'sigma' is not one of the observation arrays"):
        cv(normal, d, criterion="squared_error", outcome="sigma", splits=5)
    with pytest.raises(InputError, match="criterion must be one of"):
        cv(normal, d, criterion="mse", splits=5)


def _failing_moment_matching(monkeypatch):
    """loo's module with moment matching that cannot lower k-hat (1.5 after every match)."""
    import dataclasses
    import importlib

    loo_module = importlib.import_module("stanlogz.crossval.psis_loo.loo")
    real = loo_module.moment_match_observation

    def failing(*args, **kwargs):
        return dataclasses.replace(real(*args, **kwargs), khat_after=1.5)

    monkeypatch.setattr(loo_module, "moment_match_observation", failing)
    return loo_module


def test_auto_refits_exactly_what_moment_matching_leaves_above_the_threshold(normal,
                                                                              monkeypatch):
    _failing_moment_matching(monkeypatch)
    d = outlier_data(12.0)
    r = loo(normal, d, fix="auto", seed=5, chains=2, warmup=400, n_draws=400)
    f10 = next(f for f in r.fixed if f.index == 9)
    assert f10.method == "exact" and f10.n_gradient_evals > 0  # refitted, not matched
    assert abs(f10.elpd - exact_loo_terms(d)[9]) < 5 * f10.se  # as above: P ~ 6e-7
    mm_only = loo(normal, d, fix="mm", seed=5, chains=2, warmup=400, n_draws=400)
    g10 = next(f for f in mm_only.fixed if f.index == 9)
    assert g10.method == "mm" and g10.khat_after == 1.5
    assert any("still above" in w for w in mm_only.warnings)


def test_auto_names_the_refits_it_would_not_finish_in_time(normal, monkeypatch):
    # fix="auto" starts exact refits only when one sampling run per refit fits within
    # AUTO_REFIT_SECONDS (a corpus program asked for 34 refits of 216 s each); beyond, it keeps
    # the values, gives loo's NA mc se and names fix="exact" and K-fold with the estimate.
    loo_module = _failing_moment_matching(monkeypatch)
    monkeypatch.setattr(loo_module, "AUTO_REFIT_SECONDS", 0.0)
    d = outlier_data(12.0)
    r = loo(normal, d, fix="auto", seed=5, chains=2, warmup=400, n_draws=400)
    assert not any(f.method == "exact" for f in r.fixed)
    line = next(w for w in r.warnings if "fix='auto' starts on its own" in w)
    assert "refit them with fix='exact'" in line and "stanlogz.kfold(..., k=10)" in line
    assert math.isnan(r.mcse_elpd_loo)
    # the user's own choice is never capped
    ex = loo(normal, d, fix="exact", seed=5, chains=2, warmup=400, n_draws=400)
    assert any(f.method == "exact" for f in ex.fixed)
