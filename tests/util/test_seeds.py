"""The named seed streams (:mod:`stanlogz._util.seeds`): distinct, reproducible, ``None`` fresh,
and one stream per consumer in a workflow (``evidence()`` gives NUTS and the estimator different
seeds, and the same seed gives the same result twice)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from stanlogz._util.seeds import (
    Stream,
    child_sequence,
    drawn_sequence,
    generator_seed,
    int_seed,
    spawn_generators,
    stream,
    stream_int_seed,
    stream_rng,
)

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "stan_models" / "examples"


def _state(ss: np.random.SeedSequence) -> tuple[int, ...]:
    return tuple(int(v) for v in ss.generate_state(4))


def test_the_table_has_distinct_documented_indices():
    values = [s.value for s in Stream]
    assert len(values) == len(set(values)) == len(Stream.__members__)
    assert all(isinstance(v, int) and v >= 0 for v in values)
    # the named streams that existed before the table keep their indices (their results too)
    assert (Stream.LOO_SUBSAMPLE, Stream.LOO_HELDOUT, Stream.LOO_MIXTURE) == (7901, 7902, 7903)
    assert [Stream.UPS_PILOT + i for i in range(6)] == [
        Stream.UPS_PILOT, Stream.UPS_MOMENTS, Stream.UPS_REPILOT, Stream.UPS_M2,
        Stream.UPS_REPLICATES, Stream.UPS_LAMBDAS]


def test_every_stream_and_sub_stream_of_one_seed_is_distinct():
    states = [_state(stream(5, s)) for s in Stream]
    states += [_state(stream(5, Stream.REFIT, i)) for i in range(20)]
    states += [_state(stream(5, Stream.REFIT, i, j)) for i in range(3) for j in range(3)]
    states.append(_state(np.random.SeedSequence(5)))  # the seed's own state
    # 128-bit states: a collision between independent streams has probability ~n^2 2^-128
    assert len(set(states)) == len(states)
    ints = [stream_int_seed(5, s) for s in Stream]
    # 31-bit integers: P(any collision among 60) ~ 60^2 / 2^32 < 1e-6
    assert len(set(ints)) == len(ints)


def test_streams_are_reproducible_and_depend_on_the_seed():
    assert _state(stream(3, Stream.NUTS, 2)) == _state(stream(3, Stream.NUTS, 2))
    assert stream_int_seed(3, Stream.NUTS) == stream_int_seed(3, Stream.NUTS)
    a = stream_rng(3, Stream.FOLDS).standard_normal(5)
    np.testing.assert_array_equal(a, stream_rng(3, Stream.FOLDS).standard_normal(5))
    assert stream_int_seed(3, Stream.NUTS) != stream_int_seed(4, Stream.NUTS)
    # a stream is the child at its index, sub-indices children of it, and a SeedSequence seed
    # gives what its int gives
    assert _state(stream(3, Stream.REFIT, 7)) == _state(
        child_sequence(child_sequence(3, int(Stream.REFIT)), 7))
    assert _state(stream(np.random.SeedSequence(3), Stream.ESTIMATOR)) == _state(
        stream(3, Stream.ESTIMATOR))
    assert stream_int_seed(3, Stream.ESTIMATOR) == int_seed(stream(3, Stream.ESTIMATOR))
    assert 0 <= stream_int_seed(3, Stream.ESTIMATOR) < 2**31


def test_none_is_fresh_entropy():
    assert stream_int_seed(None, Stream.NUTS) is None  # downstream draws fresh entropy
    assert _state(stream(None, Stream.NUTS)) != _state(stream(None, Stream.NUTS))
    with pytest.raises(TypeError, match="Stream"):
        stream(1, 11)  # a bare index is refused: only the table names streams


def test_a_task_generator_knows_its_seed_and_draws_new_seeds():
    rngs = spawn_generators(9, 3)
    rngs[1].standard_normal(10)  # drawing does not change the seed it was made from
    assert [_state(generator_seed(g)) for g in rngs] == [_state(child_sequence(9, i))
                                                         for i in range(3)]
    g = np.random.default_rng(1)
    assert _state(drawn_sequence(g)) != _state(drawn_sequence(g))
    g1, g2 = np.random.default_rng(1), np.random.default_rng(1)
    assert _state(drawn_sequence(g1)) == _state(drawn_sequence(g2))


@pytest.fixture(scope="module")
def normal_mean(compiled):
    return compiled(EX / "normal_mean.stan", EX / "normal_mean.data.json")


def test_evidence_gives_nuts_and_the_estimator_their_own_streams(normal_mean, monkeypatch):
    import stanlogz.api as api

    seen: dict[str, list] = {"nuts": [], "estimator": []}
    real_draws, real_est = api.obtain_draws, api._call_estimator

    def draws_spy(m, d, nuts, *, seed=None, progress=None):
        seen["nuts"].append(seed)
        return real_draws(m, d, nuts, seed=seed, progress=progress)

    def est_spy(method, target, unc, *, seed, **kw):
        seen["estimator"].append(seed)
        return real_est(method, target, unc, seed=seed, **kw)

    monkeypatch.setattr(api, "obtain_draws", draws_spy)
    monkeypatch.setattr(api, "_call_estimator", est_spy)
    a = api.evidence(normal_mean, seed=21, chains=2, warmup=200, n_draws=300)
    b = api.evidence(normal_mean, seed=21, chains=2, warmup=200, n_draws=300)
    assert seen["nuts"] == [stream_int_seed(21, Stream.NUTS)] * 2
    assert seen["estimator"] == [stream_int_seed(21, Stream.ESTIMATOR)] * 2
    assert seen["nuts"][0] != seen["estimator"][0] and 21 not in seen["nuts"] + seen["estimator"]
    # the same seed gives the same result
    assert (a.log_z, a.log_z_se) == (b.log_z, b.log_z_se)
