import numpy as np
import pytest

from stanlogz.densities.gaussian import GaussianTarget
from stanlogz.densities.target import FunctionTarget
from stanlogz.errors import InputError
from stanlogz.estimators import get_method
from stanlogz.estimators.annealing.ais import ais, log_mean_exp_with_se, reverse_ais
from stanlogz.mcmc.annealing import (
    AnnealedTarget,
    AnnealingPath,
    HMCTuning,
    annealed_transition,
    prior_path,
    tune_hmc,
)
from stanlogz.mcmc.schedules import (
    adaptive_schedule,
    geometric_schedule,
    linear_schedule,
    make_schedule,
    sigmoid_schedule,
)
from tests.helpers import NormalNormal

# A 4-d correlated Gaussian "posterior" with known log Z, and a broad, offset Gaussian base.
D = 4
_rng = np.random.default_rng(0)
_A = _rng.normal(size=(D, D))
POST = GaussianTarget(_rng.normal(size=D) + 1.0, 0.3 * (_A @ _A.T / D + 0.2 * np.eye(D)), 1.7)
BASE = GaussianTarget(np.zeros(D), 4.0 * np.eye(D))


@pytest.fixture(scope="module")
def tuning():
    tun, _ = tune_hmc(AnnealingPath(BASE, POST), np.random.default_rng(3))
    return tun


# ---------------------------------------------------------------- schedules


@pytest.mark.parametrize("n", [2, 3, 10, 1000])
def test_sigmoid_schedule_endpoints_exact_and_monotone(n):
    b = sigmoid_schedule(n)
    assert b.size == n
    assert b[0] == 0.0 and b[-1] == 1.0
    assert np.all(np.diff(b) > 0)
    # Symmetric about 1/2 and denser near the ends than in the middle.
    np.testing.assert_allclose(b + b[::-1], 1.0, atol=1e-12)
    if n >= 10:
        steps = np.diff(b)
        assert steps[0] < steps[n // 2] and steps[-1] < steps[n // 2]


def test_other_schedules():
    for b in (linear_schedule(7), geometric_schedule(7), make_schedule("geometric", 7)):
        assert b[0] == 0.0 and b[-1] == 1.0 and np.all(np.diff(b) > 0)
    np.testing.assert_array_equal(make_schedule([0.0, 0.3, 1.0], 99), [0.0, 0.3, 1.0])
    with pytest.raises(InputError):
        make_schedule("cosine", 10)
    with pytest.raises(InputError):
        make_schedule([0.0, 0.5, 0.4, 1.0], 4)
    with pytest.raises(InputError):
        sigmoid_schedule(1)


def test_adaptive_schedule_follows_the_spread_of_the_log_ratio():
    grid = np.array([0.0, 1e-3, 0.1, 1.0])
    # Spread 1000 nats near β=0 falling to 1 at β=1 (as when the base is far from the target).
    b = adaptive_schedule(200, grid, np.array([1000.0, 300.0, 10.0, 1.0]))
    assert b[0] == 0.0 and b[-1] == 1.0 and b.size == 200 and np.all(np.diff(b) > 0)
    # 58% of the length lies below β=0.1 (piecewise power laws), 90% of it weighted: ~53% of
    # the temperatures, against ~20% for the sigmoid.
    assert np.mean(b < 0.1) == pytest.approx(0.53, abs=0.02)
    assert np.mean(sigmoid_schedule(200) < 0.1) < 0.25
    # The even floor keeps some temperatures at large β.
    assert np.sum(b > 0.5) >= 5
    # A flat spread gives a linear schedule; no usable spread falls back to the sigmoid.
    np.testing.assert_allclose(adaptive_schedule(11, grid, np.ones(4)), np.linspace(0, 1, 11),
                               atol=1e-9)
    np.testing.assert_array_equal(adaptive_schedule(9, grid, np.full(4, np.nan)),
                                  sigmoid_schedule(9))
    with pytest.raises(InputError):
        adaptive_schedule(9, grid[1:], np.ones(3))
    with pytest.raises(InputError):
        make_schedule("adaptive", 9)


def test_log_mean_exp_and_ess():
    lme, se, ess = log_mean_exp_with_se(np.log([1.0, 1.0, 1.0, 1.0]))
    assert lme == pytest.approx(0.0) and se == pytest.approx(0.0) and ess == pytest.approx(4.0)
    lme, _, ess = log_mean_exp_with_se(np.array([0.0, -np.inf]))
    assert lme == pytest.approx(np.log(0.5)) and ess == pytest.approx(1.0)


# ---------------------------------------------------------------- annealed target and kernel


def test_annealed_target_value_and_gradient():
    path = AnnealingPath(BASE, POST)
    f = AnnealedTarget(path, 0.3)
    x = np.array([0.1, -0.4, 0.8, 0.2])
    lp, g = f.log_density_gradient(x)
    assert lp == pytest.approx(0.7 * BASE.log_density(x) + 0.3 * POST.log_density(x))
    h = 1e-6
    fd = [(f.log_density(x + h * e) - f.log_density(x - h * e)) / (2 * h) for e in np.eye(D)]
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-6)
    with pytest.raises(InputError):
        AnnealedTarget(path, 1.5)
    with pytest.raises(InputError):
        AnnealingPath(FunctionTarget(D, lambda x: 0.0), POST)  # not sampleable, no draws


