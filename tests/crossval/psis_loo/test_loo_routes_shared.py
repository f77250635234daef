"""``compare --loo`` and unbiased ``cv`` take the pointwise log-likelihood by loo's routes
(crossval/elpd/routes.py): eight schools (non-centred, one latent per school, no log_lik) is
compared by the conditional log p(y_i | y₋ᵢ, θ) exactly as ``loo`` computes it, and ``cv``'s
leave-one-out path uses the same quantity, checked against its closed form."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import norm

import stanlogz
from stanlogz._util.seeds import Stream, stream_int_seed
from stanlogz.cli import main
from stanlogz.crossval.observations.observations import find_observations
from stanlogz.crossval.refit.cv_routes import PointwisePath, routed_source
from stanlogz.errors import InputError
from stanlogz.stan.settings import NutsArgs

TESTS = Path(__file__).resolve().parents[3] / "stan_models" / "tests"
SCHOOLS = TESTS / "eight_schools.stan"
POOLED = TESTS / "schools_pooled.stan"
DATA = TESTS / "eight_schools.json"


def test_compare_loo_of_eight_schools_is_loo(compiled, capsys) -> None:
    compiled(SCHOOLS), compiled(POOLED, DATA)
    rc = main(["--json", "--quiet", "--seed", "4", "compare", str(SCHOOLS), str(POOLED),
               "--data", str(DATA), "--loo", "--draws", "500"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    models = {m["name"]: m for m in json.loads(out)["loo"]["models"]}
    # compare runs each program with the seed it derives for it: loo with that seed is the
    # same computation, so equal to rounding
    ref = stanlogz.loo(str(SCHOOLS), str(DATA), seed=stream_int_seed(4, Stream.PROGRAM, 0),
                       n_draws=500)
    assert ref.log_lik_source == "conditional"
    assert abs(models["eight_schools"]["elpd_loo"] - ref.elpd_loo) < 1e-9
    assert abs(models["eight_schools"]["p_loo"] - ref.p_loo) < 1e-9


def test_cv_path_of_eight_schools_uses_the_conditional_log_lik(compiled) -> None:
    m = compiled(SCHOOLS)
    data = json.loads(DATA.read_text())
    obs = find_observations(data)
    d = stanlogz.sample(m, NutsArgs(chains=1, warmup=200, draws=50), seed=2)
    unc = d.flat_unconstrained()
    src = routed_source(m, data, obs, unc, 1, "log", "rwmh")
    assert src.source in ("conditional", "integrated")
    y, sigma = np.array(data["y"]), np.array(data["sigma"])
    for i in (0, 6):
        path = PointwisePath(m, src, i)
        for x in unc[:5]:
            mu, tau = x[0], np.exp(x[1])  # unconstrained: tau on the log scale
            # theta_i = mu + tau z_i with z_i ~ N(0, 1) integrated out:
            # y_i | mu, tau ~ N(mu, sqrt(tau^2 + sigma_i^2))
            truth = norm.logpdf(y[i], mu, np.sqrt(tau**2 + sigma[i] ** 2))
            u0, du = path.U_and_dU_dlam(0.0, x)
            assert du == pytest.approx(truth, abs=1e-6)
            assert path.U(1.0, x) == pytest.approx(float(m.log_density(x)), abs=1e-9)
            assert u0 == pytest.approx(float(m.log_density(x)) - truth, abs=1e-6)


def test_cv_refusals_for_changing_parameters(compiled) -> None:
    m = compiled(SCHOOLS)
    data = json.loads(DATA.read_text())
    obs = find_observations(data)
    unc = np.zeros((2, m.dim))
    with pytest.raises(InputError, match="n_valid = 1"):
        routed_source(m, data, obs, unc, 2, "log", "rwmh")
    with pytest.raises(InputError, match="kernel='rwmh'"):
        routed_source(m, data, obs, unc, 1, "log", "hmc")


def test_compare_passes_fix_mis_to_loo(compiled, capsys) -> None:
    compiled(SCHOOLS), compiled(POOLED, DATA)
    rc = main(["--json", "--quiet", "--seed", "4", "compare", str(SCHOOLS), str(POOLED),
               "--data", str(DATA), "--loo", "--fix", "mis", "--draws", "500"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    models = {m["name"]: m for m in json.loads(out)["loo"]["models"]}
    # the same computation as loo(fix="mis") with the seed compare derives for the program
    ref = stanlogz.loo(str(POOLED), str(DATA), seed=stream_int_seed(4, Stream.PROGRAM, 1),
                       n_draws=500, fix="mis")
    assert ref.fix == "mis"
    assert abs(models[ref.model]["elpd_loo"] - ref.elpd_loo) < 1e-9
