"""Observations that alone move a parameter (a group of one with a wide prior): PSIS reads
their leave-one-out tail as light (posteriordb's radon_county_intercept came out 4.8 nats
high, z +7 to +10, unwarned: benchmarks/corpus_coverage.py), so ``loo`` finds them from the
draws and refits them exactly, or withholds the Monte Carlo se when it may not refit.

The exact elpd_loo is a quadrature (the group means are Gaussian given sigma;
:func:`benchmarks.corpus_loo_exact.linear_loo`, checked against the Stan program's density on
the corpus programs by tests/corpus/test_corpus_loo_refs.py).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import stanlogz
from benchmarks.corpus_loo_exact import LinearModel, linear_loo
from tests.conftest import MODELS

PROGRAM = MODELS / "tests" / "own_group.stan"
DATA = json.loads(PROGRAM.with_suffix(".json").read_text())


def _exact() -> np.ndarray:
    g = np.asarray(DATA["g"]) - 1
    X = np.zeros((g.size, DATA["J"]))
    X[np.arange(g.size), g] = 1.0
    y = np.asarray(DATA["y"], dtype=float)
    return linear_loo(LinearModel(X, y, np.zeros(DATA["J"]), np.eye(DATA["J"]) / 100.0,
                                  lambda s: np.full(y.size, s ** 2),
                                  lambda s: -0.5 * s ** 2))


@pytest.mark.stan
def test_the_group_of_one_is_refit_exactly(compiled):
    m = compiled(PROGRAM)
    r = stanlogz.loo(m, seed=4, verify=0)
    exact = _exact()
    last = DATA["N"] - 1
    # PSIS on the draws is far off for it (the shape this guards against): above the exact
    # value by over a nat (2.3 at this seed, k-hat 0.83), where its mc se says hundredths
    assert r.psis_elpd_i[last] - exact[last] > 1.0
    # (here moment matching would leave k-hat above the threshold and auto would refit it too;
    # the note says the probe found it, test 2 is the case loo's own rules miss)
    assert [(f.index, f.method) for f in r.fixed if f.index == last] == [(last, "exact")]
    assert any("17 (a.3)" in w and "refit exactly" in w for w in r.warnings)
    # the answer within 4 of its mc se of the exact one: probability 6e-5 when the se holds
    assert np.isfinite(r.mcse_elpd_loo)
    assert abs(r.elpd_loo - exact.sum()) < 4 * r.mcse_elpd_loo


@pytest.mark.stan
def test_without_refits_the_mcse_is_withheld(compiled):
    m = compiled(PROGRAM)
    # no fix-up and a threshold of 1 (k-hat of the group of one is 0.83 at this seed): loo's own
    # rules would give a Monte Carlo se (0.15, with elpd_loo 2.4 above the exact one: z +15.8,
    # measured with the probe switched off); the value is 2.3 nats off, so it is withheld
    r = stanlogz.loo(m, seed=4, verify=0, fix="none", k_threshold=1.0)
    assert r.khat[-1] < 1.0 and not r.still_bad()
    assert np.isnan(r.mcse_elpd_loo)
    assert "17 (a.3)" in r.mcse_na_reason()
    assert r.to_dict()["mcse_elpd_loo"] is None


def _many_singletons() -> dict:
    # two groups of 8 and 12 groups of one (more than MAX_OWN_REFITS): the radon shape of
    # posteriordb's radon_variable_intercept_slope_noncentered, 28 one-house counties
    rng = np.random.default_rng(11)
    g = [1] * 8 + [2] * 8 + list(range(3, 15))
    y = np.concatenate([1.0 + 0.5 * rng.normal(size=8), -1.0 + 0.5 * rng.normal(size=8),
                        rng.uniform(-3.0, 3.0, size=12)]).round(4)
    return {"N": len(g), "J": 14, "g": g, "y": y.tolist()}


@pytest.mark.stan
def test_more_groups_of_one_than_the_count_are_refit_where_the_refits_are_cheap(compiled):
    # 12 observations alone in moving a parameter, each refit under a second: refit exactly
    # (at a count cap of 10 they were flagged and the total had no mcse)
    data = _many_singletons()
    r = stanlogz.loo(compiled(PROGRAM, data), data, seed=4, verify=0)
    g = np.asarray(data["g"]) - 1
    X = np.zeros((g.size, data["J"]))
    X[np.arange(g.size), g] = 1.0
    y = np.asarray(data["y"], dtype=float)
    exact = linear_loo(LinearModel(X, y, np.zeros(data["J"]), np.eye(data["J"]) / 100.0,
                                   lambda s: np.full(y.size, s ** 2),
                                   lambda s: -0.5 * s ** 2))
    singles = set(range(16, 28))
    assert singles <= {f.index for f in r.fixed if f.method == "exact"}
    assert any("12 observation(s) are each the only one" in w and "refit exactly" in w
               for w in r.warnings)
    # within 4 of its mc se of the exact value: probability 6e-5 when the se holds
    assert np.isfinite(r.mcse_elpd_loo)
    assert abs(r.elpd_loo - exact.sum()) < 4 * r.mcse_elpd_loo


def test_groups_of_one_beyond_the_count_are_refit_only_where_the_time_allows():
    from stanlogz._util.deadline import time_budget
    from stanlogz.crossval.psis_loo.loo import AUTO_REFIT_SECONDS, _own_refits_fit
    from stanlogz.crossval.psis_loo.own_latent import MAX_OWN_REFITS

    n = MAX_OWN_REFITS + 2
    assert _own_refits_fit(MAX_OWN_REFITS, None)  # the count: whatever they cost
    assert not _own_refits_fit(n, None)  # beyond it, an unknown price: flagged
    assert _own_refits_fit(n, 1.0)
    assert not _own_refits_fit(n, 1.01 * AUTO_REFIT_SECONDS / n)  # beyond auto's own limit
    with time_budget(2 * n * 1.0 + 5.0):
        assert _own_refits_fit(n, 1.0)  # within half the budget left
    with time_budget(n * 1.0):
        assert not _own_refits_fit(n, 1.0)


class _GroupedLogLik:
    """A ``log_lik`` route stand-in: observation i depends on its group's parameter (groups of
    one, two or three; ``columns`` is exact, so no rounding can hide a step)."""

    source = "log_lik"

    def __init__(self, groups: np.ndarray, seconds_per_row: float = 0.0) -> None:
        self.g, self.seconds_per_row, self.rows = groups, seconds_per_row, 0

    def columns(self, index, rows):
        import time

        self.rows += rows.shape[0]
        time.sleep(self.seconds_per_row * rows.shape[0])
        return -0.5 * (rows[:, 1 + self.g[index]] - 0.3) ** 2 - 0.1 * rows[:, [0]] ** 2


def test_the_probe_reaches_past_its_old_parameter_cap():
    # 1,200 groups (1,201 parameters, three times the 400 the probe used to stop at): every
    # group of one is found with its own parameter, and no group of two or three
    from stanlogz.crossval.psis_loo.own_latent import own_parameter_observations

    rng = np.random.default_rng(5)
    sizes = rng.integers(1, 4, size=1200)
    g = np.repeat(np.arange(1200), sizes)
    pw = _GroupedLogLik(g)
    unc = rng.normal(size=(200, 1201))
    probe = own_parameter_observations(pw, unc, np.arange(g.size))
    singles = {int(i): 1 + int(g[i]) for i in np.nonzero(sizes[g] == 1)[0]}
    assert probe.note is None and len(singles) > 300
    assert probe.own == singles
    assert pw.rows == 1202  # the centre and one step along each parameter


def test_a_probe_that_would_take_too_long_stops_with_a_note(monkeypatch):
    from stanlogz.crossval.psis_loo import own_latent

    monkeypatch.setattr(own_latent, "PROBE_SECONDS", 0.05)
    g = np.repeat(np.arange(1200), 2)
    pw = _GroupedLogLik(g, seconds_per_row=0.001)  # 1.2 s for every row, against 0.05 s
    unc = np.random.default_rng(6).normal(size=(50, 1201))
    probe = own_latent.own_parameter_observations(pw, unc, np.arange(g.size), elapsed=0.1)
    assert probe.own == {} and pw.rows == own_latent.PROBE_BLOCK + 1  # priced on one block
    assert "were not looked for among the 1201 parameters" in probe.note
    assert "kfold has no such blind spot (`stanlogz.kfold(..., group)`)" in probe.note
    # a run 20 times longer than the probe allows it a quarter of its time: the probe runs
    pw = _GroupedLogLik(g, seconds_per_row=0.0)
    assert own_latent.own_parameter_observations(pw, unc, np.arange(g.size),
                                                 elapsed=20.0).note is None


@pytest.mark.stan
def test_the_probe_finds_groups_of_one_in_a_program_with_500_parameters(compiled):
    # own_group with 499 groups (500 parameters, past the 400 the probe stopped at): the
    # density-difference route, probed a block of steps at a time at any point of the
    # parameters (the probe asks only which observations a step moves)
    from stanlogz.crossval.observations.observations import load_observed
    from stanlogz.crossval.observations.pointwise import PointwiseLogLik
    from stanlogz.crossval.psis_loo.own_latent import own_parameter_observations

    sizes = np.where(np.arange(499) % 100 == 7, 1, 2)  # groups 8, 108, ..., 408 of one
    g = np.repeat(np.arange(1, 500), sizes)
    y = np.random.default_rng(3).normal(size=g.size).round(4)
    data = {"N": int(g.size), "J": 499, "g": g.tolist(), "y": y.tolist()}
    model, data, obs = load_observed(compiled(PROGRAM, data), data)
    pw = PointwiseLogLik(model, data, obs, "difference")
    unc = np.random.default_rng(4).normal(size=(50, model.dim))
    probe = own_parameter_observations(pw, unc, np.arange(obs.n))
    singles = np.nonzero(sizes[g - 1] == 1)[0]
    assert model.dim == 500 and probe.note is None
    assert probe.own == {int(i): int(g[i]) - 1 for i in singles}  # a[j] is parameter j - 1


class _GroupedDifference:
    """A density-difference stand-in: instance i's density is the baseline's plus ℓ_i, which
    depends on observation i's group parameter alone; each gradient takes ``seconds``."""

    source = "difference"

    def __init__(self, groups: np.ndarray, seconds: float = 0.0) -> None:
        self.g, self.seconds, self.gradients = groups, seconds, 0
        self.model = self._Density(self, None)

    class _Density:
        def __init__(self, owner, i):
            self.owner, self.i = owner, i

        def log_density_gradient(self, x):
            import time

            self.owner.gradients += 1
            time.sleep(self.owner.seconds)
            grad = -x.copy()  # the prior's part, the same in every instance
            if self.i is not None:
                grad[1 + self.owner.g[self.i]] += 0.3 - x[1 + self.owner.g[self.i]]
            return 0.0, grad

    def bases(self):
        return (self.model,)

    def _pair(self, i):
        return [i], 0

    def _instance(self, obs):
        return self._Density(self, obs[0])


