"""The density-difference log-likelihood keeps the data's order in every instance it builds:
a program may need it (an ODE solver's output times must increase). posteriordb's
one_comp_mm_elim_abs refuses zero observations, so the baselines are observations {1} and
{2}, and observation 1's instance was {2, 1}: times out of order, a log density of -inf and
a refusal ("log-likelihood of observation 1 is not finite")."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from stanlogz.crossval.observations.observations import find_observations
from stanlogz.crossval.observations.pointwise import PointwiseLogLik
from stanlogz.errors import InputError

DATA = {"T": 3, "ts": [0.5, 1.0, 2.0], "y_obs": [0.62, 0.35, 0.14]}


def test_difference_log_lik_of_an_ode_program_in_data_order(compiled):
    model = compiled("ode_bdf_decay", DATA)
    pw = PointwiseLogLik(model, DATA, find_observations(DATA), "difference")
    ks = np.array([0.8, 1.3])
    got = pw.columns([0, 1, 2], np.log(ks)[:, None])
    want = [[stats.norm(math.exp(-k * t), 0.1).logpdf(y)
             for t, y in zip(DATA["ts"], DATA["y_obs"], strict=True)] for k in ks]
    assert pw.references() == [[0], [1]]  # the empty instance is refused (T >= 1)
    np.testing.assert_allclose(got, want, rtol=1e-7)


def test_non_finite_difference_terms_fail_the_check(compiled):
    # posteriordb's logearn_interaction_z: one observation's baseline has log density -inf, the
    # terms are +inf, the check compared inf - inf = NaN (NaN > tol is False) and passed, and
    # loo then refused with no route ("log-likelihood of observation 1 is not finite")
    data = {"N": 6, "y": [0.3, -1.2, 0.8, 2.0, -0.4, 1.1]}
    model = compiled("standardized", data)
    pw = PointwiseLogLik(model, data, find_observations(data), "difference")
    unc = np.array([[0.1, 0.0], [-0.2, 0.3]])
    assert not np.isfinite(pw.columns(range(6), unc)).any()
    with pytest.raises(InputError, match="not a pointwise log-likelihood"):
        pw.check(unc)


def test_an_infinite_term_fails_the_check_where_its_baseline_is_finite(monkeypatch):
    # the scale the sum is compared against holds the terms, so an infinite term made it
    # infinite and passed (inf <= 1e-9 * inf); a term that is not finite now fails
    monkeypatch.setenv("STANLOGZ_BACKEND", "interpreted")
    from pathlib import Path

    from stanlogz.crossval.observations.observations import load_observed

    root = Path(__file__).parents[3] / "stan_models" / "examples"
    model, data, obs = load_observed(str(root / "normal_mean.stan"),
                                     str(root / "normal_mean.data.json"))
    pw = PointwiseLogLik(model, data, obs, "difference")
    unc = np.array([[0.1], [-0.2]])
    good = pw.columns(range(obs.n), unc)
    pw.check(unc, good)  # the program's own terms pass
    bad = good.copy()
    bad[:, 3] = np.inf
    with pytest.raises(InputError, match="not a pointwise log-likelihood"):
        pw.check(unc, bad)

