"""Warm-started refits (stanlogz.draws.continuation.refit_draws): they start at the full fit's
last draws with a short warmup, land on the closed form, and fall back to cold refits where the
parameters change with the data or the warm inits do not initialize.

The z-test is |estimate − truth| <= 4.5 mcse (two-sided probability 6.8e-6 when the mcse is
honest), with fixed seeds; the other checks are deterministic.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats

from stanlogz.crossval.observations.observations import find_observations
from stanlogz.crossval.refit.heldout import heldout_elpd
from stanlogz.draws import Draws, continuation, sample
from stanlogz.draws.continuation import (
    WARM_REFIT_WARMUP,
    WarmStart,
    refit_draws,
    warm_refit_seconds,
)
from stanlogz.draws.modes import PROBE_CHAINS, PROBE_DRAWS
from stanlogz.errors import InitializationError, InputError
from stanlogz.stan.settings import NutsArgs

EXAMPLES = Path(__file__).resolve().parents[3] / "stan_models" / "examples"
Z = 4.5


def _data(name: str) -> dict:
    return json.loads((EXAMPLES / f"{name}.data.json").read_text())


class _Spy:
    """Records the settings and inits of every NUTS run that refit_draws starts."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[tuple[NutsArgs, object]] = []
        real = continuation.sample

        def spy(model, settings, **kw):
            self.calls.append((settings, kw.get("init")))
            return real(model, settings, **kw)

        monkeypatch.setattr(continuation, "sample", spy)


@pytest.mark.stan
def test_warm_refit_is_warm_and_lands_on_the_closed_form(compiled, monkeypatch) -> None:
    """Normal mean, observation 10 held out: the warm refit's 4 chains start at the 2-chain
    full fit's last draws (mu is unbounded, so the init is the draw itself) with
    WARM_REFIT_WARMUP warmup iterations, cost fewer gradients than the cold refit at the same
    settings, and its log p(y_10 | y_1..9) is within 4.5 mcse of the conjugate closed form
    (P < 6.8e-6)."""
    data = _data("normal_mean")
    m = compiled(EXAMPLES / "normal_mean.stan", data)
    obs = find_observations(data)
    full = sample(m, chains=2, warmup=300, draws=500, seed=1)
    spy = _Spy(monkeypatch)
    warm = heldout_elpd(m, data, obs, [9], full_draws=full, seed=2, warmup=700, draws=500)
    (settings, init), (probe, probe_init) = spy.calls  # the refit, then its probe
    assert warm.warm and settings.warmup == min(700, WARM_REFIT_WARMUP) < 700
    # the probe (stanlogz.draws.modes): PROBE_CHAINS short chains from random inits in (-2, 2)
    assert (probe.chains, probe.draws, probe.warmup) == (PROBE_CHAINS, PROBE_DRAWS,
                                                          WARM_REFIT_WARMUP)
    assert all(-2 < float(i["mu"]) < 2 for i in probe_init)
    # four refit chains from the two full-fit chains: chain c starts at chain c mod 2's last
    assert np.allclose([float(i["mu"]) for i in init], full.unconstrained[[0, 1, 0, 1], -1, 0],
                       atol=1e-12)
    y = np.array(data["y"])
    prec = 1 / data["prior_sd"] ** 2 + 9  # the posterior of mu given y_1..y_9 (sigma = 1)
    truth = stats.norm(y[:9].sum() / prec, np.sqrt(1 + 1 / prec)).logpdf(y[9])
    assert abs(warm.elpd - truth) < Z * warm.mcse, (warm.elpd, truth, warm.mcse)
    cold = heldout_elpd(m, data, obs, [9], full_draws=full, seed=2, warmup=700, draws=500,
                        warm_refits=False)
    # cold (the settings as given), then its probe from the full fit's last draws
    assert not cold.warm and len(spy.calls) == 4 and spy.calls[2][0].warmup == 700
    assert np.allclose([float(i["mu"]) for i in spy.calls[3][1]],
                       full.unconstrained[[0, 1, 0, 1], -1, 0], atol=1e-12)
    # 2 x 100 warmup iterations near the posterior instead of 2 x 700 from random inits
    assert warm.n_gradient_evals < cold.n_gradient_evals
    # a one-chain refit gets a one-chain probe (a cold one-chain refit is what it replaces),
    # from random inits
    one = heldout_elpd(m, data, obs, [9], full_draws=full, seed=2, warmup=700, draws=500,
                       chains=1)
    (settings, _), (probe, probe_init) = spy.calls[4:6]
    assert one.warm and settings.chains == 1 and probe.chains == 1 == len(probe_init)
    assert -2 < float(probe_init[0]["mu"]) < 2


