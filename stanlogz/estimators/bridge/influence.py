"""Each draw's influence on the optimal bridge's log ratio (:func:`bridge_influence`): what
lets sums of bridge estimates that share draws add their errors draw by draw."""

from __future__ import annotations

import math

import numpy as np
from scipy import special


def bridge_influence(log_w_p: np.ndarray, log_w_q: np.ndarray, log_r: float
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Each draw's influence on the optimal bridge's ``log_r``, given
    :func:`~stanlogz.estimators.bridge.bridge.solve_bridge`'s arguments and root: the score
    equation linearized, each side's term centred over the score's derivative in log r.
    Shaped as the two inputs; n τ var of each side's is that side's term of the bridge's
    variance. Sums of estimates sharing draws add these draw by draw
    (:mod:`stanlogz.crossval.refit.fold_sums`)."""
    a = np.asarray(log_w_p, dtype=float)
    b = np.asarray(log_w_q, dtype=float)
    shift = math.log(b.size / a.size)
    h = special.expit(log_r + shift - a)
    g = special.expit(b - shift - log_r)
    slope = float(np.sum(h * (1 - h)) + np.sum(g * (1 - g)))
    return -(h - h.mean()) / slope, (g - g.mean()) / slope
