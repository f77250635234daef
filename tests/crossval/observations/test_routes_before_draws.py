"""A refusal no draw can change comes before NUTS (``routes.refusal_before_draws``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import stanlogz
from stanlogz.crossval.elpd.routes import refusal_before_draws
from stanlogz.crossval.observations.observations import load_observed
from stanlogz.crossval.observations.pointwise import PointwiseLogLik
from stanlogz.errors import InputError, StanlogzError

PROGRAM = Path(__file__).parents[3] / "stan_models" / "tests" / "two_series_no_empty.stan"
DATA = {"N": 6, "a": [0.1, -0.3, 0.5, 0.2, 0.9, 0.4], "b": [1.2, 0.8, 1.5, 0.7, 1.1, 1.3]}


def test_an_instance_rejected_at_every_point_refuses_before_sampling(tmp_path, monkeypatch):
    # two observed series and a program that rejects data without observations (as
    # posteriordb sir's ODE rejects an empty array of times): the density difference's
    # baseline holds one observation instead, its terms do not sum to the difference (a[n]
    # depends on a[n - 1]) at the random points, and no conditional source builds, so no
    # draw changes the refusal; it names leave-future-out (the model recurses) before NUTS.
    # (Before, the empty baseline's failure read as the point's, and NUTS ran first.)
    monkeypatch.setenv("STANLOGZ_BACKEND", "interpreted")
    data = tmp_path / "data.json"
    data.write_text(json.dumps(DATA))
    lines: list[str] = []
    with pytest.raises(InputError, match="several values per observation") as info:
        stanlogz.loo(str(PROGRAM), str(data), seed=1, progress=lines.append)
    assert not any("sampl" in line for line in lines), lines
    assert info.value.routes[0].command == "lfo"


def test_a_point_failure_is_left_to_the_draws(monkeypatch):
    # the program rejects its empty data wherever its density is finite, so the baseline holds
    # one observation (no error left for the draws to decide). An error of the instances at
    # the random points (injected here) may be the points', not the data's: decided at the
    # draws (None), as before
    monkeypatch.setenv("STANLOGZ_BACKEND", "interpreted")
    model, data, obs = load_observed(str(PROGRAM), DATA)
    pw = PointwiseLogLik(model, data, obs, "auto")
    assert pw.references() == [[0], [1]]
    rows = np.random.default_rng(0).uniform(-2, 2, (4, model.dim))
    assert refusal_before_draws(pw, "auto", rows) is not None  # the recursion's mismatch

    def fails(index, unc):
        raise StanlogzError("rejected at this point")

    monkeypatch.setattr(pw, "columns", fails)
    assert refusal_before_draws(pw, "auto", rows) is None


LV = Path(__file__).parents[3] / "stan_models" / "tests" / "lotka_volterra"
#: near Lotka-Volterra's posterior (Carpenter's case study): theta, z_init, sigma
LV_POINT = np.log([0.55, 0.028, 0.80, 0.024, 33.0, 6.0, 0.25, 0.25])


def test_an_ode_whose_terms_carry_the_solvers_error_is_a_pointwise_log_likelihood(
        monkeypatch):
    # Lotka-Volterra: each time point's two counts given the ODE's trajectory, so the density
    # difference is the pointwise log-likelihood, but the terms sum to the whole data's
    # difference only within the rk45 solver's error (each instance asks for other output
    # times). The check at 1e-9 of the scale refused it (a K-fold route of 20 ODE refits);
    # a solver program's sum now passes within 0.01 nats, and the result says by how much.
    # Its empty baseline (an ODE over no times) is rejected everywhere: one time point serves.
    # Before sampling, the gaps at random points (solver errors up to 7e-6 of the scale) are
    # left to the draws; posteriordb sir's, a dependence (0.09-0.9 of it), refuse at once
    monkeypatch.setenv("STANLOGZ_BACKEND", "interpreted")
    from stanlogz.crossval.observations import pointwise, solver

    model, data, obs = load_observed(str(LV) + ".stan", str(LV) + ".json")
    pw = PointwiseLogLik(model, data, obs, "auto")
    assert pw.solver and pw.references() == [[0], [1]]
    unc = LV_POINT + 0.05 * np.random.default_rng(0).normal(size=(4, LV_POINT.size))
    pw.check(unc)
    assert 1e-9 * 100 < pw.gap[0] < pointwise.SOLVER_SUM_ABS / 10  # beyond rounding, far in
    assert "within" in pw.notes()[0]
    rows = np.random.default_rng(1).uniform(-2, 2, (32, model.dim))
    probe = PointwiseLogLik(model, data, obs, "auto")
    assert refusal_before_draws(probe, "auto", rows) is None
    assert pointwise.SOLVER_SUM_ABS < probe.gap[0] and probe.gap[1] < solver.SOLVER_PROBE_RTOL
    monkeypatch.setattr(pointwise, "SOLVER_SUM_ABS", 1e-9)  # rounding only: refused again
    with pytest.raises(InputError, match="not a pointwise log-likelihood"):
        PointwiseLogLik(model, data, obs, "auto").check(unc)
