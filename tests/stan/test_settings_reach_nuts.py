"""One NutsArgs reaches every NUTS run: each workflow's every route (first fit, fix-up refits,
folds, prefixes, held-out runs, continued chains, inner fits), from the API and from the CLI.

The NUTS boundary is :func:`stanlogz.stan.nuts.run_nuts`, which every NUTS run goes through
(``StanModel.nuts`` -> ``run_nuts``): the ``nuts_calls`` fixture wraps it and records the
settings of each call. These tests are deterministic (fixed seeds, no value checked but the
settings each run received). A refit's probe for another mode (stanlogz.draws.modes) runs
its own chains and draws with the rest of the settings: ``_is_probe`` holds it to that."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import stanlogz.stan.model as stan_model
from stanlogz.stan.settings import NutsArgs

ROOT = Path(__file__).resolve().parents[2]
EX, TESTS = ROOT / "stan_models" / "examples", ROOT / "stan_models" / "tests"
PROG, DATA = EX / "normal_mean.stan", EX / "normal_mean.data.json"

#: settings unlike every default, so a run that lost them shows
S = NutsArgs(chains=2, warmup=57, draws=103, adapt_delta=0.91, max_treedepth=7)
LOOSE = {"chains": 2, "warmup": 57, "n_draws": 103, "adapt_delta": 0.91, "max_treedepth": 7}
FLAGS = ["--chains", "2", "--warmup", "57", "--draws", "103", "--adapt-delta", "0.91",
         "--max-treedepth", "7"]


class _Stop(Exception):
    """Ends a workflow after the NUTS runs a test needs."""


@pytest.fixture
def nuts_calls(monkeypatch):
    """The NutsArgs of every NUTS run, in order; ``calls.stop_after = k`` raises _Stop after the
    k-th run (for workflows whose remaining work needs no more NUTS)."""
    calls: list[NutsArgs] = []
    calls_ns = SimpleNamespace(list=calls, stop_after=None)
    real = stan_model.run_nuts

    def spy(model, settings=None, **kw):
        overrides = {k: kw.pop(k) for k in list(kw) if k in NutsArgs.__dataclass_fields__}
        calls.append(settings if isinstance(settings, NutsArgs) and not overrides
                     else NutsArgs.of(settings, **overrides))
        out = real(model, settings, **kw, **overrides)
        if calls_ns.stop_after is not None and len(calls) >= calls_ns.stop_after:
            raise _Stop
        return out

    monkeypatch.setattr(stan_model, "run_nuts", spy)
    return calls_ns


def _is_probe(c: NutsArgs) -> bool:
    """A refit's probe for another mode (stanlogz.draws.modes), or the evidence's search for
    modes (stanlogz.draws.mode_search, and a probe chain gone on alone): its own chains and
    draws (and
    after a first disagreement, more iterations without warmup), the rest of the settings
    S's."""
    from stanlogz.draws.mode_search import CONFIRM_MORE, SEARCH_CHAINS, WIDE_CHAINS
    from stanlogz.draws.modes import PROBE_DRAWS, PROBE_MORE, probe_chains

    # the search's probe (narrow and wide inits), and one chain of it gone on to confirm
    return (c.chains in (probe_chains(S.chains), SEARCH_CHAINS + WIDE_CHAINS, 1)
            and c.draws in (min(PROBE_DRAWS, S.draws), PROBE_MORE, CONFIRM_MORE)
            and c.warmup in (S.warmup, 0)
            and c.max_treedepth <= S.max_treedepth  # the search's: capped by the fit's depth
            and c.replace(chains=S.chains, draws=S.draws, warmup=S.warmup,
                          max_treedepth=S.max_treedepth) == S)


def _all_s(calls: list[NutsArgs], at_least: int) -> None:
    runs = [c for c in calls if not _is_probe(c)]
    assert len(runs) >= at_least, calls
    assert all(c == S for c in runs), calls


@pytest.fixture(scope="module")
def normal_mean(compiled):
    return compiled(PROG, DATA)


# ---------------------------------------------------------------- loo, every fix-up route
@pytest.mark.parametrize("how", ["settings", "keywords"])
def test_loo_exact_refits_get_the_settings(normal_mean, nuts_calls, how):
    from stanlogz.crossval.psis_loo.loo import loo

    given = {"settings": S} if how == "settings" else LOOSE
    r = loo(normal_mean, DATA, fix="exact", k_threshold=0.0, seed=3, **given)
    assert any(f.method == "exact" for f in r.fixed)
    _all_s(nuts_calls.list, 1 + len(r.fixed))  # the full-data fit and one refit per fix


