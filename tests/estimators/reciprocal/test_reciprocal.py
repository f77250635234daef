"""Unbiased 1/Z estimators (IAE, FCE, RBBCE; Wei & Murray 2017) and their weight sources.

Stochastic checks are z-tests over independent replicates. Unless said otherwise the threshold
is |z| < 4.5: for a normal statistic P(|z| > 4.5) = 7e-6, and every replicate here has all
moments (bounded weights, or a truncation law with finite support), so with >= 1500 replicates
the CLT is accurate far into that tail; each test fails with probability < 1e-4 on any seed.
"""

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from stanlogz.densities.gaussian import GaussianTarget
from stanlogz.errors import EstimationError, InputError
from stanlogz.estimators.reciprocal.reciprocal import (
    FiniteTruncation,
    GeometricTruncation,
    PowerLawTruncation,
    Truncation,
    batch_log_weights,
    estimate_reciprocal,
    fce_series,
    iae_series,
    rbbce_series,
    unbiased_bayes_factor,
)
from stanlogz.estimators.reciprocal.weight_sources import (
    AISWeights,
    ImportanceWeights,
    fit_proposal,
    from_weights,
)

Z_LOG = 300.0  # log Z far outside exp()'s range: the estimators must work on a reference scale
Z_MAX = 4.5


def bounded_source(rng, n):
    """w = Z (0.1 + 1.8 U): bounded, mean Z."""
    return Z_LOG + np.log(0.1 + 1.8 * rng.uniform(size=n))


def two_point_source(rng, n):
    """w = Z u with u in {1/2, 3/2} equally likely: mean Z."""
    return Z_LOG + np.log(np.where(rng.uniform(size=n) < 0.5, 0.5, 1.5))


def scaled_values(method, source, reps, seed, **kw):
    rng = np.random.default_rng(seed)
    out = np.empty(reps)
    for r in range(reps):
        e = estimate_reciprocal(source, method, rng=rng, **kw)
        out[r] = e.sign * math.exp(e.log_abs + Z_LOG)  # S * Z
    return out


def zscore(x, truth):
    return (x.mean() - truth) / (x.std(ddof=1) / math.sqrt(x.size))


# ---------------------------------------------------------------- truncation laws


@pytest.mark.parametrize("law", [PowerLawTruncation(1.1), GeometricTruncation(0.7),
                                 FiniteTruncation((1.0, 0.5, 0.25))])
def test_truncation_laws_sample_their_survival_function(law):
    rng = np.random.default_rng(2101)
    n = np.array([law.sample(rng) for _ in range(20000)])
    for k in (1, 2, 3, 5, 20):
        p = float(law.survival(np.array([k]))[0])
        # Binomial count of N >= k; |z| < 4.5 as above (np(1-p) >= 0 cases only).
        if 0 < p < 1:
            z = (np.mean(n >= k) - p) / math.sqrt(p * (1 - p) / n.size)
            assert abs(z) < Z_MAX, (k, p, np.mean(n >= k))
        else:
            assert np.all((n >= k) == (p == 1.0))
    assert PowerLawTruncation().mean() == pytest.approx(10.5844, abs=1e-3)  # zeta(1.1)


def test_truncation_laws_reject_bad_parameters():
    for bad in (lambda: PowerLawTruncation(1.0), lambda: GeometricTruncation(1.0),
                lambda: FiniteTruncation((0.5, 0.9)), lambda: FiniteTruncation(())):
        with pytest.raises(InputError):
            bad()


# ---------------------------------------------------------------- exact cases


@pytest.mark.parametrize("method", ["rbbce", "fce", "iae"])
def test_exact_reciprocal_when_the_proposal_is_the_target(method):
    # Importance sampling with q = p/Z: every weight equals Z, every Y(i) is 1/Z, so S = 1/Z.
    mean, cov = np.array([0.5, -1.0]), np.array([[1.0, 0.3], [0.3, 0.5]])
    src = ImportanceWeights(GaussianTarget(mean, cov, log_z=3.2), GaussianTarget(mean, cov))
    e = estimate_reciprocal(src, method, rng=1, batch=3, trials=2)
    assert e.sign == 1
    assert e.log_abs == pytest.approx(-3.2, abs=1e-10)
    assert e.n_weights == 3 * sum(n + 1 for n in e.n_terms)


def test_rbbce_example_1_closed_form():
    # Paper Example 1 (i = 1): with N = 1 the estimate is Y(1) itself (Pr(N >= 1) = 1).
    surv = np.ones(2)
    for w_prev, w_last in [(2.0, 0.5), (0.5, 2.0), (1.0, 1.0), (3.0, 2.9)]:
        a = min(1.0, w_last / w_prev)
        expected = (1 - a) / w_prev + a / w_last
        s, _ = rbbce_series(np.array([w_prev, w_last]), surv)
        assert s == pytest.approx(expected, rel=1e-14)


