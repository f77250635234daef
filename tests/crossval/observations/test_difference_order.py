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
    with pytest.raises(InputError, match="not a pointwise log-likelihood"):
        pw.check(unc, np.full((2, 6), np.inf))
    # the one-observation baseline's density is not finite wherever the whole data's is, so
    # the baseline holds two (twenty-sixth session). Standardizing the outcome itself leaves
    # a density that depends on N alone (z sums to 0, its squares to N - 1): N times one
    # term a(mu, sigma) plus the prior, which is what the difference's terms read, each the
    # same, and the check passes (it is that program's pointwise log-likelihood). An
    # infinite term fails the check: an infinite scale passed it once the baseline moved
    assert pw.references() == [[0, 1], [2, 3]]
    ll = pw.columns(range(6), unc)
    mu, sigma = unc[:, 0], np.exp(unc[:, 1])
    # sum over n of log N(z | mu, sigma) = -n/2 log(2 pi sigma^2) - (n - 1 + n mu^2) / (2 sigma^2)
    a = -0.5 * np.log(2 * np.pi * sigma**2) - (1 + mu**2) / (2 * sigma**2)
    np.testing.assert_allclose(ll, np.repeat(a[:, None], 6, axis=1), rtol=1e-9)
    pw.check(unc)
