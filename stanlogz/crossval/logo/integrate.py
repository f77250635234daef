"""log ∫ exp f(θ with a ← v) dv over a few unconstrained coordinates a, at many draws θ.

Per draw: Newton's method to the mode (gradients of the compiled density; the Hessian by
forward differences of them, for one coordinate by the secant of the last step after the
first; steps halved until the density rises; converged draws leave the batch), the Laplace
value, and adaptive Gauss–Hermite quadrature on the Laplace Gaussian (Liu & Pierce 1994) at
two rule sizes: the finer value is returned and the difference of the two is its error (for
the smooth integrands of hierarchical models the finer rule's error is far smaller than that
difference, so it is a conservative bound); draws where the two disagree by more than
:data:`ESCALATE_TOL` are recomputed with larger rules. Where the integrand is Gaussian (normal
likelihood and prior) the Laplace value is exact; it is used at every draw when Gauss–Hermite
confirms it at a set of checked draws, which makes such programs about five times cheaper.
Blocks of more than :data:`MAX_GH_DIM` coordinates are refused here (the tensor rule grows as
n^d).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from ...errors import InputError
from ...stan.program import StanProgram

#: Gauss–Hermite nodes per coordinate (fine, coarse) by block dimension: the first pair at
#: every draw, the second (:data:`FINE_RULES`) where the first pair disagrees by more than
#: :data:`ESCALATE_TOL`. On the Poisson random intercept of docs/guide/logo.md the 10-node
#: rule is within 2e-6 of a 40-node reference at every draw and 10 − 7 within 3e-5, a tenth
#: of the cost of the mode and half that of the former (20, 12) pair.
RULES = {1: (10, 7), 2: (8, 6), 3: (6, 4)}
FINE_RULES = {1: (20, 12), 2: (12, 8), 3: (10, 6)}
ESCALATE_TOL = 1e-4
MAX_GH_DIM = max(RULES)
#: Largest disagreement (log units) of Laplace with Gauss–Hermite at the checked draws for the
#: Laplace value to be used at every draw.
LAPLACE_TOL = 1e-8
#: Finite-difference step of the Hessian (unconstrained scale).
H_STEP = 1e-4
#: Newton stops at a draw once its decrement gᵀ(−H)⁻¹g (twice the predicted rise of f) is
#: below this: the mode is then within 3e-5 sd, which moves the adaptive Gauss–Hermite value by
#: far less than its rule error and the Laplace value by 5e-10.
DECREMENT_TOL = 1e-9


@dataclass
class Integral:
    """Per draw: the log integral, its error bound, and the Laplace value beside it."""

    value: np.ndarray
    error: np.ndarray
    laplace: np.ndarray
    method: str  # "laplace" (checked against Gauss–Hermite) or "gauss-hermite"


def _grad(m: StanProgram, base: np.ndarray, c: np.ndarray, v: np.ndarray
          ) -> tuple[np.ndarray, np.ndarray]:
    x = base.copy()
    x[:, c] = v
    lp, g = m.log_density_gradient_many(x)
    return lp, g[:, c]


def _value(m: StanProgram, base: np.ndarray, c: np.ndarray, v: np.ndarray) -> np.ndarray:
    """f at ``v`` ``(S, k, d)`` (k points per draw) -> ``(S, k)``, -inf where rejected."""
    s, k, d = v.shape
    x = np.repeat(base, k, axis=0)
    x[:, c] = v.reshape(s * k, d)
    out = m.log_density_many(x).reshape(s, k)
    return np.where(np.isfinite(out), out, -np.inf)


def _hessian(m: StanProgram, base: np.ndarray, c: np.ndarray, v: np.ndarray,
             g: np.ndarray) -> np.ndarray:
    """Forward differences of the gradient ``g`` at ``v`` (exact for a Gaussian integrand up
    to rounding), symmetrized: one gradient call per coordinate."""
    d = c.size
    hess = np.empty((v.shape[0], d, d))
    for j in range(d):
        e = np.zeros(d)
        e[j] = H_STEP
        _, gp = _grad(m, base, c, v + e)
        hess[:, :, j] = (gp - g) / H_STEP
    return 0.5 * (hess + np.swapaxes(hess, 1, 2))


def _newton_step(g: np.ndarray, hess: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Newton step (a bounded gradient step where −H is not positive definite), its decrement
    and whether −H was positive definite, per draw."""
    neg = -hess
    try:
        ok = np.all(np.linalg.eigvalsh(neg) > 0, axis=1)
    except np.linalg.LinAlgError:
        ok = np.zeros(g.shape[0], dtype=bool)
    safe = np.where(ok[:, None, None], neg, np.eye(g.shape[1])[None])
    step = np.linalg.solve(safe, g[:, :, None])[:, :, 0]
    dec = np.sum(g * step, axis=1)
    norm = np.linalg.norm(step, axis=1, keepdims=True)
    return step * np.minimum(1.0, 2.0 / np.maximum(norm, 1e-300)), dec, ok


