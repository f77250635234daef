"""The continuation of NUTS chains (stanlogz.mcmc.nuts_continue): Stan's transition with a
fixed step size and diagonal metric has the target as its stationary distribution (moments of
a Gaussian against their closed form), and continue_chains appends draws to the chains it was
given without touching them (no restart, no new warmup)."""

from __future__ import annotations

import numpy as np
import pytest

from stanlogz.draws import Draws
from stanlogz.errors import InputError
from stanlogz.mcmc.nuts_continue import NutsKernel, continue_chains

SD = np.array([1.0, 10.0, 0.1, 3.0])


def gauss(x: np.ndarray, sd: np.ndarray = SD) -> tuple[float, np.ndarray]:
    return float(-0.5 * np.sum((x / sd) ** 2)), -x / sd**2


def chain(kernel: NutsKernel, n: int, x0: np.ndarray) -> np.ndarray:
    x, lp, g = x0, *kernel.logp_grad(x0)
    out = np.empty((n, x0.size))
    for i in range(n):
        t = kernel.transition(x, lp, g)
        x, lp, g = t.q, t.lp, t.grad
        out[i] = x
    return out


def test_the_transition_keeps_a_gaussian_target():
    # the metric is the target's variances (Stan's warmup would find them)
    n = 6000
    kernel = NutsKernel(gauss, 0.8, SD**2, 10, np.random.default_rng(3))
    z = chain(kernel, n, np.zeros(4)) / SD
    # ESS of these draws per coordinate, of the mean and of the square: 0.25n-1.2n (measured
    # with arviz); at a floor of n/5 the mean's se is <= sqrt(5/n) and the mean square's (var
    # 2 for a standard normal) <= sqrt(10/n). At 4.5 se per check the 8 checks fail with
    # probability <= 8 * 6.8e-6 = 5.4e-5 at that floor (fixed seed: they pass or fail for good)
    assert np.all(np.abs(z.mean(axis=0)) < 4.5 * np.sqrt(5 / n))
    assert np.all(np.abs((z**2).mean(axis=0) - 1) < 4.5 * np.sqrt(10 / n))


class _Steered(NutsKernel):
    """The kernel with its doubling directions recorded, or taken from ``forced`` while it
    lasts, and its momentum given."""

    def __init__(self, *args, forced=(), momentum=None):
        super().__init__(*args)
        self.dirs, self.forced, self.momentum = [], list(forced), momentum

    def _forward(self):
        f = self.forced.pop(0) if self.forced else super()._forward()
        self.dirs.append(f)
        return f

    def _momentum(self, n):
        return super()._momentum(n) if self.momentum is None else self.momentum.copy()


def test_a_trajectory_ends_alike_from_every_state_it_holds():
    # NUTS leaves the target invariant because the trajectory it builds does not depend on
    # which of its states it started from (given the doubling directions that reach it): every
    # no-U-turn check must read the trajectory alone. Started from states of a finished
    # trajectory, with the directions that rebuild it (and a rejected last extension taken to
    # the same side), the kernel must end with the same span and depth. A mismatched metric
    # (scales 0.3 to 3) makes trees 4-5 deep, where the checks across the join of the
    # trajectory and its new subtree decide; reading the inner end of the last forward subtree
    # there instead of the trajectory's forward end broke this on most trajectories and
    # overdispersed the draws by 2-7% per coordinate (+1.3% on the roaches posterior, about one
    # Monte Carlo se of elpd_loo at a precision target). Deterministic but for rounding.
    sd = np.array([1.0, 3.0, 0.3, 2.0])

    def logp(x):
        return gauss(x, sd)

    rng = np.random.default_rng(5)
    compared = 0
    for _ in range(40):
        k = _Steered(logp, 0.25, np.ones(4), 10, rng)
        depth = k.transition(rng.normal(size=4) * sd).treedepth
        bck, fwd = k.ends
        states = [bck]
        for _ in range(2**depth - 1):
            states.append(k._leapfrog(states[-1], k.eps))
        np.testing.assert_allclose(states[-1].q, fwd.q, rtol=1e-9, atol=1e-9)
        rejected = k.dirs[depth:]  # a last extension the kernel rejected, by its side
        for i in rng.choice(2**depth, size=min(4, 2**depth), replace=False):
            forced = [((int(i) >> lev) & 1) == 0 for lev in range(depth)] + rejected
            k2 = _Steered(logp, 0.25, np.ones(4), 10, np.random.default_rng(0),
                          forced=forced, momentum=states[i].p)
            k2.transition(states[i].q)
            assert len(k2.dirs) == len(k.dirs)
            np.testing.assert_allclose(k2.ends[0].q, bck.q, rtol=1e-8, atol=1e-8)
            np.testing.assert_allclose(k2.ends[1].q, fwd.q, rtol=1e-8, atol=1e-8)
            compared += 1
    assert compared > 100