def test_hmc_kernel_leaves_intermediate_distribution_invariant(tuning):
    # Geometric mixture of two Gaussians is Gaussian: precision (1-β)P_q + βP_p.
    beta = 0.4
    prec = (1 - beta) * BASE.prec + beta * POST.prec
    cov = np.linalg.inv(prec)
    mean = cov @ ((1 - beta) * BASE.prec @ BASE.mean + beta * POST.prec @ POST.mean)
    exact = GaussianTarget(mean, cov)
    path = AnnealingPath(BASE, POST)
    rng = np.random.default_rng(12)
    n = 1500
    xs = exact.sample(rng, n)
    eps, inv_metric = tuning.at(beta)
    out = np.empty_like(xs)
    n_acc = 0
    for i, x in enumerate(xs):
        pt = path.evaluate(x)
        for _ in range(2):
            pt, info, _ = annealed_transition(path, beta, pt, rng, eps, inv_metric, 8)
            n_acc += info.accepted
        out[i] = pt.position
    assert n_acc / (2 * n) > 0.5  # the chain actually moves
    assert np.mean(np.abs(out - xs)) > 0.1 * np.sqrt(np.diag(cov)).mean()
    # Draws are exact and independent, so the sample mean has se sqrt(diag(cov)/n) and the
    # sample variance se ~ var*sqrt(2/n) (Gaussian). 14 checks (4 means, 4 variances, 6
    # correlations) at 4.6 se: P(|Z| > 4.6) = 4.2e-6 each, so P < 6e-5 for the test (union bound).
    sd = np.sqrt(np.diag(cov))
    assert np.all(np.abs(out.mean(0) - mean) < 4.6 * sd / np.sqrt(n))
    assert np.all(np.abs(out.var(0) / np.diag(cov) - 1) < 4.6 * np.sqrt(2 / n))
    # Cross-covariances too (scaled to correlations, se (1 - rho^2)/sqrt(n) <= 1/sqrt(n)).
    corr_err = np.corrcoef(out.T) - cov / np.outer(sd, sd)
    assert np.max(np.abs(corr_err)) < 4.6 / np.sqrt(n)


