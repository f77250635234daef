"""The one generalized Pareto fit of the package: PSIS's k̂ of importance weights
(:func:`stanlogz.estimators.common.pareto_k`) and the lower-tail fit of cross-validation terms
(:mod:`stanlogz.crossval.refit.cv_tail`) both call it.

The fit is the profile-posterior mean of Zhang & Stephens (2009) with the weakly informative
prior of Vehtari et al. (2024): k̂ shrunk towards 0.5 with the weight of 10 observations.

The k̂ thresholds every layer reads are named here, once: :data:`KHAT_BAD` (0.7) and
:data:`KHAT_HEAVY` (0.5). A step with a tuned threshold of its own (LOGO's refit
threshold, loo's draw-count-dependent one) says why beside it.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

#: k̂ above which (Pareto-smoothed) importance sampling is unreliable (Vehtari et al. 2024):
#: loo's and ArviZ's threshold from 2,200 draws on (min(1 − 1/log10 S, 0.7) for S draws), the
#: refit threshold of leave-future-out, and the level at which a heavy tail is warned about.
KHAT_BAD = 0.7
#: k̂ above which the weights' (or values') variance is infinite: a plain average's CLT, and
#: the se built on it, fail, and PSIS's own bias is no longer small against its Monte Carlo se.
KHAT_HEAVY = 0.5


def gpd_fit(exceed: np.ndarray) -> tuple[float, float]:
    """Shape and scale of a generalized Pareto fit to positive exceedances.

    Parameters
    ----------
    exceed : numpy.ndarray
        Positive exceedances over a threshold (any order, at least two values).

    Returns
    -------
    tuple of float
        ``(k, sigma)``: the shape (shrunk towards 0.5 as in PSIS) and the scale.
    """
    x = np.sort(np.asarray(exceed, dtype=float).ravel())
    n = x.size
    m = 30 + int(math.sqrt(n))
    # exceedances all zero (a constant tail) give 0/0 below: the fit is NaN, and says so
    # by its value, not by a warning to the user
    with np.errstate(divide="ignore", invalid="ignore"):
        b = 1.0 - np.sqrt(m / (np.arange(1, m + 1) - 0.5))
        b = b / (3.0 * x[max(int(n / 4 + 0.5) - 1, 0)]) + 1.0 / x[-1]
        k = np.log1p(-b[:, None] * x).mean(axis=1)
        ll = n * (np.log(-b / k) - k - 1.0)
        b_post = float(np.sum(b * np.exp(ll - special.logsumexp(ll))))
        k_post = float(np.log1p(-b_post * x).mean())
        return (n * k_post + 10 * 0.5) / (n + 10), -k_post / b_post