@pytest.mark.stan
def test_interpreted_warm_refit_takes_the_adapted_metric(monkeypatch) -> None:
    """On the interpreter the warm refit also starts from the full fit's adapted step sizes
    and inverse metrics (deterministic: what reaches the sampler)."""
    from stanlogz.stan.interpreted import InterpretedModel

    data = _data("normal_mean")
    m = InterpretedModel((EXAMPLES / "normal_mean.stan").read_text(), data, name="normal_mean")
    full = sample(m, NutsArgs(chains=2, warmup=200, draws=200, backend="interpreted"), seed=1)
    seen: list[object] = []
    real = continuation.sample
    monkeypatch.setattr(continuation, "sample",
                        lambda *a, **kw: seen.append(kw.get("warm")) or real(*a, **kw))
    train = m.with_data(dict(data, N=9, y=data["y"][:9]))
    d, warm = refit_draws(train, NutsArgs(chains=2, warmup=200, draws=100,
                                          backend="interpreted"),
                          seed=3, warm=WarmStart.of(m, full))
    assert warm and d.unconstrained.shape == (2, 100, 1)
    assert np.array_equal(seen[0].step_size, full.step_size)
    assert np.array_equal(seen[0].inv_metric, full.inv_metric)
    # its warmup (WARM_REFIT_WARMUP, under 150) ends no metric window: as on the compiled
    # backend, the refit keeps the full fit's metric (stanli reports it to rounding)
    assert np.allclose(d.inv_metric, full.inv_metric, rtol=1e-12, atol=0)


@pytest.mark.stan
def test_compiled_warm_refit_takes_the_adapted_metric(compiled, monkeypatch) -> None:
    """The compiled sampler starts a warm refit from the full fit's adapted step sizes and
    inverse metrics too (deterministic): they reach the sampler, and with no warmup the run
    keeps the metric it was given, chain c the full fit's chain c mod 2 (from the unit one
    it would report ones)."""
    data = _data("normal_mean")
    m = compiled(EXAMPLES / "normal_mean.stan", data)
    assert m.nuts_takes_warm
    full = sample(m, chains=2, warmup=200, draws=200, seed=1)
    seen: list[object] = []
    real = continuation.sample
    monkeypatch.setattr(continuation, "sample",
                        lambda *a, **kw: seen.append(kw.get("warm")) or real(*a, **kw))
    train = m.with_data(dict(data, N=9, y=data["y"][:9]))
    d, warm = refit_draws(train, NutsArgs(chains=2, warmup=200, draws=100), seed=3,
                          warm=WarmStart.of(m, full), probe=False)
    assert warm and d.unconstrained.shape == (2, 100, 1)
    assert np.array_equal(seen[0].step_size, full.step_size)
    assert np.array_equal(seen[0].inv_metric, full.inv_metric)
    # no metric window: the refit keeps the full fit's metric, only its step size adapts
    assert np.array_equal(d.inv_metric, full.inv_metric)
    # chains continued to a precision target re-adapt from their own step sizes and metrics
    more = continuation.extend_draws(train, d, 10, seed=5)
    assert more.n_draws == 110
    assert np.array_equal(seen[1].step_size, d.step_size)
    assert np.array_equal(seen[1].inv_metric, d.inv_metric)
    # a continuation the time budget ended with one chain still in warmup comes back with the
    # other chain only: no chain is extended (K-fold's precision rounds concatenated them and
    # failed on the chains' count, seen under load)
    one = replace(d, unconstrained=d.unconstrained[:1], constrained=None,
                  sampler={k: v[:1] for k, v in d.sampler.items()})
    monkeypatch.setattr(continuation, "sample", lambda *a, **kw: one)
    assert continuation.extend_draws(train, d, 10, seed=5) is d
    given = SimpleNamespace(step_size=np.array([0.9, 1.1]), inv_metric=np.array([[0.25], [4.0]]))
    out = train.nuts(NutsArgs(chains=3, warmup=0, draws=20), seed=4, warm=given)
    assert np.array_equal(out.inv_metric, [[0.25], [4.0], [0.25]])
    with pytest.raises(InputError, match="warm start"):
        train.nuts(NutsArgs(chains=2, warmup=0, draws=20), seed=4,
                   warm=SimpleNamespace(step_size=np.ones(2), inv_metric=np.zeros((2, 1))))


