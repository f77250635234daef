"""The public plots (:mod:`stanlogz.report.plotting`) on real result objects made without Stan
(PSIS-LOO of a log-likelihood array, its comparison, LOO-PIT checks, a bridge estimate; their
examples run in tests/api/test_api_examples.py)."""

from __future__ import annotations

import numpy as np
import pytest

import stanlogz
from stanlogz.crossval.checks.checks import predictive_checks
from stanlogz.errors import InputError
from stanlogz.report import plot_compare, plot_elpd_diff, plot_khat, plot_loo_pit


def _log_lik(scale: float, outlier: float = 0.0, seed: int = 0) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    y = rng.normal(size=40)
    y[-1] += outlier
    mu = rng.normal(0, 0.2, size=(4, 250, 1))
    ll = -0.5 * ((y - mu) / scale) ** 2 - np.log(scale) - 0.5 * np.log(2 * np.pi)
    return ll, y, mu


@pytest.fixture(scope="module")
def two_loos():
    return stanlogz.loo(_log_lik(1.0, outlier=8.0)[0]), stanlogz.loo(_log_lik(1.5)[0])


def test_khat_plot_marks_the_observations_above_the_threshold(two_loos, tmp_path):
    r = two_loos[0]
    assert (r.khat > r.threshold).any()  # the outlier
    fig = plot_khat(r, path=tmp_path / "k.png")
    ax = fig.axes[0]
    ok, bad = ax.collections[0].get_offsets(), ax.collections[1].get_offsets()
    assert len(ok) + len(bad) == r.khat.size and len(bad) == (r.khat > r.threshold).sum()
    assert np.allclose(np.asarray(bad)[:, 1], r.khat[r.khat > r.threshold])
    assert (tmp_path / "k.png").read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(InputError, match="k-hat"):
        plot_khat(object())


def test_compare_plot_puts_the_best_on_top(two_loos):
    c = stanlogz.loo_compare(list(two_loos), ["outlier", "wide"])
    ax = plot_compare(c).axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[-1] == c.names[c.best] and sorted(labels) == ["outlier", "wide"]
    with pytest.raises(InputError, match="comparison"):
        plot_compare(two_loos[0])


def test_elpd_diff_plot_sums_to_the_difference(two_loos):
    a, b = two_loos
    ax = plot_elpd_diff(a, b, names=("A", "B")).axes[0]
    assert ax.get_title() == f"B − A: Σ = {b.elpd_i.sum() - a.elpd_i.sum():.2f}"
    with pytest.raises(InputError, match="same observations"):
        plot_elpd_diff(a, stanlogz.loo(_log_lik(1.0)[0][..., :30]))


def test_loo_pit_plot_draws_every_finite_value_on_given_axes():
    import matplotlib.pyplot as plt

    ll, y, mu = _log_lik(1.0)
    rng = np.random.default_rng(3)
    y_rep = (mu + rng.normal(size=(4, 250, 40))).reshape(1000, 40)
    checks = predictive_checks(ll.reshape(1000, 40), y_rep, y)
    fig, ax = plt.subplots()
    assert plot_loo_pit(checks, ax=ax) is fig
    xs = ax.lines[0].get_xdata()
    assert len(xs) == np.isfinite(checks.pit).sum() + 2 and "y" in ax.get_title()
    with pytest.raises(InputError, match="PIT"):
        plot_loo_pit(type(checks)(yrep_name="y_rep", outcome="y"))