def test_tuning_interpolates_and_constant():
    t = HMCTuning.constant(0.2, 2.0, 3)
    eps, m = t.at(0.37)
    assert eps == pytest.approx(0.2) and np.allclose(m, 2.0)
    with pytest.raises(InputError):
        HMCTuning.constant(0.0, 1.0, 3)
    # Inherited from NUTS: endpoint metrics exact, the harmonic blend in between.
    t = HMCTuning.from_endpoints(np.array([4.0, 1.0]), np.array([0.25, 1.0]), 0.3)
    np.testing.assert_allclose(t.at(0.0)[1], [4.0, 1.0])
    np.testing.assert_allclose(t.at(1.0)[1], [0.25, 1.0])
    assert 0.25 < t.at(0.5)[1][0] < 4.0 and t.at(0.5)[0] == pytest.approx(0.3)
    # Usable by AIS directly: no pilot evaluations are spent.
    r = ais(POST, BASE, n_chains=2, n_temps=20, seed=1, tuning=HMCTuning.from_endpoints(
        np.diag(BASE.cov), np.diag(POST.cov), 0.3))
    assert r.n_evals == 2 * (1 + 18 * 10)


# ---------------------------------------------------------------- AIS / reverse AIS bounds


@pytest.mark.slow
def test_ais_below_and_reverse_ais_above_truth(tuning):
    post = POST.sample(np.random.default_rng(5), 16)
    lo = ais(POST, BASE, n_chains=16, n_temps=300, seed=1, tuning=tuning)
    hi = reverse_ais(POST, BASE, post, n_chains=16, n_temps=300, seed=2, tuning=tuning)
    assert lo.bound == "lower" and hi.bound == "upper"
    assert lo.log_weights.shape == (16,) and 1 <= lo.ess <= 16
    # Stochastic bounds. Wrong side: (bound - truth) / spread is close to a t statistic with 15
    # degrees of freedom (the spread is the delta-method se of a mean of 16 chain weights; the
    # weights' right skew only thins this tail): P(t_15 > 5.5) = 3e-5 per bound. Right side:
    # over 64 seeds (pilot, posterior samples and chains all redrawn) each bound was within
    # 0.01 +- 0.16 nat of the truth (extremes -0.38, +0.32), so 0.8 nat is 5 sd (P ~ 3e-7).
    # (The wrong-side excess never passed 2.5 spreads.)
    assert POST.log_z - 0.8 < lo.log_z < POST.log_z + 5.5 * lo.log_z_se
    assert POST.log_z - 5.5 * hi.log_z_se < hi.log_z < POST.log_z + 0.8
    # Acceptance of the tuned kernel: 0.895 +- 0.009 over 64 seeds.
    assert lo.n_evals > 16 * 300 and lo.acceptance > 0.5
    # The default adaptive schedule comes from the pilot's spreads (one per tuning β).
    assert lo.schedule == "adaptive" and tuning.log_ratio_sd is not None
    assert tuning.log_ratio_sd.shape == tuning.betas.shape
    with pytest.raises(InputError):
        reverse_ais(FunctionTarget(D, lambda x: -np.inf), BASE, post, tuning=tuning)


def test_reverse_chains_from_one_sample_start_apart(tuning):
    from stanlogz.estimators.annealing.ais import _spread_starts

    x = POST.sample(np.random.default_rng(6), 1)
    path = AnnealingPath(BASE, POST)
    idx = np.zeros(4, dtype=int)
    starts, n = _spread_starts(path, x, idx, tuning, 5, 3, np.random.default_rng(1))
    # The first chain starts at the sample itself, the others 3, 6, 9 transitions later.
    np.testing.assert_array_equal(starts[0], x[0])
    assert n == 1 + 3 * 3 * 5
    assert all(not np.array_equal(a, b) for a, b in zip(starts, starts[1:], strict=False))
    same, n0 = _spread_starts(path, x, idx, tuning, 5, 0, np.random.default_rng(1))
    assert n0 == 0 and all(np.array_equal(a, x[0]) for a in same)


def test_forward_ais_weights_are_unbiased_for_z():
    """E[w] = Z/Z_base for forward AIS weights (Neal 2001), a z-test. The base is close to the
    target so the weights are light-tailed (log-weight sd ~0.8: lognormal-like, skewness ~3.3,
    so the mean of 1000 has skewness ~0.1 and the normal tail is accurate): |z| > 4.5 has
    P < 1e-4 (7e-6 for a normal z, a few times that with the skew)."""
    base = GaussianTarget(POST.mean + 0.3, 1.5 * POST.cov)
    tun = HMCTuning.from_endpoints(np.diag(base.cov), np.diag(POST.cov), 0.4)
    r = ais(POST, base, n_chains=1000, n_temps=5, seed=11, tuning=tun, schedule="linear",
            hmc_steps=5, n_workers=1)
    w = np.exp(r.log_weights - POST.log_z)
    z = (w.mean() - 1.0) / (w.std(ddof=1) / np.sqrt(w.size))
    assert abs(z) < 4.5 and r.acceptance > 0.5


