"""Non-factorized LOO where the density is not Gaussian in y_i: log p(y_i | y_-i, theta) by
quadrature over y_i (continuous) or a sum over its support (integer)
(stanlogz.crossval.observations.conditional_quadrature, routed by
stanlogz.crossval.observations.nonfactorized), checked
against independent numpy/scipy implementations of each program at fixed theta, against a
brute-force exact LOO (grid quadrature over theta), and its refusals. The independent
implementations live in benchmarks.truths.crossval.truths_nonfactorized (shared with the benchmark).

Tolerances: at fixed theta the computation is deterministic; it is compared with scipy's quad
(epsrel 1e-11) or an exact numpy sum, and must agree within the error bound it reports (the
disagreement of its last two quadrature levels, itself <= 1e-5) plus 1e-9 for rounding of a
few hundred density terms. A PSIS estimate is asymptotically normal around the truth with sd
its Monte Carlo se, so |error| <= 4 se fails with probability 6e-5; the seeds are fixed."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from scipy import special, stats

from benchmarks.truths.crossval import truths_nonfactorized as T
from stanlogz.crossval.elpd.psis import psis_loo
from stanlogz.crossval.observations.conditional_quadrature import QuadratureLogLik
from stanlogz.crossval.observations.nonfactorized import NonFactorizedSource
from stanlogz.crossval.observations.observations import find_observations
from stanlogz.crossval.psis_loo.loo import loo
from stanlogz.crossval.psis_loo.sum_mcse import sum_mcse
from stanlogz.errors import InputError, OverBudget, speaking

# ----------------------------------------------------------------- GARCH(1,1)


@pytest.fixture(autouse=True)
def _cli_voice():
    """The refusals here are checked as the command line says them (flags); the API's
    keywords are checked in tests/util/test_routes.py."""
    with speaking("cli"):
        yield


GARCH_THETA = [{"mu": 0.3, "alpha0": 0.2, "alpha1": 0.4, "beta1": 0.3},
               {"mu": -0.2, "alpha0": 0.6, "alpha1": 0.1, "beta1": 0.6},
               {"mu": 0.5, "alpha0": 0.05, "alpha1": 0.8, "beta1": 0.15}]


def test_garch_conditional_matches_scipy_quad(compiled):
    data = T.garch_data(30, np.random.default_rng(1))
    m = compiled("garch_like", data)
    unc = np.array([m.unconstrain_dict(p) for p in GARCH_THETA])
    src = NonFactorizedSource(m, data, find_observations(data, "T"))
    y = np.array(data["y"])
    for i in (0, 9, 28, 29):
        got = src.column(i, unc)
        want = [T.quad_conditional(lambda z, p=p: T.garch_loglik(z, p, 1.0), y, i)
                for p in GARCH_THETA]
        # y[T] enters only its own normal term: the Gaussian closed form; the others enter the
        # next volatility: quadrature, with its reported error bound
        assert src.method[i] == ("gaussian" if i == 29 else "quadrature")
        bound = src.quad.error[i] if i < 29 else 0.0
        assert bound <= 1e-5
        np.testing.assert_allclose(got, want, rtol=0, atol=bound + 1e-9)


@pytest.mark.parametrize("name", ["garch_like", "poisson_ar"])
def test_repeated_calls_reuse_the_nodes_and_agree_with_a_fresh_pass(compiled, name):
    # Moment matching asks for one observation's column at many draw sets: the second call
    # reuses the first call's nodes when its own checks pass there (levels agree, ends
    # negligible); either way it must agree with a fresh computation within both bounds.
    rng = np.random.default_rng(8)
    data = (T.garch_data(30, rng) if name == "garch_like" else T.par_data(15, rng))
    m = compiled(name, data)
    size = "T"
    first = np.array([m.unconstrain_dict(p) for p in (GARCH_THETA if name == "garch_like"
                      else [{"alpha": 2.0, "beta": 0.4}, {"alpha": 1.0, "beta": 0.6}])])
    second = first + 0.05 * rng.normal(size=first.shape)
    obs = find_observations(data, size)
    src = NonFactorizedSource(m, data, obs)
    src.column(4, first)
    again = src.column(4, second)
    bound = src.quad.error[4]
    fresh_src = NonFactorizedSource(m, data, obs)
    fresh = fresh_src.column(4, second)
    np.testing.assert_allclose(again, fresh, rtol=0, atol=bound + fresh_src.quad.error[4] + 1e-9)


# ----------------------------------------------------------------- 2-state Gaussian HMM


HMM_THETA = [{"theta": [[0.8, 0.2], [0.3, 0.7]], "mu": [3.0, 9.5]},
             {"theta": [[0.6, 0.4], [0.1, 0.9]], "mu": [2.0, 7.0]},
             {"theta": [[0.95, 0.05], [0.5, 0.5]], "mu": [4.0, 5.0]}]


def test_hmm_conditional_matches_scipy_quad(compiled):
    # The conditional of y_t is a two-component normal mixture: near y_t the density can be
    # quadratic to 1e-7 while the other state's mode lies 7 sds away, where the closed form
    # would miss its mass; the far check sends those observations to quadrature.
    data = T.hmm_data(20, np.random.default_rng(2))
    m = compiled("hmm_gauss", data)
    unc = np.array([m.unconstrain_dict(p) for p in HMM_THETA])
    src = NonFactorizedSource(m, data, find_observations(data, "N"))
    y = np.array(data["y"])
    for i in (0, 7, 19):
        got = src.column(i, unc)
        want = [T.quad_conditional(lambda z, p=p: T.hmm_loglik(z, p), y, i) for p in HMM_THETA]
        assert src.method[i] == "quadrature" and src.quad.error[i] <= 1e-5
        np.testing.assert_allclose(got, want, rtol=0, atol=src.quad.error[i] + 1e-9)


# ----------------------------------------------------------------- bounded continuous y


def test_lower_bounded_y_uses_its_declared_range(compiled):
    # vector<lower=0> y with a lognormal likelihood (factorized, so the conditional is the
    # lognormal density itself): the bound is found from the values the program refuses.
    m = compiled("lognormal_y")
    data = {"N": 15, "y": [1.6944, 4.893, 4.392, 12.0, 1.299, 1.0812, 2.6007, 1.5764, 2.9967,
                           0.3761, 5.7733, 1.5263, 2.8414, 1.4781, 1.2174]}
    pars = [{"mu": 0.7, "sigma": 0.8}, {"mu": 1.5, "sigma": 0.3}]
    unc = np.array([m.unconstrain_dict(p) for p in pars])
    q = QuadratureLogLik(m, data, find_observations(data, "N"))
    for i in (3, 9):
        got = q.column(i, unc)
        assert q.bounds(i) == (0.0, None)
        want = [stats.lognorm.logpdf(data["y"][i], p["sigma"], scale=np.exp(p["mu"]))
                for p in pars]
        np.testing.assert_allclose(got, want, rtol=0, atol=q.error[i] + 1e-9)


# ----------------------------------------------------------------- integer y


@pytest.mark.parametrize("big", [False, True])
def test_poisson_autoregression_sum_matches_numpy(compiled, big):
    data = T.par_data(15, np.random.default_rng(3))
    if big:  # counts near 50: the sum runs over several blocks on each side of y_i
        data["y"] = [int(v) for v in np.random.default_rng(4).poisson(50, 15)]
    m = compiled("poisson_ar", data)
    pars = [(25.0, 0.5), (40.0, 0.2), (5.0, 0.9)] if big else [(2.0, 0.4), (1.0, 0.7),
                                                                 (5.0, 0.1)]
    unc = np.array([m.unconstrain_dict({"alpha": a, "beta": b}) for a, b in pars])
    src = NonFactorizedSource(m, data, find_observations(data, "T"))
    y = np.array(data["y"])
    us = np.arange(0, 400)  # terms beyond 400 are below e^-500 at these rates
    for i in (0, 6, 14):
        got = src.column(i, unc)
        assert src.method[i] == "sum" and (big or src.quad.support[i][0] == 0.0)
        for s, (a, b) in enumerate(pars):
            ys = np.repeat(y[None, :], us.size, axis=0)
            ys[:, i] = us
            want = T.par_loglik(y, a, b)[0] - special.logsumexp(T.par_loglik(ys, a, b))
            assert abs(got[s] - want) <= src.quad.error[i] + 1e-9


def test_binomial_sum_stops_where_the_program_rejects(compiled):
    # binomial_logit rejects y > n: the terms are zero there and the sum is the pmf's total
    rng = np.random.default_rng(4)
    data = {"I": 6, "n": [5, 9, 12, 3, 20, 7], "y": [2, 4, 12, 0, 8, 3], "sigma": 0.8}
    m = compiled("binom_re", data)
    x = rng.normal(size=(3, m.dim))
    q = QuadratureLogLik(m, data, find_observations(data, "I"))
    for i in (2, 3):
        got = q.column(i, x)
        p = special.expit(x[:, 0] + 0.8 * x[:, 1 + i])
        np.testing.assert_allclose(got, stats.binom.logpmf(data["y"][i], data["n"][i], p),
                                   rtol=0, atol=1e-9)


def test_loo_poisson_autoregression_matches_brute_force(compiled):
    data = T.par_data(15, np.random.default_rng(3))
    m = compiled("poisson_ar", data)
    # 2 chains: the error is judged in units of its own Monte Carlo se (module docstring),
    # so fewer draws widen the band with it and the failure probability stays 6e-5
    r = loo(m, data, obs="T", seed=21, fix="none", chains=2, warmup=300, n_draws=500)
    assert r.log_lik_source == "conditional"
    assert any("summed over the support" in w for w in r.warnings)
    truth = T.par_exact_loo(data)
    src = NonFactorizedSource(m, data, r.observations)
    unc = r.draws.unconstrained
    ll = src.columns(np.arange(data["T"]), unc.reshape(-1, unc.shape[2]))
    se = max(sum_mcse(ll.reshape(unc.shape[0], unc.shape[1], -1)),
             float(np.sqrt(np.sum(r.mcse_i ** 2))))
    assert np.all(r.khat <= 0.7)
    err = float(np.sum(r.elpd_i - truth))
    assert abs(err) <= 4 * se, (err, se)


# ----------------------------------------------------------------- the full pass


def test_loo_garch_pointwise_matrix_matches_dense_numpy_grid(compiled):
    # The full pass (every observation, every draw) against an independent numpy computation
    # at the same draws: a dense uniform grid in u (spacing 0.01 over +-30 of y_i; the
    # conditional sds lie between 0.1 and 3 here, so the trapezoid rule's error,
    # ~exp(-2 pi^2 sd^2 / h^2), and the mass beyond 10 sds are nil), then
    # the same PSIS: elpd_i must agree to 1e-5 (the quadrature's bound). Exact at any draws:
    # 100 of them (the grid's cost is per draw).
    data = T.garch_data(12, np.random.default_rng(5))
    m = compiled("garch_like", data)
    r = loo(m, data, obs="T", seed=22, fix="none", chains=2, warmup=200, n_draws=50)
    assert r.log_lik_source == "conditional"
    assert any("by quadrature" in w for w in r.warnings)
    th = m.constrain_many(r.draws.flat_unconstrained())
    y = np.array(data["y"])
    ll = np.empty((th.shape[0], y.size))
    for i in range(y.size):
        u = y[i] + np.arange(-30.0, 30.0, 0.01)
        for s, (mu, a0, a1, b1) in enumerate(th):
            p = {"mu": mu, "alpha0": a0, "alpha1": a1, "beta1": b1}
            base = T.garch_loglik(y, p, 1.0)
            z = np.repeat(y[None, :], u.size, axis=0)
            z[:, i] = u
            lv = T.garch_loglik(z, p, 1.0)
            ll[s, i] = base - (special.logsumexp(lv) + np.log(0.01))
    want = psis_loo(ll, r.r_eff, chains=2)
    np.testing.assert_allclose(r.elpd_i, want.elpd_i, rtol=0, atol=1e-5)


# ----------------------------------------------------------------- refusals


@pytest.mark.parametrize(("name", "data", "why"), [
    ("fixed_total", {"N": 5, "y": [0.25, 0.5, 1.0, -0.75, 2.0], "total": 3.0},
     "accepts no other value of y\\[1\\]"),
    ("unused_first", {"T": 8, "y": [0.1, 0.5, -0.3, 1.2, 0.2, -0.1, 0.7, 0.4]},
     "does not fall off in y\\[1\\]"),
])
def test_loo_refuses_with_reason_and_routes(compiled, name, data, why):
    m = compiled(name, data)
    with pytest.raises(InputError, match=why + ".*stanlogz lfo.*kfold --group") as err:
        loo(m, data, seed=1, chains=1, warmup=100, n_draws=50)
    assert "\n" not in str(err.value)


def test_unresolved_quadrature_and_heavy_support_are_refused(compiled, monkeypatch):
    # The caps on nodes and terms (4097 and 2000 a side by default) lowered so that a GARCH
    # quadrature (~100 nodes) and a count sum (~35 terms) cannot finish: both refuse in one
    # line naming the observation.
    from stanlogz.crossval.observations import conditional_integral as ci
    from stanlogz.crossval.observations import conditional_quadrature as cq
    from stanlogz.crossval.observations.conditional_quadrature import NoConditional

    rng = np.random.default_rng(9)
    data = T.garch_data(20, rng)
    m = compiled("garch_like", data)
    x = np.array([m.unconstrain_dict(p) for p in GARCH_THETA])
    monkeypatch.setattr(ci, "MAX_NODES", 9)
    with pytest.raises(NoConditional, match=r"integral over y\[3\] is not resolved"):
        QuadratureLogLik(m, data, find_observations(data, "T")).column(2, x)
    counts = T.par_data(15, rng)
    m2 = compiled("poisson_ar", counts)
    x2 = np.array([m2.unconstrain_dict({"alpha": 2.0, "beta": 0.4})])
    monkeypatch.setattr(cq, "MAX_TERMS", 10)
    with pytest.raises(NoConditional, match=r"y\[3\] do not become negligible within 5 values"):
        QuadratureLogLik(m2, counts, find_observations(counts, "T")).column(2, x2)


def test_outward_blocks_are_joined_in_increasing_order():
    # blocks of the outward sum keyed by signed offset, the left ones listed outward
    parts = {0: np.array([[10]]), -1: np.array([[9, 8, 7]]), -4: np.array([[6, 5, 4]]),
             1: np.array([[11, 12]])}
    assert QuadratureLogLik._ordered(parts).tolist() == [[4, 5, 6, 7, 8, 9, 10, 11, 12]]


def test_arma11_keeps_the_gaussian_closed_form(compiled):
    # posteriordb arma11: the errors are linear in y, err = A y - b, so y ~ N(A^-1 b,
    # sigma^2 (A'A)^-1) at fixed theta and log p(y_i | y_-i) follows from the precision
    # P = A'A / sigma^2: N(y_i; y_i - (P r)_i / P_ii, 1 / P_ii). Every point must take the
    # closed form (the far check passes for a Gaussian) and match to 1e-8 (rounding of the
    # stencil fit).
    rng = np.random.default_rng(10)
    y = np.cumsum(rng.normal(size=25)) * 0.3
    data = {"T": 25, "y": y.round(3).tolist()}
    y = np.array(data["y"])
    m = compiled("arma11", data)
    pars = [{"mu": 0.2, "phi": 0.5, "theta": -0.3, "sigma": 0.8},
            {"mu": -0.1, "phi": 0.9, "theta": 0.4, "sigma": 1.3}]
    src = NonFactorizedSource(m, data, find_observations(data, "T"))
    got = src.columns(np.arange(25), np.array([m.unconstrain_dict(p) for p in pars]))
    assert set(src.method) == {"gaussian"}

    def errors(z, p):
        e = np.empty(z.size)
        e[0] = z[0] - p["mu"] * (1 + p["phi"])
        for t in range(1, z.size):
            e[t] = z[t] - p["mu"] - p["phi"] * z[t - 1] - p["theta"] * e[t - 1]
        return e

    for s, p in enumerate(pars):
        b = -errors(np.zeros(25), p)
        a = np.column_stack([errors(np.eye(25)[k], p) + b for k in range(25)])
        prec = a.T @ a / p["sigma"] ** 2
        r = y - np.linalg.solve(a, b)
        var = 1 / np.diag(prec)
        want = stats.norm.logpdf(var * (prec @ r), 0.0, np.sqrt(var))
        np.testing.assert_allclose(got[s], want, rtol=0, atol=1e-8)


def test_rows_of_values_refusal_names_kfold_over_whole_observations(compiled):
    # Each observation is a row of 3 trials with two latents (the dogs programs): the
    # refusal names K-fold over the observations (not lfo), in words that can be pasted, and
    # that route answers on the program.
    from stanlogz.crossval.refit.kfold import kfold

    rng = np.random.default_rng(3)
    data = {"N": 6, "T": 3, "y": rng.integers(0, 2, size=(6, 3)).tolist()}
    m = compiled("block_rows", data)
    with pytest.raises(InputError, match=r"y has several values per observation.*; use "
                       r"`stanlogz kfold --obs N`") as err:
        loo(m, data, seed=1, chains=2, warmup=100, n_draws=50)
    assert "\n" not in str(err.value) and "lfo" not in str(err.value)
    r = kfold(m, data, k=3, obs="N", seed=1, chains=2, warmup=100, n_draws=50)
    assert np.isfinite(r.elpd_kfold)


def test_khat_advice_names_moment_matching_where_refits_cannot_run(compiled):
    # posteriordb's seeds_centered_model with --obs-fields n: the trials N (and x1, x2) stay
    # whole, so no refit can run without an observation; the k-hat warning advised --fix
    # exact, which then failed with Stan's dimension mismatch. Now both name --fix mm, and
    # --fix mm answers. (binom_re with --obs-fields y leaves the trials n whole; a low k
    # threshold makes observations "bad"; moment matching then runs to its cap on each, at a
    # cost per draw, so 100 draws.)
    data = {"I": 6, "n": [5, 9, 12, 3, 20, 7], "y": [2, 4, 12, 0, 8, 3], "sigma": 0.8}
    m = compiled("binom_re", data)
    kw = dict(obs_fields=["y"], seed=2, chains=2, warmup=150, n_draws=50, k_threshold=0.05)
    r = loo(m, data, fix="none", **kw)
    (w,) = [w for w in r.warnings if "Pareto k-hat above" in w]
    assert "--fix mm" in w and "--fix exact" not in w
    assert "arrays n are not among the observation fields (y)" in w
    r = loo(m, data, fix="exact", **kw)
    (w,) = [w for w in r.warnings if "cannot be refitted" in w]
    assert "--fix mm" in w and "dims declared" not in w and "\n" not in w
    r = loo(m, data, fix="mm", **kw)
    assert r.fixed and all(f.method == "mm" for f in r.fixed) and np.isfinite(r.elpd_loo)


def test_many_unnamed_observations_refusal_names_kfold_first(compiled):
    # posteriordb's logearn_interaction_z (1192 observations, a standardized covariate): the
    # refusal named --obs-fields earn, whose quadrature would take ~30 h; with many observations
    # it names kfold first (which answers), with few the --obs-fields route stays.
    from stanlogz.crossval.refit.kfold import kfold

    rng = np.random.default_rng(5)
    n = 200  # routes.MANY_OBSERVATIONS
    b = rng.normal(size=n)
    data = {"N": n, "a": (0.5 * b + rng.normal(size=n)).tolist(), "b": b.tolist()}
    m = compiled("standardized_x", data)
    with pytest.raises(InputError, match=r"no array is named as the observed values \(a, b\); "
                       r"use `stanlogz kfold`.*--obs-fields a would") as err:
        loo(m, data, seed=1, chains=2, warmup=100, n_draws=50)
    assert "\n" not in str(err.value)
    r = kfold(m, data, k=3, seed=1, chains=2, warmup=100, n_draws=50)
    assert np.isfinite(r.elpd_kfold)
    few = {"N": 20, "a": data["a"][:20], "b": data["b"][:20]}
    with pytest.raises(InputError, match=r"^cannot tell which .*--obs-fields a\)"):
        loo(compiled("standardized_x", few), few, seed=1, chains=2, warmup=100, n_draws=50)


def test_a_subsample_takes_the_conditional_route_where_the_difference_fails(compiled):
    # A covariate standardized in transformed data: with --obs-fields a, the full pass checks
    # the density difference, finds it is not pointwise and takes the conditional route; a
    # subsample used to keep the unchecked difference and refuse after its approximations.
    # Against the full conditional PSIS value on the same draws the subsample estimate errs by
    # its subsampling error plus the Monte Carlo error of the sampled points; with 30 of 60
    # observations the difference estimator is close to normal, so |z| < 4.5 fails with
    # probability about 7e-6.
    from stanlogz.draws import sample

    rng = np.random.default_rng(5)
    n = 60
    b = rng.normal(size=n)
    data = {"N": n, "a": (0.5 * b + rng.normal(size=n)).tolist(), "b": b.tolist()}
    m = compiled("standardized_x", data)
    d = sample(m, chains=2, warmup=200, draws=200, seed=3)
    full = loo(m, data, draws=d, obs_fields=["a"], fix="none")
    sub = loo(m, data, draws=d, obs_fields=["a"], fix="none", subsample=30, seed=4)
    assert full.log_lik_source == sub.log_lik_source == "conditional"
    z = (sub.elpd_loo - full.elpd_loo) / math.hypot(sub.subsampling_se, sub.mcse_elpd_loo)
    assert abs(z) < 4.5, (sub.elpd_loo, full.elpd_loo, sub.subsampling_se)


def test_a_value_gaussian_by_the_programs_text_takes_the_closed_form_without_far_checks(
        compiled):
    # standardized_x: a ~ normal(c * z, s) with z standardized in transformed data (diamonds'
    # shape), so p(a_i | a_-i, theta) = N(a_i; c z_i, s) exactly. The program's text shows the
    # value entering only as a normal variate: 4 data instances per observation (the stencil),
    # not the ~70 of the far-mode search, and the same values to 1e-8 (rounding of the fit).
    rng = np.random.default_rng(12)
    b = rng.normal(size=40)
    data = {"N": 40, "a": (0.7 * (b - b.mean()) / b.std(ddof=1)
                           + rng.normal(0, 0.5, 40)).round(3).tolist(), "b": b.round(3).tolist()}
    m = compiled("standardized_x", data)
    pars = [{"c": 0.6, "s": 0.45}, {"c": 0.9, "s": 0.6}]
    unc = np.array([m.unconstrain_dict(p) for p in pars])
    bb = np.array(data["b"])
    z = (bb - bb.mean()) / bb.std(ddof=1)
    want = np.array([stats.norm.logpdf(data["a"], p["c"] * z, p["s"]) for p in pars])
    built: list[str] = []

    class Counting:  # the model, counting the data instances the pass builds
        def __getattr__(self, name):
            return getattr(m, name)

        def with_field(self, field, value):
            built.append(field)
            return m.with_field(field, value)

    obs = find_observations(data, "N")
    src = NonFactorizedSource(Counting(), data, obs, response="a")
    assert src.gaussian_by_text
    got = src.columns(np.arange(6), unc)
    assert set(src.method[:6]) == {"gaussian"} and len(built) == 4 * 6
    np.testing.assert_allclose(got, want[:, :6], rtol=0, atol=1e-8)
    assert any("by the program's text" in n for n in src.notes())
    built.clear()  # without the text's guarantee, the far checks run and agree
    src = NonFactorizedSource(Counting(), data, obs, response="a")
    src.gaussian_by_text = False
    np.testing.assert_allclose(src.columns(np.arange(2), unc), want[:, :2], rtol=0, atol=1e-8)
    assert len(built) > 20 * 2


def test_a_bounded_value_gaussian_by_text_is_a_truncated_normal_in_closed_form(compiled):
    # normal_positive: y ~ normal(mu, sigma) with y declared <lower=0>, so p(y_i | theta) is
    # the normal truncated to [0, inf), exactly, whatever its mass below 0 (3e-23 at mu = 10,
    # 0.31 at mu = 0.5): the closed form with the truncation's mass, 4 instances per value
    # and the bound's search, to 1e-8 (rounding of the stencil fit).
    data = {"N": 6, "y": [9.1, 10.4, 8.7, 0.6, 1.2, 9.9]}
    m = compiled("normal_positive", data)
    src = NonFactorizedSource(m, data, find_observations(data, "N"))
    assert src.gaussian_by_text and src.bounded_by_text
    pars = [{"mu": 10.0, "sigma": 1.0}, {"mu": 0.5, "sigma": 1.0}, {"mu": 3.0, "sigma": 2.5}]
    got = src.columns(np.arange(6), np.array([m.unconstrain_dict(p) for p in pars]))
    assert set(src.method) == {"gaussian"}
    want = [stats.truncnorm.logpdf(data["y"], -p["mu"] / p["sigma"], np.inf, p["mu"],
                                   p["sigma"]) for p in pars]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-8)
    assert any("truncated normal" in n for n in src.notes())
    # a value on its bound leaves no room for the stencil: quadrature over [0, inf), within
    # the error it reports
    data0 = {"N": 3, "y": [9.1, 0.0, 8.7]}
    src = NonFactorizedSource(m.with_data(data0), data0, find_observations(data0, "N"))
    got = src.column(1, np.array([m.unconstrain_dict(p) for p in pars]))
    assert src.method[1] == "quadrature"
    want = [stats.truncnorm.logpdf(0.0, -p["mu"] / p["sigma"], np.inf, p["mu"], p["sigma"])
            for p in pars]
    np.testing.assert_allclose(got, want, rtol=0, atol=src.quad.error[1] + 1e-9)


def test_a_trial_that_outlasts_the_budget_prices_the_pass_from_its_own_time(compiled,
                                                                             monkeypatch):
    # iohmm_reg (posteriordb): the conditional trial on y[1] at 3 draws ran six minutes into a
    # 9-minute budget and the refusal named twice the budget, a route that fails again. Each
    # instance of the GARCH quadrature (a node) built 20 ms more slowly: the trial of y[1] and
    # y[T] (about 100 nodes each) cannot end in a 0.5 s budget, and the refusal prices the
    # pass at the trial's time per observation tried times T, at least, with the refit routes.
    import time

    from stanlogz._util import deadline
    from stanlogz.crossval.elpd.routes import pointwise_source
    from stanlogz.crossval.observations import conditional_quadrature as cq

    data = T.garch_data(30, np.random.default_rng(1))
    m = compiled("garch_like", data)
    rows = np.array([m.unconstrain_dict(p) for p in GARCH_THETA])
    slow = cq.QuadratureLogLik._build

    def build_slowly(self, i, value):
        time.sleep(0.02)
        return slow(self, i, value)

    monkeypatch.setattr(cq.QuadratureLogLik, "_build", build_slowly)
    obs = find_observations(data, "T")
    t0 = time.perf_counter()
    with deadline.time_budget(0.5), pytest.raises(OverBudget) as err:
        pointwise_source(m, data, obs, "conditional", rows)
    elapsed = time.perf_counter() - t0
    text = str(err.value)
    assert "ran out while the conditional log-likelihood was tried on y[1] and y[30] at 3 " \
           "draws" in text
    least = float(re.search(r"would take at least (\d+(?:\.\d+)?) s here", text).group(1))
    # 30 observations x (the trial's time over two observations tried): the trial has the
    # budget's 0.5 s less the source's build before it (about 0.03 s quiet, 7.0 s priced
    # beside two CPU-bound processes), so at least 15 x 0.4 s, and no more than the trial's
    # own time per observation tried times 30
    assert 15 * 0.4 <= least <= 15 * elapsed + 1
    names = [r.command or next(iter(r.options)) for r in err.value.routes]
    assert names == ["lfo", "kfold", "time_budget"]
    # the leave-future-out route runs as named: lfo requires its first training set
    assert err.value.routes[0].options == {"obs": "T", "min_train": 27}


def test_the_expected_pass_tells_a_calls_fixed_cost_from_its_cost_per_draw(monkeypatch):
    """The quadrature's cost estimate before a pass: trials at 3 draws alone read a call's
    fixed cost as a cost per draw (the interpreter's ~15 ms a call and 44 us a draw on a hidden
    Markov model of 100 steps priced the pass 77 times too long, so the budget neither thinned
    it nor refused it in time). :meth:`calibrate` times fresh instances at 3 and at 1000 draws
    (the clock here is a fake one the fake program advances by exactly 15 ms + 44 us a draw,
    so the split is exact), and :meth:`seconds` prices a node as build + call + draws."""
    import threading
    import types

    import stanlogz.crossval.observations.conditional_quadrature as CQ

    now = [0.0]

    class Instance:
        def log_density_many(self, rows, propto=False):
            now[0] += 0.015 + 44e-6 * len(rows)
            return np.zeros(len(rows))

    class Program:
        dim = 2

        def with_field(self, field, value):
            return Instance()

    monkeypatch.setattr(CQ, "time", types.SimpleNamespace(perf_counter=lambda: now[0]))
    monkeypatch.setattr(CQ, "n_threads", lambda: 1)
    q = object.__new__(QuadratureLogLik)
    q.model, q.data, q.response, q.discrete = Program(), {}, "y", False
    q.y = np.zeros(5)
    q._base, q._propto, q._base_lock = None, False, threading.Lock()
    q._call_cost = None
    q._timing = [(0.03, 0.015 + 44e-6 * 3, 3)]  # one node of the trial: build, call, draws
    before = q.seconds(125, 4000)  # all of the 3-draw call counted per draw: 5.044 ms a draw
    assert before == pytest.approx(125 * (0.03 + 4000 * (0.015 + 44e-6 * 3) / 3))
    q.calibrate(np.zeros((4000, 2)))
    per_call, per_draw = q._call_cost
    assert per_call == pytest.approx(0.015, rel=1e-9) and per_draw == pytest.approx(44e-6)
    assert q.seconds(125, 4000) == pytest.approx(125 * (0.03 + 0.015 + 4000 * 44e-6))
    assert before / q.seconds(125, 4000) > 70


def test_the_expected_pass_counts_what_the_trial_took_beyond_its_nodes():
    """The price of an observation was its quadrature nodes' (build, call and draws): a hidden
    Markov model of 100 steps on the interpreter was priced at 0.9 s an observation on 400
    draws and took 3.4 s, the closed-form check, the far-mode search (~110 climbs' instances
    at 12 draws) and the far probes unpriced, so that the budget thinned a pass that could
    not answer and ran it until the budget was spent. The trial before the pass (two
    observations at 3 draws, all of that work) now sets the part that does not grow with
    the draws: its wall time per observation, plus the nodes' cost at the draws beyond it."""
    import types

    src = object.__new__(NonFactorizedSource)
    src.obs = types.SimpleNamespace(n=100)
    src.method = np.array(["quadrature", "", "quadrature"] + [""] * 97, dtype=object)
    src.quad = types.SimpleNamespace(nodes=np.array([120, 0, 130] + [0] * 97),
                                     seconds=lambda nodes, draws: nodes * (2e-3 + 2e-5 * draws))
    src.trial = None
    nodes_only = 125 * (2e-3 + 2e-5 * 400)  # 1.25 s an observation
    assert src.expected_seconds(400, 1) == pytest.approx(nodes_only)
    src.trial = (6.0, 2, 3)  # 3 s an observation at 3 draws
    assert src.expected_seconds(400, 1) == pytest.approx(3.0 + 125 * 2e-5 * (400 - 3))
    assert src.expected_seconds(400) == pytest.approx(100 * (3.0 + 125 * 2e-5 * 397))
    src.trial = (0.1, 2, 3)  # a trial cheaper than its nodes' price: the price stands
    assert src.expected_seconds(400, 1) == pytest.approx(nodes_only)


