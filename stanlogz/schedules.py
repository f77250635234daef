"""Annealing schedules: increasing inverse temperatures β_0 = 0 < ... < β_{T-1} = 1.

``sigmoid`` is eq. (8) of Grosse, Ghahramani & Adams (2015) with δ = 4: it puts more
intermediate distributions near both endpoints, where AIS weights change fastest.
"""

from __future__ import annotations

import numpy as np

from .errors import InputError

SCHEDULES = ("sigmoid", "linear", "geometric")


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
    raise InputError(f"unknown schedule {schedule!r}; choose one of {', '.join(SCHEDULES)}")
