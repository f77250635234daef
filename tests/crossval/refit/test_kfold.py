"""K-fold, grouped and leave-one-group-out cross-validation (stanlogz.crossval.refit.kfold,
``stanlogz kfold``) against closed forms: the Gaussian hierarchical regression's held-out densities
and the eight-schools leave-one-out values by quadrature; fold construction; bad input.

Stochastic checks are z-tests |estimate − truth| <= 4.5 se (6.8e-6 per check for an honest
se); each test states its union bound (all <= 1e-4) and uses fixed seeds.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchmarks.truths.crossval import truths
from stanlogz.cli import main
from stanlogz.crossval.refit.cv_se import kfold_se
from stanlogz.crossval.refit.kfold import kfold, make_folds
from stanlogz.errors import InputError
from tests.helpers import elpd_of

EXAMPLES = Path(__file__).resolve().parents[3] / "stan_models" / "examples"
HIER = EXAMPLES / "hier_regression.stan"
Z = 4.5


def _data(name: str) -> dict:
    return json.loads((EXAMPLES / f"{name}.data.json").read_text())


def test_random_and_stratified_folds_are_balanced_and_reproducible() -> None:
    f = make_folds(23, 5, np.random.default_rng(1))
    assert sorted(np.bincount(f).tolist()) == [4, 4, 5, 5, 5]
    assert np.array_equal(f, make_folds(23, 5, np.random.default_rng(1)))
    assert not np.array_equal(f, make_folds(23, 5, np.random.default_rng(2)))
    strata = np.array([0] * 10 + [1] * 7 + [2] * 6)
    f = make_folds(23, 3, np.random.default_rng(3), strata=strata)
    for label in range(3):  # every stratum spread over the folds as evenly as possible
        counts = np.bincount(f[strata == label], minlength=3)
        assert counts.max() - counts.min() <= 1, (label, counts)
    assert np.bincount(f).max() - np.bincount(f).min() <= 1


def test_group_folds_keep_groups_whole() -> None:
    groups = np.array([3, 3, 1, 1, 1, 7, 7, 9, 9, 9, 9, 2])
    f = make_folds(12, 3, np.random.default_rng(4), groups=groups)
    for g in np.unique(groups):
        assert np.unique(f[groups == g]).size == 1
    assert np.unique(f).size == 3
    logo = make_folds(12, None, np.random.default_rng(4), groups=groups)
    assert np.unique(logo).size == 5
    for g in np.unique(groups):
        assert np.unique(logo[groups == g]).size == 1
    assert np.unique(groups[logo == logo[0]]).size == 1


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"k": 1}, "k must be an integer >= 2"),
    ({"k": 13}, "k = 13 folds but only 12 observations"),
    ({"k": 6, "groups": np.arange(12) // 3}, "only 4 groups"),
    ({"k": None}, "number of folds k is needed"),
    ({"k": 2, "groups": np.zeros(12), "strata": np.zeros(12)}, "not both"),
])
def test_bad_folds(kwargs, message) -> None:
    with pytest.raises(InputError, match=message):
        make_folds(12, rng=np.random.default_rng(0), **kwargs)


def _pointwise_truth(d: dict, fold_of: np.ndarray) -> tuple[np.ndarray, list[float]]:
    """Exact log p(y_i | y_T(i)) per observation and log p(y_V | y_T) per fold."""
    y, cov = np.array(d["y"], float), truths.hier_regression_cov(d)
    each = np.empty(y.size)
    joint = []
    for j in range(fold_of.max() + 1):
        v = np.flatnonzero(fold_of == j)
        t = np.setdiff1d(np.arange(y.size), v)
        for i in v:
            each[i] = truths.gaussian_heldout(y, cov, [i], t)
        joint.append(truths.gaussian_heldout(y, cov, v))
    return each, joint


@pytest.mark.parametrize(("k", "group", "scheme"), [(None, "g", "leave-one-group-out"),
                                                    (5, None, "random")])
def test_kfold_against_closed_form(compiled, k, group, scheme) -> None:
    """elpd_kfold (Σ_i log p(y_i | y_T(i))) and every fold's joint log p(y_V | y_T) against the
    Gaussian closed form, on the exact folds the run used, and the between-fold se against the
    same se of the closed-form values. Per parametrization 1 + folds z-tests at 4.5 (at most
    7, 6.8e-6 each) and one at 4.8 (1.6e-6): failure probability <= 2 * (7 * 6.8e-6 + 1.6e-6)
    = 9.8e-5 over both."""
    d = _data("hier_regression")
    m = compiled(HIER, d)
    r = kfold(m, d, k=k, group=group, chains=4, warmup=500, n_draws=1000, seed=21)
    assert r.scheme == scheme
    each, joint = _pointwise_truth(d, r.fold_of)
    assert abs(r.elpd_kfold - each.sum()) < Z * r.mcse, (r.elpd_kfold, each.sum(), r.mcse)
    # the z-tests are informative only when the Monte Carlo se is small next to the data se:
    # below the 0.1 se at which kfold itself warns that the run is too short
    assert r.mcse < 0.1 * r.se, (r.mcse, r.se)
    for f, truth in zip(r.folds, joint, strict=True):
        assert abs(f.elpd - truth) < Z * f.mcse + 1e-8, (f.index, f.elpd, truth, f.mcse, f.method)
    # se_between_folds = sqrt(K) sd(fold sums) (ddof 1) against the same of the exact fold
    # sums: |sqrt(K) sd(a) - sqrt(K) sd(b)| <= sqrt(K / (K - 1)) ||a - b||_2 (triangle
    # inequality after centring), and a - b are the folds' independent Monte Carlo errors, so
    # ||a - b||² is
    # Σ_j s_j² Z_j² with Σ_j s_j² = mcse². A weighted sum of χ²_1's with weights summing to 1
    # exceeds c >= 1.54 at most as often as one χ²_1 does (Székely & Bakirov 2003), so
    # ||a - b|| > 4.8 mcse has probability <= P(|Z| > 4.8) = 1.6e-6.
    exact_sums = np.array([each[f.index].sum() for f in r.folds])
    exact_between = np.sqrt(exact_sums.size * np.var(exact_sums, ddof=1))
    k_fac = np.sqrt(exact_sums.size / (exact_sums.size - 1))
    assert abs(r.se_between_folds - exact_between) < 4.8 * k_fac * r.mcse, (
        r.se_between_folds, exact_between, r.mcse)
    # wiring: the headline se is loo's sqrt(N var(elpd_i)); the fold-aware one beside it is
    # kfold_se of the run's values (its coverage is measured in benchmarks/coverage_cv.py and
    # tested in tests/crossval/refit/test_cv_se.py)
    assert r.se == pytest.approx(np.sqrt(r.n_obs * np.var(r.elpd_i, ddof=1)), rel=1e-12)
    assert r.se_fold_aware == pytest.approx(kfold_se(r.elpd_i, r.fold_of))
    a = r.to_arviz()
    assert elpd_of(a) == pytest.approx(r.elpd_kfold)


def test_cli_kfold_eight_schools_is_exact_loo(compiled, capsys, tmp_path) -> None:
    """`stanlogz kfold --k 8` on the shipped eight-schools program is exact leave-one-out
    despite one latent per school: every school's value against quadrature (8 z-tests, failure
    probability <= 5.4e-5), and the total within 0.05 nat."""
    d = _data("eight_schools")
    compiled(EXAMPLES / "eight_schools.stan", d)  # built once per session
    rc = main(["--json", "--quiet", "--seed", "4", "kfold", str(EXAMPLES / "eight_schools.stan"),
               "--data", str(EXAMPLES / "eight_schools.data.json"), "--k", "8",
               "--adapt-delta", "0.95", "--plot", str(tmp_path / "kfold.png")])
    assert rc == 0 and (tmp_path / "kfold.png").stat().st_size > 0
    out = json.loads(capsys.readouterr().out)
    exact = truths.eight_schools_loo(d)
    assert out["scheme"] == "leave-one-out"
    for f in out["folds"]:
        j = f["observations"][0] - 1
        assert f["method"] in ("augmented-bridge", "evidence-difference")
        assert abs(f["elpd"] - exact[j]) < Z * f["mcse"], (j, f["elpd"], exact[j], f["mcse"])
    assert abs(out["elpd_kfold"] - exact.sum()) < 0.05
    assert out["mcse"] < 0.011  # so that 4.5 se < 0.05; measured 0.009
    # the headline se is loo's (as `loo` prints it), the fold-aware one beside it
    e = np.array([p["elpd"] for p in out["pointwise"]])
    assert out["se"] == pytest.approx(np.sqrt(8 * np.var(e, ddof=1)), rel=1e-12)
    assert out["se_fold_aware"] == pytest.approx(kfold_se(e, np.arange(8)), rel=1e-12)
    assert out["se_fold_aware"] >= out["se"]


@pytest.mark.parametrize(("args", "message"), [
    (["--group", "x"], "--group x: x must hold integer labels"),
    (["--group", "J"], "--group J: J is not an array with one entry per observation"),
    (["--group", "nope"], "--group nope: no data variable named nope"),
    (["--stratify", "sigma"], "--stratify sigma: sigma is not an array"),
    (["--k", "31"], "k = 31 folds but only 30 observations; --k 30 leaves one out per fold"),
    (["--k", "groups"], "--k groups needs --group VAR"),
    (["--k", "ten"], "--k must be a number of folds or 'groups'"),
    (["--group", "g", "--k", "7"],
     "k = 7 folds but only 6 groups; --k groups holds out one group per fold"),
    (["--plot", "out.txt"], "--plot file out.txt must end in"),
])
def test_cli_bad_input(compiled, capsys, args, message) -> None:
    compiled(HIER, _data("hier_regression"))
    rc = main(["--quiet", "kfold", str(HIER), "--data",
               str(EXAMPLES / "hier_regression.data.json"), *args])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith("stanlogz: error: ") and err.count("\n") == 1, err
    assert message in err, err


def test_single_group_cannot_be_held_out(compiled) -> None:
    d = dict(_data("hier_regression"), g=[1] * 30)
    with pytest.raises(InputError, match="every observation is in one group"):
        kfold(compiled(HIER, d), d, k=None, group="g", seed=1)


def test_stratified_kfold_from_existing_draws(compiled, tmp_path) -> None:
    """Folds stratified by group hold one observation of every group each; the full-data draws
    come from a saved CSV (``--fit``), and elpd_kfold matches the closed form (one z-test:
    failure probability <= 6.8e-6)."""
    from stanlogz.draws import sample, write_csv

    d = _data("hier_regression")
    m = compiled(HIER, d)
    csv = tmp_path / "draws.csv"
    write_csv(sample(m, chains=4, warmup=500, draws=1000, seed=30), csv)
    r = kfold(m, d, k=5, stratify="g", draws=str(csv), warmup=500, seed=31)
    assert r.scheme == "stratified"
    g = np.array(d["g"])
    for f in r.folds:
        assert sorted(g[f.index].tolist()) == [1, 2, 3, 4, 5, 6]
    each, _ = _pointwise_truth(d, r.fold_of)
    assert abs(r.elpd_kfold - each.sum()) < Z * r.mcse, (r.elpd_kfold, each.sum(), r.mcse)
