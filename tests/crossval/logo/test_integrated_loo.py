"""PSIS-LOO with one latent per observation integrated out (log_lik="integrated", groups of
one), continuous y included, against exact LOO: closed form without hyperparameters
(latent_pos.stan) and a 1-D quadrature over mu (trunc_latent.stan). Both programs write the
latent's half-normal prior without T[,], so the integrated route must find and remove the
latent prior's mass (log 2) itself.

Tolerances: latent_pos has no parameter besides the latents, so every draw gives the same
integrated value and the error is the quadrature's alone (the log mass from a 601-point grid,
the integral from Gauss-Hermite or a trapezoid: < 2e-6 per observation measured, so 1e-4 in
total). For trunc_latent the PSIS value is asymptotically normal with sd its Monte Carlo se:
|z| < 3.9 fails with probability 1e-4; the seeds are fixed."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy import special, stats

from stanlogz.crossval.psis_loo.loo import loo
from stanlogz.stan.settings import NutsArgs

TESTS = Path(__file__).resolve().parents[3] / "stan_models" / "tests"
NUTS = NutsArgs(chains=2, warmup=500, draws=500)


def _half_normal_conv(r: np.ndarray, sigma: float) -> np.ndarray:
    """log ∫_0^∞ N(r | z, sigma) 2 φ(z) dz."""
    s = math.sqrt(1 + sigma**2)
    return np.log(2 * stats.norm.pdf(r, 0, s) * stats.norm.cdf(r / (sigma * s)))


def _latent_pos(compiled):
    """latent_pos.stan on 12 observations (z_i ~ half-normal, y_i ~ N(z_i, 0.3)): the program,
    its data and the exact log p(y_i | y_-i) (the z_i are independent given nothing else)."""
    rng = np.random.default_rng(4)
    sigma = 0.3
    y = (np.abs(rng.normal(0, 1, 12)) + rng.normal(0, sigma, 12)).round(3)
    data = {"N": 12, "y": y.tolist(), "sigma": sigma}
    return compiled(TESTS / "latent_pos.stan", data), data, _half_normal_conv(y, sigma)


def test_integrated_loo_without_hyperparameters_is_exact(compiled):
    m, data, exact = _latent_pos(compiled)
    r = loo(m, data, seed=1, log_lik="integrated", settings=NUTS)
    assert r.log_lik_source == "integrated"
    np.testing.assert_allclose(r.elpd_i, exact, atol=2e-5)
    assert abs(r.elpd_loo - exact.sum()) < 1e-4
    # constant over draws: equal weights, no tail to fit (NA, as posterior's pareto_khat)
    assert np.all(np.isnan(r.khat)) and not r.fixed
    # PSIS on the log_lik conditional on z_i (forced) is far off (each z_i is informed by y_i
    # alone)
    forced = loo(m, data, seed=1, fix="none", log_lik="log_lik", settings=NUTS)
    assert forced.log_lik_source == "log_lik"
    assert forced.elpd_loo - exact.sum() > 1.0 and forced.khat.max() > 0.7
    assert any("log_lik='integrated'" in w for w in forced.warnings)  # offered in the warning


def test_plain_loo_integrates_per_observation_latents(compiled):
    """No flag: the program has one latent per observation and a log_lik conditional on it;
    loo finds the latents and takes the integrated route by itself (same tolerance as above:
    the values are constant over the draws, so only the quadrature errs, < 2e-6 each)."""
    m, data, exact = _latent_pos(compiled)
    assert exact.sum() == pytest.approx(-9.938, abs=1e-3)
    r = loo(m, data, seed=1, settings=NUTS)
    assert r.log_lik_source == "integrated"
    assert any("one latent per observation, integrated out" in w for w in r.warnings)
    np.testing.assert_allclose(r.elpd_i, exact, atol=2e-5)
    assert abs(r.elpd_loo - exact.sum()) < 1e-4
    assert r.to_dict()["log_lik_source"] == "integrated"


def test_integrated_loo_with_a_hyperparameter_matches_quadrature(compiled):
    rng = np.random.default_rng(7)
    y = (0.4 + np.abs(rng.normal(0, 1, 10)) + rng.normal(0, 1, 10)).round(3)
    data = {"N": 10, "y": y.tolist()}
    m = compiled(TESTS / "trunc_latent.stan", data)
    # mu ~ N(0, 1); p(y_i | mu) = ∫_0^∞ N(y_i | mu + z, 1) 2 φ(z) dz; a grid over mu
    mu = np.linspace(-6, 6, 4001)
    lp = _half_normal_conv(y[None, :] - mu[:, None], 1.0)  # (grid, N)
    prior = stats.norm.logpdf(mu)
    total = lp.sum(axis=1)
    exact = np.array([special.logsumexp(prior + total) - special.logsumexp(prior + total
                                                                          - lp[:, i])
                      for i in range(y.size)])
    r = loo(m, data, seed=2, log_lik="integrated", settings=NUTS)
    assert abs(r.elpd_loo - exact.sum()) < 3.9 * r.mcse_elpd_loo
    assert 0 < r.mcse_elpd_loo < 0.1 and r.khat.max() < 0.7


def test_plain_loo_cli_reports_the_integrated_route(capsys, compiled, tmp_path):
    """The command line without --log-lik: the route in the JSON, the value exact as above."""
    import json

    from stanlogz.cli import main

    rng = np.random.default_rng(4)
    sigma = 0.3
    y = (np.abs(rng.normal(0, 1, 12)) + rng.normal(0, sigma, 12)).round(3)
    data = {"N": 12, "y": y.tolist(), "sigma": sigma}
    compiled(TESTS / "latent_pos.stan", data)
    path = tmp_path / "latent_pos.json"
    path.write_text(json.dumps(data))
    rc = main(["loo", str(TESTS / "latent_pos.stan"), "--data", str(path), "--seed", "1",
               "--chains", "2", "--warmup", "500", "--draws", "500", "--json", "--quiet"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["log_lik_source"] == "integrated"
    assert abs(out["elpd_loo"] - _half_normal_conv(y, sigma).sum()) < 1e-4
