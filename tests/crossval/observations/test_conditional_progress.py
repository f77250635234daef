"""Progress of the conditional pass (issue 37 item 3): the observations done and the time left,
from the rate so far, as plain lines every ``EVERY_S`` seconds or a tqdm bar. The clock is
injected, so the arithmetic is checked exactly; how close the estimate comes on a real pass is
measured by benchmarks/nonfactorized_cost.py."""

from __future__ import annotations

import numpy as np
import pytest

from stanlogz._util.progress import time_left
from stanlogz.crossval.observations import clock as cs
from stanlogz.crossval.observations.clock import PassBudget, PassClock
from stanlogz.crossval.observations.nonfactorized import NonFactorizedSource
from stanlogz.crossval.observations.observations import find_observations
from stanlogz.crossval.observations.pointwise import PointwiseLogLik
from stanlogz.crossval.psis_loo.loo import loo
from stanlogz.errors import InputError, speaking


@pytest.fixture(autouse=True)
def _cli_voice():
    """The refusals here are checked as the command line says them (flags); the API's
    keywords are checked in tests/util/test_routes.py."""
    with speaking("cli"):
        yield


class FakeClock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_time_left_is_the_rate_so_far_times_the_steps_left():
    assert time_left(30.0, 10, 40) == 90.0
    assert time_left(0.0, 0, 5) == 0.0


def test_plain_lines_every_ten_seconds_with_the_time_left():
    lines: list[str] = []
    clock = FakeClock()
    pc = PassClock(lines.append, 200, "conditional log-likelihood", clock=clock)
    for _ in range(200):  # 0.5 s per observation: 100 s in all
        clock.t += 0.5
        pc.update()
    pc.close()
    # the first line after 3 s (6 observations), then every 10 s (20 observations)
    assert lines[0] == ("conditional log-likelihood: 6/200 observations in 3 s, "
                        "about 97 s left")
    assert lines[1] == ("conditional log-likelihood: 26/200 observations in 13 s, "
                        "about 87 s left")
    assert len(lines) == 10 and lines[-1].endswith("186/200 observations in 93 s, about 7 s left")


def test_long_passes_are_told_in_minutes_and_hours():
    lines: list[str] = []
    clock = FakeClock()
    pc = PassClock(lines.append, 1000, "conditional log-likelihood", clock=clock)
    clock.t += 36.0
    pc.update()
    assert lines == ["conditional log-likelihood: 1/1000 observations in 36 s, estimating "
                     "the time left"]
    for _ in range(9):
        clock.t += 36.0
        pc.update()
    assert pc.line(360.0) == ("conditional log-likelihood: 10/1000 observations in 6 min, "
                              "about 9.9 h left")


def test_a_long_pass_over_many_observations_names_subsampling_once():
    # sat-hier_2pl: 19,200 observations took 13 minutes; beyond HINT_S left, over at least
    # 2 x SUBSAMPLE_HINT observations, the line names --subsample once (and never for short
    # passes or few observations)
    clock = FakeClock()
    pc = PassClock(None, 19200, "density-difference log-likelihood", clock=clock)
    for _ in range(10):
        clock.t += 0.03
        pc.update()
    first = pc.line(0.3)
    assert first.endswith("about 10 min left (--subsample 1000 would estimate elpd_loo from "
                          "1000 observations drawn at random, with its se, in a fraction of "
                          "the time)")
    assert "--subsample" not in pc.line(0.3)  # once
    few = PassClock(None, 1500, "conditional log-likelihood", clock=clock)
    for _ in range(10):
        clock.t += 10.0
        few.update()
    assert "--subsample" not in few.line(100.0)  # 4 h left, but too few observations


def test_one_slow_observation_does_not_inflate_the_time_left():
    # the N = 1000 AR(5) case: the first observation (one-time costs, a wide conditional on
    # quadrature) took 18 s, the others 1.3 s each; after three observations the plain rate
    # says 1.9 h for the remaining 997, the robust one 22 min (997 x 1.3 s)
    lines: list[str] = []
    clock = FakeClock()
    pc = PassClock(lines.append, 1000, "conditional log-likelihood", clock=clock)
    clock.t += 18.0
    pc.update()
    for _ in range(2):
        clock.t += 1.3
        pc.update()
    assert lines == ["conditional log-likelihood: 1/1000 observations in 18 s, estimating "
                     "the time left"]
    assert pc.line(20.6) == ("conditional log-likelihood: 3/1000 observations in 21 s, about "
                             "22 min left")
    assert abs(time_left(20.6, 3, 1000) / (997 * 1.3) - 5.28) < 0.01  # what it replaced


