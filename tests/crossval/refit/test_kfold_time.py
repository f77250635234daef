"""K-fold's up-front time estimate counts the observations its folds will refit on their own
(issue 45): PSIS-LOO on the full fit finds them before the first refit, where that pass is
cheap, and each is priced as a short warm NUTS run and its held-out densities."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import stanlogz
from stanlogz.crossval.observations.observations import load_observed
from stanlogz.crossval.refit import kfold_time
from stanlogz.crossval.refit.heldout_points import point_draws
from stanlogz.draws import Draws
from stanlogz.draws.continuation import WARM_REFIT_WARMUP

EXAMPLES = Path(__file__).resolve().parents[3] / "stan_models" / "examples"


def test_a_point_refit_is_priced_as_a_short_warm_run_and_its_densities() -> None:
    """A fit of 10 s with 20,000 gradients, its 2 x 400 kept draws 5 steps each (10 steps an
    iteration over both chains): a point refit runs WARM_REFIT_WARMUP iterations and
    point_draws(400, 2, 1) = 100 draws per chain at that rate on 90% of the data, plus
    POINT_HELDOUT_SHARE of the fit for its densities."""
    d = Draws(unconstrained=np.zeros((2, 400, 1)), seconds=10.0, n_gradient_evals=20000,
              sampling_cost_known=True, sampler={"n_leapfrog__": np.full((2, 400), 5.0)})
    assert point_draws(400, 2, 1) == 100
    nuts = (WARM_REFIT_WARMUP + 100) * 10 / 20000
    want = 10.0 * (nuts * 0.9 + kfold_time.POINT_HELDOUT_SHARE)
    assert kfold_time.point_refit_seconds(d, 1, 0.9) == pytest.approx(want)
    # three such observations over two workers: half of their seconds join the folds'
    held = [np.arange(5), np.arange(5, 10)]
    base = kfold_time.refit_seconds(d, 10, held, 2)
    more = kfold_time.refit_seconds(d, 10, held, 2, points=3, dim=1)
    assert more - base == pytest.approx(3 * kfold_time.point_refit_seconds(d, 1, 0.5) / 2)


def test_the_estimate_line_names_the_observations_refit_alone() -> None:
    d = Draws(unconstrained=np.zeros((2, 10, 1)), seconds=3.0)
    assert kfold_time.estimate_line(12.0, 5, d, None).endswith("its settings)")
    assert "1 observation whose PSIS-LOO k-hat exceeds 0.5" in kfold_time.estimate_line(
        12.0, 5, d, 1)
    assert "7 observations whose PSIS-LOO k-hat exceeds 0.5" in kfold_time.estimate_line(
        12.0, 5, d, 7)


@pytest.mark.stan
def test_the_far_observation_is_counted_and_priced_before_the_first_refit(compiled):
    """normal_outlier's tenth observation (y = 12 against nine near 1, sigma 1) has PSIS-LOO
    k-hat near 1 on every seed tried (0.95-1.45 over five); its chance of falling to 0.5 is
    negligible, so the count holds it and the estimate includes its refit. The others' k-hat
    ranges 0.05-0.49 over seeds, so the count is asserted at least 1, not exactly 1."""
    lines: list[str] = []
    model = compiled(EXAMPLES / "normal_mean.stan", data=EXAMPLES / "normal_outlier.data.json")
    r = stanlogz.kfold(model, k=5, seed=3, chains=2, warmup=300, n_draws=500,
                       progress=lines.append)
    line = next(x for x in lines if x.startswith("5 refits: about "))
    assert "PSIS-LOO k-hat exceeds 0.5" in line
    assert lines.index(line) < next(i for i, x in enumerate(lines)
                                    if x.startswith("held-out set 1/5"))
    assert r.estimated_seconds > 0
    # the count, and the estimate it adds to (the draws' cost as the run measured it)
    full = stanlogz.sample(model, seed=3, chains=2, warmup=300, draws=500)
    _, data, obs = load_observed(model, None)
    count = kfold_time.heavy_count(model, data, obs, full, None, 0.0)
    assert count is not None and count >= 1  # a log_lik quantity: read, whatever the price


@pytest.mark.stan
def test_a_density_difference_pass_is_counted_only_where_it_is_cheap(compiled):
    """hier_regression has no log_lik: the count takes the density-difference pass, priced by
    the seconds of one observation's term (``terms``); unpriced or over ``within`` it is not
    taken (None), and priced within it gives a count."""
    model = compiled(EXAMPLES / "hier_regression.stan",
                     data=EXAMPLES / "hier_regression.data.json")
    full = stanlogz.sample(model, seed=1, chains=2, warmup=200, draws=200)
    _, data, obs = load_observed(model, None)
    assert kfold_time.heavy_count(model, data, obs, full, None, 1e9) is None
    assert kfold_time.heavy_count(model, data, obs, full, 1.0, 1.0) is None
    count = kfold_time.heavy_count(model, data, obs, full, 1e-9, 1.0)
    assert isinstance(count, int) and 0 <= count <= obs.n

