"""The self-check's first-stage tests without Stan (crossval.psis_loo.verify_tests.judge): the
Bonferroni max over points at 1.25% and the one-sided test of the checked PSIS values' sum
at 1.25%, on synthetic values whose errors follow their draw influence exactly as PSIS's do
(estimate − truth = the mean of the influence series). Their false-alarm rate when the error
bars are right, their power on values a little too high each, and the one-sided critical value
that holds whatever part of the claimed error is a bias."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from stanlogz.crossval.elpd.psis import influence_mcse
from stanlogz.crossval.fixups.fixups import FixedPoint
from stanlogz.crossval.observations.checked import (
    Verification,
    critical_z,
    one_sided_critical,
)
from stanlogz.crossval.psis_loo.verify import Candidate
from stanlogz.crossval.psis_loo.verify_tests import MAX_ALPHA, SUM_ALPHA, TOTAL_ALPHA, judge

S = 400  # draws of each synthetic run (one chain)


def test_the_one_sided_critical_value_holds_for_any_share_of_bias():
    r = np.linspace(0.0, 10.0, 100001)
    for alpha in (0.025, 0.05, 1e-4):
        c = one_sided_critical(alpha)
        worst = stats.norm.sf(c * np.hypot(1.0, r) - r).max()
        assert worst == pytest.approx(alpha, rel=1e-4)
        assert c > stats.norm.isf(alpha)  # a bias claimed as rms widens the one-sided tail
    assert one_sided_critical(0.025) == pytest.approx(2.2003, abs=1e-3)
    # the two-sided Bonferroni value needs no widening: its worst case is at no bias
    for m in (1, 2, 4, 8):
        c = critical_z(m, MAX_ALPHA)
        two = stats.norm.sf(c * np.hypot(1, r) - r) + stats.norm.cdf(-c * np.hypot(1, r) - r)
        assert two.max() == pytest.approx(two[0], rel=1e-9) and m * two[0] <= MAX_ALPHA + 1e-12
    assert MAX_ALPHA + SUM_ALPHA + TOTAL_ALPHA == pytest.approx(0.05)


def _run(rng, m, shift, rho, bias=0.0, ref_se=3e-4):
    """One synthetic check of ``m`` PSIS values: influence series with correlation ``rho``
    between values, estimate = truth + mean(series) + ``shift`` × its mc se + ``bias`` (the
    bias is claimed as such), references = truth + N(0, ref_se). The values' own mc se is
    0.001 (an influence series of sd 0.02 over S = 400 draws), the references' 0.0003."""
    cov = np.full((m, m), rho) + (1 - rho) * np.eye(m)
    g = rng.multivariate_normal(np.zeros(m), cov, size=S).T * 0.02 / S  # (m, S)
    se = influence_mcse((S * g).T, 1)
    cands, refs = [], {}
    for j in range(m):
        b = bias * se[j]
        est = float(np.mean(S * g[j]) + shift * se[j] + b)
        cands.append((Candidate(j, 0.6, "psis", est, float(math.hypot(se[j], b)), b), "band"))
        refs[j] = FixedPoint(index=j, elpd=float(rng.normal(0.0, ref_se)), mcse=ref_se,
                             method="exact", khat=0.6, psis_elpd=est, n_gradient_evals=0,
                             n_evals=0, seconds=0.0)
    return judge(cands, refs, lambda obs: g[obs], 1)


def _flags(ver: Verification) -> bool:
    return bool(ver.failed or ver.sum_failed)


@pytest.mark.parametrize("rho, bias", [(0.0, 0.0), (0.9, 0.0), (0.0, 0.6)])
def test_false_alarms_at_most_five_percent_where_the_error_bars_are_right(rho, bias):
    # 1000 runs whose errors are what they claim (a claimed bias is a real one, at 0.6 of the
    # mc se: the worst case of the one-sided tail): stage 1's rate is at most 0.025 by
    # construction (its two tests at 0.0125 each; stage 2 has the other 0.025). The bound
    # 0.025 + 4.5 binomial se (0.047) fails with probability < 4e-6 if the rate is 0.025.
    rng = np.random.default_rng(20261128)
    n = 1000
    rate = np.mean([_flags(_run(rng, 4, 0.0, rho, bias)) for _ in range(n)])
    assert rate <= 0.025 + 4.5 * math.sqrt(0.025 * 0.975 / n)


def test_the_sum_catches_values_each_a_little_too_high_that_the_max_misses():
    # four independent values each 1.5 of their mc se too high (z about 1.5 / 1.04 = 1.44
    # each with the references' se): each point's z against 2.96, the sum's (about 2.9)
    # against 2.45. Over 300 runs the sum test flags with probability about
    # P(N(2.9, 1) > 2.45) = 0.67 and the max alone with P(some of 4 N(1.44, 1) > 2.96) = 0.23;
    # the bounds below are 6 binomial se inside those (failure probability < 1e-8 each).
    rng = np.random.default_rng(7)
    vers = [_run(rng, 4, 1.5, 0.0) for _ in range(300)]
    by_sum = np.mean([v.sum_failed for v in vers])
    by_max = np.mean([bool(v.failed) for v in vers])
    assert by_sum >= 0.67 - 6 * math.sqrt(0.67 * 0.33 / 300)
    assert by_max <= 0.23 + 6 * math.sqrt(0.23 * 0.77 / 300)
    assert all(v.sum_points == [0, 1, 2, 3] for v in vers)
    # the same shift on values moving together (rho 0.95): the sum's error is twice as large,
    # so the same shift is no evidence beyond one point's: few flags
    tied = np.mean([bool(v.sum_failed) for v in (_run(rng, 4, 1.5, 0.95) for _ in range(300))])
    assert tied <= 0.5


def test_a_mm_value_is_tested_by_the_max_only():
    g = np.random.default_rng(0).normal(size=(1, S)) * 1e-4
    ref = FixedPoint(index=0, elpd=0.0, mcse=0.01, method="exact", khat=0.6, psis_elpd=0.0,
                     n_gradient_evals=0, n_evals=0, seconds=0.0)
    ver = judge([(Candidate(0, 0.3, "mm", 0.025, 0.01), "random")], {0: ref},
                lambda obs: g[obs], 1)
    assert ver.sum_points == [] and not ver.sum_failed and not ver.failed  # z 1.77 < 2.50
    assert ver.to_dict()["sum_test"] is None
