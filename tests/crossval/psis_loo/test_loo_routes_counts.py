"""loo's route for binomial counts out of trials with one random effect each (posteriordb's
surgical: two integer observation arrays r and n, so no single response array): the
integrated log-likelihood, checked against quadrature."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import integrate, special, stats

from stanlogz.crossval.elpd.routes import pointwise_source
from stanlogz.crossval.observations.integrated import IntegratedSource
from stanlogz.crossval.observations.observations import find_observations

PDB = Path(__file__).resolve().parents[3] / "stan_models" / "posteriordb"

pytestmark = pytest.mark.stan


def _joint(b: float, r: int, n: int, mu: float, sd: float) -> float:
    return stats.binom.pmf(r, n, special.expit(b)) * stats.norm.pdf(b, mu, sd)


def test_counts_out_of_trials_take_the_integrated_route(compiled):
    data = json.loads((PDB / "surgical.json").read_text())
    model = compiled(PDB / "surgical.stan", data)
    obs = find_observations(data, "N")
    rng = np.random.default_rng(3)
    # unconstrained points (mu, log sigmasq, b[1..12]) near the posterior
    rows = np.column_stack([-2.5 + 0.2 * rng.normal(size=4),
                            np.log(0.15) + 0.5 * rng.normal(size=4),
                            -2.5 + 0.3 * rng.normal(size=(4, 12))])
    src = pointwise_source(model, data, obs, "auto", rows)
    assert isinstance(src, IntegratedSource)
    idx = [0, 7]  # r = 0 of 47, and the highest rate (31 of 215)
    got = src.columns(idx, rows)
    for s, (mu, lsq) in enumerate(rows[:, :2]):
        sd = np.sqrt(np.exp(lsq))
        for j, i in enumerate(idx):
            r, n = data["r"][i], data["n"][i]
            val, _ = integrate.quad(_joint, mu - 12 * sd, mu + 12 * sd, args=(r, n, mu, sd),
                                    epsabs=0, epsrel=1e-11, limit=200)
            # deterministic: Gauss-Hermite (checked 32 vs 16 nodes to 1e-4) against adaptive
            # quadrature of log p(r_i | n_i, mu, sigma), the binomial coefficient included
            assert got[s, j] == pytest.approx(np.log(val), abs=1e-4)