def test_loo_keywords_replace_fields_of_the_settings(normal_mean, nuts_calls):
    from stanlogz.crossval.psis_loo.loo import loo

    loo(normal_mean, DATA, fix="exact", k_threshold=0.0, seed=3,
        settings=NutsArgs(adapt_delta=0.6, chains=3), **LOOSE)
    _all_s(nuts_calls.list, 2)


def test_loo_auto_refits_what_moment_matching_leaves(normal_mean, nuts_calls, monkeypatch):
    import importlib

    from stanlogz.crossval.fixups.fixups import FixedPoint

    loo_module = importlib.import_module("stanlogz.crossval.psis_loo.loo")

    def unmatched(pw, d, log_post, i, ps, j, threshold, r_eff, **options):
        return FixedPoint(i, 0.0, 1.0, "mm", 1.0, 0.0, 0, 0, 0.0, khat_after=1.0)

    monkeypatch.setattr(loo_module, "_moment_matched", unmatched)
    r = loo_module.loo(normal_mean, DATA, fix="auto", k_threshold=0.0, seed=3, settings=S)
    assert r.fixed and all(f.method == "exact" for f in r.fixed)
    _all_s(nuts_calls.list, 1 + len(r.fixed))


def test_loo_ups_refits_get_the_settings(normal_mean, nuts_calls, monkeypatch):
    import stanlogz.crossval.fixups.fixups as fixups
    from stanlogz.crossval.psis_loo.loo import loo

    # the unbiased estimator itself runs no NUTS; only its refit without y_i does
    monkeypatch.setattr(fixups, "log_ratio", lambda *a, **k: SimpleNamespace(
        estimate=0.0, se=0.1, n_evals=0, n_evals_tuning=0, ci=(0.0, 0.0), warnings=[]))
    r = loo(normal_mean, DATA, fix="ups", k_threshold=0.0, seed=3, settings=S)
    assert r.fixed and all(f.method == "ups" for f in r.fixed)
    _all_s(nuts_calls.list, 1 + len(r.fixed))


def test_loo_exact_with_per_observation_latents_gets_the_settings(compiled, nuts_calls):
    from stanlogz.crossval.psis_loo.loo import loo

    data = {"N": 6, "y": [0.3, -1.2, 0.8, 2.9, -0.4, 1.1]}
    m = compiled(TESTS / "per_obs_loglik.stan", data)
    r = loo(m, data, fix="exact", k_threshold=0.0, seed=3, settings=S)
    assert r.fixed  # through heldout_many: a training refit per observation
    _all_s(nuts_calls.list, 1 + len(r.fixed))


# ---------------------------------------------------------------- the other workflows
def test_kfold_folds_get_the_settings(normal_mean, nuts_calls):
    from stanlogz.crossval.refit.kfold import kfold

    kfold(normal_mean, DATA, k=2, seed=4, settings=S)
    _all_s(nuts_calls.list, 3)  # all data, two folds


@pytest.mark.parametrize("method", ["exact", "psis"])
def test_lfo_refits_get_the_settings(normal_mean, nuts_calls, method, monkeypatch):
    from stanlogz import arviz_compat
    from stanlogz.crossval.refit.lfo import lfo

    real = arviz_compat.psislw
    monkeypatch.setattr(arviz_compat, "psislw",  # every k-hat high: PSIS refits at each origin
                        lambda r: (real(r)[0], np.ones(1)))
    r = lfo(normal_mean, DATA, min_train=7, method=method, seed=5, **LOOSE)
    # exact: NUTS on every prefix 7..10; psis: the first fit and a refit at each later origin
    _all_s(nuts_calls.list, 4 if method == "exact" else 3)
    assert method == "exact" or len([c for c in nuts_calls.list if not _is_probe(c)]) == len(
        r.refits)


def test_cv_initial_fit_gets_the_settings(normal_mean, nuts_calls):
    from stanlogz.crossval.refit.unbiased import cv

    nuts_calls.stop_after = 1  # the replicates run coupled chains, not NUTS
    with pytest.raises(_Stop):
        cv(normal_mean, DATA, splits=2, seed=6, settings=S)
    _all_s(nuts_calls.list, 1)


