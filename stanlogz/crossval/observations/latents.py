"""Matching the parameters of two data instances of one program whose sizes follow the
observations (per-observation latents), and the conditional Gaussian that stands in for the
latents a smaller instance lacks (:mod:`stanlogz.crossval.refit.heldout`)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.linalg import solve_triangular

from ...errors import InputError

# ---------------------------------------------------------------- coordinates of two instances
_NAME = re.compile(r"^(.*?)((?:\.\d+)*)$")


def split_name(name: str) -> tuple[str, tuple[int, ...]]:
    """``"z.3.2"`` -> ``("z", (3, 2))``: a parameter's base name and its 1-based indices."""
    base, idx = _NAME.match(name).groups()  # type: ignore[union-attr]
    return base, tuple(int(p) for p in idx.split(".")[1:])


_split_name = split_name


def _shapes(names: Sequence[str]) -> dict[str, tuple[int, ...]]:
    """Each parameter's shape (largest index along each axis) from unconstrained names."""
    out: dict[str, tuple[int, ...]] = {}
    for n in names:
        base, idx = split_name(n)
        old = out.get(base)
        out[base] = idx if old is None else tuple(max(a, b) for a, b in zip(old, idx,
                                                                            strict=False))
    return out


def observation_axes(big: Any, small: Any, n_big: int, n_small: int | None = None
                     ) -> dict[str, int]:
    """The parameters of ``big`` whose size follows the observations (``n_big`` in ``big``,
    ``n_small`` in ``small``, default ``n_big - 1``) and the axis (0-based) indexed by
    observation; :class:`InputError` for a parameter that changes in any other way."""
    n_small = n_big - 1 if n_small is None else n_small
    bs, ss = _shapes(big.param_unc_names()), _shapes(small.param_unc_names())
    out: dict[str, int] = {}
    for b, shape in bs.items():
        other = ss.get(b)
        if other == shape:
            continue
        axes = ([] if other is None or len(other) != len(shape) else
                [a for a in range(len(shape)) if shape[a] != other[a]])
        if other is None and len(shape) == 1 and shape[0] == n_big and n_small == 0:
            axes = [0]
        ok = len(axes) == 1 and shape[axes[0]] == n_big and (
            other is None or other[axes[0]] == n_small)
        if not ok:
            raise InputError(
                f"parameter {b} of {big.name} changes size ({shape} -> {other}) in a way that "
                f"does not follow the observations ({n_big} -> {n_small}): the program cannot "
                "be split along them")
        out[b] = axes[0]
    return out


def coordinate_map(big: Any, small: Any, big_obs: np.ndarray, small_obs: np.ndarray
                   ) -> np.ndarray:
    """Position in ``big``'s unconstrained vector of each of ``small``'s coordinates.

    ``big`` and ``small`` are instances of one program with the observations ``big_obs`` and
    ``small_obs`` (original 0-based indices, ``small_obs`` a subset). A parameter whose size
    differs between them must be indexed by observation along exactly one axis (one entry per
    observation: ``vector[N] z``, ``matrix[N, K] z``, ``matrix[K, N] z``); anything else cannot
    be split.
    """
    if big.dim == small.dim:
        return np.arange(big.dim)
    axes = observation_axes(big, small, big_obs.size, small_obs.size)
    bnames, snames = big.param_unc_names(), small.param_unc_names()
    where = {int(o): k for k, o in enumerate(big_obs)}
    pos = {n: j for j, n in enumerate(bnames)}
    out = np.empty(len(snames), dtype=int)
    for j, name in enumerate(snames):
        base, idx = split_name(name)
        if base in axes:
            a = axes[base]
            moved = list(idx)
            moved[a] = where[int(small_obs[idx[a] - 1])] + 1
            name = ".".join([base, *map(str, moved)])
        if name not in pos:
            raise InputError(f"parameter {name} of the held-out program has no counterpart in "
                             f"{big.name}: the program cannot be split along the observations")
        out[j] = pos[name]
    return out


# ---------------------------------------------------------------- the auxiliary density q
@dataclass
class ConditionalGaussian:
    """Gaussian q(z | x) = N(z; A [1, x], Σ): latent coordinates z given the others x."""

    coef: np.ndarray  # (1 + d_x, d_z)
    chol: np.ndarray  # (d_z, d_z) lower Cholesky factor of Σ

    @staticmethod
    def fit(x: np.ndarray, z: np.ndarray) -> ConditionalGaussian:
        """Least-squares regression of the rows of ``z`` on ``[1, x]`` (a tiny ridge keeps it
        defined for collinear columns) with the residual covariance."""
        design = np.column_stack([np.ones(len(x)), x])
        ridge = 1e-8 * np.trace(design.T @ design) / design.shape[1]
        gram = design.T @ design + ridge * np.eye(design.shape[1])
        coef = np.linalg.solve(gram, design.T @ z)
        resid = z - design @ coef
        dof = max(len(x) - design.shape[1], 1)
        cov = resid.T @ resid / dof
        cov += 1e-10 * max(float(np.trace(cov)) / cov.shape[0], 1e-12) * np.eye(cov.shape[0])
        return ConditionalGaussian(coef, np.linalg.cholesky(cov))

    def mean(self, x: np.ndarray) -> np.ndarray:
        """Conditional mean at each row of ``x``."""
        return self.coef[0] + x @ self.coef[1:]

    def draw(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One draw of z given each row of ``x``."""
        return self.mean(x) + rng.standard_normal((len(x), self.chol.shape[0])) @ self.chol.T

    def log_pdf(self, x: np.ndarray, z: np.ndarray, cols: np.ndarray | None = None) -> np.ndarray:
        """log q of ``z`` given ``x``; with ``cols``, ``z`` holds only those latent coordinates
        and the marginal density of them is returned."""
        mu, chol = self.mean(x), self.chol
        if cols is not None:
            cov = chol @ chol.T
            chol = np.linalg.cholesky(cov[np.ix_(cols, cols)])
            mu = mu[:, cols]
        if chol.shape[0] == 0:
            return np.zeros(len(x))
        w = solve_triangular(chol, (z - mu).T, lower=True)
        return (-0.5 * np.sum(w**2, axis=0) - np.sum(np.log(np.diag(chol)))
                - 0.5 * chol.shape[0] * math.log(2 * math.pi))