def test_the_difference_route_is_probed_by_one_gradient_per_observation(monkeypatch):
    from stanlogz.crossval.psis_loo import own_latent

    sizes = np.random.default_rng(7).integers(1, 4, size=900)
    g = np.repeat(np.arange(900), sizes)
    pw = _GroupedDifference(g)
    unc = np.random.default_rng(8).normal(size=(100, 901))
    probe = own_latent.own_parameter_observations(pw, unc, np.arange(g.size))
    assert probe.note is None
    assert probe.own == {int(i): 1 + int(g[i]) for i in np.nonzero(sizes[g] == 1)[0]}
    assert pw.gradients == g.size + 1  # the baseline's and one per observation
    # priced from its first block: 2 ms a gradient for ~1,800 observations, against 0.05 s
    monkeypatch.setattr(own_latent, "PROBE_SECONDS", 0.05)
    pw = _GroupedDifference(g, seconds=0.002)
    probe = own_latent.own_parameter_observations(pw, unc, np.arange(g.size), elapsed=0.1)
    assert probe.own == {} and pw.gradients == own_latent.PROBE_BLOCK + 1
    assert "were not looked for among the 901 parameters" in probe.note


@pytest.mark.stan
def test_the_refits_come_before_the_band_s_moment_matching(compiled, monkeypatch):
    # the refits of observations alone in moving a parameter (a few, about a second each; the
    # mc se is NA without them) run before the moment matching of the k-hat band below the
    # threshold, which a time budget may end: posteriordb radon_county_intercept under 15 s
    # spent the time on the band and its three refits were refused. Nothing statistical: the
    # order of the fix-up calls at seed 4 (one value in the band there).
    import importlib

    loo_module = importlib.import_module("stanlogz.crossval.psis_loo.loo")
    real, calls = loo_module._fix, []

    def spy(pw, d, bad, *args, **kwargs):
        band = kwargs.get("band")
        calls.append((bad.tolist(), 0 if band is None else int(band.size)))
        return real(pw, d, bad, *args, **kwargs)

    monkeypatch.setattr(loo_module, "_fix", spy)
    stanlogz.loo(compiled(PROGRAM), seed=4, verify=0)
    last = DATA["N"] - 1
    assert calls == [([last], 0), ([], 1)]
