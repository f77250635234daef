"""Moment matching keeps what is done: a progress line per accepted map, a time budget after
which the remaining high-k̂ observations keep their PSIS values, and Ctrl-C returning the
points matched so far (normal_mean with two outlying observations: PSIS k̂ > 0.7 on both)."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import numpy as np
import pytest

from stanlogz.cli import main
from stanlogz.crossval.fixups.moment_match import moment_match
from stanlogz.errors import InputError

EX = Path(__file__).resolve().parents[3] / "stan_models" / "examples"
BASE = json.loads((EX / "normal_outlier.data.json").read_text())
DATA = dict(BASE, y=BASE["y"][:-2] + [9.0, 12.0])
loo_module = importlib.import_module("stanlogz.crossval.psis_loo.loo")  # the name loo is a function


def _loo(m, **kw):
    # k_threshold 0.01: (nearly) every observation is moment-matched: several points
    return loo_module.loo(m, DATA, fix="mm", seed=5, chains=2, warmup=300, n_draws=500,
                          k_threshold=0.01, **kw)


def test_budget_keeps_psis_values_and_says_so(compiled) -> None:
    m = compiled(EX / "normal_mean.stan", DATA)
    r = _loo(m, mm_budget=1e-9)  # spent before the first point
    assert not r.fixed and len(r.unfixed_bad()) == int(np.sum(r.khat > 0.01)) >= 2
    np.testing.assert_array_equal(r.elpd_i, r.psis_elpd_i)
    assert any("budget of 1e-09 s ran out after 0 of" in w for w in r.warnings)
    assert any("Pareto k-hat above 0.01" in w for w in r.warnings)  # the k-hat warning stays


def test_progress_per_map_and_interrupt_keeps_the_matched(compiled, monkeypatch) -> None:
    m = compiled(EX / "normal_mean.stan", DATA)
    lines: list[str] = []
    full = _loo(m, progress=lines.append)
    assert len(full.fixed) == int(np.sum(full.khat > 0.01)) >= 2
    assert any("map 1 (" in ln and "-> k-hat" in ln for ln in lines)
    real, calls = loo_module._moment_matched, []

    def second_interrupts(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(loo_module, "_moment_matched", second_interrupts)
    r = _loo(m)
    # the first point is kept exactly as the uninterrupted run matched it (same draws, seed)
    assert [f.index for f in r.fixed] == [full.fixed[0].index]
    assert r.fixed[0].elpd == full.fixed[0].elpd
    assert any(w.startswith("interrupted during moment matching: 1 of") for w in r.warnings)
    assert r.unfixed_bad() == [f.index for f in full.fixed[1:]]


def test_deadline_in_the_past_tries_no_map() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 200, 3))
    ll = lambda t: -0.5 * ((t[:, 0] - 3.0) / 0.3) ** 2  # noqa: E731 - far in the tail
    lp = lambda t: -0.5 * np.sum(t**2, axis=1)  # noqa: E731
    mm = moment_match(x, lp, ll, index=0, r_eff=1.0, k_threshold=0.7, deadline=0.0)
    assert mm.transformations == [] and mm.elpd == mm.psis_elpd


@pytest.mark.parametrize("argv, match", [
    (["--mm-budget", "-1"], "mm_budget must be positive"),
    (["--mm-budget", "5", "--fix", "exact"], "--fix auto or mm"),
])
def test_cli_budget_refusals(argv, match, capsys) -> None:
    rc = main(["loo", str(EX / "normal_mean.stan"), "--data",
               str(EX / "normal_outlier.data.json"), *argv])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and match in err
    with pytest.raises(InputError, match="mm_budget must be"):
        from stanlogz.crossval.fixups.mm_points import check_budget

        check_budget("soon")


def test_streamed_moments_equal_the_direct_formulas() -> None:
    """The row-block moments and map (no (S, dim) temporaries) are the plain formulas, to
    rounding, also when S is not a multiple of the block."""
    from stanlogz.crossval.fixups.moment_match import ROW_BLOCK, _Affine, _means, _spreads

    rng = np.random.default_rng(3)
    x = rng.standard_normal((3 * ROW_BLOCK + 17, 40)) * 2.0 + 1.0
    w = rng.random(x.shape[0])
    w /= w.sum()
    mean, mean_w = _means(x, w)
    np.testing.assert_allclose(mean, x.mean(axis=0), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(mean_w, w @ x, rtol=1e-12, atol=1e-12)
    var, var_w = _spreads(x, w, mean, mean_w)
    np.testing.assert_allclose(var, np.mean((x - mean) ** 2, axis=0), rtol=1e-12)
    np.testing.assert_allclose(var_w, w @ (x - mean_w) ** 2, rtol=1e-12)
    a = _Affine(rng.random(40) + 0.5, rng.standard_normal(40))
    np.testing.assert_allclose(a.apply(x), x * a.linear + a.offset, rtol=1e-14)
    np.testing.assert_allclose(a.inverse(a.apply(x)), x, atol=1e-12)
