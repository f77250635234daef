"""Closed-form log p(y_i | y₋ᵢ, θ) of ``stan_models/tests/ar_far_innov.stan`` (issue 44, case
2): an AR(1) series whose innovations are a two-component normal mixture with a far component
that no data point visits.

As a function of u = y_i, every factor of the density in which y_i appears is a mixture of
normal densities of an affine function c·u − r: the innovation e_i = u − φ y_{i−1} (for i > 1),
the next innovation e_{i+1} = y_{i+1} − φ u (for i < T), the stationary start N(u | 0,
σ/√(1 − φ²)) (for i = 1). Their product is a sum over one component per factor, and each term
is a Gaussian integral in u:

    ∫ Π_j N(c_j u − r_j | 0, s_j) du = √(2π / A) e^{−(C − B²/A)/2} Π_j 1/(s_j √(2π)),

with A = Σ c_j²/s_j², B = Σ c_j r_j/s_j², C = Σ r_j²/s_j². No quadrature, no truncation: the
reference for the conditional route's quadrature and its far-mode search."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
from scipy import special


def far_innov_data(t_len: int, rng: np.random.Generator, phi: float = 0.0, w: float = 0.05,
                   far: float = 25.0) -> dict[str, Any]:
    """A series with sigma 1 whose innovations all come from the near component (the far one,
    of weight ``w`` at ``far``, is never visited), rounded to 1e-3."""
    y = [rng.normal(0.0, 1.0 / math.sqrt(1.0 - phi**2))]
    for _ in range(t_len - 1):
        y.append(phi * y[-1] + rng.normal())
    return {"T": t_len, "y": [round(float(v), 3) for v in y], "w": w, "far": far}


def _factors(y: np.ndarray, i: int, phi: float, sigma: float, w: float, far: float
             ) -> list[list[tuple[float, float, float, float]]]:
    """The factors in which y_i appears, each a list of components (log weight, c, r, s):
    N(c·u − r | 0, s)."""
    out = []
    if i == 0:
        out.append([(0.0, 1.0, 0.0, sigma / math.sqrt(1.0 - phi**2))])
    else:
        r = phi * y[i - 1]
        out.append([(math.log(w), 1.0, r + far, sigma), (math.log1p(-w), 1.0, r, sigma)])
    if i < y.size - 1:
        out.append([(math.log(w), -phi, far - y[i + 1], sigma),
                    (math.log1p(-w), -phi, -y[i + 1], sigma)])
    return out


def _log_normal(x: float, s: float) -> float:
    return -0.5 * (x / s) ** 2 - math.log(s) - 0.5 * math.log(2 * math.pi)


def far_innov_conditional(y: np.ndarray, i: int, phi: float, sigma: float, w: float,
                          far: float) -> float:
    """log p(y_i | y₋ᵢ, θ) in closed form (module docstring)."""
    y = np.asarray(y, dtype=float)
    facs = _factors(y, i, phi, sigma, w, far)
    num = sum(special.logsumexp([lw + _log_normal(c * y[i] - r, s) for lw, c, r, s in f])
              for f in facs)
    terms = []
    for combo in itertools.product(*facs):
        a = sum(c * c / s**2 for _, c, _, s in combo)
        b = sum(c * r / s**2 for _, c, r, s in combo)
        cc = sum(r * r / s**2 for _, _, r, s in combo)
        terms.append(sum(lw - math.log(s) - 0.5 * math.log(2 * math.pi)
                         for lw, _, _, s in combo)
                     + 0.5 * math.log(2 * math.pi / a) - 0.5 * (cc - b * b / a))
    return float(num - special.logsumexp(terms))


def far_innov_columns(y: np.ndarray, draws: np.ndarray, w: float, far: float) -> np.ndarray:
    """``(S, T)`` log p(y_i | y₋ᵢ, θ) at constrained draws ``draws`` ``(S, 2)`` (phi, sigma)."""
    return np.array([[far_innov_conditional(y, i, float(p), float(s), w, far)
                      for i in range(len(y))] for p, s in draws])