@pytest.mark.slow
def test_reverse_spread_counts_the_shared_start():
    """Issue 13, defect 1: reverse chains that share one exact sample had the iid spread. Here
    the β=1 kernel moves slowly (one leapfrog step of 0.5) and T = 2, so each weight is
    q/p̃ at its start and all the variance of the bound comes from the starts. Over replicates
    of the whole procedure (exact sample redrawn) the reported spread must match the bound's
    actual sd. With the old fixed spacing of 1 transition the ratio sd/spread was ~4.

    Over 6 batches of 200 replicates the ratio was 1.14 +- 0.06 (the pilot's autocorrelation
    time, from 100 draws, runs a bit short); with 120 replicates its sd is ~0.08, so the bounds
    0.8 and 1.6 are > 4.2 and 5.7 sd away (P < 2e-5)."""
    post = GaussianTarget(np.zeros(1), np.eye(1), 0.0)
    base = GaussianTarget(np.full(1, 0.5), 1.44 * np.eye(1))  # Var(q/p) under p is finite
    tun = HMCTuning.constant(0.5, 1.0, 1)
    rng = np.random.default_rng(100)
    bound, spread, spacing = [], [], []
    for _ in range(120):
        h = reverse_ais(post, base, rng.standard_normal(1), n_chains=16, n_temps=2, tuning=tun,
                        hmc_steps=1, spread_starts=1, seed=int(rng.integers(2**31)), jitter=0.0)
        bound.append(h.log_z)
        spread.append(h.log_z_se)
        spacing.append(h.start_spacing)
    ratio = np.std(bound) / np.sqrt(np.mean(np.square(spread)))
    assert 0.8 < ratio < 1.6
    assert min(spacing) > 1 and h.spread.startswith("chains along a beta=1 chain")
    # All chains at the sample itself: the spread is conditional on it, and says so.
    h = reverse_ais(post, base, np.zeros(1), n_chains=4, n_temps=2, tuning=tun, spread_starts=0)
    assert h.spread.startswith("conditional") and h.log_z_se == 0.0


def test_start_order_tau_of_an_ar1_series():
    from stanlogz.estimators.annealing.ais import start_order_tau

    # Weights exp(0.01 a_t), a_t AR(1) with rho = 0.5: u = w/mean(w) - 1 ~ 0.01 a_t, whose
    # integrated autocorrelation time is (1 + rho)/(1 - rho) = 3. With 20000 terms the
    # estimator gave 3.05 +- 0.15 over 40 seeds: 3 +- 0.75 is 5 sd.
    rng = np.random.default_rng(2)
    a = np.empty(20000)
    a[0] = rng.standard_normal() / np.sqrt(0.75)
    for t in range(1, a.size):
        a[t] = 0.5 * a[t - 1] + rng.standard_normal()
    assert abs(start_order_tau(0.01 * a, [np.arange(a.size)]) - 3.0) < 0.75
    # Two groups of the series pooled, and the floor at 1 for independent weights.
    assert abs(start_order_tau(0.01 * a, [np.arange(10000), np.arange(10000, 20000)]) - 3) < 0.75
    # independent weights: over 300 seeds of 4000 terms, 1.031 +- 0.040 (max 1.23); 1.4 is 9 sd
    assert start_order_tau(0.01 * rng.standard_normal(4000), [np.arange(4000)]) < 1.4