class _Program:
    """The Gaussian as a program: its density, gradient and constrained values (x and x²)."""

    def __init__(self) -> None:
        self.calls = 0

    def log_density_gradient(self, x, propto=True, jacobian=True):
        self.calls += 1
        return gauss(np.asarray(x))

    def constrain_many(self, xs, include_tp=True, include_gq=True, seed=None):
        return np.concatenate([xs, xs**2], axis=1)


def _draws(n: int = 50, chains: int = 3) -> Draws:
    rng = np.random.default_rng(1)
    unc = rng.normal(size=(chains, n, 4)) * SD
    cols = {k: rng.uniform(size=(chains, n)) for k in ("lp__", "accept_stat__", "stepsize__",
                                                       "treedepth__", "n_leapfrog__",
                                                       "divergent__", "energy__")}
    return Draws(unconstrained=unc, constrained=np.concatenate([unc, unc**2], axis=2),
                 sampler=cols, step_size=np.array([0.7, 0.8, 0.9]),
                 inv_metric=np.tile(SD**2, (chains, 1)), seconds=1.0, n_gradient_evals=1000,
                 source="stanlogz-nuts", sampling_cost_known=True, max_treedepth=10)


def test_continue_chains_appends_to_the_chains_it_was_given():
    d = _draws()
    prog = _Program()
    out, added = continue_chains(prog, d, 40, seed=5)
    assert added == 40 and out.unconstrained.shape == (3, 90, 4)
    # the old draws are kept as they were and the new ones start where each chain ended
    np.testing.assert_array_equal(out.unconstrained[:, :50], d.unconstrained)
    np.testing.assert_array_equal(out.constrained[:, :50], d.constrained)
    np.testing.assert_allclose(out.constrained[:, 50:, 4:], out.unconstrained[:, 50:] ** 2)
    # the adapted step size and metric are the chains' own: no new warmup changed them
    np.testing.assert_array_equal(out.step_size, d.step_size)
    np.testing.assert_array_equal(out.inv_metric, d.inv_metric)
    np.testing.assert_array_equal(out.sampler["stepsize__"][:, 50:],
                                  np.repeat(d.step_size[:, None], 40, axis=1))
    new_steps = int(out.sampler["n_leapfrog__"][:, 50:].sum())
    # one gradient per leapfrog step and one at each chain's start
    assert out.n_gradient_evals == 1000 + new_steps and prog.calls == new_steps + 3
    assert all(v.shape == (3, 90) for v in out.sampler.values())


def test_a_stop_ends_every_chain_at_the_same_draw():
    rounds = iter(range(100))
    out, added = continue_chains(_Program(), _draws(), 40, seed=5,
                                 stop=lambda: next(rounds) >= 7)
    assert added == 7 and out.unconstrained.shape == (3, 57, 4)
    same, none = continue_chains(_Program(), _draws(), 40, seed=5, stop=lambda: True)
    assert none == 0 and same.n_draws == 50


def test_bad_continuations_are_refused_in_one_line():
    with pytest.raises(InputError, match="positive count"):
        continue_chains(_Program(), _draws(), 0)
    d = _draws()
    d.step_size = None
    with pytest.raises(InputError, match="adapted step size"):
        continue_chains(_Program(), d, 5)
    with pytest.raises(InputError, match="positive step size"):
        NutsKernel(gauss, -1.0, SD**2, 10, np.random.default_rng(0))
