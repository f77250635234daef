"""pmmh's automatic batch: grown until the sd of the log batch weights is at most the target; and
pmmh at its default settings recovers an exact posterior mean with a small MCSE, reporting the
batch it chose."""

import json
import math

import numpy as np

from stanlogz.pmmh.batch import TARGET_LOG_SD, choose_batch, log_weight_sd, probe_points
from stanlogz.pmmh.pseudo_marginal import pmmh
from tests.conftest import MODELS

TESTS = MODELS / "tests"


def _lognormal_source(sigma):
    return lambda rng, n: rng.normal(0.0, sigma, n)


def test_batch_grows_until_the_log_sd_is_on_target():
    # Lognormal weights with log-sd 1: the log of a mean of b has sd ~ sqrt((e - 1) / b), so the
    # target 0.2 needs b >= 43. The measured sd of 100 batch weights is within 25% of its
    # value with probability > 1 - 1e-4 (its relative se is ~7%), which keeps the chosen batch
    # within [25, 200] (first step from 10: b = 1.1 * 10 * (sd / 0.2)^2, then at least doubling).
    b, sd = choose_batch(lambda p: _lognormal_source(1.0), [np.zeros(1)],
                         np.random.default_rng(5))
    assert sd <= TARGET_LOG_SD and 25 <= b <= 200, (b, sd)
    # Weights that barely vary keep the first batch; the cap stops the growth.
    assert choose_batch(lambda p: _lognormal_source(0.01), [np.zeros(1)],
                        np.random.default_rng(5))[0] == 10
    assert choose_batch(lambda p: _lognormal_source(5.0), [np.zeros(1)],
                        np.random.default_rng(5), cap=64)[0] == 64
    # A start above the cap (doubling after negative estimates) is held to the cap.
    assert choose_batch(lambda p: _lognormal_source(0.01), [np.zeros(1)],
                        np.random.default_rng(5), start=200, cap=64)[0] == 64
    # A batch of zero weights counts as an infinite spread.
    assert log_weight_sd(lambda rng, n: np.full(n, -np.inf), np.random.default_rng(0), 5) \
        == math.inf


def test_probe_points_are_the_mean_and_states():
    h = np.arange(20.0).reshape(10, 2)
    pts = probe_points(h, np.random.default_rng(0), k=3)
    assert len(pts) == 4 and np.allclose(pts[0], h.mean(axis=0))
    assert all(any(np.array_equal(p, row) for row in h) for p in pts[1:])


def test_pmmh_default_batch_recovers_the_exact_posterior():
    data = json.loads((TESTS / "gauss_precision_outer.json").read_text())
    y = np.array(data["y"])
    # tau | y ~ gamma(a + N/2, b + sum(y^2)/2): the missing normalizer is (2 pi / tau)^(N/2).
    shape, rate = data["a"] + data["N"] / 2, data["b"] + 0.5 * float(y @ y)
    mean, sd = shape / rate, math.sqrt(shape) / rate
    # every setting at its default (iter 2000, the automatic batch, the t proposal)
    r = pmmh(TESTS / "gauss_precision_outer.stan", TESTS / "gauss_precision_inner.stan",
             TESTS / "gauss_precision_outer.json", seed=7)
    (row,) = r.summary_rows()
    # batch-means MCSE over ~44 batches: a t statistic with 43 dof exceeds 4.5 with
    # probability < 1e-4 (3 MCSE, the bar, is checked over seeds by
    # benchmarks/pmmh_default.py: a single test at 3 would fail 0.5% of the time).
    assert abs(row["mean"] - mean) < 4.5 * row["mcse"], (row, mean)
    assert row["mcse"] <= 0.1 * sd, (row, sd)
    assert r.batch_auto and r.batch >= 10 and r.diagnostics["batch"] == r.batch
    assert r.fraction_positive > 0.95
    assert r.to_dict()["batch"] == r.batch
