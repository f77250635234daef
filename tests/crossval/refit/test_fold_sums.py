"""The Monte Carlo se of a sum over held-out sets that share the full-data draws
(stanlogz.crossval.refit.fold_sums): the full draws' influence adds draw by draw over the sets,
the rest as before (deterministic arithmetic)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from stanlogz.crossval.refit.fold_sums import folds_sum_se
from stanlogz.crossval.refit.heldout import shared_sum_se
from stanlogz.estimators.common import autocorr_time


def _fold(own: float, shared: float, a: np.ndarray | None) -> SimpleNamespace:
    full = 0.0 if a is None else a.size * autocorr_time(a) * float(np.var(a, ddof=1))
    return SimpleNamespace(elpd_i_mcse=math.sqrt(own**2 + shared**2 + full),
                           elpd_i_shared_mcse=shared, full_influence=a)


def test_the_full_draws_part_adds_draw_by_draw() -> None:
    rng = np.random.default_rng(1)
    a = rng.normal(0, 1e-3, (4, 500))
    one = a.size * autocorr_time(a) * float(np.var(a, ddof=1))
    # the same influence in two sets: its variance counts four times, not twice
    two = [_fold(0.1, 0.0, a), _fold(0.2, 0.0, a)]
    assert folds_sum_se(two) == pytest.approx(math.sqrt(0.1**2 + 0.2**2 + 4 * one))
    # opposite influences cancel
    assert folds_sum_se([_fold(0.1, 0.0, a), _fold(0.2, 0.0, -a)]) == pytest.approx(
        math.sqrt(0.1**2 + 0.2**2))
    # without full-draw influence (a PSIS fold): the former rule, shared parts linear
    plain = [_fold(0.1, 0.03, None), _fold(0.2, 0.05, None)]
    assert folds_sum_se(plain) == pytest.approx(shared_sum_se([f.elpd_i_mcse for f in plain],
                                                              [0.03, 0.05]))
    # a set whose full draws differ in shape (another full fit) stays independent
    b = rng.normal(0, 1e-3, (2, 300))
    mixed = [_fold(0.1, 0.0, a), _fold(0.2, 0.0, b)]
    assert folds_sum_se(mixed) == pytest.approx(
        math.sqrt(sum(f.elpd_i_mcse**2 for f in mixed)))
