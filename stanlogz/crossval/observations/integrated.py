"""Integrated log-likelihood log p(y_i | θ) = log ∫ p(y_i | z_i, θ) p(z_i | θ) dz_i of programs
with one independent latent coordinate per observation and integer observations (counts:
random effects per unit in a binomial or Poisson model), where the Gaussian normalization over
y_i of :mod:`.conditional` does not apply.

The term of observation i is read off the program itself: ℓ_i(θ, z_i) = log p̃(θ, z_i; {y_i}) −
log p̃(θ; ∅) on data instances with one and with no observation, checked to sum to the full
density difference at a few draws (no latent linked to another, no cross-observation term).
The integral over the unconstrained latent is adaptive Gauss–Hermite around the per-draw mode
(Newton steps on finite differences), with 32 nodes checked against 16. The latent's prior is
taken to be normalized as written (for real observations :mod:`.splitcheck` verifies it; for
integer ones it cannot be verified without summing over the support).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
from scipy import special

from ...errors import InputError, StanlogzError
from ...stan.program import StanProgram
from .conditional import latent_coordinates
from .latents import coordinate_map
from .observations import Observations
from .pointwise import CHUNK_BYTES, column_chunks

#: Largest disagreement (log units) between the 32- and 16-node rules.
GH_TOL = 1e-4


class IntegratedSource:
    """Pointwise interface (``columns``, ``column``, ``chunks``, ``check``) of the integrated
    log-likelihood of a program with one latent coordinate per observation."""

    source = "integrated"

    def __init__(self, model: StanProgram, data: Mapping[str, Any], obs: Observations) -> None:
        self.model, self.data, self.obs = model, dict(data), obs
        lat = latent_coordinates(model, self.data, obs)
        if not all(c.size == 1 for c in lat):
            raise InputError(f"{model.name}: integrating the latents out needs exactly one "
                             "latent coordinate per observation")
        self.coord = np.array([int(c[0]) for c in lat])
        everything = np.arange(obs.n)
        try:
            self.empty = model.with_data(obs.subset(self.data, []))
        except StanlogzError as exc:
            raise InputError(f"{model.name} rejects data with no observation, which the "
                             f"integrated log-likelihood needs ({exc})") from None
        self.pos0 = coordinate_map(model, self.empty, everything, np.zeros(0, dtype=int))
        self._one: dict[int, tuple[Any, np.ndarray, int]] = {}
        self.checked = False
        nodes, weights = np.polynomial.hermite.hermgauss(32)
        self.gh = [(nodes, weights), np.polynomial.hermite.hermgauss(16)]

    def _instance(self, i: int) -> tuple[Any, np.ndarray, int]:
        if i not in self._one:
            m = self.model.with_data(self.obs.subset(self.data, [i]))
            pos = coordinate_map(self.model, m, np.arange(self.obs.n), np.array([i]))
            own = int(np.flatnonzero(pos == self.coord[i])[0])
            self._one[i] = (m, pos, own)
        return self._one[i]

    def term(self, i: int, unc: np.ndarray) -> np.ndarray:
        """ℓ_i at full-program draws ``unc``: log p(y_i | z_i, θ) + log p(z_i | θ) + Jacobian."""
        m, pos, _ = self._instance(i)
        return m.log_density_many(unc[:, pos]) - self.empty.log_density_many(unc[:, self.pos0])

    def check(self, unc: np.ndarray, ll: np.ndarray | None = None) -> None:
        """Refuse when the per-observation terms do not add up to the full density difference
        (a latent linked to others, a term shared by observations)."""
        unc = np.asarray(unc, dtype=float).reshape(-1, self.model.dim)
        total = sum(self.term(i, unc) for i in range(self.obs.n))
        want = (self.model.log_density_many(unc)
                - self.empty.log_density_many(unc[:, self.pos0]))
        if np.max(np.abs(total - want)) > 1e-8 * (1 + np.max(np.abs(want))):
            raise InputError(f"{self.model.name}: the per-observation terms do not add up to "
                             "the program's density (latents linked across observations or "
                             "terms shared by observations)")
        self.checked = True

    def column(self, i: int, unc: np.ndarray) -> np.ndarray:
        """log ∫ exp ℓ_i(θ, v) dv over observation i's unconstrained latent, per draw."""
        unc = np.asarray(unc, dtype=float).reshape(-1, self.model.dim)
        m, pos, own = self._instance(i)
        base = unc[:, pos].copy()
        lp0 = self.empty.log_density_many(unc[:, self.pos0])

        def f(v: np.ndarray) -> np.ndarray:  # (S, k) latent values -> (S, k) log terms
            k = v.shape[1]
            x = np.repeat(base, k, axis=0)
            x[:, own] = v.ravel()
            out = m.log_density_many(x).reshape(-1, k)
            return np.where(np.isfinite(out), out, -np.inf)

        v = base[:, own].copy()
        h = 1e-3
        for _ in range(8):  # Newton on central differences, with a step cap
            fm, f0, fp = f(np.column_stack([v - h, v, v + h])).T
            g, c = (fp - fm) / (2 * h), (fp - 2 * f0 + fm) / h**2
            step = np.where(c < 0, -g / np.where(c < 0, c, -1.0), np.sign(g))
            v = v + np.clip(step, -2.0, 2.0)
        fm, f0, fp = f(np.column_stack([v - h, v, v + h])).T
        c = (fp - 2 * f0 + fm) / h**2
        s = np.where(c < 0, 1.0 / np.sqrt(np.where(c < 0, -c, 1.0)), 1.0)
        vals = []
        for nodes, weights in self.gh:
            pts = v[:, None] + math.sqrt(2) * s[:, None] * nodes[None, :]
            lw = np.log(weights)[None, :] + nodes[None, :] ** 2 + f(pts)
            vals.append(special.logsumexp(lw, axis=1) + np.log(math.sqrt(2) * s))
        if np.max(np.abs(vals[0] - vals[1])) > GH_TOL:
            raise InputError(f"{self.model.name}: the integral over the latent of observation "
                             f"{i + 1} is not resolved by Gauss-Hermite quadrature")
        return vals[0] - lp0

    def columns(self, index: Sequence[int] | np.ndarray, unc: np.ndarray) -> np.ndarray:
        """``(S, len(index))`` integrated log-likelihoods."""
        idx = [int(i) for i in np.asarray(index, dtype=int).ravel()]
        unc = np.asarray(unc, dtype=float).reshape(-1, self.model.dim)
        return (np.column_stack([self.column(i, unc) for i in idx]) if idx
                else np.empty((unc.shape[0], 0)))

    def chunks(self, unc: np.ndarray, constrained: np.ndarray | None = None,
               names: list[str] | None = None, chunk_bytes: int = CHUNK_BYTES,
               index: Sequence[int] | np.ndarray | None = None
               ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """``(index, block)`` over the observations ``index`` (default all)."""
        return column_chunks(self, unc, chunk_bytes, index)

    def compare_log_lik(self, unc: np.ndarray, n_obs: int = 5) -> str | None:
        """No generated quantity to compare."""
        return None

    def held_out_model(self, i: int) -> Any:
        """Refits go through :mod:`.heldout` (split check, augmented bridge)."""
        raise InputError(f"{self.model.name}: refits need the split check of the held-out "
                         "program")
