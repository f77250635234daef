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


def test_the_joint_sum_uses_the_bridges_full_draw_influence() -> None:
    rng = np.random.default_rng(2)
    a = rng.normal(0, 1e-3, (4, 500))
    one = a.size * autocorr_time(a) * float(np.var(a, ddof=1))
    f = SimpleNamespace(mcse=math.sqrt(0.01**2 + one), shared_mcse=0.0, joint_full_influence=a,
                        elpd_i_mcse=1.0, elpd_i_shared_mcse=0.0, full_influence=None)
    assert folds_sum_se([f, f], joint=True) == pytest.approx(math.sqrt(2 * 0.01**2 + 4 * one))
    assert folds_sum_se([f, f]) == pytest.approx(math.sqrt(2.0))


@pytest.mark.parametrize("mu", [0.3, 1.0, 2.0])
def test_bridge_full_influence_gives_the_bridges_full_side_variance(mu: float) -> None:
    """The linearized estimating equation's per-draw influence against the bridge's own
    full-side term re2_p on the same draws (p = N(mu, 1), q = N(0, 1)): two estimates of one
    variance from one sample, within 10% (measured within 3% at these three shifts)."""
    from stanlogz.estimators.bridge.bridge import solve_bridge
    from stanlogz.estimators.bridge.influence import bridge_influence

    rng = np.random.default_rng(0)
    xp, xq = rng.normal(mu, 1, (4, 1000)), rng.normal(0, 1, (4, 1000))

    def lw(x: np.ndarray) -> np.ndarray:
        return (x**2 - (x - mu) ** 2) / 2 + 0.3

    sol = solve_bridge(lw(xp), lw(xq))
    psi, psi_q = bridge_influence(lw(xp), lw(xq), sol.log_r)
    assert psi.shape == xp.shape
    var = psi.size * autocorr_time(psi) * float(np.var(psi, ddof=1))
    assert var == pytest.approx(sol.re2_p, rel=0.1)
    # the other side's: its term re2_q (these draws are shaped as chains, so autocorrelated)
    assert psi_q.shape == xq.shape
    var_q = psi_q.size * autocorr_time(psi_q) * float(np.var(psi_q, ddof=1))
    assert var_q == pytest.approx(sol.re2_q, rel=0.1)


def test_points_sharing_the_training_draws_add_draw_by_draw() -> None:
    """A fold's importance-sampled rest and its observations refit on their own both use the
    fold's training draws: their influences add draw by draw (deterministic arithmetic)."""
    from stanlogz.crossval.refit.heldout import _with_points
    from stanlogz.crossval.refit.heldout_points import PointRefits

    rng = np.random.default_rng(3)
    a = rng.normal(0, 1e-3, (4, 250))
    va = a.size * autocorr_time(a) * float(np.var(a, ddof=1))
    pts = PointRefits(np.array([0]), np.array([-1.0]), math.sqrt(0.02**2 + va), ["bridge"],
                      train_influence=a.copy(), train_var=va)
    rest = math.sqrt(0.03**2 + va)
    # the same influence on both sides: it counts four times, not twice
    assert _with_points(rest, a, pts) == pytest.approx(math.sqrt(0.03**2 + 0.02**2 + 4 * va))
    # without it (an evidence difference, or draws of another shape): independent
    assert _with_points(rest, None, pts) == pytest.approx(math.hypot(rest, pts.mcse))
    assert _with_points(rest, a[:, :100], pts) == pytest.approx(math.hypot(rest, pts.mcse))
