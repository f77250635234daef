"""A refusal no draw can change comes before NUTS (``routes.refusal_before_draws``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import stanlogz
from stanlogz.crossval.elpd import routes
from stanlogz.crossval.elpd.routes import refusal_before_draws
from stanlogz.crossval.observations.observations import load_observed
from stanlogz.crossval.observations.pointwise import PointwiseLogLik
from stanlogz.errors import InputError

PROGRAM = Path(__file__).parents[3] / "stan_models" / "tests" / "two_series_no_empty.stan"
DATA = {"N": 6, "a": [0.1, -0.3, 0.5, 0.2, 0.9, 0.4], "b": [1.2, 0.8, 1.5, 0.7, 1.1, 1.3]}


def test_an_instance_rejected_at_every_point_refuses_before_sampling(tmp_path, monkeypatch):
    # two observed series and a program that rejects data without observations (as
    # posteriordb sir's ODE rejects an empty array of times): the density difference's empty
    # baseline fails at every point and no conditional source builds, so no draw changes the
    # refusal; it names leave-future-out (the model recurses) before NUTS, not after it
    monkeypatch.setenv("STANLOGZ_BACKEND", "interpreted")
    data = tmp_path / "data.json"
    data.write_text(json.dumps(DATA))
    lines: list[str] = []
    with pytest.raises(InputError, match="several values per observation") as info:
        stanlogz.loo(str(PROGRAM), str(data), seed=1, progress=lines.append)
    assert not any("sampl" in line for line in lines), lines
    assert info.value.routes[0].command == "lfo"


def test_an_instance_rejected_at_some_points_only_is_left_to_the_draws(monkeypatch):
    # where the instances fail at some points and not at others, the failure may be the
    # point's, not the data's: decided at the draws (None), as before
    monkeypatch.setenv("STANLOGZ_BACKEND", "interpreted")
    model, data, obs = load_observed(str(PROGRAM), DATA)
    pw = PointwiseLogLik(model, data, obs, "auto")
    rows = np.random.default_rng(0).uniform(-2, 2, (4, model.dim))
    assert refusal_before_draws(pw, "auto", rows) is not None
    real = pw.columns
    calls = {"n": 0}

    def fine_at_one(index, unc):
        calls["n"] += 1
        if calls["n"] == 3:  # the second point of the look point by point succeeds
            return np.zeros((len(unc), len(list(index))))
        return real(index, unc)

    monkeypatch.setattr(pw, "columns", fine_at_one)
    assert refusal_before_draws(pw, "auto", rows) is None
    assert calls["n"] == 3 and routes.MIN_FAILED_ROWS >= 2