def _rb_chain(v, i):
    """E over acceptances of 1/w(final) for the chain started at v[i] proposing v[i-1], ...,
    v[0], by enumerating all accept/reject paths."""
    total = 0.0
    for path in itertools.product([0, 1], repeat=i):
        cur, p = v[i], 1.0
        for acc, prop in zip(path, v[i - 1::-1] if i else [], strict=True):
            a = min(1.0, prop / cur)
            p *= a if acc else 1 - a
            cur = prop if acc else cur
        total += p / cur
    return total


def test_rbbce_matches_enumeration_of_the_backward_chains():
    rng = np.random.default_rng(7)
    for n in range(1, 8):
        w = rng.lognormal(0.0, 1.0, size=n + 1)
        surv = PowerLawTruncation().survival(np.arange(n + 1))
        v = w[::-1]
        y = [_rb_chain(v, i) for i in range(n + 1)]
        expected = y[0] + sum((y[i] - y[i - 1]) / surv[i] for i in range(1, n + 1))
        assert rbbce_series(w, surv)[0] == pytest.approx(expected, rel=1e-12)


def test_iae_and_fce_series_by_hand():
    w = np.array([1.0, 3.0, 0.5])
    surv = np.array([1.0, 1.0, 0.5])
    y = [1 / 1.0, 2 / 4.0, 3 / 4.5]
    assert iae_series(w, surv) == pytest.approx(y[0] + (y[1] - y[0]) + (y[2] - y[1]) / 0.5)
    # FCE with u = (0.9, 0.1): step 1 X: 1 -> 3 (accepts); step 2 both propose 0.5:
    # X at 3 accepts iff 0.1 < 0.5/3 (yes), the copy (still at w0 = 1) iff 0.1 < 0.5 (yes).
    s = fce_series(w, np.array([0.9, 0.1]), surv)
    assert s == pytest.approx(1.0 + (1 / 3 - 1 / 1) / 1.0 + (1 / 0.5 - 1 / 0.5) / 0.5)


# ---------------------------------------------------------------- unbiasedness


def _two_point_limit(k):
    """Exact E[Y(K)] for two-point weights {1/2, 3/2} (Z = 1): IAE's (K+1)/sum w and the
    independence chain's E[1/w(X_K)] (the limit the RB/forward chains are unbiased for)."""
    j = np.arange(k + 2)
    probs = stats.binom.pmf(j, k + 1, 0.5)
    iae = float(np.sum(probs * (k + 1) / (1.5 * j + 0.5 * (k + 1 - j))))
    p = np.array([[1 - 0.5, 0.5], [0.5 / 3, 1 - 0.5 / 3]])  # states w = 1/2, 3/2
    mc = float(np.array([0.5, 0.5]) @ np.linalg.matrix_power(p, k) @ np.array([2.0, 2 / 3]))
    return iae, mc


@pytest.mark.parametrize("method", ["iae", "fce", "rbbce"])
def test_debiasing_is_exact_for_a_truncation_law_with_finite_support(method):
    # With Pr(N >= k) supported on k <= K, S is unbiased for E[Y(K)] (the telescoping sum),
    # and S is bounded, so the z-test is exact in the limit. IAE has infinite variance under
    # any law with finite E[N] (module docstring), so this is how its debiasing is tested.
    k = 6
    law = FiniteTruncation((1.0, 0.8, 0.6, 0.4, 0.3, 0.2))
    iae, mc = _two_point_limit(k)
    x = scaled_values(method, two_point_source, 3000, 2105, truncation=law)
    truth = iae if method == "iae" else mc
    assert abs(zscore(x, truth)) < Z_MAX, (x.mean(), truth)


@pytest.mark.parametrize("method,kw", [("rbbce", {}), ("fce", {}), ("fce", {"burn_in": 4}),
                                       ("rbbce", {"batch": 3, "trials": 2})])
def test_unbiased_for_one_over_z_with_the_default_law(method, kw):
    # Bounded weights: the independence chain couples geometrically, so S has all moments.
    x = scaled_values(method, bounded_source, 2500, 2106, **kw)
    assert abs(zscore(x, 1.0)) < Z_MAX, x.mean()


def test_fce_burn_in_bounds_the_negative_fraction():
    # Proposition 1: Pr(S < 0) <= 2/(T+1) = 0.2 at T = 9. Binomial test: with 1500 replicates
    # the count exceeds the bound by 4.5 sd with probability < 1e-5 if the bound holds.
    x = scaled_values("fce", bounded_source, 1500, 2107, burn_in=9)
    bound = 2 / 10
    assert np.mean(x < 0) < bound + Z_MAX * math.sqrt(bound * (1 - bound) / x.size)


