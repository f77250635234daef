"""Tuning of unbiased path sampling: the lambda grid, the density q of lambda, and per-lambda
tables of truncation times k, m and Gaussian approximations that start the chains."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import EstimationError, InputError
from ...mcmc.paths import LambdaPath

InitSpec = Any  # an object with .mean and .cov, or a callable lam -> (mean, cov)
CovSpec = np.ndarray | float | Callable[[float], np.ndarray] | None

@dataclass
class UPSTuning:
    """Tuning tables over the lambda grid (index l = 0..L) and the proposal q(lambda)."""

    grid: np.ndarray
    k: np.ndarray
    m: np.ndarray
    means: np.ndarray
    covs: np.ndarray
    proposal_covs: np.ndarray
    pilot_meeting_times: np.ndarray  # (L+1, n_pilot); empty when k, m were given
    sqrt_m2: np.ndarray
    pilot_E: np.ndarray  # pilot means of the unbiased estimates of E(lambda) on the grid
    q_mass: np.ndarray  # probability of each interval [grid[l], grid[l+1]]
    n_evals: int = 0

    def q_density(self, lam: np.ndarray | float) -> np.ndarray:
        """Density of q at ``lam`` (right-continuous; 1 at lam = 1 belongs to the last interval)."""
        lam = np.asarray(lam, dtype=float)
        idx = np.clip(np.searchsorted(self.grid, lam, side="right") - 1, 0, self.grid.size - 2)
        return self.q_mass[idx] / np.diff(self.grid)[idx]

    def sample_q(self, rng: np.random.Generator) -> float:
        """One lambda from q: an interval by its mass, then uniform within it."""
        l = int(rng.choice(self.q_mass.size, p=self.q_mass))
        return float(rng.uniform(self.grid[l], self.grid[l + 1]))


def make_grid(grid: int | str | Sequence[float] = 10) -> np.ndarray:
    """Lambda grid: ``L`` → l/L; ``"log"``/``"log:L"`` → 0 and exp(-L + l), l = 0..L; or a list."""
    if isinstance(grid, str):
        name, _, n = grid.partition(":")
        if name != "log":
            raise InputError(f"grid must be an int, 'log', 'log:L' or a sequence, got {grid!r}")
        L = int(n) if n else 10
        return np.concatenate([[0.0], np.exp(-L + np.arange(L + 1.0))])
    if isinstance(grid, int | np.integer):
        if grid < 1:
            raise InputError(f"grid needs at least one interval, got {grid}")
        return np.linspace(0.0, 1.0, int(grid) + 1)
    g = np.asarray(grid, dtype=float)
    if g.ndim != 1 or g.size < 2 or g[0] != 0.0 or g[-1] != 1.0 or np.any(np.diff(g) <= 0):
        raise InputError("an explicit grid must increase strictly from 0 to 1")
    return g


def cost_equalizing_km(
    taus: np.ndarray, quantile: float = 0.99, k_factor: float = 1.0, m_factor: float = 5.0
) -> tuple[np.ndarray, np.ndarray]:
    """``k_l`` = k_factor × quantile of meeting times; ``m_l`` by eq. 11 (equal expected cost)."""
    taus = np.asarray(taus, dtype=float)
    k = np.ceil(k_factor * np.quantile(taus, quantile, axis=1)).astype(int)
    k = np.maximum(k, 1)
    tbar = taus.mean(axis=1)
    m = np.ceil(m_factor * k.max() + tbar.max() - tbar).astype(int)
    return k, np.maximum(m, k)


def q_from_sqrt_m2(grid: np.ndarray, sqrt_m2: np.ndarray, floor: float = 0.01) -> np.ndarray:
    """Interval masses of the piecewise-uniform q ∝ sqrt(m2) (eq. 10).

    ``sqrt_m2`` is floored at ``floor`` × its maximum so that q stays positive on all of [0, 1].
    """
    s = np.asarray(sqrt_m2, dtype=float)
    if not np.all(np.isfinite(s)):
        raise EstimationError("non-finite second-moment estimates; the path or kernel is unstable")
    top = s.max()
    s = np.maximum(s, floor * top) if top > 0 else np.ones_like(s)
    w = np.diff(grid) * 0.5 * (s[:-1] + s[1:])
    return w / w.sum()


def _psd_cov(cov: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    c = 0.5 * (cov + cov.T)
    vals, vecs = np.linalg.eigh(c)
    if not np.all(np.isfinite(vals)) or vals.max() <= 0:
        return fallback
    vals = np.maximum(vals, 1e-6 * vals.max())
    return (vecs * vals) @ vecs.T


def _interp(grid: np.ndarray, table: np.ndarray, lam: float) -> np.ndarray:
    i = int(np.clip(np.searchsorted(grid, lam, side="right") - 1, 0, grid.size - 2))
    w = (lam - grid[i]) / (grid[i + 1] - grid[i])
    return (1.0 - w) * table[i] + w * table[i + 1]


def _nearest_max(grid: np.ndarray, table: np.ndarray, lam: float) -> int:
    i = int(np.clip(np.searchsorted(grid, lam, side="right") - 1, 0, grid.size - 2))
    return int(max(table[i], table[i + 1]))


def _init_tables(
    path: LambdaPath, grid: np.ndarray, init: InitSpec, proposal_cov: CovSpec, proposal_scale: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    d = path.dim
    if init is None:
        p0 = getattr(path, "p0", None)
        if p0 is None or not hasattr(p0, "mean") or not hasattr(p0, "cov"):
            raise InputError("give init (a Gaussian with .mean/.cov or lam -> (mean, cov))")
        init = p0
    means, covs, pcovs = [], [], []
    for lam in grid:
        if callable(init) and not hasattr(init, "mean"):
            mean, cov = init(float(lam))
        else:
            mean, cov = init.mean, init.cov
        mean = np.atleast_1d(np.asarray(mean, dtype=float))
        cov = np.atleast_2d(np.asarray(cov, dtype=float))
        if mean.shape != (d,) or cov.shape != (d, d):
            raise InputError(f"initial mean/cov must have shapes ({d},) and ({d},{d})")
        if proposal_cov is None:
            pc = proposal_scale**2 * cov / d
        elif callable(proposal_cov):
            pc = np.asarray(proposal_cov(float(lam)), dtype=float)
        else:
            pc = np.asarray(proposal_cov, dtype=float)
        pc = np.atleast_2d(pc) if np.ndim(pc) == 2 else np.diag(np.broadcast_to(pc, (d,)))
        means.append(mean)
        covs.append(cov)
        pcovs.append(pc)
    return np.array(means), np.array(covs), np.array(pcovs)
