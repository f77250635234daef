"""Integrated log-likelihood log p(y_i | θ) = log ∫ p(y_i | z_i, θ) p(z_i | θ) dz_i of programs
with one independent latent coordinate per observation and integer observations (counts:
random effects per unit in a binomial or Poisson model), where the Gaussian normalization over
y_i of :mod:`.conditional` does not apply.

The term of observation i is read off the program itself: ℓ_i(θ, z_i) = log p̃(θ, z_i; {y_i}) −
log p̃(θ; ∅) on data instances with one and with no observation. A program that refuses data
with no observation (``int<lower=1> N``, as real programs declare it) gets a reference set R of
r observations instead (the fewest it accepts, r ≤ ``MAX_REFERENCE``): ℓ_i = log p̃(θ, z_R, z_i;
R ∪ {i}) − log p̃(θ, z_R; R), the terms of R (and their latents, held at the draw's values)
cancelling, and a second, disjoint set R' for the observations of R (the baselines of the
density difference, :class:`~.pointwise.PointwiseLogLik`). Either way the terms are checked to
sum to the full density difference at a few draws, for each baseline (no latent linked to
another, no cross-observation term), and a program that refuses every such instance is refused
in one line.
The integral over the unconstrained latent is adaptive Gauss–Hermite around the per-draw mode
(Newton steps on finite differences), with 32 nodes checked against 16 (a trapezoid rule on a
wide grid where they disagree). For real observations
the latent's prior need not be normalized as written (``vector<lower=0>[N] z; z ~ normal(0,
1)`` without ``T[,]``): its log mass, log ∫∫ exp ℓ_i dy_i dz_i (Gaussian closed form in y_i and a
grid over z_i, :func:`.splitcheck._mass`), is found at a few draws and subtracted when it is
the same at all of them (a mass that moves with the hyperparameters is refused). For integer
observations the prior is taken to be normalized as written (it cannot be checked without
summing over the support).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from scipy import special

from ...errors import InputError, StanlogzError
from ...stan.program import StanProgram
from .conditional import latent_coordinates
from .conditional_source import ClockedColumns
from .latents import coordinate_map
from .observations import Observations
from .pointwise import MAX_REFERENCE

#: Largest disagreement (log units) between the 32- and 16-node rules.
GH_TOL = 1e-4


class IntegratedSource(ClockedColumns):
    """Pointwise interface (``columns``, ``column``, ``chunks``, ``check``) of the integrated
    log-likelihood of a program with one latent coordinate per observation. Its pass (one
    quadrature per observation and draw) keeps the clock of the conditional one: progress
    with the time left, and under a time budget it stops keeping the observations done."""

    source = "integrated"
    pass_name = "integrated log-likelihood"
    #: An observation's quadrature costs in proportion to the draws above a fixed part of
    #: about 0.3 ms (a Poisson count with a normal latent: 1.2 ms at 100 draws, 40 ms at
    #: 4,000), so its approximation at 100 draws and a pass on thinned draws cost about their
    #: share of the draws; 0.05 keeps a margin (the clock's default, 0.2, left 31 of 34
    #: budget-stopped passes of 200 counts without an approximation, their se 20-65 nats)
    cost_floor = 0.05

    def __init__(self, model: StanProgram, data: Mapping[str, Any], obs: Observations) -> None:
        self.model, self.data, self.obs = model, dict(data), obs
        lat = latent_coordinates(model, self.data, obs)
        if not all(c.size == 1 for c in lat):
            raise InputError(f"{model.name}: integrating the latents out needs exactly one "
                             "latent coordinate per observation")
        self.coord = np.array([int(c[0]) for c in lat])
        #: observations of each baseline instance (``[[]]``: the empty one) and, per baseline,
        #: the instance and the positions of its coordinates in the full vector
        self.refs, self.bases = self._baselines()
        self._one: dict[int, tuple[Any, np.ndarray, int, int]] = {}
        self.checked = False
        self.log_mass = np.zeros(obs.n)  # set by check() for real observations
        nodes, weights = np.polynomial.hermite.hermgauss(32)
        self.gh = [(nodes, weights), np.polynomial.hermite.hermgauss(16)]
        #: why the route was chosen when ``log_lik="auto"`` took it over a ``log_lik``
        self.chosen: str | None = None

    def notes(self) -> list[str]:
        """The automatic choice of this route, when it was made (reported with the result)."""
        return [self.chosen] if self.chosen else []

    def _bound(self, index: list[int]) -> tuple[Any, np.ndarray]:
        """The program on the observations ``index`` and the position in the full vector of
        each of its coordinates."""
        m = self.model.with_data(self.obs.subset(self.data, index))
        return m, coordinate_map(self.model, m, np.arange(self.obs.n), np.asarray(index, int))

    def _baselines(self) -> tuple[list[list[int]], list[tuple[Any, np.ndarray]]]:
        """The empty instance, else two disjoint reference sets of the fewest observations
        (r ≤ MAX_REFERENCE, 2r < N) the program accepts; a one-line refusal otherwise."""
        why, tried = "", 0
        for r in range(MAX_REFERENCE + 1):
            refs = [[]] if r == 0 else [list(range(r)), list(range(r, 2 * r))]
            if r and 2 * r >= self.obs.n:
                break
            try:
                return refs, [self._bound(ref) for ref in refs]
            except StanlogzError as exc:
                why, tried = why or str(exc).split("\n")[0], r
        raise InputError(f"{self.model.name}: the integrated log-likelihood needs the program "
                         f"on data with no observation, or with a few (two disjoint sets of "
                         f"up to {MAX_REFERENCE}), and it refuses {self.obs.size_name} = 0 to "
                         f"{tried} ({why})")

    def _instance(self, i: int) -> tuple[Any, np.ndarray, int, int]:
        """Observation i's instance (its baseline's observations and i, in the data's
        order), its coordinates' positions, the position of i's latent in it, its baseline."""
        if i not in self._one:
            b = 1 if i in self.refs[0] else 0
            m, pos = self._bound(sorted([*self.refs[b], i]))
            own = int(np.flatnonzero(pos == self.coord[i])[0])
            self._one[i] = (m, pos, own, b)
        return self._one[i]

    def _base_lp(self, b: int, unc: np.ndarray) -> np.ndarray:
        """log p̃ of baseline ``b`` at full-program draws ``unc``."""
        m, pos = self.bases[b]
        return m.log_density_many(unc[:, pos])

    def term(self, i: int, unc: np.ndarray) -> np.ndarray:
        """ℓ_i at full-program draws ``unc``: log p(y_i | z_i, θ) + log p(z_i | θ) + Jacobian."""
        m, pos, _, b = self._instance(i)
        return m.log_density_many(unc[:, pos]) - self._base_lp(b, unc)

    def check(self, unc: np.ndarray, ll: np.ndarray | None = None) -> None:
        """Refuse when the per-observation terms do not add up to the full density difference
        from each baseline (a latent linked to others, a term shared by observations)."""
        unc = np.asarray(unc, dtype=float).reshape(-1, self.model.dim)
        try:
            terms = {i: self.term(i, unc) for i in range(self.obs.n)}
        except StanlogzError as exc:  # e.g. x[2:N] of a random walk on one observation
            raise InputError(f"{self.model.name} fails on the data instances of one or two "
                             "observations that the integrated log-likelihood reads each term "
                             f"off ({str(exc).splitlines()[0]})") from None
        full = self.model.log_density_many(unc)
        for b, ref in enumerate(self.refs):
            total = sum(terms[i] for i in range(self.obs.n) if i not in ref)
            want = full - self._base_lp(b, unc)
            if not np.max(np.abs(total - want)) <= 1e-8 * (1 + np.max(np.abs(want))):
                raise InputError(f"{self.model.name}: the per-observation terms do not add up "
                                 "to the program's density (latents linked across "
                                 "observations or terms shared by observations)")
        self.log_mass = self._log_mass(unc)
        self.checked = True

    def _log_mass(self, unc: np.ndarray) -> np.ndarray:
        """Each observation's latent-prior log mass (zero for integer observations)."""
        from .splitcheck import _mass

        out = np.zeros(self.obs.n)
        every = np.arange(self.obs.n)
        for i in range(self.obs.n):
            keep = np.setdiff1d(every, [i])
            small = self.model.with_data(self.obs.subset(self.data, keep))
            common = coordinate_map(self.model, small, every, keep)
            mass = _mass(self.model, self.data, self.obs, i, unc, np.array([self.coord[i]]))
            if mass is None or not np.all(np.isfinite(mass)):
                return np.zeros(self.obs.n)  # integer or non-Gaussian y: taken as normalized
            gap = mass - small.log_density_many(unc[:, common])
            if np.ptp(gap) > 1e-6:
                raise InputError(f"{self.model.name}: the prior of observation {i + 1}'s latent "
                                 "has a mass that changes with the other parameters (a "
                                 "truncated latent without T[,]); add the truncation")
            out[i] = float(np.mean(gap))
        return out

    def column(self, i: int, unc: np.ndarray) -> np.ndarray:
        """log ∫ exp ℓ_i(θ, v) dv over observation i's unconstrained latent, per draw."""
        unc = np.asarray(unc, dtype=float).reshape(-1, self.model.dim)
        m, pos, own, b = self._instance(i)
        base = unc[:, pos].copy()
        lp0 = self._base_lp(b, unc)

        def f(v: np.ndarray) -> np.ndarray:  # (S, k) latent values -> (S, k) log terms
            k = v.shape[1]
            x = np.repeat(base, k, axis=0)
            x[:, own] = v.ravel()
            out = m.log_density_many(x).reshape(-1, k)
            return np.where(np.isfinite(out), out, -np.inf)

        v = base[:, own].copy()
        h = 1e-3
        for _ in range(30):  # Newton on central differences, with a step cap
            fm, f0, fp = f(np.column_stack([v - h, v, v + h])).T
            g, c = (fp - fm) / (2 * h), (fp - 2 * f0 + fm) / h**2
            step = np.where(c < 0, -g / np.where(c < 0, c, -1.0), np.sign(g))
            v = v + np.clip(step, -2.0, 2.0)
            if np.max(np.abs(step)) < 1e-6:  # a draw far out needs more than a few capped steps
                break
        fm, f0, fp = f(np.column_stack([v - h, v, v + h])).T
        c = (fp - 2 * f0 + fm) / h**2
        s = np.where(c < 0, 1.0 / np.sqrt(np.where(c < 0, -c, 1.0)), 1.0)
        vals = []
        for nodes, weights in self.gh:
            pts = v[:, None] + math.sqrt(2) * s[:, None] * nodes[None, :]
            lw = np.log(weights)[None, :] + nodes[None, :] ** 2 + f(pts)
            vals.append(special.logsumexp(lw, axis=1) + np.log(math.sqrt(2) * s))
        if np.max(np.abs(vals[0] - vals[1])) > GH_TOL:
            # skewed or heavy-tailed in the unconstrained latent (a positive latent near zero:
            # an exponential tail in log z): trapezoid on a wide grid, converging geometrically
            # for such smooth integrands, checked against every other node
            t = np.linspace(-40.0, 40.0, 801)
            pts = v[:, None] + s[:, None] * t[None, :]
            lf = f(pts)
            vals = [special.logsumexp(lf, axis=1) + np.log(s * (t[1] - t[0])),
                    special.logsumexp(lf[:, ::2], axis=1) + np.log(s * 2 * (t[1] - t[0]))]
        if np.max(np.abs(vals[0] - vals[1])) > GH_TOL:
            raise InputError(f"{self.model.name}: the integral over the latent of observation "
                             f"{i + 1} is not resolved by Gauss-Hermite quadrature")
        return vals[0] - lp0 - self.log_mass[i]

    def compare_log_lik(self, unc: np.ndarray, n_obs: int = 5) -> str | None:
        """No generated quantity to compare."""
        return None

    def held_out_model(self, i: int) -> Any:
        """Refits go through :mod:`.heldout` (split check, augmented bridge)."""
        raise InputError(f"{self.model.name}: refits need the split check of the held-out "
                         "program")
