"""Stan JSON written by stanio (``data_to_json``): the values Stan reads, stanlogz's tuple
convention kept, non-finite values and numpy types, one-line errors. Exact checks only."""

from __future__ import annotations

import json

import numpy as np
import pytest

from stanlogz.errors import DataError
from stanlogz.stan.inputs import StanJson, data_to_json, json_fragments, json_with_field


def test_values_as_stan_reads_them():
    d = {"N": np.int64(3), "flag": True, "x": np.float32(0.5),
         "y": np.arange(6.0).reshape(2, 3), "z": [np.nan, np.inf, -np.inf],
         "t": (1.0, 2.0), "tt": [(1, 2), (3, 4)], "pair": {"1": 1, "2": [0.5, 1.5]}}
    back = json.loads(data_to_json(d))  # Python reads NaN / Infinity as CmdStan does
    assert back["N"] == 3 and back["flag"] == 1 and back["x"] == 0.5
    assert back["y"] == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert np.isnan(back["z"][0]) and back["z"][1:] == [np.inf, -np.inf]
    assert back["t"] == [1.0, 2.0] and back["tt"] == [[1, 2], [3, 4]]  # tuples are arrays
    assert back["pair"] == {"1": 1, "2": [0.5, 1.5]}  # a dict is a Stan tuple
    assert data_to_json(None) == "{}"


def test_files_and_text_go_through_the_checked_reader(tmp_path):
    f = tmp_path / "d.json"
    f.write_text('{"N": 2, "y": [1, 2]}')
    assert json.loads(data_to_json(f)) == {"N": 2, "y": [1, 2]}
    assert json.loads(data_to_json('{"N": 1}')) == {"N": 1}
    with pytest.raises(DataError, match="is not valid JSON"):
        data_to_json('{"N": 1')


def test_unwritable_value_is_one_line():
    with pytest.raises(DataError) as info:
        data_to_json({"a": {1, 2}})
    assert str(info.value).startswith("data cannot be written as Stan JSON: ")
    assert "\n" not in str(info.value)


def test_inits_from_unconstrained_points_round_trip(compiled):
    """A chain's last draw as a Stan init (stanio shapes the flat values): unconstraining the
    init gives the point back, for a scalar, a simplex and a Cholesky factor (column-major
    flat names: a transposed matrix would not round-trip)."""
    from stanlogz.draws.continuation import init_from_unconstrained

    model = compiled("transforms")
    rng = np.random.default_rng(3)
    for _ in range(3):
        x = rng.normal(size=model.dim)
        init = init_from_unconstrained(model, x)
        assert set(init) == {"b", "w", "L", "k"}
        assert np.shape(init["L"]) == (3, 3) and np.shape(init["b"]) == ()
        np.testing.assert_allclose(model.unconstrain_dict(init), x, rtol=1e-9, atol=1e-9)


def test_one_variable_replaced_reuses_the_others_text():
    d = {"N": 3, "y": [0.5, np.nan, 2.0], "X": np.arange(6.0).reshape(3, 2), "name_x": [1, 2, 3],
         "pair": {"1": 1, "2": [0.5, 1.5]}}
    frags = json_fragments(data_to_json(d))
    moved = json_with_field(frags, "y", [0.5, -np.inf, 7.25])
    assert isinstance(moved, StanJson) and data_to_json(moved) == str(moved)  # used as it is
    # exactly the text the whole dict would give, key order kept
    assert str(moved) == data_to_json({**d, "y": [0.5, -np.inf, 7.25]})
    assert json_with_field(frags, "new", (1, 2)) == data_to_json({**d, "new": [1, 2]})
    with pytest.raises(DataError, match="cannot be written as Stan JSON"):
        json_with_field(frags, "y", {1, 2})
