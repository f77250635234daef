"""log Z of a posterior whose chains sit in separated modes (``draws.mode_search``,
``estimators.modewise``). A two-component mixture with unordered means
(``stan_models/tests/mixture_uneven.stan``) has two modes that swap the labels; NUTS does not
move between them. Before, gbs took the chains' mix of modes for the posterior's: with every
chain in one mode log Z was off by log 2 with an se of 0.0000 and no warning, and with chains
split 3:1 between modes the prior weighs 0.72:0.28 it was off by 0.56 (se 0.20). The truth is a
quadrature over a grid of the two means (``benchmarks.modes_spread_coverage``: step 0.02 against
posterior sds of 0.3, exact far below the tolerances here)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.special import logsumexp

import stanlogz
from benchmarks.modes_spread_coverage import Y, _log_post
from stanlogz._util.seeds import Stream, stream_int_seed, stream_rng
from stanlogz.draws.mode_search import (
    SEARCH_CHAINS,
    WIDE_CHAINS,
    WIDE_INIT,
    _finite_inits,
    chain_groups,
)
from stanlogz.draws.modes import random_inits
from stanlogz.draws.sample import sample

PROGRAM = Path(__file__).resolve().parents[2] / "stan_models" / "tests" / "mixture_uneven.stan"

pytestmark = pytest.mark.stan


def _data(m: float) -> dict:
    return {"N": int(Y.size), "y": Y.tolist(), "lambda": 0.5, "m": m}


def _exact(m: float) -> float:
    return float(logsumexp(_log_post(Y, 0.5, m)))


def test_chains_are_grouped_by_the_mode_they_sit_in():
    # chains of 1,000 normal draws: two around 0, one around 8 (8 sds away), one around 0 with
    # sd 3 (a wide chain that overlaps the first two). A chain's median lies beyond another's
    # range of 1,000 draws only if they are apart by more than about 3 sds: the groups are
    # wrong with probability far below 1e-6
    rng = np.random.default_rng(1)
    x = rng.normal(size=(4, 1000, 2))
    x[2] += 8.0
    x[3] *= 3.0
    groups = chain_groups(x)
    assert sorted(map(list, groups)) == [[0, 1, 3], [2]]
    assert [list(g) for g in chain_groups(rng.normal(size=(4, 1000, 2)))] == [[0, 1, 2, 3]]


def test_a_mode_no_chain_sat_in_is_found_and_its_evidence_added(monkeypatch):
    monkeypatch.setenv("STANLOGZ_BACKEND", "interpreted")
    seed, m = 5, 0.0
    model = stanlogz.StanModel.from_file(str(PROGRAM), _data(m))
    fit = sample(model, seed=stream_int_seed(seed, Stream.NUTS))
    sides = fit.unconstrained[..., 0] < fit.unconstrained[..., 1]
    assert np.all(sides) or not np.any(sides)  # the scenario: every chain in one mode
    # the probe finds the other mode unless all its random inits (Stan's and the wide ones)
    # sit on the fit's side of mu[1] = mu[2] (a chance of 1 in 4,096 over seeds); this
    # seed's do not, so what is tested is the estimate given the modes found
    rng = stream_rng(seed, Stream.MODE_PROBE)
    inits = np.concatenate([_finite_inits(model, SEARCH_CHAINS, rng),
                            _finite_inits(model, WIDE_CHAINS, rng, WIDE_INIT,
                                          stratified=True)])
    assert inits.shape[0] == SEARCH_CHAINS + WIDE_CHAINS
    assert len(set(inits[:, 0] < inits[:, 1])) == 2
    r = stanlogz.evidence(str(PROGRAM), _data(m), seed=seed)
    # before: -0.6931 off (half the mass), se 0.0000, no warning. Now each mode's gbs se is
    # about 0.001: 0.02 is over 10 of the total's se
    assert abs(r.log_z - _exact(m)) < 0.02
    assert r.log_z_se < 0.01
    assert any("2 modes" in w for w in r.warnings)
    assert r.diagnostics["mode_search"]["found"] == 1
    assert [len(g["chains"]) for g in r.diagnostics["modes"]] == [4, 4]


def test_chains_split_between_uneven_modes_are_weighed_by_the_modes_evidence(monkeypatch):
    # draws given: four chains started 3:1 in the two modes (the search finds no mode beyond
    # them, and asserting it would test the probe's inits, not the estimate), which the prior
    # weighs 0.72:0.28. Before, gbs on the pooled draws was off by about 0.5 nats; each mode's
    # evidence from its own chains is off by about 0.001
    monkeypatch.setenv("STANLOGZ_BACKEND", "interpreted")
    m = 2.0
    model = stanlogz.StanModel.from_file(str(PROGRAM), _data(m))
    inits = [{"mu": [3.0, -3.0]}] * 3 + [{"mu": [-3.0, 3.0]}]
    fit = sample(model, seed=11, init=inits, warmup=500)
    sides = fit.unconstrained[..., 0] < fit.unconstrained[..., 1]
    assert np.all(sides[3]) and not np.any(sides[:3])  # NUTS stayed in each chain's mode
    r = stanlogz.evidence(model, draws=fit, seed=2)
    assert abs(r.log_z - _exact(m)) < 0.02
    weights = sorted(g["weight"] for g in r.diagnostics["modes"])
    assert weights == pytest.approx([0.279, 0.721], abs=0.01)


def test_one_mode_is_estimated_as_before(monkeypatch):
    # a normal mean (one mode): the probe's chains end inside the fit's draws, nothing is
    # added but their cost, and log Z is gbs's on the fit (exact -13.275816; gbs's se at the
    # defaults is about 0.003: 0.02 is over 6 se)
    monkeypatch.setenv("STANLOGZ_BACKEND", "interpreted")
    root = Path(__file__).resolve().parents[2] / "stan_models" / "examples"
    r = stanlogz.evidence(str(root / "normal_mean.stan"), str(root / "normal_mean.data.json"),
                          seed=3)
    assert abs(r.log_z + 13.275816) < 0.02
    assert "modes" not in r.diagnostics
    assert r.diagnostics["mode_search"]["found"] == 0
    assert r.diagnostics["mode_search"]["probe_evals"] > 0
    assert not any("modes" in w for w in r.warnings)


def test_the_evidence_command_searches_its_own_draws(monkeypatch, capsys, tmp_path):
    # the command samples before it calls the API with those draws: the search runs on them
    # as on the API's own (it did not, at first: the draws were taken as the user's). Seed 13:
    # every chain of the command's fit in one mode, the probe's inits on both sides (asserted)
    import json

    from stanlogz.cli import main
    from stanlogz.draws import obtain_draws
    from stanlogz.stan.settings import NutsArgs

    monkeypatch.setenv("STANLOGZ_BACKEND", "interpreted")
    data = tmp_path / "mixture.json"
    data.write_text(json.dumps(_data(0.0)))
    model = stanlogz.StanModel.from_file(str(PROGRAM), _data(0.0))
    fit = obtain_draws(model, None, NutsArgs(), seed=13)  # as the command samples
    sides = fit.unconstrained[..., 0] < fit.unconstrained[..., 1]
    assert np.all(sides) or not np.any(sides)
    inits = random_inits(2, SEARCH_CHAINS, stream_rng(13, Stream.MODE_PROBE))
    assert len(set(inits[:, 0] < inits[:, 1])) == 2
    assert main(["--json", "--quiet", "evidence", str(PROGRAM), "--data", str(data),
                 "--seed", "13"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert abs(out["log_z"] - _exact(0.0)) < 0.02  # before: off by log 2
    assert len(out["diagnostics"]["modes"]) == 2


def test_the_probe_starts_only_where_the_density_is_finite():
    # Stan retries a random init where the density is not finite; given inits it does not,
    # and posteriordb GLMM_Poisson's probe failed at its first (an exp overflow): the search
    # then ran no probe at all. Its inits are now drawn as Stan's are, and kept where finite
    from stanlogz.draws.mode_search import _finite_inits

    class HalfInfinite:
        dim = 3

        def log_density_many(self, x):
            return np.where(x[:, 0] > 0, -np.inf, -0.5 * np.sum(x**2, axis=1))

        def log_density_gradient(self, x):
            return float(self.log_density_many(x[None, :])[0]), -x

    starts = _finite_inits(HalfInfinite(), SEARCH_CHAINS, np.random.default_rng(4))
    assert starts.shape == (SEARCH_CHAINS, 3)
    assert np.all(starts[:, 0] <= 0) and np.all(np.abs(starts) < 2)
    first = random_inits(3, SEARCH_CHAINS, np.random.default_rng(4))
    assert np.any(first[:, 0] > 0)  # Stan's first draws hold inits the density rejects


def test_a_mode_beyond_stans_inits_is_found(monkeypatch):
    # kfold_far_mode.stan: prior modes at 0 and 6 (sd 0.4), two weak observations near 3, so
    # the posterior weighs the modes 0.47 / 0.53. Every chain from Stan's (-2, 2) falls to 0:
    # before the wide inits, log Z was 0.76 low with an se of 0.001 and no warning in each of
    # seeds 1-4. The search's chains from (-10, 10) find the mode at 6: in 100 seeds of 100
    # (benchmarks/evidence_modes_coverage.py), so a seed misses it with a chance below 0.05,
    # and 5 misses of 8 has a chance below 2e-5. A run holding both modes is within 4.5 of
    # its se of the quadrature (exact to 1e-12) unless its se undercovers (6.8e-6 per run for
    # a calibrated se; 0.96 of 100 were within 1.96)
    from benchmarks.evidence_modes_coverage import FAR, FAR_DATA, far_log_z

    monkeypatch.setenv("STANLOGZ_BACKEND", "interpreted")
    exact, both = far_log_z(), 0
    model = stanlogz.StanModel.from_file(str(FAR), FAR_DATA)
    for seed in range(1, 9):
        r = stanlogz.evidence(model, seed=seed)
        if len(r.diagnostics.get("modes", [])) == 2:
            both += 1
            assert abs(r.log_z - exact) <= 4.5 * r.log_z_se + 1e-9, (seed, r.log_z, r.log_z_se)
            assert not any("R-hat" in w for w in r.warnings)  # read per mode, not across
    assert both >= 4


def test_a_probe_chain_on_its_way_is_not_taken_for_a_mode(monkeypatch):
    # a probe chain from a far init may end the probe beyond the draws while still on its way
    # (the 1,000-parameter hierarchical normal: 89 sds beyond, then inside after 300 more
    # iterations; taken for a mode it cost a whole run). It goes on alone first. On
    # kfold_far_mode.stan with two precise observations at 6 (sd 0.3) the posterior has one
    # mode, at 6 (the likelihood's pull, (6 - theta) / 0.045, outweighs the prior
    # component's at 0 everywhere below 6): from 40 the chain falls to 6. With two weak ones
    # (sd 3) the mode at 0 stays, and a chain there stays: crossing to 6 means passing
    # theta = 3, where the density is exp(-28) of the modes'. Either failing has a chance
    # far below 1e-6
    from dataclasses import replace

    from benchmarks.evidence_modes_coverage import FAR
    from stanlogz.draws.mode_search import _settled
    from stanlogz.draws.modes import PROBE_DRAWS
    from stanlogz.stan.settings import NutsArgs

    monkeypatch.setenv("STANLOGZ_BACKEND", "interpreted")
    n = PROBE_DRAWS
    for sd, start, kept in ((0.3, 40.0, False), (3.0, 0.0, True)):
        model = stanlogz.StanModel.from_file(str(FAR), {"N": 2, "y": [6.0, 6.2],
                                                        "s": [sd, sd], "g": [1, 1]})
        fit = sample(model, NutsArgs(chains=1, warmup=200, draws=400), seed=3,
                     init=[{"theta": 6.0}])
        assert np.all(fit.unconstrained > 4.0)  # the fit sits in the mode at 6
        stuck = replace(fit.thinned(n), unconstrained=np.full((1, n, 1), start))
        chain, (seconds, evals) = _settled(model, stuck, 0, n, fit.unconstrained,
                                           NutsArgs(), -np.inf, seed=4)
        assert (chain is not None) is kept and evals > 0
        if kept:
            assert chain.shape == (1, n, 1) and np.all(np.abs(chain) < 2.5)
            # the same chain where the fit's draws all lie far above its density: no mass
            assert _settled(model, stuck, 0, n, fit.unconstrained, NutsArgs(),
                            float(np.max(fit.sampler["lp__"])) + 50.0, seed=4)[0] is None


def test_the_wide_inits_fill_every_slice_of_their_range():
    # a Latin hypercube: on each parameter, each of the k equal slices of (-10, 10) holds one
    # init, so a far mode's basin wider than two slices always holds one (uniform inits left
    # the basin of kfold_far_mode.stan's mode at 6, a third of the range, empty in 1 run of
    # 100 in benchmarks/loo_modes_coverage.py). Deterministic: any draw of the hypercube does
    from stanlogz.draws.mode_search import _latin

    for seed in range(20):
        x = WIDE_INIT * _latin(5, WIDE_CHAINS, np.random.default_rng(seed))
        assert x.shape == (WIDE_CHAINS, 5) and np.all(np.abs(x) < WIDE_INIT)
        slices = np.floor((x + WIDE_INIT) / (2 * WIDE_INIT) * WIDE_CHAINS)
        assert np.all(np.sort(slices, axis=0) == np.arange(WIDE_CHAINS)[:, None])
        assert np.all(np.sum(x > 3.0, axis=0) >= 2)  # theta > 3: the mode at 6's basin