@pytest.mark.slow
def test_gap_shrinks_as_temperatures_grow(tuning):
    # The bias of AIS falls about as 1/T. The reported (log-mean-exp) gap is too noisy to show it
    # with few chains: at T=5 its sd over seeds is ~2 nats, and it can be negative. The per-chain
    # gap, mean(-log w_reverse) - mean(log w_forward), estimates the sum of the two KL
    # divergences with far less noise; over 60 seeds (pilot, samples and chains redrawn) with 64
    # chains it was 33 +- 5, 7.7 +- 0.9 and 2.6 +- 0.4 nats at T = 3, 10, 30, and the log ratios
    # of successive gaps were 1.47 +- 0.16 and 1.11 +- 0.17 (3, 10) and 2.58 +- 0.21 (3, 30).
    # The bounds below (ratios 1.5, 1.5 and 4) are 6.9, 4.2 and 5.6 sd away: P < 2e-5 in all.
    post = POST.sample(np.random.default_rng(5), 64)
    per_chain, reported = [], []
    for t in (3, 10, 30):
        lo = ais(POST, BASE, n_chains=64, n_temps=t, seed=1, tuning=tuning)
        hi = reverse_ais(POST, BASE, post, n_chains=64, n_temps=t, seed=2, tuning=tuning)
        per_chain.append(-hi.log_weights.mean() - lo.log_weights.mean())
        reported.append(hi.log_z - lo.log_z)
    g3, g10, g30 = per_chain
    assert g3 > 1.5 * g10 and g10 > 1.5 * g30 and g3 > 4 * g30
    # Jensen: the log-mean-exp bounds are never looser than the per-chain ones (exactly).
    assert all(r <= g + 1e-9 for r, g in zip(reported, per_chain, strict=True))


def test_results_identical_for_one_and_two_workers(tuning):
    # 20 chains: three blocks moved in lockstep (CHAIN_BLOCK), split over the workers
    kw = dict(n_chains=20, n_temps=40, seed=9, tuning=tuning)
    a = ais(POST, BASE, n_workers=1, **kw)
    b = ais(POST, BASE, n_workers=2, backend="process", **kw)
    c = ais(POST, BASE, n_workers=2, backend="thread", **kw)
    np.testing.assert_array_equal(a.log_weights, b.log_weights)
    np.testing.assert_array_equal(a.log_weights, c.log_weights)
    np.testing.assert_array_equal(a.final_positions, b.final_positions)
    # The whole run, pilot included, is reproducible from the seed.
    d1 = ais(POST, BASE, n_chains=3, n_temps=20, seed=4)
    d2 = ais(POST, BASE, n_chains=3, n_temps=20, seed=4, n_workers=2)
    np.testing.assert_array_equal(d1.log_weights, d2.log_weights)


# ---------------------------------------------------------------- prior -> posterior path


@pytest.mark.slow
def test_prior_to_posterior_path_conjugate():
    rng = np.random.default_rng(21)
    model = NormalNormal(rng.normal(1.0, 0.5, size=(10, 2)), tau=2.0, sigma=0.5)
    truth = model.log_z()
    lo = ais(model, model.prior, n_chains=16, n_temps=200, seed=3)
    # Exact posterior samples from the conjugate posterior N(m, v I).
    v = 1 / (1 / model.tau**2 + 10 / model.sigma**2)
    m = v * model.y.sum(0) / model.sigma**2
    post = m + np.sqrt(v) * rng.standard_normal((16, 2))
    hi = reverse_ais(model, model.prior, post, n_chains=16, n_temps=200, seed=4, tuning=lo.tuning)
    # As in the Gaussian case: 5.5 spreads on the wrong side (t_15: P = 3e-5 per bound). On the
    # other, over 55 seeds (data, chains and samples redrawn) the bounds were -0.01 +- 0.18 and
    # 0.00 +- 0.22 nat from the truth (extremes -0.40, +0.47): 1.0 and 1.1 nat are 5 sd.
    assert truth - 1.0 < lo.log_z < truth + 5.5 * lo.log_z_se
    assert truth - 5.5 * hi.log_z_se < hi.log_z < truth + 1.1

    # The prior as a plain target (no sampler) plus exact prior draws; unpicklable lambdas make
    # two workers use threads.
    prior_fn = FunctionTarget(2, model.prior.log_density,
                              lambda x: model.prior.log_density_gradient(x)[1])
    draws = model.prior.sample(rng, 500)
    path = prior_path(prior_fn, model, prior_draws=draws)
    assert path.base_draws is not None
    lo2 = ais(model, prior_fn, base_draws=draws, n_chains=8, n_temps=200, seed=5, n_workers=2)
    # 8 chains: P(t_7 > 8) = 5e-5 on the wrong side. Over 55 seeds this bound was -0.09 +- 0.29
    # nat from the truth (min -0.92: the lower tail of a lower bound from few chains is long),
    # so 2 nat is 6.6 sd.
    assert truth - 2.0 < lo2.log_z < truth + 8 * lo2.log_z_se


