"""Chains moved in lockstep (issue 45's faster passes): one batched density call per leapfrog
step for all chains must make, chain by chain, the moves a loop of single-chain transitions
makes with the same randomness, including a trajectory that leaves the support."""

from __future__ import annotations

import numpy as np

from stanlogz.densities.target import FunctionTarget
from stanlogz.mcmc import hmc
from stanlogz.mcmc.annealing import (
    AnnealingPath,
    PathBatch,
    annealed_transition,
    move_in_turn,
)

DIM = 3
PREC = np.array([[2.0, 0.3, 0.0], [0.3, 1.0, 0.2], [0.0, 0.2, 0.5]])


def _ball(x: np.ndarray) -> float:
    """A Gaussian cut to the ball |x| < 1.5: trajectories leave it (non-finite density)."""
    return -0.5 * float(x @ PREC @ x) if x @ x < 2.25 else -np.inf


TARGET = FunctionTarget(DIM, _ball, lambda x: -(PREC @ x))
BASE = FunctionTarget(DIM, lambda x: -0.25 * float(x @ x), lambda x: -0.5 * x)


def _one(x: np.ndarray) -> tuple[float, np.ndarray]:
    return TARGET.log_density_gradient(x)


def test_a_batch_of_transitions_is_each_chains_transition():
    rng = np.random.default_rng(4)
    k, steps, eps = 12, 10, np.linspace(0.2, 0.6, 12)
    x0 = 0.5 * rng.standard_normal((k, DIM))
    noise, log_u = rng.standard_normal((k, DIM)), np.log(rng.uniform(size=k))
    starts = [hmc.init(x, _one) for x in x0]
    calls = np.zeros(k, dtype=int)

    def many(xs: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        out = [_one(x) for x in xs]
        return np.array([o[0] for o in out]), np.array([o[1] for o in out])

    x, lp, g, info = hmc.transition_many(
        x0, np.array([s.log_density for s in starts]), np.array([s.grad for s in starts]),
        noise, log_u, many, eps, steps, np.ones(DIM))
    for i, s in enumerate(starts):
        def counted(y: np.ndarray, i: int = i) -> tuple[float, np.ndarray]:
            calls[i] += 1
            return _one(y)

        with np.errstate(invalid="ignore"):  # inf - inf where the trajectory left the ball
            new, one = hmc.transition(s, noise[i], float(log_u[i]), counted, float(eps[i]),
                                      steps, np.ones(DIM))
        np.testing.assert_array_equal(x[i], new.position)
        assert lp[i] == new.log_density and info.accepted[i] == one.accepted
        assert info.acceptance_prob[i] == one.acceptance_prob
    np.testing.assert_array_equal(info.n_evals, calls)
    # both kinds of chain were there: one that left the ball mid-trajectory, one accepted
    assert (calls < steps).any() and info.accepted.any()


def test_moving_in_turn_is_a_loop_over_the_chains():
    path = AnnealingPath(BASE, TARGET, base_draws=np.zeros((1, DIM)))  # never drawn from
    starts = 0.4 * np.random.default_rng(5).standard_normal((6, DIM))
    rng_a, rng_b = np.random.default_rng(6), np.random.default_rng(6)
    batch, info = move_in_turn(path, 0.6, path.evaluate_many(starts), rng_a, 0.5, np.ones(DIM),
                               8, n_moves=3)
    points, accepted, evals = [], [], []
    for x in starts:
        pt, acc, n_ev = path.evaluate(x), 0, 0
        for _ in range(3):
            pt, one, n = annealed_transition(path, 0.6, pt, rng_b, 0.5, np.ones(DIM), 8)
            acc, n_ev = acc + one.accepted, n_ev + n
        points.append(pt)
        accepted.append(acc)
        evals.append(n_ev)
    loop = PathBatch.of(points)
    for a, b in zip(batch, loop, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(info.accepted, accepted)
    np.testing.assert_array_equal(info.n_evals, evals)
    # the generator is left where the loop leaves it
    assert rng_a.uniform() == rng_b.uniform()


def test_ais_chains_in_a_block_are_the_chains_one_by_one(monkeypatch):
    # Forward AIS from a wide base into the ball: chains that start outside it have weight 0
    # and stop; the others anneal. A block of 8 must give each chain what a block of one
    # (the loop before the lockstep) gives it, weights and end points alike.
    from stanlogz.estimators.annealing import ais as ais_module

    pool = 1.2 * np.random.default_rng(8).standard_normal((400, DIM))
    base = FunctionTarget(DIM, lambda x: -0.5 * float(x @ x) / 1.44 - DIM * np.log(1.2)
                          - 0.5 * DIM * np.log(2 * np.pi), lambda x: -x / 1.44)
    kw = dict(base_draws=pool, n_chains=12, n_temps=30, seed=3, n_workers=1, hmc_steps=5)
    blocked = ais_module.ais(TARGET, base, **kw)
    monkeypatch.setattr(ais_module, "CHAIN_BLOCK", 1)
    alone = ais_module.ais(TARGET, base, **kw)
    np.testing.assert_array_equal(blocked.log_weights, alone.log_weights)
    np.testing.assert_array_equal(blocked.final_positions, alone.final_positions)
    assert blocked.n_evals == alone.n_evals
    dead = ~np.isfinite(blocked.log_weights)
    assert dead.any() and not dead.all()  # both kinds of chain were there