def test_a_time_series_pass_the_budget_refuses_names_lfo_which_answers_in_that_budget(
        monkeypatch):
    """A hidden Markov model's conditional pass (every y[t] enters the forward recursion) too
    slow for its budget used to name "a log_lik generated quantity where the observations are
    independent given the parameters", which no HMM's observations are. A program whose model
    block recurses over its observations (``gamma[t - 1, j]``) now has the leave-future-out
    route named instead, with the first training set ``lfo`` requires; followed under the
    same budget it answers. Sizes: 100 steps on the interpreter, about 3.4 s an observation
    at 400 draws here
    (the closed-form check and the far-mode search do not shrink with the draws), so the 20
    observations an anytime estimate needs take over a minute, beyond the 20 s budget even on
    a machine three times as fast (the pass is refused before it starts, by its price); lfo
    from 90 steps (10 origins, one refit) took 5-7 s of that budget."""
    from stanlogz._util.deadline import time_budget
    from stanlogz.crossval.refit.lfo import lfo

    # the interpreter, as `auto` runs this program for a user (the suite's default is the
    # compiled backend, whose pass is ten times cheaper: 20 observations fit there)
    monkeypatch.setenv("STANLOGZ_BACKEND", "interpreted")
    data = T.hmm_data(100, np.random.default_rng(3))
    program = "stan_models/tests/hmm_gauss.stan"
    with time_budget(20), pytest.raises(OverBudget) as err:
        loo(program, data, seed=1)
    assert "independent given the parameters" not in str(err.value)
    route = next(r for r in err.value.routes if r.command == "lfo")
    assert route.options == {"obs": "N", "min_train": 90}
    assert "`stanlogz lfo --obs N --min-train 90` for a time series" in str(err.value)
    with time_budget(20):
        res = lfo(program, data, seed=1, **route.options)
    assert res.elpd_t.shape == (10,) and np.isfinite(res.elpd_t).all()
    assert not res.budget_stop  # answered whole, not stopped by the budget
