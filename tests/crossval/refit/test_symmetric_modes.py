"""A refit whose chains sit in modes that differ only by a symmetry (labels swapped) keeps its
held-out value's se: every chain gives the held-out density the same distribution, so the
modes' weights cannot move it (``draws.modes.disagreeing`` with the held-out term). Where the
modes give it different distributions, the se is withheld as before."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import stanlogz
from stanlogz.crossval.observations.observations import find_observations
from stanlogz.draws.modes import RHAT_MODES, RHAT_SAME, disagreeing, max_rhat

PROGRAM = Path(__file__).parents[3] / "stan_models" / "tests" / "mixture_symmetric.stan"
Y = np.r_[np.linspace(-3.4, -2.6, 10), np.linspace(2.6, 3.4, 10)]


def _mode_a(rng: np.random.Generator, y: np.ndarray, chains: int, n: int) -> np.ndarray:
    """Draws near the mode with mu[1] < 0 < mu[2] (each mean's normal posterior given its
    cluster, the other cluster's pull negligible at 6 sds apart), ``(chains, n, 2)``."""
    neg, pos = y[y < 0], y[y > 0]
    means = [neg.sum() / (neg.size + 1 / 25), pos.sum() / (pos.size + 1 / 25)]
    sds = [1 / np.sqrt(neg.size + 1 / 25), 1 / np.sqrt(pos.size + 1 / 25)]
    return rng.normal(means, sds, size=(chains, n, 2))


def test_modes_swapped_by_labels_keep_the_held_out_se(monkeypatch):
    monkeypatch.setenv("STANLOGZ_BACKEND", "interpreted")
    data = {"N": int(Y.size), "y": Y.tolist()}
    model = stanlogz.StanModel.from_file(str(PROGRAM), data)
    obs = find_observations(data)
    rng = np.random.default_rng(7)
    full = _mode_a(rng, Y, 4, 500)
    a = _mode_a(rng, Y[1:], 2, 500)  # the training data leave observation 1 out
    swapped = np.concatenate([a, a[:, :, ::-1]])  # chains 3-4: the same draws, labels swapped
    same = np.concatenate([a, a])
    assert max_rhat(swapped) > 5 * RHAT_MODES  # every parameter disagrees
    runs = [stanlogz.heldout_elpd(model, data, obs, [0], full_draws=full, train_draws=t,
                                  seed=1) for t in (swapped, same)]
    # the bridge's weights (the held-out density) are the same draw by draw: the value and its
    # se are those of the draws in one mode, not NA
    assert np.isfinite(runs[0].mcse) and runs[0].mcse > 0
    assert abs(runs[0].elpd - runs[1].elpd) < 1e-9 and abs(runs[0].mcse - runs[1].mcse) < 1e-9
    assert not any("chains disagree" in w for w in runs[0].warnings)


def test_modes_that_move_the_held_out_density_still_withhold_it():
    # chains 3-4 a whole unit off for the held-out term: its split R-hat is far above 1.01, so
    # the modes' weights matter and the warning stands (iid normal draws otherwise: split
    # R-hat of 8 halves of 250 sits within 0.01 of 1 but with probability under 1e-6)
    rng = np.random.default_rng(3)
    params = np.concatenate([np.zeros((2, 500, 2)), np.full((2, 500, 2), 8.0)])
    params += rng.normal(size=params.shape)
    alike = rng.normal(size=(4, 500))
    assert disagreeing(params, "the refit", "the value", quantity=alike) is None
    apart = alike + np.r_[0.0, 0.0, 1.0, 1.0][:, None]
    assert "chains disagree" in disagreeing(params, "the refit", "the value", quantity=apart)
    assert "chains disagree" in disagreeing(params, "the refit", "the value")
    assert RHAT_SAME == 1.01
