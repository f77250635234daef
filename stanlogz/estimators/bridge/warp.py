"""Warped bridge sampling between two posteriors on the same parameters (Meng & Schilling 2002,
warp II: location and scale).

The ratio Z_a / Z_b of two unnormalized densities from draws of each: the draws of b are moved
onto a's by the affine map that matches their means and covariances (a Cholesky factor to a
Cholesky factor), and the optimal bridge runs between a and the moved b, whose normalizer is
still Z_b. Where the two posteriors differ mainly by location and scale (a posterior and the same
program with one more observation, far from what the others predict) the plain bridge's weights
are heavy-tailed and the warped ones are not: on roaches, k̂ 0.1–0.3 where the plain bridge had
0.8–2.0, and the same value as the difference of two gbs fits to their Monte Carlo error
(docs/features/kfold-point-refits.md), at four batched density passes instead of two flow fits.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...densities.fits import draw_moments
from ...errors import EstimationError, InputError
from ..common import pareto_k
from .bridge import solve_bridge
from .influence import bridge_influence


@dataclass
class WarpedBridge:
    """log Z_a − log Z_b, its se (the optimal bridge's, both sides' autocorrelation included)
    and the Pareto k̂ of the bridge's weights on a's draws and on b's moved draws."""

    log_r: float
    se: float
    khat: tuple[float, float]
    n_evals: int
    #: each draw's influence on ``log_r`` (:func:`~.influence.bridge_influence`), on a's draws
    #: and on b's, shaped as their (chains, n)
    influence: tuple[np.ndarray, np.ndarray] | None = None


def warped_bridge(log_a: Callable[[np.ndarray], np.ndarray],
                  log_b: Callable[[np.ndarray], np.ndarray], xa: np.ndarray, xb: np.ndarray,
                  lp_a_at_a: np.ndarray | None = None,
                  lp_b_at_b: np.ndarray | None = None) -> WarpedBridge:
    """log Z_a − log Z_b from draws ``xa`` of a and ``xb`` of b, each ``(chains, n, dim)``;
    ``log_a``/``log_b`` evaluate the unnormalized log densities at ``(m, dim)`` points, and
    their values at the own draws may be given (``lp_a_at_a``, ``lp_b_at_b``, flat).

    Raises :class:`EstimationError` where the draws' covariance is singular or the bridge has
    no solution."""
    if xa.ndim != 3 or xb.ndim != 3 or xa.shape[2] != xb.shape[2]:
        raise InputError(f"draws must be (chains, n, dim) of one dim, got {xa.shape} and "
                         f"{xb.shape}")
    fa, fb = xa.reshape(-1, xa.shape[2]), xb.reshape(-1, xb.shape[2])
    try:
        ma, ca = draw_moments(fa)
        mb, cb = draw_moments(fb)
        la, lb = np.linalg.cholesky(ca), np.linalg.cholesky(cb)
    except (InputError, np.linalg.LinAlgError) as exc:
        raise EstimationError(f"no warped bridge: the draws' covariance ({exc})") from None
    a = la @ np.linalg.inv(lb)  # b's frame to a's: y = ma + A (x − mb)
    log_det = float(np.sum(np.log(np.diag(la))) - np.sum(np.log(np.diag(lb))))
    back = mb + np.linalg.solve(a, (fa - ma).T).T  # a's draws in b's frame
    moved = ma + (fb - mb) @ a.T  # b's draws in a's frame
    with np.errstate(invalid="ignore"):
        la_a = np.asarray(log_a(fa) if lp_a_at_a is None else lp_a_at_a, dtype=float)
        lb_b = np.asarray(log_b(fb) if lp_b_at_b is None else lp_b_at_b, dtype=float)
        lw_a = la_a - np.asarray(log_b(back), dtype=float) + log_det
        lw_b = np.asarray(log_a(moved), dtype=float) - lb_b + log_det
    lw_a = np.where(np.isnan(lw_a), -np.inf, lw_a)
    lw_b = np.where(np.isnan(lw_b), -np.inf, lw_b)
    wa, wb = lw_a.reshape(xa.shape[:2]), lw_b.reshape(xb.shape[:2])
    sol = solve_bridge(wa, wb)
    n_evals = 2 * (len(fa) + len(fb)) - (lp_a_at_a is not None) * len(fa) \
        - (lp_b_at_b is not None) * len(fb)
    return WarpedBridge(float(sol.log_r), math.sqrt(sol.re2_p + sol.re2_q),
                        (pareto_k(-lw_a), pareto_k(lw_b)), int(n_evals),
                        bridge_influence(wa, wb, sol.log_r))
