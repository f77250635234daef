"""Annealing schedules: increasing inverse temperatures β_0 = 0 < ... < β_{T-1} = 1.

``sigmoid`` is eq. (8) of Grosse, Ghahramani & Adams (2015) with δ = 4: it puts more
intermediate distributions near both endpoints, where AIS weights change fastest.
``adaptive`` spaces the β evenly in thermodynamic length ∫ sd_β(log p̃ − log q) dβ, with the
spread measured by a pilot (Gelman & Meng 1998): with exact mixing, the log-weight variance
Σ Δβ² Var_β is smallest for this spacing.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError

SCHEDULES = ("sigmoid", "linear", "geometric", "adaptive")

# Share of the thermodynamic length spread evenly over [0, 1] in the adaptive schedule: a hedge
# against a pilot that underestimates the spread somewhere (its chains mix imperfectly).
ADAPTIVE_FLOOR = 0.1


def _check(n_temps: int) -> int:
    n = int(n_temps)
    if n < 2:
        raise InputError(f"an annealing schedule needs at least 2 temperatures, got {n_temps}")
    return n


def sigmoid_schedule(n_temps: int, delta: float = 4.0) -> np.ndarray:
    """``n_temps`` sigmoidally spaced inverse temperatures, rescaled to end at exactly 0 and 1."""
    n = _check(n_temps)
    if not delta > 0:
        raise InputError(f"sigmoid schedule needs delta > 0, got {delta}")
    t = np.linspace(-1.0, 1.0, n)
    raw = 1.0 / (1.0 + np.exp(-delta * t))
    betas = (raw - raw[0]) / (raw[-1] - raw[0])
    betas[0], betas[-1] = 0.0, 1.0
    return betas


def linear_schedule(n_temps: int) -> np.ndarray:
    """Equally spaced inverse temperatures from 0 to 1."""
    betas = np.linspace(0.0, 1.0, _check(n_temps))
    betas[-1] = 1.0
    return betas


def geometric_schedule(n_temps: int, beta_min: float = 1e-4) -> np.ndarray:
    """β_0 = 0, then ``n_temps - 1`` geometrically spaced values from ``beta_min`` to 1."""
    n = _check(n_temps)
    if not 0 < beta_min < 1:
        raise InputError(f"geometric schedule needs 0 < beta_min < 1, got {beta_min}")
    betas = np.concatenate([[0.0], np.geomspace(beta_min, 1.0, n - 1)])
    betas[-1] = 1.0
    return betas


def adaptive_schedule(n_temps: int, grid: np.ndarray, log_ratio_sd: np.ndarray) -> np.ndarray:
    """``n_temps`` β evenly spaced in thermodynamic length, from spreads ``log_ratio_sd`` of
    log p̃ − log q measured at the increasing β of ``grid`` (from 0 to 1).

    Between positive grid points the spread is interpolated linearly in log β and log spread;
    a share :data:`ADAPTIVE_FLOOR` of the length is spread evenly.
    """
    n = _check(n_temps)
    g = np.asarray(grid, dtype=float)
    sd = np.asarray(log_ratio_sd, dtype=float)
    if g.ndim != 1 or g.shape != sd.shape or g.size < 2 or g[0] != 0.0 or g[-1] != 1.0:
        raise InputError("adaptive schedule needs spreads on a grid running from 0 to 1")
    ok = np.isfinite(sd) & (sd > 0)
    if not np.any(ok):
        return sigmoid_schedule(n)
    # Missing spreads (a pilot β where every chain had zero density) take the nearest known one.
    sd = np.interp(np.arange(g.size), np.flatnonzero(ok), sd[ok])
    g1 = g[1]
    fine = np.unique(np.concatenate([np.linspace(0.0, g1, 64), np.geomspace(g1, 1.0, 4096)]))
    log_sd = np.empty_like(fine)
    first = fine <= g1
    log_sd[first] = np.interp(fine[first], g[:2], np.log(sd[:2]))
    log_sd[~first] = np.interp(np.log(fine[~first]), np.log(g[1:]), np.log(sd[1:]))
    s = np.exp(log_sd)
    length = np.concatenate([[0.0], np.cumsum(0.5 * (s[1:] + s[:-1]) * np.diff(fine))])
    length = (1 - ADAPTIVE_FLOOR) * length / length[-1] + ADAPTIVE_FLOOR * fine
    betas = np.interp(np.linspace(0.0, 1.0, n), length, fine)
    betas[0], betas[-1] = 0.0, 1.0
    if np.any(np.diff(betas) <= 0):  # pragma: no cover - the floor keeps the length increasing
        raise InputError("adaptive schedule is not increasing")
    return betas


def make_schedule(schedule: str | np.ndarray, n_temps: int, **options: float) -> np.ndarray:
    """The schedule named ``schedule`` (or an explicit array, validated) with ``n_temps`` values."""
    if not isinstance(schedule, str):
        betas = np.asarray(schedule, dtype=float)
        if betas.ndim != 1 or betas.size < 2:
            raise InputError("an explicit schedule must be a 1-d array of at least 2 values")
        if betas[0] != 0.0 or betas[-1] != 1.0 or np.any(np.diff(betas) <= 0):
            raise InputError("an explicit schedule must increase strictly from exactly 0 to 1")
        return betas
    if schedule == "sigmoid":
        return sigmoid_schedule(n_temps, **options)
    if schedule == "linear":
        return linear_schedule(n_temps)
    if schedule == "geometric":
        return geometric_schedule(n_temps, **options)
    if schedule == "adaptive":
        raise InputError("the adaptive schedule needs pilot spreads: use adaptive_schedule")
    raise InputError(f"unknown schedule {schedule!r}; choose one of {', '.join(SCHEDULES)}")