@pytest.mark.stan
def test_latents_per_observation_start_warm_on_the_schools_kept(compiled, monkeypatch) -> None:
    """Eight schools without school 3 loses that school's latent: the refit starts warm all
    the same, each chain at the full fit's last draw with eta[3] dropped (eta[4] of the full
    fit is eta[3] of the refit: crossval's coordinate map), with the short warmup, and is
    probed from random inits. Nothing here is statistical (the value is checked against
    quadrature in tests/crossval/refit/test_kfold.py's eight-schools test)."""
    d = _data("eight_schools")
    m = compiled(EXAMPLES / "eight_schools.stan", d)
    full = sample(m, chains=2, warmup=200, draws=200, seed=4)
    spy = _Spy(monkeypatch)
    r = heldout_elpd(m, d, find_observations(d), [2], full_draws=full, seed=5, chains=2,
                     warmup=200, draws=200, pointwise=False)
    assert r.warm and r.n_latent == 1
    (settings, init), (probe, _) = spy.calls[:2]  # the refit, then its probe
    assert settings.warmup == WARM_REFIT_WARMUP and probe.draws == PROBE_DRAWS
    last = full.unconstrained[:, -1]  # mu, log tau, eta[1..8]
    for c in range(2):
        assert float(init[c]["mu"]) == pytest.approx(last[c, 0])
        assert np.allclose(np.asarray(init[c]["eta"], dtype=float),
                           np.delete(last[c, 2:], 2))