def test_heldout_runs_get_the_settings(normal_mean, nuts_calls):
    from stanlogz.crossval.observations.observations import load_observed
    from stanlogz.crossval.refit.heldout import heldout_elpd, heldout_many

    m, data, obs = load_observed(normal_mean, DATA, None, None)
    heldout_elpd(m, data, obs, [0, 1], seed=7, settings=S)
    _all_s(nuts_calls.list, 2)  # all data and the training set
    full = nuts_calls.list.copy()
    heldout_many(m, data, obs, [[0], [2]], full_draws=np.zeros((2, 10, 1)), seed=8,
                 chains=2, warmup=57, draws=103, adapt_delta=0.91, max_treedepth=7)
    _all_s(nuts_calls.list, len([c for c in full if not _is_probe(c)]) + 2)


def test_evidence_and_its_continued_chains_get_the_settings(normal_mean, nuts_calls):
    from stanlogz.api import evidence

    r = evidence(normal_mean, settings=S, seed=9, target_se=1e-4, max_draws=500)
    # the chains are continued with their adapted step size and metric and the user's
    # max_treedepth (issue 45): one NUTS run, never restarted, and more rounds of draws; the
    # search for modes runs its probe with the same settings but its chains and draws
    assert [c for c in nuts_calls.list if not _is_probe(c)] == [S]
    assert len(nuts_calls.list) == 2 and _is_probe(nuts_calls.list[1])
    rounds = r.diagnostics["target_se_rounds"]
    assert len(rounds) >= 2 and rounds[-1]["draws"] > rounds[0]["draws"]


def test_compare_programs_and_their_loo_refits_get_the_settings(normal_mean, nuts_calls):
    from stanlogz.api import compare

    compare([PROG, PROG], [DATA, DATA], seed=10, with_loo=True, settings=S,
            loo_options={"fix": "exact", "k_threshold": 0.0})
    _all_s(nuts_calls.list, 4)  # two programs, and at least one LOO refit each


def test_testbed_draws_get_the_settings(compiled, nuts_calls):
    from stanlogz.testbed import run_testbed

    bdmc = ROOT / "stan_models" / "bdmc"
    compiled(bdmc / "normal_mean_sim.stan", json.loads((bdmc / "normal_mean_sim.data.json")
                                                       .read_text()))
    nuts_calls.stop_after = 1  # the estimators run no NUTS
    with pytest.raises(_Stop):
        run_testbed(bdmc / "normal_mean.stan", bdmc / "normal_mean_sim.stan",
                    bdmc / "normal_mean_sim.data.json", ["laplace"], seed=11, **{
                        k if k != "n_draws" else "draws": v for k, v in LOOSE.items()})
    _all_s(nuts_calls.list, 1)


def test_pmmh_inner_fit_gets_the_settings(nuts_calls):
    from stanlogz.pmmh.pseudo_marginal import inner_nuts, pmmh

    nuts_calls.stop_after = 1
    with pytest.raises(_Stop):
        pmmh(TESTS / "gauss_precision_outer.stan", TESTS / "gauss_precision_inner.stan",
             TESTS / "gauss_precision_outer.json", iter=10, warmup=5, seed=12, settings=S)
    _all_s(nuts_calls.list, 1)
    # without settings: the inner fit's own defaults, with the loose keywords applied
    with pytest.raises(_Stop):
        pmmh(TESTS / "gauss_precision_outer.stan", TESTS / "gauss_precision_inner.stan",
             TESTS / "gauss_precision_outer.json", iter=10, warmup=5, seed=12,
             inner_draws=80, adapt_delta=0.9)
    assert nuts_calls.list[-1] == inner_nuts(80).replace(adapt_delta=0.9)


def test_sample_gets_the_settings(normal_mean, nuts_calls):
    from stanlogz.draws import sample

    sample(normal_mean, S, seed=13)
    _all_s(nuts_calls.list, 1)


# ---------------------------------------------------------------- the CLI builds one NutsArgs
@pytest.mark.parametrize("argv", [
    ["sample", str(PROG), "--data", str(DATA)],
    ["evidence", str(PROG), "--data", str(DATA)],
    ["compare", str(PROG), str(PROG), "--data", str(DATA), str(DATA)],
    ["loo", str(PROG), "--data", str(DATA)],
    ["kfold", str(PROG), "--data", str(DATA), "--k", "2"],
    ["lfo", str(PROG), "--data", str(DATA), "--min-train", "8"],
    ["cv", str(PROG), "--data", str(DATA), "--splits", "2"],
], ids=lambda a: a[0])
def test_every_nuts_command_takes_the_shared_flags(normal_mean, nuts_calls, capsys, argv):
    from stanlogz.cli import main

    nuts_calls.stop_after = 1
    main(["--quiet", "--seed", "1", *argv, *FLAGS])
    capsys.readouterr()
    _all_s(nuts_calls.list, 1)


