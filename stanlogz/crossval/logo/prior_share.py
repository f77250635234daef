"""The no-rows integrals of leave-one-group-out, one integral for every group where the groups'
latent priors are the same function.

With the program on no rows, f_∅(φ, a_1, …, a_G) = r(φ) + Σ_h q_h(a_h; φ) (the structure
:mod:`.structure` checks), so for group g at draw s

    log ∫ exp f_∅(x_s with a_g ← v) dv
        = f_∅(x_s with a_g ← v₀) + log ∫ exp[q_g(v; φ_s) − q_g(v₀; φ_s)] dv.

When q_g(v; φ) − q_g(v₀; φ) is one function Q for every group (exchangeable latents:
``eta ~ normal(0, 1)``, ``a ~ normal(mu, tau)``), the last term does not depend on g: it is
computed once (group 1's integral less its f_∅ at v₀) and every other group costs one
density call per draw instead of an optimization and a quadrature. Whether Q is shared is
checked at a few draws and latent values (to :data:`TOL` of the density's scale, as the
structure checks); where it is not (a group-level predictor in the prior, different sizes)
each group keeps its own integral.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...stan.program import StanProgram
from .integrate import Integral
from .structure import GroupStructure

#: Relative tolerance of the shared-prior check (density sums are exact to ~1e-12).
TOL = 1e-9


def _with(x: np.ndarray, c: np.ndarray, v: np.ndarray) -> np.ndarray:
    y = x.copy()
    y[:, c] = v
    return y


def prior_shared(zeros: list[StanProgram], st: GroupStructure, x: np.ndarray,
                 rng: np.random.Generator) -> bool:
    """Whether every group's latent prior (in its reference instance ``zeros[g]``), as a
    function of its latents relative to 0, is the same function at the rows ``x``
    ``(k, dim)`` (three random latent values per row)."""
    c0 = st.coords[0]
    if any(c.size != c0.size for c in st.coords):
        return False
    v = rng.normal(0.0, 1.5, (3, x.shape[0], c0.size))
    first = None
    for zero, c in zip(zeros, st.coords, strict=True):
        ref = zero.log_density_many(_with(x, c, np.zeros(c.size)))
        q = np.stack([zero.log_density_many(_with(x, c, vj)) - ref for vj in v])
        if not np.all(np.isfinite(q)):
            return False
        if first is None:
            first, scale = q, 1.0 + np.max(np.abs(ref))
        elif np.max(np.abs(q - first)) > TOL * scale:
            return False
    return True


def shared_integrals(zeros: list[StanProgram], st: GroupStructure, unc: np.ndarray,
                     first: Callable[[], Integral]) -> list[Integral]:
    """Every group's no-rows integral from group 1's (``first()``) and one density call per
    group at latents 0 (valid where :func:`prior_shared`)."""
    i0 = first()
    at0 = [z.log_density_many(_with(unc, c, np.zeros(c.size)))
           for z, c in zip(zeros, st.coords, strict=True)]
    q = i0.value - at0[0]
    q_lap = i0.laplace - at0[0]
    return [Integral(f + q, i0.error, f + q_lap, i0.method) for f in at0]
