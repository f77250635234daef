"""Geweke's joint-distribution test of the annealing kernels (Grosse, Ghahramani & Adams 2015,
Appendix B, step 2).

The model is conjugate: θ ~ N(0, τ² I₂), y_i | θ ~ N(θ, σ² I₂), i = 1..n. The kernel under test
is the one AIS and SMC use at every intermediate β: :func:`~stanlogz.mcmc.annealing.
annealed_transition` (HMC with a diagonal metric, the step size jittered by ±10% as in AIS) on
the prior→posterior path f_β = prior × likelihood^β.

At any β the tempered target is itself a posterior: the Gaussian likelihood raised to β has the
θ-dependence of N(y_i | θ, σ²/β), so f_β(θ | y) is the posterior of the model with y_i | θ ~
N(θ, σ²/β). Two ways to sample that model's joint distribution of (θ, y) must then agree:

* marginal-conditional: θ ~ prior, y ~ p_β(y | θ), iid;
* successive-conditional: from one such draw, alternate y ~ p_β(y | θ) and one kernel step on θ
  at β (which must leave f_β(θ | y) invariant).

Test functions g(θ, y) are compared by a two-sample t statistic; the successive-conditional
chain is autocorrelated, so its mean's variance comes from batch means (batches far longer than
the chain's autocorrelation time, see the constants below).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from stanlogz.densities.gaussian import GaussianTarget
from stanlogz.mcmc import hmc
from stanlogz.mcmc.annealing import AnnealedTarget, AnnealingPath, PathPoint, annealed_transition

TAU, SIGMA, N_OBS, D = 1.0, 1.0, 2, 2
PRIOR = GaussianTarget(np.zeros(D), TAU**2 * np.eye(D))
L_STEPS = 5  # leapfrog steps per transition
JITTER = 0.1  # step size jitter of AIS


class Conjugate:
    """prior × likelihood of the current data ``y`` (shape (n, 2)); ``y`` is reassigned by the
    successive-conditional sampler (the path re-evaluates the point after each change)."""

    dim = D

    def __init__(self) -> None:
        self.y = np.zeros((N_OBS, D))

    def log_density_gradient(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        r = self.y - x
        ll = -0.5 * float(np.sum(r * r)) / SIGMA**2 - N_OBS * D * math.log(
            math.sqrt(2 * math.pi) * SIGMA)
        lp, gp = PRIOR.log_density_gradient(x)
        return ll + lp, gp + r.sum(0) / SIGMA**2

    def log_density(self, x: np.ndarray) -> float:
        return self.log_density_gradient(x)[0]


def _tuning(beta: float) -> tuple[float, np.ndarray]:
    """Step size and a deliberately imperfect diagonal inverse metric at β (the metric scales
    differ per coordinate, so a metric bug shows)."""
    v = 1.0 / (1.0 / TAU**2 + beta * N_OBS / SIGMA**2)  # posterior variance at β
    return 0.8 * math.sqrt(v), v * np.array([0.6, 1.6])


def _stats(theta: np.ndarray, ybar: np.ndarray) -> np.ndarray:
    """Test functions g(θ, y), one column each: first and second moments and the θ-y cross
    moment per coordinate (the cross moment is what a kernel ignoring y would get wrong)."""
    return np.column_stack([theta, theta**2, theta * ybar])


def _draw_y(rng: np.random.Generator, theta: np.ndarray, beta: float, n: int | None = None
            ) -> np.ndarray:
    s = SIGMA / math.sqrt(beta)
    if n is None:
        return theta + s * rng.standard_normal((N_OBS, D))
    return theta[:, None, :] + s * rng.standard_normal((n, N_OBS, D))


def marginal_conditional(rng: np.random.Generator, beta: float, n: int) -> np.ndarray:
    theta = TAU * rng.standard_normal((n, D))
    y = _draw_y(rng, theta, beta, n)
    return _stats(theta, y.mean(axis=1))


def successive_conditional(rng: np.random.Generator, beta: float, n: int, kernel) -> np.ndarray:
    target = Conjugate()
    path = AnnealingPath(PRIOR, target)
    eps, inv_metric = _tuning(beta)
    theta = TAU * rng.standard_normal(D)
    out = np.empty((n, 3 * D))
    for i in range(n):
        target.y = _draw_y(rng, theta, beta)
        pt = path.evaluate(theta)  # the data changed: fresh endpoint values
        step = eps * rng.uniform(1 - JITTER, 1 + JITTER)
        pt = kernel(path, beta, pt, rng, step, inv_metric, L_STEPS)[0]
        theta = pt.position
        out[i] = _stats(theta[None], target.y.mean(axis=0)[None])[0]
    return out


def geweke_t(mc: np.ndarray, sc: np.ndarray, n_batches: int) -> np.ndarray:
    """t statistic per test function: (mean_sc − mean_mc) / sqrt(var_sc + var_mc), the
    successive-conditional mean's variance by batch means."""
    b = sc[: sc.shape[0] // n_batches * n_batches].reshape(n_batches, -1, sc.shape[1]).mean(1)
    var_sc = b.var(axis=0, ddof=1) / n_batches
    var_mc = mc.var(axis=0, ddof=1) / mc.shape[0]
    return (b.mean(axis=0) - mc.mean(axis=0)) / np.sqrt(var_sc + var_mc)


def _broken_transition(path: AnnealingPath, beta: float, point: PathPoint,
                       rng: np.random.Generator, step_size: float, inv_metric: np.ndarray,
                       n_leapfrog: int) -> tuple[PathPoint, None, int]:
    """The AIS kernel with a wrong Metropolis-Hastings correction: it accepts the leapfrog end
    point with probability min(1, f_β(x')/f_β(x)), forgetting the kinetic energy (as if the
    proposal were symmetric in position). It leaves f_β invariant only approximately."""
    ann = AnnealedTarget(path, beta)
    state = hmc.HMCState(point.position, point.log_f(beta), point.grad_f(beta))
    momentum = rng.standard_normal(state.position.shape) / np.sqrt(inv_metric)
    new, _ = hmc.leapfrog(state, momentum, ann.log_density_gradient, step_size, n_leapfrog,
                          inv_metric)
    if math.log(rng.uniform()) < new.log_density - state.log_density:
        return path.evaluate(new.position), None, 0
    return point, None, 0


# Successive-conditional sweeps and batches: 40 batches of 200 sweeps. The chain's integrated
# autocorrelation times are 1-5 sweeps for every test function (measured on 8000-sweep runs),
# so batches are > 40 autocorrelation times long and their means nearly independent and normal;
# the t statistic is then close to Student's t with 39 degrees of freedom (conservative: the
# marginal-conditional side, 200 000 iid draws, adds almost exact variance).
N_SWEEPS, N_BATCHES, N_MC = 8000, 40, 200_000
BETAS = (1.0, 0.3)  # the posterior and an intermediate temperature
# 6 test functions x 2 temperatures = 12 two-sided t tests; Bonferroni at 1e-4 in all:
# P(|t_39| > 5.129) = 1e-4 / 12 each.
T_CRIT = float(stats.t.isf(1e-4 / 12 / 2, N_BATCHES - 1))


def _geweke(kernel, seed: int) -> np.ndarray:
    """|t| of every test function at every β in :data:`BETAS`, shape (2, 6)."""
    out = []
    for k, beta in enumerate(BETAS):
        rng = np.random.default_rng([seed, k])
        sc = successive_conditional(rng, beta, N_SWEEPS, kernel)
        mc = marginal_conditional(rng, beta, N_MC)
        out.append(np.abs(geweke_t(mc, sc, N_BATCHES)))
    return np.array(out)


@pytest.mark.slow
def test_annealing_kernel_passes_the_geweke_joint_distribution_test():
    """The AIS/SMC kernel (annealed_transition at β = 1 and at β = 0.3) samples the joint
    distribution of (θ, y) correctly: no test function's means differ by more than T_CRIT
    (P(fail) <= 1e-4 for a correct kernel, Bonferroni over the 12 t tests above). Over 4
    seeds of a prototype of this test the largest |t| was 2.5."""
    t = _geweke(annealed_transition, seed=2013)
    assert t.max() < T_CRIT, np.round(t, 2)


@pytest.mark.slow
def test_geweke_test_catches_a_kernel_with_a_wrong_mh_correction():
    """The same test rejects the kernel of :func:`_broken_transition`. Its stationary
    distribution is too narrow: a 80 000-sweep run gave E[θ₁²] = 0.772 at β = 1 and E[θ₂²] =
    0.800 at β = 0.3 where the truth is 1.0, with batch-means se of an 8000-sweep mean 0.020
    and 0.016: expected t of -11.5 and -12.8. Missing both needs |t| < 5.13 for each, which for
    a noncentral t_39 has probability 2e-8 and 3e-11 (independent chains): P(pass) < 1e-4 by
    far."""
    t = _geweke(_broken_transition, seed=2014)
    assert t.max() > T_CRIT, np.round(t, 2)


@pytest.mark.slow
def test_kernel_at_an_intermediate_beta_keeps_exact_tempered_draws():
    """Invariance at β = 0.3 with the data held fixed: f_β is the Gaussian N(m_β, v_β I) with
    v_β = 1/(1/τ² + β n/σ²), m_β = v_β β Σ y_i/σ². 2000 independent chains start at exact draws
    of it and take 3 kernel steps; if the kernel leaves f_β invariant the end points are again
    exact iid draws, so per coordinate the standardized mean is exactly N(0, 1) and
    Σ(x − m_β)²/v_β exactly χ²_2000. Four two-sided tests at 2.5e-5 each: P(fail) = 1e-4."""
    beta, k = 0.3, 2000
    rng = np.random.default_rng(2015)
    target = Conjugate()
    target.y = np.array([[0.8, -1.5], [1.9, -0.4]])
    path = AnnealingPath(PRIOR, target)
    v = 1.0 / (1.0 / TAU**2 + beta * N_OBS / SIGMA**2)
    m = v * beta * target.y.sum(axis=0) / SIGMA**2
    eps, inv_metric = _tuning(beta)
    ends = np.empty((k, D))
    accepted = 0
    for c in range(k):
        pt = path.evaluate(m + math.sqrt(v) * rng.standard_normal(D))
        for _ in range(3):
            step = eps * rng.uniform(1 - JITTER, 1 + JITTER)
            pt, info, _ = annealed_transition(path, beta, pt, rng, step, inv_metric, L_STEPS)
            accepted += info.accepted
        ends[c] = pt.position
    z = (ends.mean(axis=0) - m) / math.sqrt(v / k)
    chi2 = np.sum((ends - m) ** 2, axis=0) / v
    assert np.all(np.abs(z) < stats.norm.isf(2.5e-5 / 2)), z
    lo, hi = stats.chi2.ppf(2.5e-5 / 2, k), stats.chi2.isf(2.5e-5 / 2, k)
    assert np.all((lo < chi2) & (chi2 < hi)), (chi2, lo, hi)
    # The chains did move (a kernel that never accepts would also keep the draws exact): the
    # acceptance rate of this kernel on this Gaussian is 0.95 (6000 moves, binomial se 0.003),
    # so 0.8 is > 40 se below it.
    assert accepted / (3 * k) > 0.8