class _Fake:
    """A one-parameter stand-in program whose NUTS refuses any init (a constraint that
    depends on the data)."""

    name, dim, code = "fake", 1, ""

    def param_unc_names(self) -> list[str]:
        return ["theta"]

    def param_names(self, tp: bool = False, gq: bool = False) -> list[str]:
        return ["theta"]

    def constrain(self, x: np.ndarray, **_: object) -> np.ndarray:
        return np.asarray(x)

    def log_density_gradient(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        return 0.0, np.zeros(1)

    def nuts(self, settings: NutsArgs, *, seed=None, init=None, progress=None):
        if init is not None:
            raise InitializationError("Rejecting initial value")
        c, n = settings.chains, settings.draws
        return SimpleNamespace(unconstrained=np.zeros((c, n, 1)),
                               constrained=np.zeros((c, n, 1)), constrained_names=["theta"],
                               sampler={}, step_size=np.ones(c), inv_metric=np.ones((c, 1)),
                               seconds=0.0, n_gradient_evals=1, max_treedepth=10)


def test_warm_inits_that_fail_fall_back_to_cold() -> None:
    fake = _Fake()
    start = WarmStart.of(fake, np.ones((2, 5, 1)))
    assert start is not None and start.fits(fake)
    d, warm = refit_draws(fake, NutsArgs(chains=3, warmup=400, draws=7), seed=1, warm=start)
    assert not warm and d.unconstrained.shape == (3, 7, 1)


def test_warm_start_of_and_fits() -> None:
    fake = _Fake()
    assert WarmStart.of(fake, None) is None
    assert WarmStart.of(fake, np.ones((2, 5, 3))) is None  # another program's draws
    x = np.arange(10.0).reshape(2, 5, 1)
    d = Draws(unconstrained=x, step_size=np.array([0.5, 0.6]),
              inv_metric=np.array([[1.0], [2.0]]))
    s = WarmStart.of(fake, d)
    assert s.last.tolist() == [[4.0], [9.0]] and s.step_size.tolist() == [0.5, 0.6]
    # a metric that is not positive is not a metric: the start keeps the draws only
    bad = Draws(unconstrained=x, step_size=np.array([0.5, 0.6]),
                inv_metric=np.array([[1.0], [np.nan]]))
    assert WarmStart.of(fake, bad).inv_metric is None
    other = SimpleNamespace(dim=1, param_unc_names=lambda: ["z.1"])
    assert not s.fits(other)


def test_warm_refit_seconds_is_the_kept_steps_share() -> None:
    """A fit of 10 s with 20,000 gradients of which the 2 x 400 kept draws took 4,000: a warm
    refit repeats the kept steps with WARM_REFIT_WARMUP (100) more iterations at their rate,
    and its probe's 2 chains (as many as the fit's) of 100 + 50 iterations (300 over the 800
    kept), 4000 x 1.625 / 20000 of the 10 s."""
    d = Draws(unconstrained=np.zeros((2, 400, 1)), seconds=10.0, n_gradient_evals=20000,
              sampling_cost_known=True, sampler={"n_leapfrog__": np.full((2, 400), 5.0)})
    probe = 2 * (WARM_REFIT_WARMUP + PROBE_DRAWS) / 800
    assert probe == 0.375 and PROBE_CHAINS == 4
    assert warm_refit_seconds(d) == pytest.approx(10.0 * 4000 * (1 + WARM_REFIT_WARMUP / 400
                                                                  + probe) / 20000)
    d.sampling_cost_known = False  # given draws: their cost unknown, the full fit's seconds
    assert warm_refit_seconds(d) == 10.0


def test_kfold_warm_refits_must_be_a_bool() -> None:
    import stanlogz

    with pytest.raises(InputError, match="warm_refits must be True or False"):
        stanlogz.kfold(str(EXAMPLES / "normal_mean.stan"), _data("normal_mean"),
                       warm_refits="no")


@pytest.mark.stan
def test_factorized_pointwise_terms_equal_the_whole_instances(compiled, monkeypatch) -> None:
    """A fold of three observations of the hierarchical regression (factorized given its
    parameters): each log p(y_i | y_T) from log p̃_T plus loo's density-difference term equals
    the one from the program on T ∪ {i} evaluated whole, to rounding (same draws and seeds:
    deterministic)."""
    from stanlogz.crossval.refit import heldout

    d = _data("hier_regression")
    m = compiled(EXAMPLES / "hier_regression.stan", d)
    obs = find_observations(d)
    full = sample(m, chains=2, warmup=200, draws=300, seed=8)
    kw = dict(full_draws=full, seed=9, chains=2, warmup=200, draws=300)
    used = []
    real = heldout._factorized
    monkeypatch.setattr(heldout, "_factorized", lambda *a: used.append(real(*a)) or used[-1])
    fast = heldout_elpd(m, d, obs, [0, 7, 20], **kw)
    assert used and used[0] is not None  # the fast path ran
    monkeypatch.setattr(heldout, "_factorized", lambda *a: None)
    whole = heldout_elpd(m, d, obs, [0, 7, 20], **kw)
    assert np.allclose(fast.elpd_i, whole.elpd_i, rtol=0, atol=1e-9), (fast.elpd_i,
                                                                        whole.elpd_i)
    assert fast.elpd_i_mcse == pytest.approx(whole.elpd_i_mcse, rel=1e-6)


@pytest.mark.stan
def test_splits_check_the_factorization_once(compiled, monkeypatch) -> None:
    """The check that the density difference is each observation's term (N instances of the
    program at 3 full-data draws) runs for the first of the splits that share the full
    draws; the others reuse its verdict, and their values are those of running it in every
    split (same seeds: deterministic)."""
    from stanlogz.crossval.observations.pointwise import PointwiseLogLik
    from stanlogz.crossval.refit import heldout

    d = _data("hier_regression")
    m = compiled(EXAMPLES / "hier_regression.stan", d)
    obs = find_observations(d)
    full = sample(m, chains=2, warmup=200, draws=300, seed=8)
    sets = [[0, 7, 20], [1, 8, 21], [2, 9, 22]]
    kw = dict(full_draws=full, seed=9, chains=2, warmup=200, draws=300)
    calls: list[int] = []
    real = PointwiseLogLik.check
    monkeypatch.setattr(PointwiseLogLik, "check",
                        lambda self, *a, **k: calls.append(1) or real(self, *a, **k))
    once = heldout.heldout_many(m, d, obs, sets, **kw)
    assert len(calls) == 1
    monkeypatch.setattr(heldout.SharedEvidence, "once", lambda self, key, check: check())
    every = heldout.heldout_many(m, d, obs, sets, **kw)
    assert len(calls) == 1 + len(sets)
    for a, b in zip(once, every, strict=True):
        assert np.array_equal(a.elpd_i, b.elpd_i) and a.elpd == b.elpd


def test_shared_once_remembers_a_failed_check() -> None:
    """SharedEvidence.once runs a check once per key: a pass returns and a refusal is raised
    again, without running the check again; another key runs its own."""
    import pickle

    from stanlogz.crossval.refit.heldout import SharedEvidence

    shared, runs = SharedEvidence(1), []

    def bad() -> None:
        runs.append("bad")
        raise InputError("not pointwise")

    for _ in range(2):
        with pytest.raises(InputError, match="not pointwise"):
            shared.once("a", bad)
        shared.once("b", lambda: runs.append("good"))
    assert runs == ["bad", "good"]
    fresh = pickle.loads(pickle.dumps(shared))  # a cluster worker runs its checks itself
    fresh.once("b", lambda: runs.append("good"))
    assert runs == ["bad", "good", "good"]


def test_cli_cold_refits_flag(monkeypatch, capsys) -> None:
    """`stanlogz kfold` asks for warm refits by default and cold ones with --cold-refits, and
    passes --mcse on as the target (the API call is stubbed: no sampling)."""
    from stanlogz.cli import main
    from stanlogz.commands import kfold as command

    seen = []

    def stub(*args, **kwargs):
        seen.append((kwargs["warm_refits"], kwargs["mcse_target"]))
        raise InputError("stub")

    monkeypatch.setattr(command, "kfold", stub)
    for extra in ([], ["--cold-refits", "--mcse", "0.1"]):
        main(["--quiet", "kfold", str(EXAMPLES / "normal_mean.stan"), "--data",
              str(EXAMPLES / "normal_mean.data.json"), *extra])
    assert seen == [(True, None), (False, 0.1)]
    capsys.readouterr()


def test_kfold_estimate_prices_warm_refits_and_terms() -> None:
    """The up-front estimate: per refit, the warm share of the full fit plus the held-out
    densities' share (1.5 of the full fit for the whole program, 0.3 term by term), times
    the share of the data the fold keeps (closed form)."""
    from stanlogz.crossval.refit.kfold_time import (
        HELDOUT_SHARE,
        HELDOUT_SHARE_TERMS,
        TERM_SIDES,
        refit_seconds,
    )

    d = Draws(unconstrained=np.zeros((2, 100, 1)), seconds=10.0, n_gradient_evals=3000,
              sampling_cost_known=True, sampler={"n_leapfrog__": np.full((2, 100), 5.0)})
    held = [np.arange(5), np.arange(5, 10)]
    warm = warm_refit_seconds(d)
    assert refit_seconds(d, 10, held, 1) == pytest.approx(2 * (10 + HELDOUT_SHARE * 10) * 0.5)
    assert refit_seconds(d, 10, held, 1, warm=True, terms=0.0) == pytest.approx(
        2 * (warm + HELDOUT_SHARE_TERMS * 10) * 0.5)
    # term by term, each held-out observation's term at both sides' draws (0.1 s a term)
    assert refit_seconds(d, 10, held, 1, warm=True, terms=0.1) == pytest.approx(
        2 * ((warm + HELDOUT_SHARE_TERMS * 10) * 0.5 + TERM_SIDES * 0.1 * 5))


@pytest.mark.stan
def test_kfold_to_an_mcse_target_continues_the_chains(compiled) -> None:
    """K-fold (K = 5) of the normal mean from 2 x 100 draws with an mcse target of 0.03 (the
    first round's mcse is about 0.07): the chains are continued until the target is met, and
    elpd_kfold is within 4.5 of its final mcse of the closed form (P < 6.8e-6; fixed seed)."""
    import stanlogz
    from benchmarks.anytime_commands import exact_kfold

    data = _data("normal_mean")
    m = compiled(EXAMPLES / "normal_mean.stan", data)
    r = stanlogz.kfold(m, data, k=5, seed=3, chains=2, warmup=200, n_draws=100,
                       mcse_target=0.03)
    p = r.precision
    assert p["ended_by"] == "target" and r.mcse <= 0.03 < p["rounds"][0]["mcse"]
    assert p["draws_first"] == 100 and p["draws"] == r.n_samples // 2 > 100
    assert all(f.train_draws.n_draws == p["draws"] for f in r.folds)
    truth = exact_kfold(data, r.fold_of)
    assert abs(r.elpd_kfold - truth) < Z * r.mcse, (r.elpd_kfold, truth, r.mcse)
    assert "the target was met" in r.precision_note() and r.to_dict()["precision"] == p
    with pytest.raises(InputError, match="must be a positive number"):
        stanlogz.kfold(m, data, k=5, mcse_target=-1)


@pytest.mark.stan
def test_kfold_mcse_target_ended_by_the_budget(compiled, monkeypatch, clock) -> None:
    """A step-count budget (1 s per held-out estimate, nothing else moves the clock) of 8 s
    with an unreachable target: the 5 refits take 5 s, one round of 5 more leaves the clock
    past the budget, and the next round is not started: ``ended_by`` says the budget."""
    import stanlogz
    from stanlogz import time_budget
    from stanlogz.crossval.refit import heldout, kfold_target
    from tests.helpers import tick_per_call

    data = _data("normal_mean")
    m = compiled(EXAMPLES / "normal_mean.stan", data)
    tick_per_call(monkeypatch, clock, heldout, "heldout_elpd")
    tick_per_call(monkeypatch, clock, kfold_target, "heldout_elpd")
    with time_budget(8):
        r = stanlogz.kfold(m, data, k=5, seed=3, chains=2, warmup=200, n_draws=100,
                           mcse_target=1e-4)
    assert r.precision["ended_by"] == "budget" and len(r.precision["rounds"]) == 2
    assert r.budget_stop is None and np.isfinite(r.mcse)
    assert "the time budget ended it" in r.precision_note()


@pytest.mark.stan
def test_a_round_whose_continuation_the_budget_ended_in_warmup_ends_by_the_budget(
        compiled, monkeypatch) -> None:
    """A continuation the budget ends while a chain is in warmup returns no new draws
    (``extend_draws`` gives its input back): the round is not counted, its folds are not
    recomputed on the same draws, and ``ended_by`` says the budget."""
    import stanlogz
    from stanlogz.crossval.refit import kfold_target

    data = _data("normal_mean")
    m = compiled(EXAMPLES / "normal_mean.stan", data)
    recomputed: list[int] = []
    real = kfold_target.heldout_elpd
    monkeypatch.setattr(kfold_target, "extend_draws", lambda model, draws, *a, **k: draws)
    monkeypatch.setattr(kfold_target, "heldout_elpd",
                        lambda *a, **k: recomputed.append(1) or real(*a, **k))
    r = stanlogz.kfold(m, data, k=5, seed=3, chains=2, warmup=200, n_draws=100,
                       mcse_target=1e-4)
    assert r.precision["ended_by"] == "budget" and len(r.precision["rounds"]) == 1
    assert r.precision["draws"] == 100 and not recomputed