def test_a_budget_stops_the_pass_saying_how_far_it_got():
    clock = FakeClock()
    pc = PassClock(None, 200, "conditional log-likelihood", budget=60.0, clock=clock)
    for _ in range(119):  # 0.5 s each: 59.5 s, inside the budget
        clock.t += 0.5
        pc.update()
    clock.t += 1.0
    with pytest.raises(PassBudget, match=r"budget of 60 s after 120/200 observations "
                       r"\(about 40 s more at this rate\)"):
        pc.update()


def test_loo_passes_its_budget_to_the_conditional_pass(compiled):
    rng = np.random.default_rng(4)
    data = {"K": 2, "T": 12, "y": (np.cumsum(rng.normal(size=12)) * 0.5).round(3).tolist(),
            "sigma": 1.0}
    m = compiled("ark", data)
    with pytest.raises(PassBudget, match=r"after 1/12 observations"):
        loo(m, data, obs="T", log_lik="conditional", seed=2, chains=1, warmup=100, n_draws=40,
            cond_budget=1e-9)
    with pytest.raises(InputError, match="cond_budget must be "):
        loo(m, data, obs="T", log_lik="conditional", cond_budget=-1.0)


def test_bars_replace_the_lines():
    class Bars:
        def __init__(self) -> None:
            self.lines: list[str] = []
            self.updates = 0

        def __call__(self, line: str) -> None:
            self.lines.append(line)

        def bar(self, total, desc, unit):
            owner = self

            class Bar:
                def update(self, n: int = 1) -> None:
                    owner.updates += n

                def close(self) -> None:
                    pass

            return Bar()

    cb, clock = Bars(), FakeClock()
    pc = PassClock(cb, 50, "conditional log-likelihood", clock=clock)
    for _ in range(50):
        clock.t += 1.0
        pc.update()
    assert cb.updates == 50 and cb.lines == []


def test_the_full_pass_of_a_source_reports_through_its_progress(compiled, monkeypatch):
    monkeypatch.setattr(cs, "FIRST_S", 0.0)
    monkeypatch.setattr(cs, "EVERY_S", 0.0)
    rng = np.random.default_rng(3)
    y = np.cumsum(rng.normal(size=12)) * 0.5
    data = {"K": 2, "T": 12, "y": y.round(3).tolist(), "sigma": 1.0}
    m = compiled("ark", data)
    src = NonFactorizedSource(m, data, find_observations(data, "T"))
    lines: list[str] = []
    src.progress = lines.append
    x = rng.normal(size=(20, m.dim)) * 0.1
    blocks = list(src.chunks(x))
    assert sum(b.shape[1] for _, b in blocks) == 12
    assert [ln.split(":")[1].split(" in ")[0] for ln in lines] == [
        f" {k}/12 observations" for k in range(1, 12)]
    assert all(ln.endswith(" left") for ln in lines)


def test_the_density_difference_pass_reports_its_clock(compiled, monkeypatch):
    # The difference pass evaluates the whole program per observation and draw (a 900-parameter
    # corpus program took minutes); with progress set it counts observations with the time left,
    # and its values are those of an unclocked pass.
    monkeypatch.setattr(cs, "FIRST_S", 0.0)
    monkeypatch.setattr(cs, "EVERY_S", 0.0)
    rng = np.random.default_rng(4)
    data = {"N": 40, "y": rng.normal(size=40).round(3).tolist(), "sigma": 1.0, "mu0": 0.0,
            "tau0": 2.0}
    m = compiled("normal", data)
    x = rng.normal(size=(30, m.dim))
    quiet = PointwiseLogLik(m, data, find_observations(data), "difference").matrix(x)
    pw = PointwiseLogLik(m, data, find_observations(data), "difference")
    lines: list[str] = []
    pw.progress = lines.append
    np.testing.assert_array_equal(pw.matrix(x), quiet)
    heads = [ln.split(" in ")[0] for ln in lines]
    assert heads == [f"density-difference log-likelihood: {k}/40 observations"
                     for k in range(1, 40)]
    assert all(ln.endswith("left") for ln in lines[cs.MIN_ESTIMATE - 1:])
    # closed form: log N(y_i | mu, 1) at the draws' mu
    mu = x[:, 0:1]
    y = np.asarray(data["y"])
    np.testing.assert_allclose(quiet, -0.5 * np.log(2 * np.pi) - 0.5 * (y - mu) ** 2, atol=1e-9)
