"""A refit's chains checked from the other side (stanlogz.draws.modes): a warm refit by chains
from random inits, a cold one by chains from the full fit. On a posterior whose training data
leave a mode the full data rule out, K-fold's fold that holds those data is flagged (its se
NA, a warning that says why) where before warm refits answered 2.7 nats off with an mcse of
0.008 and no warning; on one mode the probe changes nothing but the cost."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import stanlogz
from stanlogz.draws import Draws
from stanlogz.draws.modes import RHAT_MODES, beyond, join_chains, max_rhat, split_rhat

TESTS = Path(__file__).resolve().parents[2] / "stan_models" / "tests"
FAR = TESTS / "kfold_far_mode.stan"
FAR_DATA = TESTS / "kfold_far_mode.json"


def test_split_rhat_per_column_is_the_scalar_one() -> None:
    rng = np.random.default_rng(4)
    x = rng.standard_normal((4, 200, 3))
    x[2, :, 1] += 5.0  # one chain of column 1 elsewhere
    per = split_rhat(x)
    for j in range(3):
        assert per[j] == pytest.approx(split_rhat(x[:, :, j]))
    # iid columns: 8 halves of 100 draws, R-hat's sd about 0.005, so 1.1 is 20 sd away
    assert per[0] < 1.05 and per[2] < 1.05
    assert per[1] > 2.0 and max_rhat(x) == per[1] > RHAT_MODES
    assert math.isinf(split_rhat(np.array([[1.0] * 4, [2.0] * 4])))
    assert math.isnan(max_rhat(np.zeros((1, 3, 2))))


def test_beyond_measures_a_chain_outside_the_refits_draws() -> None:
    """A probe chain at the refit's posterior is inside the range of its 4,000 draws (0); one
    in a mode 10 sd away is about 10 - 3.7 sd beyond their largest draw (the range of 4,000
    normal draws reaches about 3.7 sd); one that wanders slowly through the same wide
    posterior (a random walk inside it) stays inside."""
    rng = np.random.default_rng(5)
    refit = rng.standard_normal((4, 1000, 2))
    probe = rng.standard_normal((4, 50, 2))
    assert beyond(refit, probe) == (0.0, 0)
    probe[2, :, 1] += 10.0
    far, j = beyond(refit, probe)
    assert j == 1 and 5.0 < far < 7.5
    walk = np.clip(np.cumsum(rng.normal(0, 0.1, (4, 50, 2)), axis=1), -3, 3)
    assert beyond(refit, walk)[0] == 0.0


def test_join_chains_puts_the_chains_side_by_side_and_adds_the_cost() -> None:
    a = Draws(unconstrained=np.zeros((4, 10, 2)), seconds=1.0, n_gradient_evals=100,
              step_size=np.full(4, 0.5), inv_metric=np.ones((4, 2)),
              sampler={"divergent__": np.zeros((4, 10))}, warnings=["a"])
    b = Draws(unconstrained=np.ones((2, 10, 2)), seconds=2.0, n_gradient_evals=50,
              step_size=np.full(2, 0.3), inv_metric=np.ones((2, 2)),
              sampler={"divergent__": np.ones((2, 10))})
    j = join_chains(a, b, "joined")
    assert j.unconstrained.shape == (6, 10, 2) and j.sampler["divergent__"].shape == (6, 10)
    assert j.seconds == 3.0 and j.n_gradient_evals == 150 and j.step_size.shape == (6,)
    assert j.warnings == ["a", "joined"]


def _exact_fold_one() -> float:
    """Σ log p(y_i | y_T) over the held-out group 1 (observations 1 and 2), closed form: the
    prior is a mixture of two normals, each conjugate to the normal observations."""
    from scipy import stats
    from scipy.special import logsumexp

    d = json.loads(FAR_DATA.read_text())
    y, s, g = np.array(d["y"]), np.array(d["s"]), np.array(d["g"])

    def log_z(idx: np.ndarray) -> float:
        cov = np.diag(s[idx] ** 2) + 0.4**2
        return float(logsumexp([np.log(0.5) + stats.multivariate_normal.logpdf(
            y[idx], np.full(idx.size, m), cov) for m in (0.0, 6.0)]))

    train = np.flatnonzero(g != 1)
    return sum(log_z(np.r_[train, i]) - log_z(train) for i in np.flatnonzero(g == 1))


@pytest.mark.stan
@pytest.mark.parametrize("warm", [True, False])
def test_a_mode_the_full_data_rule_out_is_found_and_its_fold_flagged(compiled, warm) -> None:
    """Without group 1's two precise observations at 6, the posterior has a second mode at 0
    (weight about 0.5); with them, only 6. Warm refits start every chain at 6; Stan's random
    inits (uniform on (-2, 2)) all fall to 0: the barrier between is about 28 nats, so which
    side each chain ends on is fixed and the test does not depend on the seed. Warm or cold,
    the probe from the other side ends in the other mode, the whole refit is run that way too,
    and the joined chains' R-hat withholds the fold's se (NaN, so elpd_kfold's too), with the
    warnings saying why. The other folds keep the data at 6: one mode, finite se."""
    model = compiled(FAR, data=FAR_DATA)
    r = stanlogz.kfold(model, group="g", k=None, seed=5, warm_refits=warm)
    fold = next(f for f in r.folds if 0 in f.index)
    assert math.isnan(fold.mcse) and math.isnan(fold.elpd_i_mcse)
    assert all(math.isfinite(f.mcse) for f in r.folds if f is not fold)
    assert math.isnan(r.mcse)
    side = "from random inits" if warm else "from the full fit"
    assert any(f"chains {side} ended elsewhere" in w for w in r.warnings)
    assert any("its chains disagree" in w and "Monte Carlo se NA" in w for w in r.warnings)
    assert "MCSE of elpd_kfold is NA" in str(r)
    # the chains of both sides joined: the estimate moved toward the truth (one mode alone
    # is 0.69 nats per observation off); it is not asserted within an se, as it has none
    assert abs(fold.elpd_i.sum() - _exact_fold_one()) < 2 * 0.69 * 2


@pytest.mark.stan
def test_one_mode_no_probe_fires(compiled) -> None:
    """normal_mean: one mode, so the probes' chains (random inits, 100 warmup iterations with
    the adapted metric, 50 draws) end inside the range of the refit's draws. The probe fires
    when a chain's median of 25 draws is half an sd beyond the range of 4,000 draws (about
    3.7 sd from the centre): for a converged chain that median has sd near 0.2, so it is
    over 20 of its sds away (failure probability far below 1e-4); over 250 refits of four
    one-mode programs none fired (benchmarks/refit_modes.py alarms)."""
    ex = TESTS.parent / "examples"
    model = compiled(ex / "normal_mean.stan", data=ex / "normal_mean.data.json")
    r = stanlogz.kfold(model, k=5, seed=7)
    assert not any("ended elsewhere" in w for w in r.warnings)
    assert all(math.isfinite(f.mcse) for f in r.folds) and math.isfinite(r.mcse)


def test_a_second_refit_runs_under_a_budget_where_it_fits(clock) -> None:
    # priced at the first run's seconds per iteration x ANOTHER_MARGIN, run where that fits
    # in ANOTHER_SHARE of the budget left; always without a budget. Before, any budget ruled
    # it out (radon_county_intercept at 30 s: 11 s left, refits of about 2 s joined short
    # probe chains instead, and their R-hat made the mc se NA)
    from stanlogz.draws.continuation import ANOTHER_MARGIN, ANOTHER_SHARE, _another_fits
    from stanlogz.stan.settings import NutsArgs

    drawn = Draws(np.zeros((2, 10, 1)), None, ["mu"], seconds=1.0)
    warm, cold = NutsArgs(warmup=100, draws=1000), NutsArgs(warmup=1000, draws=1000)
    cost = ANOTHER_MARGIN * 1.0 / 1100 * 2000  # the cold run priced from the warm one
    assert _another_fits(drawn, warm, cold)
    with stanlogz.time_budget(cost / ANOTHER_SHARE + 0.01):
        assert _another_fits(drawn, warm, cold)
        clock.t += 0.02
        assert not _another_fits(drawn, warm, cold)


@pytest.mark.stan
@pytest.mark.parametrize("budget", [None, 600])
def test_a_warm_refit_that_does_not_mix_is_refit_cold(compiled, monkeypatch, budget) -> None:
    """Where the warm chains' split R-hat exceeds RHAT_MODES (the full fit's metric does not
    fit the training posterior: radon's county whose homes were all held out), the refit runs
    from random inits, is probed from the full fit, and says so (the R-hat is stood in for);
    under a time budget where that fits, too."""
    from stanlogz.draws import continuation
    from stanlogz.draws.continuation import WarmStart, refit_draws
    from stanlogz.stan.settings import NutsArgs

    ex = TESTS.parent / "examples"
    data = json.loads((ex / "normal_mean.data.json").read_text())
    m = compiled(ex / "normal_mean.stan", data)
    full = stanlogz.sample(m, chains=2, warmup=200, draws=200, seed=1)
    calls: list[int] = []
    real = continuation.max_rhat
    monkeypatch.setattr(continuation, "max_rhat",
                        lambda x: calls.append(1) or (2.0 if len(calls) == 1 else real(x)))
    train = m.with_data(dict(data, N=9, y=data["y"][:9]))
    with stanlogz.time_budget(budget):
        d, warm = refit_draws(train, NutsArgs(chains=2, warmup=200, draws=100), seed=3,
                              warm=WarmStart.of(m, full))
    assert not warm and d.unconstrained.shape == (2, 100, 1)
    assert any("did not mix (split R-hat 2.00 > 1.1): refit from random inits" in w
               for w in d.warnings)
