"""Exact held-out predictive densities (stanlogz.crossval.refit.heldout) against closed forms and
quadrature: eight schools (per-school latents: the augmented bridge), a Gaussian hierarchical
regression (same parameters: the bridge and the evidence difference), and the truths
themselves.

Stochastic checks are z-tests |estimate − truth| <= 4.5 se (two-sided probability 6.8e-6 per
check when the se is honest); each test states its union bound, all <= 1e-4, with fixed seeds.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchmarks.truths.crossval import truths
from stanlogz.crossval.observations.latents import coordinate_map
from stanlogz.crossval.observations.observations import find_observations
from stanlogz.crossval.refit.heldout import heldout_elpd
from stanlogz.draws import sample
from stanlogz.errors import InputError

EXAMPLES = Path(__file__).resolve().parents[3] / "stan_models" / "examples"
Z = 4.5


def _data(name: str) -> dict:
    return json.loads((EXAMPLES / f"{name}.data.json").read_text())


def test_eight_schools_quadrature_agrees_with_2d_grid() -> None:
    """The μ-in-closed-form + adaptive τ quadrature against brute-force 2-D Gauss–Legendre
    quadrature over (μ, τ), for all schools and for a subset (deterministic)."""
    d = _data("eight_schools")
    y, s = np.array(d["y"], float), np.array(d["sigma"], float)
    for idx in (np.arange(8), np.array([0, 2, 5])):
        a = truths.eight_schools_log_z(y[idx], s[idx])
        # 201 x 201 Gauss-Legendre nodes agree with the default 801 x 801 to 1e-14 here (the
        # integrand is smooth), at a 20th of the time and memory
        b = truths.eight_schools_grid_log_z(y[idx], s[idx], n=201)
        assert abs(a - b) < 1e-7, (idx, a, b)


def test_gaussian_heldout_is_the_conditional_density() -> None:
    """log p(y_V | y_T) from the two joint densities equals the Gaussian conditional density."""
    from scipy import stats

    rng = np.random.default_rng(0)
    a = rng.normal(size=(5, 5))
    cov = a @ a.T + np.eye(5)
    y = rng.normal(size=5)
    v, t = [1, 3], [0, 2, 4]
    k = cov[np.ix_(v, t)] @ np.linalg.inv(cov[np.ix_(t, t)])
    cond = stats.multivariate_normal(k @ y[t], cov[np.ix_(v, v)] - k @ cov[np.ix_(t, v)])
    assert truths.gaussian_heldout(y, cov, v) == pytest.approx(cond.logpdf(y[v]), abs=1e-10)


class _Names:
    """A stand-in for a compiled program: only names and sizes."""

    def __init__(self, names: list[str]) -> None:
        self.names, self.dim, self.name = names, len(names), "stub"

    def param_unc_names(self) -> list[str]:
        return self.names


def test_coordinate_map_follows_observations() -> None:
    big = _Names(["mu", "tau", "z.1", "z.2", "z.3", "w.1.1", "w.2.1", "w.3.1", "w.1.2",
                  "w.2.2", "w.3.2"])
    small = _Names(["mu", "tau", "z.1", "z.2", "w.1.1", "w.2.1", "w.1.2", "w.2.2"])
    pos = coordinate_map(big, small, np.arange(3), np.array([0, 2]))
    assert [big.names[j] for j in pos] == ["mu", "tau", "z.1", "z.3", "w.1.1", "w.3.1",
                                           "w.1.2", "w.3.2"]
    # a parameter whose size changes other than one entry per observation cannot be split
    with pytest.raises(InputError, match="cannot be split"):
        coordinate_map(_Names(["d.1", "d.2", "d.3"]), _Names(["d.1"]), np.arange(3),
                       np.array([0, 2]))


@pytest.fixture(scope="module")
def schools(compiled):
    d = _data("eight_schools")
    m = compiled(EXAMPLES / "eight_schools.stan", d)
    full = sample(m, chains=4, warmup=1000, draws=1000, seed=11, adapt_delta=0.95)
    return m, d, find_observations(d), full


def test_eight_schools_two_schools_joint_and_pointwise(schools) -> None:
    """Schools 1 and 7 held out together (two per-school latents integrated out): the joint
    log p(y_1, y_7 | rest) and each log p(y_j | rest) against quadrature. Three z-tests: failure
    probability <= 3 * 6.8e-6 = 2e-5."""
    m, d, obs, full = schools
    y, s = np.array(d["y"], float), np.array(d["sigma"], float)
    r = heldout_elpd(m, d, obs, [0, 6], full_draws=full, seed=3, adapt_delta=0.95,
                     method="bridge")
    keep = np.array([1, 2, 3, 4, 5, 7])
    base = truths.eight_schools_log_z(y[keep], s[keep])
    joint = truths.eight_schools_log_z(y, s) - base
    assert r.method == "augmented-bridge" and r.n_latent == 2
    assert abs(r.elpd - joint) < Z * r.mcse, (r.elpd, joint, r.mcse)
    assert r.mcse < 0.03  # measured 0.009 on these draws
    each = [truths.eight_schools_log_z(y[np.union1d(keep, [j])], s[np.union1d(keep, [j])]) - base
            for j in (0, 6)]
    assert abs(r.elpd_i.sum() - sum(each)) < Z * r.elpd_i_mcse, (r.elpd_i, each, r.elpd_i_mcse)
    # the joint density is not the sum of the two (they are dependent given the rest)
    assert abs(joint - sum(each)) > 0.1


def test_gaussian_group_bridge_and_evidence_difference(compiled) -> None:
    """A whole group of the hierarchical regression held out (same parameters: its intercept
    keeps its prior): the plain bridge and the gbs evidence difference against the Gaussian
    closed form. gbs is exact on a Gaussian posterior up to rounding (its score-fitted Gaussian
    is the posterior), so its tolerance is 4.5 se + 1e-8. Two z-tests: <= 1.4e-5."""
    d = _data("hier_regression")
    m = compiled(EXAMPLES / "hier_regression.stan", d)
    obs = find_observations(d)
    v = np.flatnonzero(np.array(d["g"]) == 2)
    truth = truths.gaussian_heldout(np.array(d["y"]), truths.hier_regression_cov(d), v)
    full = sample(m, chains=4, warmup=500, draws=1000, seed=5)
    b = heldout_elpd(m, d, obs, v, full_draws=full, method="bridge", pointwise=False,
                     warmup=500, seed=6)
    assert b.method == "bridge" and b.n_latent == 0
    assert abs(b.elpd - truth) < Z * b.mcse, (b.elpd, truth, b.mcse)
    e = heldout_elpd(m, d, obs, v, full_draws=full, method="evidence-difference",
                     pointwise=False, warmup=500, seed=6)
    assert e.method == "evidence-difference"
    assert abs(e.elpd - truth) < Z * e.mcse + 1e-8, (e.elpd, truth, e.mcse)


def test_bad_held_out_sets(schools) -> None:
    m, d, obs, full = schools
    with pytest.raises(InputError, match="between 1 and 7"):
        heldout_elpd(m, d, obs, [], full_draws=full)
    with pytest.raises(InputError, match="between 1 and 7"):
        heldout_elpd(m, d, obs, np.arange(8), full_draws=full)
    with pytest.raises(InputError, match="out of range"):
        heldout_elpd(m, d, obs, [8], full_draws=full)
    with pytest.raises(InputError, match="method must be"):
        heldout_elpd(m, d, obs, [1], full_draws=full, method="psis")
    with pytest.raises(InputError, match=r"must be \(chains, n, 10\)"):
        heldout_elpd(m, d, obs, [1], full_draws=np.zeros((2, 10, 3)))


def test_heldout_many_does_not_depend_on_the_worker_count(schools) -> None:
    from stanlogz.crossval.refit.heldout import heldout_many

    m, d, obs, full = schools
    kw = {"full_draws": full, "warmup": 300, "draws": 300, "seed": 17}
    one = heldout_many(m, d, obs, [[2], [5]], n_workers=1, **kw)
    two = heldout_many(m, d, obs, [[2], [5]], n_workers=2, **kw)
    assert [r.elpd for r in one] == [r.elpd for r in two]
    assert [r.index.tolist() for r in one] == [[2], [5]]