def test_rbbce_expected_cost_is_linear_in_n():
    # Proposition 2: the inner loop runs i times with probability 1/(i+1) (a new maximum among
    # i+1 i.i.d. continuous weights), so E[ops] = sum_{i<=N} i/(i+1) = N + 1 - H_{N+1} <= N.
    k = 150
    law = FiniteTruncation((1.0,) * k)  # N = K always
    rng = np.random.default_rng(2102)
    ops = np.array([estimate_reciprocal(bounded_source, "rbbce", rng=rng, truncation=law).n_ops
                    for _ in range(1500)])
    expected = k + 1 - sum(1 / j for j in range(1, k + 2))
    # ops is bounded by K(K+1)/2, so it has all moments: z-test as above.
    assert abs(zscore(ops.astype(float), expected)) < Z_MAX, (ops.mean(), expected)
    assert expected < k


# ---------------------------------------------------------------- Bayes factors


def test_unbiased_bayes_factor():
    # Z_A = e^2 (bounded weights), Z_B = e^300: the ratio e^-298 is estimated unbiasedly.
    def src_a(rng, n):
        return 2.0 + np.log(0.5 + rng.uniform(size=n))

    bf = unbiased_bayes_factor(src_a, bounded_source, replicates=2000, n_a=5, rng=2199)
    z = (bf.value / math.exp(-298.0) - 1.0) / (bf.se / math.exp(-298.0))
    assert abs(z) < Z_MAX, (bf.value, bf.se)
    assert bf.log_value == pytest.approx(-298.0, abs=Z_MAX * bf.log_se + 1e-9)
    assert 0.9 < bf.fraction_positive <= 1.0  # RBBCE on bounded weights: ~99.9% positive
    assert math.isfinite(bf.tail_k)  # the tail diagnostic of the replicates (~0.2 here)


# ---------------------------------------------------------------- weight sources


@pytest.mark.slow
def test_importance_and_ais_weight_sources_are_unbiased_for_z():
    target = GaussianTarget(np.array([1.0, -0.5]), np.diag([0.5, 2.0]), log_z=1.3)
    proposal = GaussianTarget(np.array([0.8, 0.0]), np.diag([1.0, 4.0]))
    rng = np.random.default_rng(2103)
    # IS weights p/q are bounded here (q is wider than p in every direction).
    w = np.exp(ImportanceWeights(target, proposal)(rng, 20000) - 1.3)
    assert abs((w.mean() - 1.0) / (w.std(ddof=1) / math.sqrt(w.size))) < Z_MAX
    ais_src = AISWeights(target, proposal, n_temps=5, hmc_steps=3, seed=int(rng.integers(1e9)))
    wa = np.exp(ais_src(rng, 1000) - 1.3)
    # AIS weights from a wider Gaussian base are bounded too (each increment is), so the mean
    # of 1000 is near-normal and |t| > 4.5 has probability ~1e-5, as for the IS check above.
    assert abs((wa.mean() - 1.0) / (wa.std(ddof=1) / math.sqrt(wa.size))) < Z_MAX
    e = estimate_reciprocal(ais_src, "rbbce", rng=rng, batch=2)
    assert e.n_weights == 2 * (e.n + 1) and math.isfinite(e.log_abs)


def test_fitted_proposals_are_normalized_samplers():
    rng = np.random.default_rng(2104)
    draws = rng.normal(size=(2000, 2)) * [1.0, 0.5] + [0.3, 0.0]
    for kind in ("gaussian", "flow"):
        q = fit_proposal(draws, kind, seed=1)
        x = q.sample(rng, 5)
        assert x.shape == (5, 2) and np.all(np.isfinite(q.log_density_many(x)))
    with pytest.raises(InputError, match="unknown proposal"):
        fit_proposal(draws, "student")


# ---------------------------------------------------------------- bad input


