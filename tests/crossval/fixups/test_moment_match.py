"""Moment matching for PSIS-LOO (crossval.fixups.moment_match) against analytic leave-one-out
predictive densities, grid quadrature and exact refits of a compiled Stan program."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import cauchy, norm, poisson

from stanlogz.crossval.elpd.psis import psis_loo, relative_efficiency_pointwise
from stanlogz.crossval.fixups.fixups import FixTask, fix_observation
from stanlogz.crossval.fixups.moment_match import moment_match, moment_match_observation
from stanlogz.crossval.observations.observations import find_observations
from stanlogz.crossval.observations.pointwise import PointwiseLogLik
from stanlogz.errors import InputError
from stanlogz.stan.settings import NutsArgs

MODELS = Path(__file__).resolve().parents[3] / "stan_models"
Z_LIMIT = 4.5  # two-sided P(|z| > 4.5) = 6.8e-6 for a standard normal z


class GaussianRegression:
    """y_j ~ N(x_j' beta, 1), beta ~ N(0, 10² I) (3 coefficients): exact posterior draws and
    the exact log p(y_0 | y_-0); observation 0 is an outlier (residual 9) at leverage 0.5."""

    def __init__(self) -> None:
        rng = np.random.default_rng(1)
        n = 15
        self.x = np.column_stack([np.ones(n), rng.uniform(-1, 1, (n, 2))])
        beta = np.array([0.5, 1.0, -1.0])
        self.y = self.x @ beta + rng.normal(size=n)
        self.x[0, 1:] = 0.5
        self.y[0] = self.x[0] @ beta + 9.0
        self.mean, cov = self.posterior(np.arange(n))
        self.chol = np.linalg.cholesky(cov)
        mean_i, cov_i = self.posterior(np.arange(1, n))
        self.truth = float(norm.logpdf(self.y[0], self.x[0] @ mean_i,
                                       math.sqrt(1 + self.x[0] @ cov_i @ self.x[0])))

    def posterior(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        x, y = self.x[rows], self.y[rows]
        cov = np.linalg.inv(np.eye(3) / 100 + x.T @ x)
        return cov @ x.T @ y, cov

    def draws(self, rng: np.random.Generator, chains: int, n: int) -> np.ndarray:
        z = rng.normal(size=(chains * n, 3))
        return (self.mean + z @ self.chol.T).reshape(chains, n, 3)

    def log_post(self, t: np.ndarray) -> np.ndarray:
        return (norm.logpdf(t, 0, 10).sum(axis=1)
                + norm.logpdf(self.y[None, :], t @ self.x.T, 1).sum(axis=1))

    def log_lik_0(self, t: np.ndarray) -> np.ndarray:
        return norm.logpdf(self.y[0], t @ self.x[0], 1)


class Counted:
    """A log density that counts the draws it is evaluated at."""

    def __init__(self, f: Callable[[np.ndarray], np.ndarray]) -> None:
        self.f, self.rows = f, 0

    def __call__(self, t: np.ndarray) -> np.ndarray:
        self.rows += t.shape[0]
        return self.f(t)


def test_recovers_analytic_loo_density_of_an_influential_point() -> None:
    # 24 replicates of 4 x 1000 exact posterior draws, maps until k-hat < k_target = 0.3.
    # Over 300 seeds: k-hat before 1.24 +- 0.14 (min 0.85), after 0.19 +- 0.10 (max 0.48),
    # z = (elpd - truth) / se with mean 0.07 and sd 0.44 (the iid se formula overstates the
    # error of the half-transformed, stratified split sample). Over the replicates without a
    # warning, T = sum(z) / sqrt(n) is standard normal or narrower when the se is right or
    # conservative: |T| > 4.5 with probability <= 6.8e-6. Stopping at 0.7 instead leaves
    # PSIS's own bias of ~0.45 se (measured over 200 seeds), which would fail this test about
    # 1 % of the time.
    from scipy.stats import t as student_t

    model = GaussianRegression()
    rng = np.random.default_rng(2024)
    reps = 24
    z, err, k_before = [], [], []
    for _ in range(reps):
        post, lik = Counted(model.log_post), Counted(model.log_lik_0)
        res = moment_match(model.draws(rng, 4, 1000), post, lik, index=0, r_eff=1.0,
                           k_threshold=0.7, k_target=0.3)
        assert res.n_evals == post.rows + lik.rows
        assert res.split_used and res.transformations
        # the contract, for every draw set: a warning exactly when the final k-hat is >= 0.7
        assert bool(res.warnings) == (res.khat_after >= 0.7), res.to_dict()
        if not res.warnings:  # the estimates a user is told to trust
            z.append((res.elpd - model.truth) / res.mcse)
            err.append(res.elpd - model.truth)
        k_before.append(res.khat_before)
    # preconditions that make the test informative, not claims: PSIS alone is unreliable here
    # and at least half the replicates end reliable (k-hat after < 0.7 in 300 of 300 seeds)
    assert np.median(k_before) > 0.7 and len(z) >= reps // 2, (k_before, len(z))
    t_stat = float(np.sum(z) / math.sqrt(len(z)))
    assert abs(t_stat) < Z_LIMIT, np.round(z, 2)
    # unbiasedness without trusting the reported se: the mean error against its empirical se
    # is Student-t with len(z) - 1 df for normal errors; beyond t.isf(2.5e-5, df) (5.0 at
    # 24, 6.4 at 12) with probability 5e-5; with the check above <= 5.7e-5 in all.
    err_t = float(np.mean(err) / (np.std(err, ddof=1) / math.sqrt(len(err))))
    assert abs(err_t) < student_t.isf(2.5e-5, len(err) - 1), (np.mean(err), np.std(err))
    json.dumps(res.to_dict())


def test_reports_failure_when_no_affine_map_can_help() -> None:
    # One Cauchy observation and a flat prior: the leave-one-out posterior is improper, and
    # the ratios 1 / p(y | theta) have Pareto k = 2 under every affine map of the Cauchy
    # posterior draws (and under the split mixture). Over 1000 seeds (4 x 1000 draws) the
    # reported k-hat after moment matching was 1.87 +- 0.22 (min 1.25): 0.7 is 5.3 sd below
    # the mean, a normal-tail probability below 1e-7.
    y = 1.0

    def log_post(t: np.ndarray) -> np.ndarray:
        return cauchy.logpdf(y, t[:, 0], 1.0)

    draws = (y + np.random.default_rng(11).standard_cauchy(4000)).reshape(4, 1000, 1)
    res = moment_match(draws, log_post, log_post, index=0, r_eff=1.0, k_threshold=0.7)
    assert res.khat_after > 0.7
    assert any("after moment matching" in w and "fix='exact'" in w for w in res.warnings)
    assert res.to_dict()["observation"] == 1


def test_already_reliable_point_is_left_to_psis() -> None:
    model = GaussianRegression()
    draws = model.draws(np.random.default_rng(3), 4, 1000)
    central = lambda t: norm.logpdf(model.y[5], t @ model.x[5], 1)  # noqa: E731
    res = moment_match(draws, model.log_post, central, index=5, r_eff=1.0, k_threshold=0.7)
    assert res.khat_before < 0.7 and not res.transformations and not res.split_used
    assert res.elpd == res.psis_elpd and res.khat_after == res.khat_before
    assert res.n_evals == 2 * 4000 and not res.warnings


def test_bad_input() -> None:
    model = GaussianRegression()
    draws = model.draws(np.random.default_rng(4), 2, 50)
    kw = {"index": 0, "r_eff": 1.0, "k_threshold": 0.7}
    with pytest.raises(InputError, match="chains, draws, dim"):
        moment_match(draws[0], model.log_post, model.log_lik_0, **kw)
    with pytest.raises(InputError, match="returned"):
        moment_match(draws, lambda t: model.log_post(t)[:-1], model.log_lik_0, **kw)
    with pytest.raises(InputError, match="not finite"):
        moment_match(draws, model.log_post, model.log_lik_0,
                     log_lik_draws=np.full(100, np.nan), **kw)
    with pytest.raises(InputError, match="need 100 values"):
        moment_match(draws, model.log_post, model.log_lik_0, log_post_draws=np.zeros(7), **kw)
    with pytest.raises(InputError, match="r_eff"):
        moment_match(draws, model.log_post, model.log_lik_0, index=0, r_eff=0.0,
                     k_threshold=0.7)
    with pytest.raises(InputError, match="k_target"):
        moment_match(draws, model.log_post, model.log_lik_0, k_target=float("nan"), **kw)
    with pytest.raises(InputError, match="index"):
        moment_match(draws, model.log_post, model.log_lik_0, index=-1, r_eff=1.0,
                     k_threshold=0.7)


def poisson_log_loo_by_quadrature(x: np.ndarray, y: np.ndarray, i: int) -> float:
    """log p(y_i | y_-i) of the poisson_outliers program by a 2-D grid (spacing 0.0075, about
    a fifteenth of a posterior sd; ±1.5 around the mode, beyond which the density has fallen
    by more than e^-40): log Z(all) − log Z(all but i)."""

    def log_z(keep: np.ndarray) -> float:
        def log_dens(a: np.ndarray, b: np.ndarray) -> np.ndarray:
            out = norm.logpdf(a, 0, 2.5) + norm.logpdf(b, 0, 2.5)
            for k in np.flatnonzero(keep):
                out = out + poisson.logpmf(y[k], np.exp(a + b * x[k]))
            return out

        a, b = np.meshgrid(np.linspace(-3, 4, 141), np.linspace(-3, 3, 121), indexing="ij")
        j = np.unravel_index(np.argmax(log_dens(a, b)), a.shape)
        ga = np.linspace(a[j] - 1.5, a[j] + 1.5, 401)
        gb = np.linspace(b[j] - 1.5, b[j] + 1.5, 401)
        a, b = np.meshgrid(ga, gb, indexing="ij")
        return float(logsumexp(log_dens(a, b)) + math.log((ga[1] - ga[0]) * (gb[1] - gb[0])))

    keep = np.ones(y.size, dtype=bool)
    minus = keep.copy()
    minus[i] = False
    return log_z(keep) - log_z(minus)


def test_poisson_regression_matches_refits_and_quadrature(compiled) -> None:  # noqa: ANN001
    # Counts with three planted outliers: with 4 x 1000 NUTS draws (seed 3) observations 1 and
    # 2 have k-hat ~1.9 and ~1.4. For each, moment matching (maps until k-hat < 0.3) is
    # compared with the exact refit (NUTS on y_-i + bridge) within the combined se, and with
    # grid quadrature within its own se: each |z| > 4.5 has probability 6.8e-6 when the se
    # are right, 2.7e-5 for the four comparisons.
    data = json.loads((MODELS / "tests" / "poisson_outliers.json").read_text())
    model = compiled("poisson_outliers")
    fit = model.nuts(chains=4, warmup=500, draws=1000, seed=3)
    unc = fit.unconstrained
    pw = PointwiseLogLik(model, data, find_observations(data))
    ll = pw.matrix(unc.reshape(-1, model.dim)).reshape(4, 1000, -1)
    r_eff = relative_efficiency_pointwise(ll)
    loo = psis_loo(ll, r_eff=float(r_eff.mean()))
    bad = [int(i) for i in np.argsort(-loo.khat) if loo.khat[i] > 0.7]
    assert bad[:2] == [0, 1], np.round(loo.khat, 2)
    rng = np.random.default_rng(5)
    x, y = np.asarray(data["x"]), np.asarray(data["y"])
    for i in bad[:2]:
        mm = moment_match_observation(pw, unc, i, r_eff=float(r_eff[i]), k_threshold=0.7,
                                      k_target=0.3, log_lik_draws=ll[..., i])
        task = FixTask(index=i, method="exact", khat=float(loo.khat[i]),
                       psis_elpd=float(loo.elpd_i[i]),
                       settings=NutsArgs(chains=4, warmup=500, draws=1000), ups_options={})
        exact = fix_observation(pw, unc, task, rng)
        truth = poisson_log_loo_by_quadrature(x, y, i)
        z_refit = (mm.elpd - exact.elpd) / math.hypot(mm.mcse, exact.mcse)
        assert abs(z_refit) < Z_LIMIT, (i, mm.to_dict(), exact.to_dict())
        assert abs(mm.elpd - truth) / mm.mcse < Z_LIMIT, (i, mm.elpd, mm.mcse, truth)
        assert mm.khat_after < 0.7 < mm.khat_before


def test_options_without_split_or_covariance_map() -> None:
    # the unsplit estimate uses the transformed draws as they are; cov=False never tries the
    # covariance map; k_target above the threshold is capped at the threshold. Every assertion
    # holds by construction for any draw set, given the precondition that maps were tried and
    # one was kept (k-hat before >= 0.7: 1.24 +- 0.14, min 0.85 over 300 seeds, a map kept in
    # all), without which the option checks would be vacuous.
    model = GaussianRegression()
    draws = model.draws(np.random.default_rng(6), 4, 1000)
    plain = moment_match(draws, model.log_post, model.log_lik_0, index=0, r_eff=1.0,
                         k_threshold=0.7, split=False, cov=False, k_target=0.9)
    assert plain.khat_before >= 0.7 and plain.transformations  # precondition
    assert not plain.split_used and "cov" not in plain.transformations
    # a map is kept only when it lowers k-hat; unsplit, the estimate's k-hat is the last map's
    assert plain.khat_after == plain.khat_transformed < plain.khat_before
    capped = moment_match(draws, model.log_post, model.log_lik_0, index=0, r_eff=1.0,
                          k_threshold=0.7, split=False, cov=False)
    assert capped.elpd == plain.elpd and capped.transformations == plain.transformations
    none = moment_match(draws, model.log_post, model.log_lik_0, index=0, r_eff=1.0,
                        k_threshold=0.7, max_iters=0)
    assert not none.transformations and none.elpd == none.psis_elpd
    assert none.khat_after == none.khat_before
    assert bool(none.warnings) == (none.khat_before >= 0.7)
