"""Warped bridge sampling between two posteriors on the same parameters (Meng & Schilling 2002,
warp II: location and scale).

The ratio Z_a / Z_b of two unnormalized densities from draws of each: the draws of b are moved
onto a's by the affine map that matches their means and covariances (a Cholesky factor to a
Cholesky factor), and the optimal bridge runs between a and the moved b, whose normalizer is
still Z_b. Where the two posteriors differ mainly by location and scale (a posterior and the same
program with one more observation, far from what the others predict) the plain bridge's weights
are heavy-tailed and the warped ones are not: on roaches, k̂ 0.15–0.46 (cross-fitted, 500
draws) where the plain bridge had 0.8–2.0, and the same value as the difference of two gbs
fits to their Monte Carlo error (docs/features/kfold-point-refits.md), at four batched density
passes instead of two flow fits.
The warp is cross-fitted: fitted to one half of each chain, it bridges the other half.
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


def _moments(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and Cholesky factor of the covariance of draws ``(m, dim)``."""
    try:
        m, c = draw_moments(x)
        return m, np.linalg.cholesky(c)
    except (InputError, np.linalg.LinAlgError) as exc:
        raise EstimationError(f"no warped bridge: the draws' covariance ({exc})") from None


def _one_way(log_a: Callable[[np.ndarray], np.ndarray],
             log_b: Callable[[np.ndarray], np.ndarray], xa: np.ndarray, xb: np.ndarray,
             la_a: np.ndarray, lb_b: np.ndarray, fit_a: np.ndarray, fit_b: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray]:
    """The bridge's log weights at ``xa`` (chains, n, dim) and ``xb`` with the warp fitted to
    the draws ``fit_a`` and ``fit_b`` (other draws: a warp fitted to the draws it bridges
    overlaps them better than it should, and on a Gaussian pair the se then fell below the
    error, rms z 1.21)."""
    (ma, la), (mb, lb) = _moments(fit_a), _moments(fit_b)
    a = la @ np.linalg.inv(lb)  # b's frame to a's: y = ma + A (x − mb)
    log_det = float(np.sum(np.log(np.diag(la))) - np.sum(np.log(np.diag(lb))))
    fa, fb = xa.reshape(-1, xa.shape[2]), xb.reshape(-1, xb.shape[2])
    back = mb + np.linalg.solve(a, (fa - ma).T).T  # a's draws in b's frame
    moved = ma + (fb - mb) @ a.T  # b's draws in a's frame
    with np.errstate(invalid="ignore"):
        lw_a = la_a - np.asarray(log_b(back), dtype=float) + log_det
        lw_b = np.asarray(log_a(moved), dtype=float) - lb_b + log_det
    lw_a = np.where(np.isnan(lw_a), -np.inf, lw_a)
    lw_b = np.where(np.isnan(lw_b), -np.inf, lw_b)
    return lw_a.reshape(xa.shape[:2]), lw_b.reshape(xb.shape[:2])


def warped_bridge(log_a: Callable[[np.ndarray], np.ndarray],
                  log_b: Callable[[np.ndarray], np.ndarray], xa: np.ndarray, xb: np.ndarray,
                  lp_a_at_a: np.ndarray | None = None,
                  lp_b_at_b: np.ndarray | None = None) -> WarpedBridge:
    """log Z_a − log Z_b from draws ``xa`` of a and ``xb`` of b, each ``(chains, n, dim)``;
    ``log_a``/``log_b`` evaluate the unnormalized log densities at ``(m, dim)`` points, and
    their values at the own draws may be given (``lp_a_at_a``, ``lp_b_at_b``, flat).

    Cross-fitted: the warp fitted to the second half of every chain bridges the first halves,
    and the other way round; the estimate is the two bridges' mean, its se theirs combined as
    independent and at least half their difference.

    Raises :class:`EstimationError` where the draws' covariance is singular or the bridge has
    no solution."""
    if xa.ndim != 3 or xb.ndim != 3 or xa.shape[2] != xb.shape[2]:
        raise InputError(f"draws must be (chains, n, dim) of one dim, got {xa.shape} and "
                         f"{xb.shape}")
    dim = xa.shape[2]
    with np.errstate(invalid="ignore"):
        la_a = np.asarray(log_a(xa.reshape(-1, dim)) if lp_a_at_a is None else lp_a_at_a,
                          dtype=float).reshape(xa.shape[:2])
        lb_b = np.asarray(log_b(xb.reshape(-1, dim)) if lp_b_at_b is None else lp_b_at_b,
                          dtype=float).reshape(xb.shape[:2])
    na, nb = xa.shape[1] // 2, xb.shape[1] // 2
    halves = [(slice(0, na), slice(0, nb)), (slice(na, 2 * na), slice(nb, 2 * nb))]
    infl = (np.zeros(xa.shape[:2]), np.zeros(xb.shape[:2]))
    est, var, kh = [], [], [float("-inf"), float("-inf")]
    for (sa, sb), (fa, fb) in zip(halves, halves[::-1], strict=True):
        wa, wb = _one_way(log_a, log_b, xa[:, sa], xb[:, sb], la_a[:, sa].ravel(),
                          lb_b[:, sb].ravel(), xa[:, fa].reshape(-1, dim),
                          xb[:, fb].reshape(-1, dim))
        sol = solve_bridge(wa, wb)
        est.append(sol.log_r)
        var.append(sol.re2_p + sol.re2_q)
        kh = [max(kh[0], pareto_k(-wa)), max(kh[1], pareto_k(wb))]
        ia, ib = bridge_influence(wa, wb, sol.log_r)
        infl[0][:, sa], infl[1][:, sb] = ia / 2, ib / 2
    se = max(math.sqrt(var[0] + var[1]) / 2, abs(est[0] - est[1]) / 2)
    # each side at the other's moved draws, and at its own where not given
    n_evals = 2 * na * xa.shape[0] + 2 * nb * xb.shape[0] \
        + (lp_a_at_a is None) * la_a.size + (lp_b_at_b is None) * lb_b.size
    return WarpedBridge(float(np.mean(est)), float(se), (float(kh[0]), float(kh[1])),
                        int(n_evals), infl)