def test_bdmc_and_pmmh_commands_take_the_shared_flags(compiled, nuts_calls, capsys):
    from stanlogz.cli import main

    bdmc = ROOT / "stan_models" / "bdmc"
    nuts_calls.stop_after = 1
    main(["--quiet", "bdmc", str(bdmc / "normal_mean.stan"), "--simulate",
          str(bdmc / "normal_mean_sim.stan"), "--sim-data", str(bdmc / "normal_mean_sim.data.json"),
          "--estimators", "laplace", *FLAGS])
    _all_s(nuts_calls.list, 1)
    main(["--quiet", "pmmh", str(TESTS / "gauss_precision_outer.stan"), "--inner",
          str(TESTS / "gauss_precision_inner.stan"), "--data",
          str(TESTS / "gauss_precision_outer.json"), "--iter", "10", "--warmup", "5",
          *[f.replace("--", "--inner-") if f.startswith("--") else f for f in FLAGS]])
    capsys.readouterr()
    _all_s(nuts_calls.list, 2)


@pytest.mark.parametrize("flag,value", [("--adapt-delta", "1.5"), ("--chains", "0"),
                                        ("--max-treedepth", "0"), ("--warmup", "-1")])
def test_bad_sampler_flags_are_one_line_before_any_build(nuts_calls, capsys, tmp_path, flag,
                                                         value):
    from stanlogz.cli import main

    missing = tmp_path / "never_built.stan"  # a build would fail differently
    missing.write_text("parameters { real x; } model { x ~ normal(0, 1); }")
    rc = main(["loo", str(missing), flag, value])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1, err
    assert flag.lstrip("-").replace("-", "_") in err and not nuts_calls.list


# ---------------------------------------------------------------- validated once, at the boundary
@pytest.fixture
def validations(monkeypatch):
    """How many times the loose sampler keywords are turned into a NutsArgs
    (:meth:`NutsArgs.of`, which every normalization goes through)."""
    count = SimpleNamespace(n=0)
    real = NutsArgs.of.__func__

    def counting(cls, settings=None, **overrides):
        count.n += 1
        return real(cls, settings, **overrides)

    monkeypatch.setattr(NutsArgs, "of", classmethod(counting))
    return count


@pytest.mark.parametrize("workflow", ["kfold", "loo", "lfo", "heldout_many", "sample",
                                      "evidence", "compare"])
def test_settings_are_validated_once_at_the_public_function(normal_mean, nuts_calls, validations,
                                                            workflow):
    from stanlogz.api import compare, evidence
    from stanlogz.crossval.observations.observations import load_observed
    from stanlogz.crossval.psis_loo.loo import loo
    from stanlogz.crossval.refit.heldout import heldout_many
    from stanlogz.crossval.refit.kfold import kfold
    from stanlogz.crossval.refit.lfo import lfo
    from stanlogz.draws import sample

    m, data, obs = load_observed(normal_mean, DATA, None, None)
    run, runs = {
        "kfold": (lambda: kfold(normal_mean, DATA, k=2, seed=4, **LOOSE), 3),
        "loo": (lambda: loo(normal_mean, DATA, fix="exact", k_threshold=0.0, seed=3, **LOOSE),
                2),
        "lfo": (lambda: lfo(normal_mean, DATA, min_train=8, method="exact", seed=5, **LOOSE),
                3),
        "heldout_many": (lambda: heldout_many(m, data, obs, [[0], [2]], full_draws=None, seed=8,
                                              **LOOSE), 4),
        "sample": (lambda: sample(normal_mean, seed=13, **{
            k if k != "n_draws" else "draws": v for k, v in LOOSE.items()}), 1),
        "evidence": (lambda: evidence(normal_mean, seed=9, **LOOSE), 1),
        # compare passes its one NutsArgs on to evidence() and loo() of each program
        "compare": (lambda: compare([normal_mean, normal_mean], DATA, seed=10, loo=True,
                                    loo_options={"fix": "none"}, **LOOSE), 2),
    }[workflow]
    validations.n = 0
    nuts_calls.list.clear()
    run()
    # every NUTS run below got the loose keywords' values, made into one NutsArgs once
    _all_s(nuts_calls.list, runs)
    assert validations.n == 1, validations.n
