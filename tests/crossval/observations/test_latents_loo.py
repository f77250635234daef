"""Exact held-out values refuse programs where deleting an observation changes the model
(linked latents, unnormalized latent priors, non-factorized likelihoods), and ``loo`` answers
programs with per-observation latents and non-factorized likelihoods from the conditional
log p(y_i | y_-i, theta) (stanlogz.crossval.observations.conditional), against Gaussian-conditioning
and quadrature truths.

Tolerances: a PSIS estimate is asymptotically normal around the truth with sd its Monte Carlo se,
so |error| <= 4 mc se fails with probability 6e-5 per assertion; the seeds are fixed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchmarks.truths.crossval import truths_latent as T
from stanlogz.crossval.observations.conditional import ConditionalLogLik
from stanlogz.crossval.observations.observations import find_observations
from stanlogz.crossval.observations.splitcheck import SplitError, check_split
from stanlogz.crossval.psis_loo.loo import loo
from stanlogz.crossval.refit.heldout import heldout_elpd
from stanlogz.draws import sample
from stanlogz.errors import InputError
from stanlogz.stan.settings import NutsArgs

TESTS = Path(__file__).resolve().parents[3] / "stan_models" / "tests"
SHORT = NutsArgs(chains=1, warmup=150, draws=20)


def _y(n: int, seed: int) -> list[float]:
    rng = np.random.default_rng(seed)
    return (np.cumsum(rng.normal(0, 0.5, n)) + rng.normal(0, 1, n)).round(3).tolist()


def _linked() -> dict[str, dict]:
    y = _y(12, 1)
    return {"rw_states": {"N": 12, "y": y, "sigma_x": 0.5, "sigma_y": 1.0},
            "ar1_states": {"N": 12, "y": y, "phi": 0.6, "s": 0.5, "sigma_y": 1.0},
            "car_ring": {"N": 12, "y": y, "tau": 2.0, "alpha": 0.9, "sigma_y": 1.0}}


@pytest.mark.parametrize("name", ["rw_states", "ar1_states", "car_ring"])
def test_split_check_refuses_linked_latents(compiled, name):
    # Deterministic: deleting x_i changes the prior of its neighbours at any draw.
    data = _linked()[name]
    m = compiled(TESTS / f"{name}.stan", data)
    x = sample(m, SHORT, seed=1).flat_unconstrained()[:3]
    with pytest.raises(SplitError, match="linked to other observations' latents.*stanlogz.lfo"):
        check_split(m, data, find_observations(data, "N"), 5, x)


def test_split_check_refuses_unnormalized_truncation(compiled):
    data = {"N": 10, "y": _y(10, 2)}
    m = compiled(TESTS / "trunc_latent.stan", data)
    x = sample(m, SHORT, seed=1).flat_unconstrained()[:3]
    # z ~ normal(0, 1) on <lower=0> without T[,]: the prior integrates to 1/2 (log 2 = 0.6931)
    with pytest.raises(SplitError, match=r"differ by -0\.6931.*T\[,\]"):
        check_split(m, data, find_observations(data, "N"), 3, x)


def test_split_check_accepts_valid_splits(compiled):
    es = json.loads((TESTS / "eight_schools.json").read_text())
    m = compiled("eight_schools")
    x = sample(m, SHORT, seed=1).flat_unconstrained()[:3]
    for i in (0, 4, 7):  # independent latents with normalized priors: a valid split
        check_split(m, es, find_observations(es, "J"), i, x)
    # An AR(1) likelihood without its first value is still the right model; without a middle
    # value it is not.
    data = {"N": 12, "y": _y(12, 3), "rho": 0.7, "sigma": 1.0}
    m2 = compiled(TESTS / "mvn_ar1.stan", data)
    x2 = sample(m2, SHORT, seed=1).flat_unconstrained()[:3]
    obs = find_observations(data, "N")
    check_split(m2, data, obs, 0, x2)
    with pytest.raises(SplitError, match="enters other terms"):
        check_split(m2, data, obs, 5, x2)


def test_heldout_refuses_random_walk_before_refitting(compiled):
    data = _linked()["rw_states"]
    m = compiled(TESTS / "rw_states.stan", data)
    full = sample(m, SHORT, seed=2).unconstrained
    with pytest.raises(SplitError, match="random walk"):
        heldout_elpd(m, data, find_observations(data, "N"), [4], full_draws=full, seed=1)


def test_conditional_matches_gaussian_conditioning_per_draw(compiled):
    # At fixed states the random walk's y_i | rest is N(x_i, sigma_y) after integrating x_i
    # against its neighbours: exact closed form, compared to 1e-8.
    data = _linked()["rw_states"]
    m = compiled(TESTS / "rw_states.stan", data)
    x = sample(m, SHORT, seed=3).flat_unconstrained()[:4]
    cl = ConditionalLogLik(m, data, find_observations(data, "N"))
    i = 5
    got = cl.column(i, x)
    assert cl.integrated[i]
    v = 1.0 / (2 / 0.25)  # x_i | x_{i-1}, x_{i+1}: mean of the neighbours, var sigma_x^2 / 2
    mean = 0.5 * (x[:, i - 1] + x[:, i + 1])
    want = -0.5 * np.log(2 * np.pi * (v + 1.0)) - 0.5 * (data["y"][i] - mean) ** 2 / (v + 1.0)
    np.testing.assert_allclose(got, want, atol=1e-8)


def _joint_se(r, idx):
    """The se of the sum with the observations' errors taken jointly (they share the draws;
    sqrt(sum mcse_i^2) under-covers: benchmarks/loo_conditional.py)."""
    from stanlogz.crossval.elpd.routes import ConditionalSource
    from stanlogz.crossval.observations.integrated import IntegratedSource
    from stanlogz.crossval.psis_loo.sum_mcse import sum_mcse

    kind = ConditionalSource if r.log_lik_source == "conditional" else IntegratedSource
    src = kind(r.program, r.data, r.observations)
    unc = r.draws.unconstrained
    ll = src.columns(idx, unc.reshape(-1, unc.shape[2]))
    return sum_mcse(ll.reshape(unc.shape[0], unc.shape[1], -1))


def _check_loo(r, truth, index=None):
    idx = np.arange(truth.size) if index is None else index
    err = (r.elpd_i - truth)[idx]
    se = max(_joint_se(r, idx), float(np.sqrt(np.sum(r.mcse_i[idx] ** 2))))
    assert r.log_lik_source == "conditional"
    assert np.all(r.khat[idx] <= 0.7)
    assert abs(err.sum()) <= 4 * se + 1e-3, (err.sum(), se)


def test_loo_eight_schools_without_log_lik(compiled):
    es = json.loads((TESTS / "eight_schools.json").read_text())
    r = loo(compiled("eight_schools"), es, obs="J", seed=11, fix="none",
            chains=4, warmup=300, n_draws=500)
    _check_loo(r, T.eight_schools_cauchy_loo(es))


def test_loo_random_walk_states(compiled):
    data = {"N": 20, "y": _y(20, 4), "sigma_x": 0.5, "sigma_y": 1.0}
    r = loo(compiled(TESTS / "rw_states.stan", data), data, seed=12, fix="none",
            chains=4, warmup=300, n_draws=500)
    _check_loo(r, T.gaussian_loo(np.array(data["y"]), T.rw_states_cov(data)))


def test_loo_mvn_ar1_non_factorized(compiled):
    data = {"N": 20, "y": (np.array(_y(20, 5)) + 1).round(3).tolist(), "rho": 0.7,
            "sigma": 1.0}
    r = loo(compiled(TESTS / "mvn_ar1.stan", data), data, seed=13, fix="none",
            chains=4, warmup=300, n_draws=500)
    _check_loo(r, T.gaussian_loo(np.array(data["y"]), T.mvn_ar1_cov(data)))


def test_loo_ark_series(compiled):
    rng = np.random.default_rng(6)
    y = np.zeros(30)
    for t in range(2, 30):
        y[t] = 0.5 + 0.5 * y[t - 1] - 0.3 * y[t - 2] + rng.normal()
    data = {"K": 2, "T": 30, "y": y.round(3).tolist(), "sigma": 1.0}
    r = loo(compiled(TESTS / "ark.stan", data), data, seed=14, fix="none",
            chains=4, warmup=300, n_draws=500)
    # the first K values carry no term of their own (flat): their conditional is improper
    # under the joint, so only t > K is compared
    _check_loo(r, T.ark_loo(data), np.arange(2, 30))


def test_loo_refuses_improper_conditional_with_routes(compiled):
    # (a GARCH recursion, not quadratic in y_i, is answered by quadrature over y_i:
    # tests/crossval/observations/test_nonfactorized_loo.py; a y[1] that enters no term has no
    # conditional)
    y = np.random.default_rng(7).normal(size=20).round(3).tolist()
    data = {"T": 20, "y": y}
    with pytest.raises(InputError, match=r"does not fall off in y\[1\].*stanlogz.lfo") as err:
        loo(compiled(TESTS / "unused_first.stan", data), data, seed=1, chains=1, warmup=100,
            n_draws=50)
    assert "container is empty" not in str(err.value) and "\n" not in str(err.value)


def test_loo_binomial_random_effects_integrates_the_latent(compiled):
    # Integer observations with one latent per unit (seeds / surgical style): the latent is
    # integrated out by adaptive Gauss-Hermite; truth by quadrature over mu.
    rng = np.random.default_rng(3)
    n = rng.integers(5, 40, 15)
    y = rng.binomial(n, 1 / (1 + np.exp(-(0.3 + 0.8 * rng.normal(size=15)))))
    data = {"I": 15, "n": n.tolist(), "y": y.tolist(), "sigma": 0.8}
    r = loo(compiled(TESTS / "binom_re.stan", data), data, obs="I", seed=15, fix="none",
            chains=4, warmup=300, n_draws=500)
    assert r.log_lik_source == "integrated"
    err = r.elpd_i - T.binom_re_loo(data)
    assert np.all(r.khat <= 0.7)
    assert abs(err.sum()) <= 4 * _joint_se(r, np.arange(15)) + 1e-3


class _Names:
    def __init__(self, names: list[str]) -> None:
        self.names, self.dim, self.name = names, len(names), "stub"

    def param_unc_names(self) -> list[str]:
        return self.names


def test_coordinate_map_follows_observations_on_any_axis():
    # matrix[2, N] w: the observation is the second index; N = 3 -> observations 1 and 3
    big = _Names(["mu", "w.1.1", "w.2.1", "w.1.2", "w.2.2", "w.1.3", "w.2.3"])
    small = _Names(["mu", "w.1.1", "w.2.1", "w.1.2", "w.2.2"])
    from stanlogz.crossval.observations.latents import coordinate_map

    pos = coordinate_map(big, small, np.arange(3), np.array([0, 2]))
    assert [big.names[j] for j in pos] == ["mu", "w.1.1", "w.2.1", "w.1.3", "w.2.3"]


def test_sum_mcse_matches_the_spread_of_independent_estimates():
    # Toy: log p_i(theta) = -0.1 (theta - a_i)^2 (finite weight variance) with theta ~ N(0, 1)
    # shared by all i, so the errors of the N estimates are correlated. The se of the sum from
    # one replicate is compared with the spread of the sum over 400 replicates (measured: the
    # se of one replicate varies by 8% sd, the spread is known to 3.5%; the tolerance 40% is
    # > 4 combined sds, failure probability < 1e-4). sqrt(sum mcse_i^2) is 3x too small here.
    from scipy import special

    from stanlogz.crossval.psis_loo.sum_mcse import sum_mcse

    rng = np.random.default_rng(21)
    a = np.linspace(-0.5, 0.5, 10)

    def one(seed):
        th = np.random.default_rng(seed).normal(size=(4, 500, 1))
        ll = -0.1 * (th - a) ** 2
        est = -(special.logsumexp(-ll, axis=(0, 1)) - np.log(2000))
        return est.sum(), ll

    sums = np.array([one(int(s))[0] for s in rng.integers(2**31, size=400)])
    se = sum_mcse(one(5)[1])
    assert abs(se / np.std(sums) - 1) < 0.4, (se, np.std(sums))


def test_pointwise_draws_runs_the_pass_on_the_draws_thinned(compiled):
    # The pass and PSIS on 400 of 2,000 draws (every 5th of each chain): exactly loo on those
    # draws given as a fit, the sampler's diagnostics of the whole run, and within 4 mc se of
    # the Gaussian-conditioning truth (failure probability 6e-5 when the mc se of 400 draws is
    # right; benchmarks/loo_conditional.py --pointwise-draws measures its coverage).
    data = {"N": 20, "y": (np.array(_y(20, 5)) + 1).round(3).tolist(), "rho": 0.7,
            "sigma": 1.0}
    m = compiled(TESTS / "mvn_ar1.stan", data)
    d = sample(m, NutsArgs(chains=4, warmup=300, draws=500), seed=21)
    r = loo(m, data, draws=d, seed=13, fix="none", verify=0, pointwise_draws=400)
    same = loo(m, data, draws=d.thinned(100), seed=13, fix="none", verify=0)
    assert r.n_samples == 400 and r.draws.n_draws == 100
    assert r.elpd_loo == same.elpd_loo and r.mcse_elpd_loo == same.mcse_elpd_loo
    assert any("on 400 of the 2000 posterior draws" in w for w in r.warnings)
    _check_loo(r, T.gaussian_loo(np.array(data["y"]), T.mvn_ar1_cov(data)))
    for bad, why in [(50, "integer >= 100"), (400.0, "integer >= 100")]:
        with pytest.raises(InputError, match=why):
            loo(m, data, draws=d, pointwise_draws=bad)
    with pytest.raises(InputError, match="does not apply with mcse_target"):
        loo(m, data, pointwise_draws=400, mcse_target=0.1)


def test_a_refused_refit_below_the_threshold_does_not_claim_a_high_khat(compiled):
    # The k-hat band's and the self-check's refits are of values below the threshold. Where
    # the program refuses refits (a random walk of latents), the warning said "N
    # observation(s) have Pareto k-hat above 0.70 and cannot be refitted" beside a Pareto
    # table with none above it (a local linear trend of 100 steps, 23 band refits). It now
    # says so only of values above it. Deterministic: the split check fails at any draw.
    from types import SimpleNamespace

    from stanlogz.crossval.fixups.registry import fix_method
    from stanlogz.crossval.psis_loo.loo import _fix

    data = _linked()["rw_states"]
    m = compiled(TESTS / "rw_states.stan", data)
    d = sample(m, SHORT, seed=2)
    pw = SimpleNamespace(model=m, data=data, obs=find_observations(data, "N"),
                         held_out_model=lambda i: None)
    index = np.arange(12)
    ps = SimpleNamespace(khat=np.full(12, 0.3), elpd_i=np.zeros(12))
    ps.khat[7] = 0.9

    def refusal(bad: list[int]) -> str:
        fixed, notes = _fix(pw, d, np.array(bad), ps, index, fix_method("exact"), 0.7, 1.0,
                            SHORT, fix_method("exact").Options(), 1, 1, None)
        (line,) = [n for n in notes if "cannot be refitted" in n]
        assert not fixed and "random walk" in line
        return line

    assert refusal([3, 5]).startswith("the 2 observation(s) cannot be refitted: ")
    assert refusal([7]).startswith("1 observation(s) have Pareto k-hat above 0.70 and cannot")
