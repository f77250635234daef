"""``fix="mis"`` runs its HMC with the user's sampler settings (issue 35 item 7): the step size
is adapted toward ``NutsArgs.adapt_delta``, not a hard-coded 0.8."""

from __future__ import annotations

import numpy as np
import pytest

from stanlogz.crossval.elpd.psis import psis_loo
from stanlogz.crossval.fixups import mixture
from stanlogz.crossval.fixups.mixture import _hmc, mixture_fixup
from stanlogz.stan.settings import NutsArgs


def _normal(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return -0.5 * np.sum(x**2, axis=1), -x


@pytest.mark.parametrize("delta, lo, hi", [(0.95, 0.92, 0.98), (0.6, 0.55, 0.75)])
def test_hmc_adapts_toward_adapt_delta(delta: float, lo: float, hi: float) -> None:
    """Dual averaging toward ``delta`` on a 5-d standard normal: over 20 seeds the mean
    acceptance after 300 warmup iterations was 0.949 (sd 0.0035) for 0.95 and 0.666 (sd 0.016)
    for 0.6 (0.842 for 0.8, outside both bands); the bands are >= 5 sd wide on each side
    (failure probability < 1e-6 under the normal approximation; the seed is fixed)."""
    rng = np.random.default_rng(7)
    _, acc, _ = _hmc(_normal, rng.normal(size=(4, 5)), np.ones(5), 0.5, 300, 300, rng,
                     adapt_delta=delta)
    assert lo < acc < hi, acc


class _Stop(Exception):
    pass


class _Model:
    dim = 2

    def log_density_many(self, x: np.ndarray) -> np.ndarray:
        return -0.5 * np.sum(np.asarray(x) ** 2, axis=1)


class _Pointwise:
    model = _Model()

    def held_out_model(self, i: int) -> _Model:
        return _Model()

    def columns(self, index: np.ndarray, x: np.ndarray) -> np.ndarray:
        return np.zeros((np.asarray(x).shape[0], len(index)))


class _Draws:
    step_size = None

    def flat_unconstrained(self) -> np.ndarray:
        return np.random.default_rng(0).normal(size=(400, 2))


def test_mixture_fixup_passes_the_users_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, float] = {}

    def spy(*args, **kwargs):
        seen["adapt_delta"], seen["max_treedepth"] = args[7], args[8]
        raise _Stop

    monkeypatch.setattr(mixture, "_hmc", spy)
    ps = psis_loo(np.random.default_rng(1).normal(size=(400, 3)))
    with pytest.raises(_Stop):
        mixture_fixup(_Pointwise(), _Draws(), np.array([1]), ps, {0: 0, 1: 1, 2: 2},
                      NutsArgs(adapt_delta=0.97, max_treedepth=6), seed=1, progress=None)
    assert seen == {"adapt_delta": 0.97, "max_treedepth": 6}
