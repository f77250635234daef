"""The interpreter's NUTS under a time budget: the compiled sampler's rule (stanlogz.stan.nuts'
budget watch) over stanli's sampler, whose per-transition progress and stop poll stanlogz
hooks for the length of the call."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from stanlogz import OverBudget, time_budget
from stanlogz.stan.interpreted import InterpretedModel
from stanlogz.stan.settings import NutsArgs
from tests.helpers import past_budget_grace

pytestmark = pytest.mark.stan

SLOW = Path(__file__).resolve().parents[2] / "stan_models" / "tests" / "slow.stan"


@pytest.fixture(scope="module")
def slow() -> InterpretedModel:
    # every density loops K times: 400,000 draws per chain take minutes on the interpreter
    return InterpretedModel(SLOW.read_text(), {"K": 1000}, name="slow", seed=1)


def test_past_warmup_a_budget_keeps_the_draws_so_far(slow):
    import stanli

    hooks = (stanli._InterruptWatch, stanli._print_sample_progress)
    start = time.perf_counter()
    with time_budget(2.5):
        out = slow.nuts(chains=2, warmup=200, draws=400_000, seed=1)
    # the chains stop at the reserve point, before the budget; 0.5 s of grace for a loaded
    # machine, scaled by the load per core above 1 (two suites on two cores ended this run
    # 0.22 s and 0.52 s past it), against the minutes that the 400,000 draws asked take
    assert time.perf_counter() - start < 2.5 + past_budget_grace(0.5)
    assert (stanli._InterruptWatch, stanli._print_sample_progress) == hooks  # restored
    kept, asked = out.budget_stop[:2]
    assert asked == 400_000 and 500 < kept < asked
    chains = out.constrained.shape[0]
    assert out.constrained.shape == (chains, kept, 1) and out.unconstrained.shape[1] == kept
    assert np.all(out.sampler["lp__"] != 0.0)  # every row kept was written by the sampler
    # mu ~ N(0, 1): posterior draws (5 se of the mean at an ESS of at least 500, and of the
    # variance; failure probability below 1e-6 each)
    mu = out.constrained[:, :, 0]
    assert abs(mu.mean()) < 5 / np.sqrt(500) and abs(mu.var() - 1.0) < 5 * np.sqrt(2 / 500)
    assert np.array_equal(out.step_size, out.sampler["stepsize__"][:, -1])
    assert np.allclose(out.inv_metric[:, 0], 1.0, atol=5 * np.sqrt(2 / 500))
    # without a budget the same call runs as before (no hook left behind)
    plain = slow.nuts(chains=1, warmup=100, draws=50, seed=2)
    assert plain.budget_stop is None and plain.constrained.shape == (1, 50, 1)


def test_a_warmup_that_cannot_end_is_refused_with_a_route_that_answers(slow):
    budget = 3.0
    with time_budget(budget), pytest.raises(OverBudget) as info:
        slow.nuts(chains=2, warmup=400_000, draws=1000, seed=3)
    fewer = info.value.routes[0].options  # {"warmup": W, "draws": W}
    assert set(fewer) == {"warmup", "draws"} and fewer["warmup"] < 400_000
    start = time.perf_counter()
    with time_budget(budget):  # the route, followed: an answer within the same budget
        out = slow.nuts(NutsArgs(chains=2, **fewer), seed=3)
    assert time.perf_counter() - start < budget
    assert out.constrained.shape[1] >= 1