def test_forward_chains_from_a_pool_start_at_distinct_draws():
    """Issue 13, defect 4: chains drew their starts from the pool with replacement, so two
    chains could share a start. With T = 2 there are no transitions and each chain's log weight
    is log p̃ - log q at its start: with as many chains as pool draws, the weights must be the
    pool's log ratios, each exactly once (with replacement: P(all distinct) = 12!/12^12 ~ 5e-5)."""
    pool = BASE.sample(np.random.default_rng(4), 12)
    base_fn = FunctionTarget(D, BASE.log_density, lambda x: BASE.log_density_gradient(x)[1])
    tun = HMCTuning.constant(0.3, 1.0, D)
    r = ais(POST, base_fn, base_draws=pool, n_chains=12, n_temps=2, seed=7, tuning=tun)
    ratios = [POST.log_density(x) - BASE.log_density(x) for x in pool]
    np.testing.assert_allclose(np.sort(r.log_weights), np.sort(ratios), rtol=1e-12)
    with pytest.raises(InputError, match="at least as many base draws as chains"):
        ais(POST, base_fn, base_draws=pool, n_chains=13, n_temps=2, seed=7, tuning=tun)


# ---------------------------------------------------------------- registry adapters


@pytest.mark.slow
def test_registry_adapters_return_evidence_results():
    draws = POST.sample(np.random.default_rng(8), 400).reshape(2, 200, D)
    lo = get_method("ais")(POST, draws, seed=1, n_chains=8, n_temps=150)
    hi = get_method("rais")(POST, draws, seed=2, n_chains=8, n_temps=150)
    assert lo.method == "ais" and hi.method == "rais"
    assert lo.diagnostics["bound"] == "stochastic lower bound"
    assert hi.diagnostics["bound"] == "stochastic upper bound"
    assert any("exact posterior" in w for w in hi.warnings)
    assert lo.n_draws == 400 and lo.n_evals > 0 and lo.seconds > 0
    # The base is fitted to the posterior, so even 150 temperatures get close: over 64 seeds
    # both bounds were within 0.00 +- 0.034 nat of the truth (extremes -0.09, +0.09); 0.3 nat
    # is 8 sd.
    assert abs(lo.log_z - POST.log_z) < 0.3 and abs(hi.log_z - POST.log_z) < 0.3
    lo.to_dict()  # JSON-serializable


def test_bad_options_fail_before_any_work():
    draws = POST.sample(np.random.default_rng(8), 100)
    calls = []

    class Counting(GaussianTarget):
        def log_density_gradient(self, x):
            calls.append(1)
            return super().log_density_gradient(x)

    counting = Counting(POST.mean, POST.cov)
    for kw in ({"jitter": 1.0}, {"transitions_per_temp": 0}, {"hmc_steps": 0}, {"n_chains": 0}):
        with pytest.raises(InputError):
            ais(counting, BASE, n_temps=10, seed=1, **kw)
        with pytest.raises(InputError):
            reverse_ais(counting, BASE, draws, n_temps=10, seed=1, **kw)
    assert not calls  # rejected before the pilot
    with pytest.raises(InputError, match="inflation"):
        get_method("ais")(POST, draws, inflate=0.0)
