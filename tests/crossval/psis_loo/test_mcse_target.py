"""loo to a precision target (issue 45, ``mcse_target=``, ``--mcse``): the chains are
continued, never restarted, until mcse_elpd_loo meets the target, and the estimate lands on
the closed-form elpd_loo; under a time budget the continuation stops where the last elpd_loo
still fits and the result says the budget ended it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import norm

import stanlogz
from stanlogz import time_budget
from stanlogz.cli import main
from stanlogz.crossval.psis_loo import target as target_module
from stanlogz.errors import InputError

pytestmark = pytest.mark.stan

EXAMPLES = Path(__file__).resolve().parents[3] / "stan_models" / "examples"
PROGRAM = EXAMPLES / "normal_mean.stan"
DATA = EXAMPLES / "normal_mean.data.json"
SMALL = {"chains": 4, "warmup": 300, "n_draws": 300, "verify": 0}


def exact_elpd() -> float:
    """elpd_loo of the conjugate normal mean: y_i | y_-i ~ normal(m_-i, sqrt(1 + v_-i))."""
    d = json.loads(DATA.read_text())
    y, s, tau = np.array(d["y"]), d["sigma"], d["prior_sd"]
    v = 1.0 / (1.0 / tau**2 + (y.size - 1) / s**2)
    m = v * (y.sum() - y) / s**2
    return float(norm.logpdf(y, m, np.sqrt(s**2 + v)).sum())


@pytest.fixture(scope="module")
def plain(compiled):
    return stanlogz.loo(compiled(PROGRAM, data=DATA), seed=3, **SMALL)


def test_the_target_is_met_by_continuing_the_chains(compiled, plain):
    goal = plain.mcse_elpd_loo / 2  # about four times the draws
    r = stanlogz.loo(compiled(PROGRAM, data=DATA), seed=3, mcse_target=goal, **SMALL)
    p = r.precision
    assert p["ended_by"] == "target" and r.mcse_elpd_loo <= goal
    assert p["restarts"] == 0 and p["draws_first"] == 1200 and p["draws"] >= 2400
    assert r.to_dict()["precision"]["ended_by"] == "target"
    assert f"mcse target {goal:g}: the target was met with {p['draws']} draws" in repr(r)
    # not restarted: the first draws are the plain run's (same seed), the step size its own
    np.testing.assert_array_equal(r.draws.unconstrained[:, :300], plain.draws.unconstrained)
    np.testing.assert_array_equal(r.draws.step_size, plain.draws.step_size)
    # the Monte Carlo error is the only error of PSIS here (every k-hat < 0.5); 4.5 mcse
    # fails with probability 7e-6 for a normal estimate with its se (fixed seed)
    assert abs(r.elpd_loo - exact_elpd()) <= 4.5 * r.mcse_elpd_loo


def test_a_budget_ends_the_continuation_and_says_so(compiled, plain, monkeypatch, clock):
    # a step-count budget: the clock moves only with the continued chains' gradient calls
    # (10 ms of budget each), so a loaded machine does not change where it stops
    real = target_module.continue_chains

    class Ticking:
        def __init__(self, model):
            self.model = model

        def log_density_gradient(self, x, **kw):
            clock.t += 0.01
            return self.model.log_density_gradient(x, **kw)

        def constrain_many(self, xs, **kw):
            return self.model.constrain_many(xs, **kw)

    monkeypatch.setattr(target_module, "continue_chains",
                        lambda model, *a, **kw: real(Ticking(model), *a, **kw))
    goal = plain.mcse_elpd_loo / 10  # a hundred times the draws: more than 20 s of budget
    with time_budget(20.0):
        r = stanlogz.loo(compiled(PROGRAM, data=DATA), seed=3, mcse_target=goal, **SMALL)
    p = r.precision
    assert p["ended_by"] == "budget" and 1200 < p["draws"] < 100 * 1200
    assert r.mcse_elpd_loo > goal and np.isfinite(r.elpd_loo)
    assert any(w.startswith(f"mcse target {goal:g} not reached") for w in r.warnings)
    np.testing.assert_array_equal(r.draws.unconstrained[:, :300], plain.draws.unconstrained)
    assert abs(r.elpd_loo - exact_elpd()) <= 4.5 * r.mcse_elpd_loo  # as above


def test_cli_mcse_reports_what_ended_it(plain, capsys):
    goal = plain.mcse_elpd_loo / 2
    rc = main(["--json", "--quiet", "loo", str(PROGRAM), "--data", str(DATA), "--seed", "3",
               "--chains", "4", "--warmup", "300", "--draws", "300", "--verify", "0",
               "--mcse", repr(goal)])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["precision"]["ended_by"] == "target"
    assert out["mcse_elpd_loo"] <= goal


@pytest.mark.parametrize("keywords, message", [
    ({"mcse_target": -1.0}, "mcse_target must be a positive number"),
    ({"mcse_target": 0.1, "subsample": 5}, "mcse_target continues the chains"),
    ({"mcse_target": 0.1, "group": "g"}, "mcse_target continues the chains"),
])
def test_bad_targets_are_refused_in_one_line(compiled, keywords, message):
    with pytest.raises(InputError, match=message):
        stanlogz.loo(compiled(PROGRAM, data=DATA), seed=3, **SMALL, **keywords)


def test_a_fit_alone_cannot_be_continued():
    ll = np.random.default_rng(0).normal(-1.0, 0.3, size=(4, 100, 12))
    with pytest.raises(InputError, match="mcse_target continues the chains"):
        stanlogz.loo(ll, mcse_target=0.1)
