"""K-fold's up-front time estimate counts the observations its folds will refit on their own
(issue 45): the Pareto k̂ of the weights p(y_i | θ) at the full fit's draws finds them before
the first refit, where that pass is cheap, and each is priced as a short warm NUTS run and its
held-out densities."""

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
TESTS = EXAMPLES.parent / "tests"


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
    assert "about 1 observation of heavy weights refit on its own" in kfold_time.estimate_line(
        12.0, 5, d, 1)
    assert "about 7 observations of heavy weights refit on their own" in \
        kfold_time.estimate_line(12.0, 5, d, 7)


@pytest.mark.stan
def test_the_far_observation_is_counted_and_priced_before_the_first_refit(compiled):
    """normal_outlier's tenth observation (y = 12 against nine near 1, sigma 1): the k̂ of its
    weights p(y_10 | μ) at the full fit's draws was 0.98-1.37 over eight seeds at these
    settings, the other nine's -1.7-0.03; 0.4 lies more than ten times the spread of either
    from them, so the count is exactly 1 and the estimate includes its refit."""
    lines: list[str] = []
    model = compiled(EXAMPLES / "normal_mean.stan", data=EXAMPLES / "normal_outlier.data.json")
    r = stanlogz.kfold(model, k=5, seed=3, chains=2, warmup=300, n_draws=500,
                       progress=lines.append)
    line = next(x for x in lines if x.startswith("5 refits: about "))
    assert "about 1 observation of heavy weights refit on its own" in line
    assert lines.index(line) < next(i for i, x in enumerate(lines)
                                    if x.startswith("held-out set 1/5"))
    assert r.estimated_seconds > 0
    # the count, and the estimate it adds to (the draws' cost as the run measured it)
    full = stanlogz.sample(model, seed=3, chains=2, warmup=300, draws=500)
    _, data, obs = load_observed(model, None)
    count = kfold_time.heavy_count(model, data, obs, full, None, 0.0)
    assert count == 1  # a log_lik quantity: read, whatever the price


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



@pytest.mark.stan
def test_an_observation_alone_in_its_group_is_not_counted(compiled):
    """own_group's last observation is its group's only one: leaving it out returns the
    group's intercept to its N(0, 10) prior, so PSIS-LOO's reverse weights 1 / p(y_17 | θ) are
    heavy (k̂ 0.60-1.13 over eight seeds at these settings: the count before this one held it
    and 0-3 others). A fold adds it back with forward weights p(y_17 | θ), bounded by the
    normal density at the fitted sigma: its fold's k̂ stayed at most 0.34 and K-fold refit no
    observation on its own on any seed, and the forward k̂ at the full draws was at most 0.09
    over all 17 observations and seeds; 0.4 is more than ten times that spread away, so the
    count is 0."""
    model = compiled(TESTS / "own_group.stan", data=TESTS / "own_group.json")
    full = stanlogz.sample(model, seed=1, chains=2, warmup=300, draws=500)
    _, data, obs = load_observed(model, None)
    # no log_lik: the density-difference pass, priced within the limit
    assert kfold_time.heavy_count(model, data, obs, full, 1e-9, 1.0) == 0
