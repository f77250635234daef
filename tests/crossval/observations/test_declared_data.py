"""Observation arrays only among the program's declared data (issue 44 item 5): posteriordb's
gp_pois_regr data file holds an array ``y`` (gp_regr's outcome) that the gp_pois_regr program,
whose outcome is ``k``, does not declare; loo took ``y`` for the outcome and refused with "the
density does not fall off in y[1]". Now the undeclared array is neither an observation field,
nor the response, nor named by a refusal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import stanlogz
from stanlogz.crossval.elpd.routes import refit_data_error
from stanlogz.crossval.observations.observations import Observations, find_observations
from stanlogz.errors import InputError, speaking
from stanlogz.stan.code import data_names


@pytest.fixture(autouse=True)
def _cli_voice():
    """The refusals here are checked as the command line says them (flags); the API's
    keywords are checked in tests/util/test_routes.py."""
    with speaking("cli"):
        yield


TESTS = Path(__file__).resolve().parents[3] / "stan_models" / "tests"
GP = TESTS / "gp_pois_regr.stan"
DATA = json.loads((TESTS / "gp_pois_regr.json").read_text())  # N, x, y (undeclared), k


def test_data_names_of_every_declaration_form() -> None:
    code = """
    functions { real f(real a) { return a; } }
    transformed data { real z = 1; }  // not data
    data {
      int<lower=0> N;  // a comment; with a semicolon
      vector<lower=0>[N] y; int yy[N]; matrix[N, 2] X; array[N] vector[3] w;
      /* real hidden; */ real<lower=fmin(1, 2), upper=10> s; tuple(real, int) t;
    }
    parameters { real mu; }
    """
    assert data_names(code) == ["N", "y", "yy", "X", "w", "s", "t"]
    assert data_names(GP.read_text()) == ["N", "x", "k"]
    assert data_names("parameters { real mu; } model { mu ~ std_normal(); }") == []


def test_undeclared_arrays_are_not_observation_fields() -> None:
    code = GP.read_text()
    assert find_observations(DATA, code=code) == Observations("N", ("x", "k"), 11)
    # without the program nothing says y is unused: it stays a field, as before
    assert find_observations(DATA).fields == ("x", "y", "k")
    with pytest.raises(InputError) as err:
        find_observations(DATA, obs_fields=["y"], code=code)
    assert str(err.value) == ("--obs-fields y: the program's data block does not declare y "
                              "(it declares N, k, x)")


def test_loo_no_longer_blames_the_undeclared_y(compiled) -> None:
    m = compiled(GP, DATA)
    with pytest.raises(InputError) as err:
        stanlogz.loo(m, DATA, seed=1, chains=2, warmup=150, n_draws=100)
    msg = str(err.value)
    # the refusal is about the declared arrays (the GP's inputs x and its counts k)
    assert msg.startswith("cannot tell which observation array holds the observed values "
                          "(x, k)") and "--obs-fields k" in msg
    assert "y[" not in msg and "(x, y" not in msg and "\n" not in msg
    # a refit's data check names the declared per-observation arrays left whole, not y
    why = refit_data_error(m, DATA, Observations("N", ("k",), 11))
    assert why == ("the program refuses its data without an observation: the per-observation "
                   "arrays x are not among the observation fields (k), so they keep 11 entries")
