"""``LooResult.to_arviz()`` after fix-ups: the fixed pointwise elpd, ``pareto_k`` = the k̂ of
stanlogz's own table (PSIS, before fix-ups; issue 43: ArviZ said "all good" where the table
said one was very bad), beside it the pair ``influence_pareto_k`` (the same, loo's name) and
``pareto_k_after`` (loo's convention: k̂ after moment matching / 0 after an exact refit), and
which observations were fixed (and how). All values are exact (built from a hand-made result),
nothing is sampled."""

from __future__ import annotations

import math

import numpy as np
import pytest

from stanlogz import arviz_compat
from stanlogz.crossval.fixups.fixups import FixedPoint
from stanlogz.crossval.observations.observations import Observations
from stanlogz.crossval.psis_loo.result import LooResult, fixed_khat


def _fixed(index: int, method: str, elpd: float, khat: float, after: float | None
           ) -> FixedPoint:
    return FixedPoint(index=index, elpd=elpd, mcse=0.05, method=method, khat=khat,
                      psis_elpd=elpd - 0.4, n_gradient_evals=0, n_evals=10, seconds=0.0,
                      khat_after=after)


def _result() -> LooResult:
    n = 8
    psis = -1.0 - 0.1 * np.arange(n)
    khat = np.array([0.1, 0.2, 0.9, 0.3, 1.4, 0.2, 0.75, 0.1])
    fixed = [_fixed(2, "mm", -2.0, 0.9, 0.35), _fixed(4, "exact", -3.0, 1.4, None)]
    elpd = psis.copy()
    for f in fixed:
        elpd[f.index] = f.elpd
    return LooResult(model="prog", elpd_loo=float(elpd.sum()),
                     se=float(math.sqrt(n * np.var(elpd))), p_loo=1.5, elpd_i=elpd,
                     psis_elpd_i=psis, lppd_i=psis + 0.2, khat=khat, threshold=0.7,
                     n_samples=4000, r_eff=1.0, fix="auto", log_lik_source="log_lik",
                     observations=Observations("N", ("y",), n), fixed=fixed)


def _get(obj, name):
    return obj[name] if arviz_compat.arviz_major() < 1 else getattr(obj, name)


def test_to_arviz_carries_the_fixed_values_and_khat():
    r = _result()
    a = r.to_arviz()
    # the table's k-hat, as r.pareto_k (loo's and ArviZ's name on the result) reads it
    np.testing.assert_array_equal(np.ravel(_get(a, "pareto_k")), r.khat)
    np.testing.assert_array_equal(np.ravel(_get(a, "pareto_k")), r.pareto_k)
    # loo: after moment matching the k-hat of the matched ratios, 0 after an exact refit
    np.testing.assert_array_equal(np.ravel(_get(a, "pareto_k_after")),
                                  [0.1, 0.2, 0.35, 0.3, 0.0, 0.2, 0.75, 0.1])
    np.testing.assert_array_equal(np.ravel(_get(a, "influence_pareto_k")), r.khat)
    np.testing.assert_array_equal(np.ravel(_get(a, "fixed")),
                                  [False, False, True, False, True, False, False, False])
    assert list(np.ravel(_get(a, "fix_method"))) == ["", "", "mm", "", "exact", "", "", ""]
    loo_i = np.ravel(_get(a, "loo_i" if arviz_compat.arviz_major() < 1 else "elpd_i"))
    np.testing.assert_array_equal(loo_i, r.elpd_i)
    assert loo_i[2] == -2.0 and loo_i[4] == -3.0
    # observation 7 (k-hat 0.75) was not fixed: the object still warns
    assert bool(_get(a, "warning"))


def test_arviz_compare_reads_the_fixed_object():
    az = arviz_compat.arviz()
    a = _result().to_arviz()
    other = _result()
    other.elpd_i = other.elpd_i - 0.5
    other.elpd_loo = float(other.elpd_i.sum())
    table = az.compare({"a": a, "b": other.to_arviz()})
    assert list(table.index) == ["a", "b"]
    # best − b in ArviZ 0.x, b − best in arviz-stats 1.x
    assert float(table.loc["b", "elpd_diff"]) == pytest.approx(
        arviz_compat.compare_diff_sign() * 0.5 * 8)


def test_fixed_khat_follows_the_observation_index():
    # a result whose arrays cover observations 10, 3, 7 (as after subsampling)
    k, methods = fixed_khat(np.array([0.9, 0.2, 1.2]), np.array([10, 3, 7]),
                            [_fixed(7, "mm", -1.0, 1.2, float("nan")),
                             _fixed(10, "ups", -1.0, 0.9, None),
                             _fixed(5, "exact", -1.0, 0.9, None)])  # not in the arrays
    np.testing.assert_array_equal(k, [0.0, 0.2, 0.0])
    assert list(methods) == ["ups", "", "mm"]


def test_arviz_counts_equal_the_tables():
    """ArviZ's k̂ bands (good <= good_k < bad <= 1 < very bad) over the object's ``pareto_k``
    give the counts of stanlogz's table: 0.9 and 0.75 bad, 1.4 very bad, 5 good."""
    r = _result()
    a = r.to_arviz()
    k = np.ravel(_get(a, "pareto_k"))
    good_k = float(_get(a, "good_k"))
    assert good_k == r.threshold
    counts = {"good": int(np.sum(k <= good_k)), "bad": int(np.sum((k > good_k) & (k <= 1))),
              "very bad": int(np.sum(k > 1))}
    assert counts == r.khat_counts() == {"good": 5, "bad": 2, "very bad": 1}
    assert "very bad" in str(r)


def test_the_table_names_refits_below_the_threshold_as_checks():
    # two values above k-hat 0.7 recomputed, then one at k-hat 0.3 refit by the self-check:
    # the printed table must not say all three were recomputed "because k-hat > 0.70"
    r = _result()
    assert "recomputed because k-hat > 0.70" in str(r)
    assert "2 observation(s) above the threshold recomputed" in str(r)
    r.fixed = r.fixed + [_fixed(3, "exact", -1.2, 0.3, None)]
    text = str(r)
    assert "recomputed because k-hat > 0.70" not in text
    assert ("(k-hat > 0.70, or below it: moment matched, or refit by the self-check or the "
            "k-hat band's correction)") in text
    assert "3 observation(s) (2 above the threshold, 1 below it refit" in text
    # a value just below the threshold moment matched (its k-hat may read low): named apart
    r.fixed = r.fixed + [_fixed(4, "mm", -1.3, 0.62, 0.2)]
    assert ("4 observation(s) (2 above the threshold, 1 just below it moment matched (k-hat "
            "reads low at these draws), 1 below it refit") in str(r)
