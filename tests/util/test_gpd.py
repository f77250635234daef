"""The generalized Pareto fit behind every k-hat (``_util.gpd.gpd_fit``)."""

from __future__ import annotations

import math
import warnings

import numpy as np
from scipy import stats

from stanlogz._util.gpd import gpd_fit


def test_a_constant_tail_is_nan_without_a_warning():
    # exceedances all zero (the tail of a constant log-ratio) made 0/0 in the fit and printed
    # "RuntimeWarning: invalid value encountered in divide" to the user (the refit_modes
    # benchmark's K-fold runs); the fit is NaN, and quiet
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        k, sigma = gpd_fit(np.zeros(50))
        k1, _ = gpd_fit(np.r_[np.zeros(49), 1.0])
    assert math.isnan(k) and math.isnan(sigma) and math.isnan(k1)


def test_the_shape_of_pareto_draws_is_found():
    # 2,000 draws of a generalized Pareto with shape 0.5: the fit (shrunk towards 0.5 by 10
    # pseudo-observations) is within 0.15; its sd at n = 2,000 is about 0.03, so 0.15 is five
    # of them (failure probability below 1e-6)
    x = stats.genpareto(0.5, scale=2.0).rvs(size=2000, random_state=np.random.default_rng(1))
    k, sigma = gpd_fit(x)
    assert abs(k - 0.5) < 0.15 and 1.4 < sigma < 2.8