def mode(m: StanProgram, base: np.ndarray, c: np.ndarray, start: np.ndarray,
         iters: int = 30) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mode of f over coordinates ``c`` per row of ``base`` from ``start`` ``(S, d)``: the
    mode, f there and the Hessian there.

    Newton's method, draws that have converged (decrement below :data:`DECREMENT_TOL`) left
    out of later evaluations. For one coordinate the Hessian after the first step is the secant
    of the last step's gradients (superlinear, one gradient call per step instead of two);
    for more, forward differences at every step."""
    v = start.astype(float, copy=True)
    f, g = _grad(m, base, c, v)
    hess = _hessian(m, base, c, v, g)
    act = np.arange(v.shape[0])
    for _ in range(iters):
        step, dec, ok = _newton_step(g[act], hess[act])
        go = ~(ok & (dec < DECREMENT_TOL))
        act, step = act[go], step[go]
        if not act.size:
            break
        b = base[act]
        t = np.ones((act.size, 1))
        f0, g0 = f[act], g[act]
        for _ in range(12):  # halve until f does not fall (per draw)
            fn, gn = _grad(m, b, c, v[act] + t * step)
            bad = ~(np.isfinite(fn) & (fn >= f0 - 1e-12 * (1 + np.abs(f0))))
            if not bad.any():
                break
            t[bad] *= 0.5
        moved, dv = act[~bad], (t * step)[~bad]
        v[moved] += dv
        f[moved], g[moved] = fn[~bad], gn[~bad]
        if c.size == 1:
            big = np.abs(dv[:, 0]) > 1e3 * H_STEP
            sec = (gn[~bad] - g0[~bad])[:, 0] / np.where(big, dv[:, 0], 1.0)
            hess[moved[big], 0, 0] = sec[big]
            fd = moved[~big]
        else:
            fd = moved
        if fd.size:
            hess[fd] = _hessian(m, base[fd], c, v[fd], g[fd])
    return v, f, hess


def integrate(m: StanProgram, base: np.ndarray, c: np.ndarray, start: np.ndarray,
              what: str, check: np.ndarray | None = None) -> Integral:
    """log ∫ exp f(base with coordinates ``c`` ← v) dv per row of ``base`` ``(S, dim)``,
    starting Newton from ``start`` ``(S, d)``; ``what`` names the integral in errors.

    With ``check`` (row indices), the Laplace value is returned for every row when adaptive
    Gauss–Hermite agrees with it to :data:`LAPLACE_TOL` at those rows (a Gaussian integrand:
    normal likelihood and prior), with the largest disagreement seen as its error; else
    Gauss–Hermite at every row."""
    d = c.size
    if d > MAX_GH_DIM:
        raise InputError(f"{what}: {d} latent coordinates per group; integration beyond "
                         f"{MAX_GH_DIM} is not supported yet")
    v, f, hess = mode(m, base, c, start)
    neg = -hess
    eig = np.linalg.eigvalsh(neg)
    if not np.all(eig > 0):
        raise InputError(f"{what}: the density has no interior mode over the group's latents "
                         "at some draws (not log-concave there)")
    chol = np.linalg.cholesky(np.linalg.inv(neg))  # Σ = (-H)^-1 = L Lᵀ
    logdet = np.sum(np.log(np.diagonal(chol, axis1=1, axis2=2)), axis=1)
    laplace = f + 0.5 * d * math.log(2 * math.pi) + logdet
    if check is not None:
        fine, coarse = _gh(m, base[check], c, v[check], chol[check], logdet[check], RULES[d])
        gap = float(np.max(np.abs(fine - laplace[check])) + np.max(np.abs(fine - coarse)))
        if gap < LAPLACE_TOL:
            return Integral(laplace, np.full(laplace.size, gap), laplace, "laplace")
    fine, coarse = _gh(m, base, c, v, chol, logdet, RULES[d])
    up = np.flatnonzero(~(np.abs(fine - coarse) <= ESCALATE_TOL))
    if up.size:
        fine[up], coarse[up] = _gh(m, base[up], c, v[up], chol[up], logdet[up], FINE_RULES[d])
    if not np.all(np.isfinite(fine)):
        raise InputError(f"{what}: the integral is not finite at some draws")
    return Integral(fine, np.abs(fine - coarse), laplace, "gauss-hermite")


def _gh(m: StanProgram, base: np.ndarray, c: np.ndarray, v: np.ndarray, chol: np.ndarray,
        logdet: np.ndarray, rules: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Adaptive Gauss–Hermite at the two rule sizes ``rules``, in one density call."""
    d = c.size
    nodes, weights, sizes = [], [], []
    for n in rules:
        z1, w1 = np.polynomial.hermite.hermgauss(n)
        idx = np.stack(np.meshgrid(*([np.arange(n)] * d), indexing="ij"), axis=-1).reshape(-1, d)
        nodes.append(z1[idx])  # (n^d, d) nodes
        weights.append(np.sum(np.log(w1)[idx], axis=1) + np.sum(z1[idx]**2, axis=1))
        sizes.append(n**d)
    z = np.concatenate(nodes)
    pts = v[:, None, :] + math.sqrt(2) * np.einsum("sij,kj->ski", chol, z)
    f = _value(m, base, c, pts)
    out = []
    for lw, lo, hi in zip(weights, np.cumsum([0] + sizes[:-1]), np.cumsum(sizes), strict=True):
        out.append(special.logsumexp(lw[None, :] + f[:, lo:hi], axis=1)
                   + 0.5 * d * math.log(2) + logdet)
    return out[0], out[1]
