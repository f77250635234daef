"""Model weights: stacking against a known optimum and ArviZ, pseudo-BMA(+) against ArviZ, BMA
against the softmax of log Z with delta-method standard errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from scipy.special import softmax

from stanlogz import arviz_compat
from stanlogz.crossval.select.weights import (
    bma_weights,
    pseudo_bma_weights,
    stacking_objective,
    stacking_weights,
)
from stanlogz.errors import InputError


def binary_mixture(n_ones: int, n: int) -> np.ndarray:
    """Pointwise log predictive densities of two models of a 0/1 outcome, P(y=1) = 0.9 and 0.2,
    on data with exactly ``n_ones`` ones among ``n``: the stacking optimum is the mixture
    weight w with 0.2 + 0.7 w = n_ones / n (the log score n1 log q + n0 log(1 - q) is maximal
    at q = n1 / n)."""
    y = np.r_[np.ones(n_ones), np.zeros(n - n_ones)]
    p1 = np.where(y == 1, 0.9, 0.1)
    p2 = np.where(y == 1, 0.2, 0.8)
    return np.log(np.column_stack([p1, p2]))


def random_elpd(seed: int, n: int = 200) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.column_stack([rng.normal(-1, 0.5, n), rng.normal(-1.1, 0.7, n),
                            rng.normal(-1.05, 0.6, n)])


def test_stacking_finds_the_mixture_that_is_the_truth():
    # 48 ones in 100: the data are exactly the mixture 0.4 * model1 + 0.6 * model2
    w = stacking_weights(binary_mixture(48, 100), n_boot=0)
    assert w.weights == pytest.approx([0.4, 0.6], abs=1e-7)
    assert w.details["kkt_gap"] < 1e-9
    # models with P(y=1) = 0.1 and 0.2 on data with 48% ones: the score rises with q up to
    # 0.48, so the optimum is on the boundary, all weight on the 0.2 model
    y = np.r_[np.ones(48), np.zeros(52)]
    low = np.log(np.column_stack([np.where(y == 1, 0.1, 0.9), np.where(y == 1, 0.2, 0.8)]))
    assert stacking_weights(low, n_boot=0).weights == pytest.approx([0.0, 1.0], abs=1e-9)
    # an outcome that only model 1 explains: weight 1 on model 1
    assert stacking_weights(binary_mixture(95, 100), n_boot=0).weights[0] == pytest.approx(1.0)


def test_stacking_bootstrap_se_matches_the_sandwich_variance():
    # M-estimation: with q = 0.2 + 0.7 w the score is 0.7 (y/q - (1-y)/(1-q)), so
    # var(w_hat) = q (1 - q) / (0.49 N) at q = 0.48, N = 1000: sd 0.02257. The Bayesian
    # bootstrap sd from 200 re-solved draws has relative sd 1/sqrt(2*199) = 5%; a 25% band is
    # 5 of those (P(fail) ~ 1e-6; seed fixed).
    w = stacking_weights(binary_mixture(480, 1000), n_boot=200, seed=11)
    sd = math.sqrt(0.48 * 0.52 / (0.49 * 1000))
    assert w.se[0] == pytest.approx(sd, rel=0.25)
    assert w.se[1] == pytest.approx(w.se[0], rel=1e-6)  # w2 = 1 - w1


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_stacking_agrees_with_arviz_on_the_same_pointwise_elpd(seed):
    e = random_elpd(seed)
    ours = stacking_weights(e, n_boot=0)
    theirs = arviz_compat.compare_weights(e, "stacking")
    # the log score of ArviZ's weights agrees with ours to 1e-6 and never beats it: both solve
    # the same concave problem, ours to a KKT gap < 1e-9
    assert ours.details["kkt_gap"] < 1e-9
    assert stacking_objective(theirs, e) <= ours.details["log_score"] + 1e-9
    assert ours.details["log_score"] - stacking_objective(theirs, e) < 1e-6
    # ArviZ stops SLSQP at its default ftol 1e-6, so its weights are not the optimum; how far
    # they may be follows from their log-score gap: the score f is concave with Hessian
    # -Σ_i p_i p_i' / (p_i'w)² (p_i = exp(elpd_i)), so f(w*) - f(w) >= (λ/2) |w - w*|² with λ
    # the smallest curvature along the simplex (directions summing to 0) and the gradient
    # term >= 0 at the constrained optimum w*. λ is taken at w* and halved for the change of
    # the Hessian between w* and w (|w - w*| < 1e-3: p_i'w moves by < 0.2%).
    gap = ours.details["log_score"] - stacking_objective(theirs, e)
    p = np.exp(e - e.max(axis=1, keepdims=True))
    q = p / (p @ ours.weights)[:, None]
    basis = np.linalg.svd(np.ones((1, e.shape[1])))[2][1:].T  # orthonormal, sums to 0
    lam = np.linalg.eigvalsh(basis.T @ (q.T @ q) @ basis).min()
    dist = np.linalg.norm(ours.weights - theirs)
    assert dist <= math.sqrt(2 * max(gap, 0.0) / (lam / 2)) + 1e-7, (dist, gap, lam)
    assert dist < 1e-3


def test_pseudo_bma_plus_reproduces_arviz_with_the_same_bootstrap_draws():
    e = random_elpd(5)
    seed = arviz_compat.bb_pseudo_bma_seed(3)
    draws = stats.dirichlet.rvs(alpha=[1.0] * e.shape[0], size=1000, random_state=seed)
    theirs = arviz_compat.compare_weights(e, "BB-pseudo-BMA", seed=3)
    assert pseudo_bma_weights(e, dirichlet=draws).weights == pytest.approx(theirs, abs=1e-12)


def test_pseudo_bma_plus_agrees_with_arviz_within_monte_carlo_error():
    e = random_elpd(6)
    ours = pseudo_bma_weights(e, n_boot=1000, seed=8)
    theirs = arviz_compat.compare_weights(e, "BB-pseudo-BMA", seed=9)
    # independent bootstraps of 1000 draws each: the difference has sd sqrt(2) mcse; 4.5 sd
    # has P(fail) ~ 7e-6 per weight
    tol = 4.5 * math.sqrt(2) * ours.mcse
    assert np.all(np.abs(ours.weights - theirs) <= tol + 1e-12)
    assert ours.weights.sum() == pytest.approx(1.0)


def test_pseudo_bma_matches_arviz_and_its_delta_method_se():
    e = random_elpd(7, n=60) * 0.05  # elpd differences of a few nats: weights not all 0/1
    ours = pseudo_bma_weights(e, plus=False)
    assert ours.weights == pytest.approx(arviz_compat.compare_weights(e, "pseudo-BMA"),
                                         abs=1e-12)
    assert ours.weights == pytest.approx(softmax(e.sum(axis=0)))



def test_pseudo_bma_se_is_the_sampling_sd_of_the_weights():
    """The delta-method se against the spread it claims: rows of pointwise elpd drawn iid
    from the distribution random_elpd(..., n=60) * 0.05 uses; the sd of the pseudo-BMA weights
    over 4000 simulated data sets (relative sd 1/sqrt(2 * 3999) = 1.1%) against the mean
    reported se over 400 of them (relative sd <= 0.8%: sd(se) / mean(se) / sqrt(400) measured
    0.6-0.8%). The delta method's own error at sums with sd ~0.25 nat is O(sd²) (measured
    ratios 0.99-1.01); 8% is > 5 combined sd beyond that (P(fail) < 1e-6 per weight). An se
    of the elpd sums instead of the weights (0.19-0.27, about 4x) fails."""
    rng = np.random.default_rng(3)
    mu, sd = np.array([-1, -1.1, -1.05]) * 0.05, np.array([0.5, 0.7, 0.6]) * 0.05
    e = mu + sd * rng.standard_normal((4000, 60, 3))
    sims = softmax(e.sum(axis=1), axis=1)
    se = np.array([pseudo_bma_weights(x, plus=False).se for x in e[:400]])
    assert se.mean(axis=0) == pytest.approx(sims.std(axis=0, ddof=1), rel=0.08)


def test_bma_weights_are_posterior_model_probabilities():
    lz, se = np.array([-29.477367, -35.416101, -30.238090]), np.array([0.01, 0.02, 0.015])
    prior = np.array([0.5, 0.25, 0.25])
    w = bma_weights(lz, se, prior)
    p = np.exp(lz) * prior
    assert w.weights == pytest.approx(p / p.sum(), rel=1e-12)
    # the se against the spread it claims: weights recomputed from 20000 log Z vectors drawn
    # N(lz, se²) (independent estimates) have sd equal to the delta-method se up to O(se²)
    # curvature (< 1e-3 relative at se <= 0.02); the sample sd of 20000 normal-ish values has
    # relative sd 1/sqrt(2 * 19999) = 0.5%, so 2.5% is 5 of those (P(fail) < 1e-5 each).
    rng = np.random.default_rng(5)
    draws = lz + se * rng.standard_normal((20000, 3))
    sim = np.exp(draws - draws.max(axis=1, keepdims=True)) * prior
    sim /= sim.sum(axis=1, keepdims=True)
    assert w.se == pytest.approx(sim.std(axis=0, ddof=1), rel=0.025)


def test_bad_inputs_raise_input_errors():
    with pytest.raises(InputError, match="at least two programs"):
        stacking_weights(np.zeros((5, 1)))
    with pytest.raises(InputError, match="non-finite"):
        stacking_weights(np.array([[0.0, np.nan], [0.0, 0.0]]))
    with pytest.raises(InputError, match=r"must be \(B >= 2, 3\)"):
        pseudo_bma_weights(np.zeros((3, 2)), dirichlet=np.ones((4, 2)))
    with pytest.raises(InputError, match="finite log Z"):
        bma_weights([0.0, np.inf], [0.1, 0.1])
    with pytest.raises(InputError, match="2 positive numbers"):
        bma_weights([0.0, 1.0], [0.1, 0.1], [1.0, -1.0])
