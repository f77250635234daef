"""Held-out observations whose importance weights are heavy-tailed get refits of their own
(stanlogz.crossval.refit.heldout_points): the conjugate normal mean with two far observations
of opposite sign held out together, so the full-data posterior sits where the training one
does and neither covers the posterior given one far observation. Every log p(y_i | y_T) is
closed form.

Without the refits the importance-sampled sum was 5 se too low on average there (100 seeds:
rms z 5.91, |z| > 3 in 72); with them rms z 1.00 and none beyond 3
(benchmarks/kfold_point_refits.py, ``outlier``).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from stanlogz.crossval.observations.observations import find_observations
from stanlogz.crossval.refit.heldout import heldout_elpd
from stanlogz.crossval.refit.heldout_points import POINT_KHAT, heavy_rows
from stanlogz.crossval.refit.kfold import kfold
from stanlogz.errors import InputError

NORMAL = Path(__file__).resolve().parents[3] / "stan_models" / "examples" / "normal_mean.stan"


def _far_pair(shift: float) -> tuple[dict, np.ndarray, np.ndarray]:
    """40 observations, the first two at ±shift; V = the first four; the exact
    log p(y_i | y_T) of each (σ = 1, μ ~ N(0, 2²))."""
    y = np.random.default_rng(0).normal(0.5, 1.0, 40)
    y[0], y[1] = shift, -shift
    d = {"N": 40, "y": y.tolist(), "sigma": 1.0, "prior_sd": 2.0}
    v = np.arange(4)
    t = np.setdiff1d(np.arange(40), v)
    prec = 1 / 4 + t.size
    return d, v, stats.norm(y[t].sum() / prec, math.sqrt(1 + 1 / prec)).logpdf(y[v])


def test_heavy_rows_are_those_above_the_threshold() -> None:
    assert POINT_KHAT == 0.5
    assert heavy_rows(np.array([0.2, 0.51, np.nan, 0.5, 1.3])).tolist() == [1, 2, 4]


def test_far_observations_are_refit_and_their_sum_covers(compiled) -> None:
    """Both far observations are refit (their k̂ exceeded 1.2 in every one of 100 seeds tried;
    the others' stay below 0.3), and the held-out sum lands within 3 of its se of the closed form
    in all but at most 2 of 20 seeds: an honest se exceeds 3 with probability 0.0027 per seed,
    so 3 or more of 20 has probability 2.2e-5 (binomial). Without the refits 72 of 100 seeds
    exceeded 3."""
    d, v, truth = _far_pair(30.0)
    m = compiled(NORMAL, d)
    obs = find_observations(d)
    beyond = 0
    for seed in range(20):
        h = heldout_elpd(m, d, obs, v, seed=seed, chains=4, warmup=500, draws=1000)
        assert h.refit_observations.tolist() == [0, 1], (seed, h.khat_i)
        assert np.all(h.khat_i[:2] > POINT_KHAT) and np.all(h.khat_i[2:] <= POINT_KHAT)
        z = (h.elpd_i.sum() - truth.sum()) / h.elpd_i_mcse
        beyond += abs(z) > 3
        assert h.to_dict()["refit_observations"] == [1, 2]
    assert beyond <= 2, beyond


def test_without_point_refits_the_weights_are_flagged(compiled) -> None:
    """``point_refits=False`` keeps the importance-sampled values and reports their k̂ (the
    far pair above 1.2: see above), refitting nothing; the training refit and its draws are the
    same as with the refits (same seed), so the other observations' values agree exactly."""
    d, v, _ = _far_pair(30.0)
    m = compiled(NORMAL, d)
    obs = find_observations(d)
    plain = heldout_elpd(m, d, obs, v, seed=3, chains=4, warmup=500, draws=1000,
                         point_refits=False)
    refit = heldout_elpd(m, d, obs, v, seed=3, chains=4, warmup=500, draws=1000)
    assert plain.refit_observations.size == 0 and np.all(plain.khat_i[:2] > 1.2)
    assert np.array_equal(plain.khat_i, refit.khat_i)
    assert np.array_equal(plain.elpd_i[2:], refit.elpd_i[2:])
    assert plain.elpd == refit.elpd


def test_kfold_reports_the_point_refits(compiled) -> None:
    """K-fold on folds fixed by a data array (leave-one-group-out over 5 folds of 8, the far
    pair in the first): the far pair are refit on their own, the result names them in its
    JSON, its pointwise rows and its printed notes, and elpd_kfold lands within 4.5 mcse of the
    closed form (failure probability 6.8e-6 for an honest mcse)."""
    d, _, _ = _far_pair(30.0)
    d["fold"] = [1 + i // 8 for i in range(40)]
    m = compiled(NORMAL, d)
    r = kfold(m, d, group="fold", k=None, seed=5, chains=4, warmup=500, n_draws=1000)
    y = np.array(d["y"])
    truth = 0.0
    for j in range(5):
        v = np.arange(8 * j, 8 * j + 8)
        t = np.setdiff1d(np.arange(40), v)
        prec = 1 / 4 + t.size
        truth += stats.norm(y[t].sum() / prec, math.sqrt(1 + 1 / prec)).logpdf(y[v]).sum()
    assert abs(r.elpd_kfold - truth) < 4.5 * r.mcse, (r.elpd_kfold, truth, r.mcse)
    # the far pair (weights as extreme as in the set of four above, k̂ > 1.2 there in 100 of
    # 100 seeds), and an ordinary observation now and then (k̂ near 0.5 by chance)
    out = r.to_dict()
    alone = [p["observation"] for p in out["pointwise"] if p["refit_alone"]]
    assert alone[:2] == [1, 2] and out["point_refits"] == alone
    assert alone == [p["observation"] for p in out["pointwise"] if p["khat"] > POINT_KHAT]
    assert r.point_refits.tolist() == [i - 1 for i in alone]
    assert f"{len(alone)} observation(s) whose" in str(r)
    assert f"refit on their own: {', '.join(map(str, alone))}" in str(r)


def test_an_earlier_calls_point_refits_are_reused(compiled) -> None:
    """A second call on the same set with ``points`` from the first (a precision target's next
    round) keeps the refit observations' values and runs no refit for them: the same values
    exactly and no gradient evaluations (its training draws are given). Deterministic given
    the seeds (the far pair's k̂ is above 1.2: the docstring of the test above)."""
    from stanlogz.draws import sample

    d, v, _ = _far_pair(30.0)
    m = compiled(NORMAL, d)
    obs = find_observations(d)
    full = sample(m, chains=4, warmup=500, draws=1000, seed=7)
    first = heldout_elpd(m, d, obs, v, full_draws=full, seed=8, keep_draws=True)
    assert first.points is not None and first.points.observations.tolist() == [0, 1]
    again = heldout_elpd(m, d, obs, v, full_draws=full, train_draws=first.train_draws,
                         seed=9, points=first.points)
    assert again.refit_observations.tolist() == [0, 1]
    assert np.array_equal(again.elpd_i[:2], first.elpd_i[:2])
    assert again.n_gradient_evals == 0
    assert again.points.mcse == first.points.mcse


def test_a_given_training_log_density_is_used_as_computed(compiled) -> None:
    """``train_log_density`` (the training program's density at the given training draws,
    which a set's refit observations share) gives the same values exactly as computing it;
    one of the wrong length is refused with a line naming it (deterministic)."""
    from stanlogz.draws import sample

    d, v, _ = _far_pair(30.0)
    m = compiled(NORMAL, d)
    obs = find_observations(d)
    full = sample(m, chains=2, warmup=300, draws=400, seed=11)
    train_data = obs.subset(d, np.arange(4, 40))
    train = sample(m.with_data(train_data), chains=2, warmup=300, draws=400, seed=12)
    lp = m.with_data(train_data).log_density_many(train.unconstrained.reshape(-1, 1))
    a = heldout_elpd(m, d, obs, [0], full_draws=full, train_draws=train, seed=13)
    b = heldout_elpd(m, d, obs, [0], full_draws=full, train_draws=train, seed=13,
                     train_log_density=lp)
    assert a.elpd == b.elpd and a.mcse == b.mcse
    with pytest.raises(InputError, match="train_log_density must have one value per"):
        heldout_elpd(m, d, obs, [0], full_draws=full, train_draws=train, seed=13,
                     train_log_density=lp[:-1])