def test_non_finite_and_bad_weights_are_one_line_errors():
    rng = np.random.default_rng(0)
    for bad in (np.nan, np.inf):
        with pytest.raises(InputError, match="non-finite log-weight") as exc:
            estimate_reciprocal(lambda r, n, b=bad: np.full(n, b), "rbbce", rng=rng)
        assert "\n" not in str(exc.value)
    with pytest.raises(EstimationError, match="all zero"):
        batch_log_weights(lambda r, n: np.full(n, -np.inf), rng, 3, 2)
    with pytest.raises(InputError, match="asked for"):
        batch_log_weights(lambda r, n: np.zeros(n + 1), rng, 3, 2)
    with pytest.raises(InputError, match="must be >= 0"):
        from_weights(lambda r, n: -np.ones(n))(rng, 3)
    with pytest.raises(InputError, match="unknown 1/Z estimator"):
        estimate_reciprocal(bounded_source, "russian", rng=rng)
    with pytest.raises(InputError, match="fce only"):
        estimate_reciprocal(bounded_source, "rbbce", rng=rng, burn_in=3)
    # Zero single weights are fine as long as every batch has a positive one.
    src = from_weights(lambda r, n: np.tile([0.0, 2.0], n // 2))
    assert estimate_reciprocal(src, "iae", rng=rng, batch=2).log_abs == pytest.approx(0.0)


def test_unbiased_bayes_factors_between_programs_match_their_evidence_ratio():
    # two Gaussian "programs" with known log Z; proposals fitted to exact draws (x1.5 covariance)
    # give bounded weights, so the 200-replicate mean is near-normal: |z| < 4.5 fails with
    # probability ~1e-5 (t with 199 degrees of freedom)
    from stanlogz.densities.gaussian import GaussianTarget
    from stanlogz.estimators.reciprocal.reciprocal import unbiased_bayes_factors

    rng = np.random.default_rng(31)
    a = GaussianTarget(np.zeros(3), np.eye(3), log_z=-1.0)
    b = GaussianTarget(np.ones(3), 2 * np.eye(3), log_z=0.5)
    draws = [t.sample(rng, 2000).reshape(2, 1000, 3) for t in (a, b)]
    out = unbiased_bayes_factors([a, b], draws, reference=1, seed=32)
    assert out[1] is None
    bf = out[0]
    assert bf.fraction_positive > 0.9
    assert abs(bf.value - math.exp(-1.5)) < 4.5 * bf.se


# ---------------------------------------------------------------- floating-point range


def test_series_of_a_zero_starting_weight_are_infinite_not_a_crash():
    surv = np.ones(3)
    assert rbbce_series(np.array([1.0, 2.0, 0.0]), surv)[0] == math.inf
    assert fce_series(np.array([0.0, 1.0, 2.0]), np.array([0.5, 0.5]), surv) == math.inf


def fixed_source(values):
    """A source that returns ``values`` (log-weights) in order, then starts again."""
    values = np.asarray(values, dtype=float)

    def source(rng, n):
        return np.resize(values, n)

    return source


class _ThreeTerms(Truncation):
    """N = 3 always, with the survival factors 1, 0.5, 0.4, 0.2 (a deterministic arithmetic
    check of the series, not an unbiased estimator)."""

    def survival(self, k):
        return np.array([1.0, 0.5, 0.4, 0.2])[np.asarray(k)]

    def sample(self, rng):
        return 3


def test_weights_spread_beyond_exp_range_give_the_series_value():
    # Weights [1, 3, 2, e^-800]: the last batch weight (where RBBCE's chain starts) is 800 nats
    # below the median, which underflowed to 0 and raised ZeroDivisionError. The series are
    # homogeneous of degree -1 in the weights, so their value is e^-400 times the series on
    # e^400 x weights, which fit in floating point.
    law = _ThreeTerms()
    lw = np.array([0.0, math.log(3.0), math.log(2.0), -800.0])
    surv = law.survival(np.arange(4))
    scaled = np.exp(lw + 400.0)
    for method in ("rbbce", "iae", "fce"):
        e = estimate_reciprocal(fixed_source(lw), method, rng=0, truncation=law)
        if method == "rbbce":
            direct = rbbce_series(scaled, surv)[0]
        elif method == "iae":
            direct = iae_series(scaled, surv)
        else:  # the same uniforms: the estimator draws them right after N and the weights
            u = np.random.default_rng(0).uniform(size=3)
            direct = fce_series(scaled, u, surv)
        assert e.sign == np.sign(direct), method
        assert e.log_abs == pytest.approx(math.log(abs(direct)) + 400.0, abs=1e-9), method
    # A spread no floating-point scaling can hold is a one-line EstimationError.
    with pytest.raises(EstimationError, match="spread over 1500 nats") as exc:
        estimate_reciprocal(fixed_source([0.0, -1500.0]), "rbbce", rng=0,
                            truncation=FiniteTruncation((1.0,)))
    assert "\n" not in str(exc.value)


@pytest.mark.slow
def test_unbiased_bayes_factor_flags_heavy_tailed_replicates():
    # Z_A's weights are Pareto with tail index 1.05 (finite mean, infinite variance), so the
    # replicates Z_A^ x (1/Z_B)^ have infinite variance: Pareto k-hat near 1/1.05 = 0.95. Over
    # 20 seeds with 20000 replicates k-hat measured 0.95 +- 0.08, so k-hat <= 0.5 is 5.6 sd
    # away (probability < 1e-7 under a normal spread). Bounded weights (test above) give
    # k-hat around 0.2.
    def pareto(rng, n):
        return 2.0 - np.log(1.0 - rng.uniform(size=n)) / 1.05

    bf = unbiased_bayes_factor(pareto, bounded_source, replicates=20000, n_a=1, rng=2110)
    assert bf.tail_k > 0.5 and "heavy-tailed" in bf.warnings[0]
