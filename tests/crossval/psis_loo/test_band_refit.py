"""The k̂ band's difference estimator (stanlogz/crossval/psis_loo/band_refit.py): its
unbiasedness and its se formula by exact enumeration of every sample, and its wiring (which
values are refit, corrected or left) with refits whose exact values are known."""

from __future__ import annotations

import itertools
import math
import time

import numpy as np
import pytest

from stanlogz import time_budget
from stanlogz.crossval.fixups.fixups import FixedPoint
from stanlogz.crossval.psis_loo.band_refit import (
    BAND_LOW,
    BIAS_RATES,
    MATERIAL,
    STRATUM_REFITS,
    band_bias,
    band_members,
    correct_band,
    difference_estimate,
)
from stanlogz.errors import InputError


def _point(i: int, elpd: float) -> FixedPoint:
    return FixedPoint(index=i, elpd=elpd, mcse=0.0, method="exact", khat=0.5, psis_elpd=0.0,
                      n_gradient_evals=0, n_evals=0, seconds=0.0)


def test_difference_estimate_unbiased_and_its_se_exact_over_every_sample() -> None:
    # every one of the C(8, 3) = 56 samples: no Monte Carlo, so the identities are exact
    # (to rounding): E[est] = the unsampled values' sum, and E[se²] = Var(est) (s² is unbiased
    # for the population variance under sampling without replacement)
    d = np.array([-0.31, -0.02, 0.0, 0.04, 0.05, 0.11, 0.27, 0.9])
    n, m = d.size, 3
    errs, se2 = [], []
    for s in itertools.combinations(range(n), m):
        est, se = difference_estimate(d[list(s)], n)
        errs.append(est - (d.sum() - d[list(s)].sum()))
        se2.append(se**2)
    errs = np.array(errs)
    assert abs(errs.mean()) < 1e-12
    assert np.mean(errs**2) == pytest.approx(np.mean(se2), rel=1e-12)
    # and the closed form: Var = n² (1 − m/n) S² / m, S² the population variance (ddof 1)
    assert np.mean(errs**2) == pytest.approx(n**2 * (1 - m / n) * d.var(ddof=1) / m, rel=1e-12)


def test_difference_estimate_whole_band_and_bad_input() -> None:
    assert difference_estimate(np.array([0.1, 0.2]), 2) == (0.0, 0.0)
    est, se = difference_estimate(np.array([0.1, 0.3]), 4)
    assert est == pytest.approx(2 * 0.2)
    assert se == pytest.approx(4 * math.sqrt(0.5 * 0.02 / 2))
    with pytest.raises(InputError, match="at least 2"):
        difference_estimate(np.array([0.1]), 5)
    with pytest.raises(InputError, match="band of 1"):
        difference_estimate(np.array([0.1, 0.2]), 1)


def _band_case(n_band: int, offset: np.ndarray | float):
    """40 observations below the band, ``n_band`` in it, 3 above the threshold 0.7; the exact
    value of each is its PSIS value minus ``offset`` (an array over the band, or one value)."""
    rng = np.random.default_rng(3)
    k = np.concatenate([rng.uniform(0.0, BAND_LOW - 0.01, 40),
                        rng.uniform(BAND_LOW, 0.7, n_band), [0.8, 0.9, 1.2]])
    obs = np.arange(k.size)
    psis = rng.normal(-1.0, 0.3, k.size)
    exact = psis.copy()
    exact[40:40 + n_band] -= offset
    calls: list[np.ndarray] = []

    def refit(idx: np.ndarray) -> tuple[list[FixedPoint], list[str]]:
        calls.append(idx)
        return [_point(int(i), float(exact[i])) for i in idx], []

    return obs, k, psis, exact, refit, calls


def test_band_sample_corrects_the_rest_by_its_strata_mean_differences() -> None:
    n_band = 50
    offset = np.linspace(0.0, 0.1, n_band)  # PSIS values too high by 0 to 0.1 each
    obs, k, psis, exact, refit, calls = _band_case(n_band, offset)
    above = [_point(40 + n_band + j, -2.0) for j in range(3)]  # fix-ups above the threshold
    fixed, band = correct_band(obs, k, psis, above, refit, threshold=0.7, refit_seconds=1.0,
                               rng=np.random.default_rng(0))
    assert band is not None and band.status == "corrected" and band.n == n_band
    assert sorted(band.sampled + band.unsampled) == list(range(40, 40 + n_band))
    assert sorted(calls[0].tolist()) == band.sampled
    assert {f.index for f in fixed} == set(band.sampled) | {f.index for f in above}
    # each stratum by hand: its members, its sample's mean difference, its se
    var, total = 0.0, 0.0
    for st in band.strata:
        lo, hi = st["khat"]
        members = [o for o in range(40, 40 + n_band) if lo <= k[o] <= hi
                   and not (hi < 0.7 and k[o] == hi)]
        assert st["n"] == len(members) and st["m"] == min(len(members), STRATUM_REFITS)
        sampled = [o for o in band.sampled if o in members]
        diff = exact[sampled] - psis[sampled]
        assert st["mean_difference"] == pytest.approx(diff.mean())
        for o in members:
            if o not in sampled:
                assert band.shifts[o] == pytest.approx(diff.mean())
        n, m = len(members), len(sampled)
        var += 0.0 if m == n else n**2 * (1 - m / n) * diff.var(ddof=1) / m
        total += (n - m) * diff.mean()
    assert band.se == pytest.approx(math.sqrt(var)) and band.correction == pytest.approx(total)
    # a constant offset is recovered exactly, with se 0: the corrected band sums to the exact
    obs, k, psis, exact, refit, _ = _band_case(n_band, 0.05)
    fixed, band = correct_band(obs, k, psis, [], refit, threshold=0.7, refit_seconds=1.0,
                               rng=np.random.default_rng(1))
    total = (sum(f.elpd for f in fixed) + psis[band.unsampled].sum()
             + sum(band.shifts.values()))
    assert total == pytest.approx(exact[40:40 + n_band].sum(), abs=1e-10)
    assert band.se == pytest.approx(0.0, abs=1e-12)


def test_small_band_is_refit_whole_and_costly_band_is_left() -> None:
    obs, k, psis, exact, refit, calls = _band_case(7, 0.2)
    fixed, band = correct_band(obs, k, psis, [], refit, threshold=0.7, refit_seconds=1.0,
                               rng=np.random.default_rng(0))
    assert band.status == "refit" and band.unsampled == [] and band.se == 0.0
    assert sorted(f.index for f in fixed) == list(range(40, 47))
    calls.clear()
    fixed, band = correct_band(obs, k, psis, [], refit, threshold=0.7, refit_seconds=1e4,
                               rng=np.random.default_rng(0))
    assert band.status == "skipped" and fixed == [] and calls == []
    assert "would take about" in band.note and "verify=4" in band.note
    # under a spent time budget the line says so (it read "more than -0 s")
    with time_budget(1e-3):
        time.sleep(0.01)
        _, band = correct_band(obs, k, psis, [], refit, threshold=0.7, refit_seconds=1.0,
                               rng=np.random.default_rng(0))
    assert "more than the time budget has left (0 s)" in band.note, band.note
    # asked for (an explicit verify=K): the cost does not stop it
    fixed, band = correct_band(obs, k, psis, [], refit, threshold=0.7, refit_seconds=1e4,
                               rng=np.random.default_rng(0), forced=True)
    assert band.status == "refit" and len(fixed) == 7
    # values already fixed (e.g. by the self-check) are not in the band
    assert band_members(obs, k, [_point(41, 0.0)], BAND_LOW, 0.7).tolist() == [40, *range(42, 47)]
    # where the band's estimated bias (band_bias) is at most MATERIAL x the total's claimed
    # mc se, the band is not touched
    mc = np.full(k.size, 0.01)
    small = MATERIAL * 1.0 / band_bias(mc[40:47], k[40:47])  # the claimed se at the boundary
    calls.clear()
    assert correct_band(obs, k, psis, [], refit, threshold=0.7, refit_seconds=1.0,
                        rng=np.random.default_rng(0), psis_mcse=mc,
                        claimed=1.0 / small + 1e-9) == ([], None)
    assert calls == []
    _, band = correct_band(obs, k, psis, [], refit, threshold=0.7, refit_seconds=1.0,
                           rng=np.random.default_rng(0), psis_mcse=mc, claimed=0.5 / small)
    assert band.status == "refit"
    # no band: nothing done
    none = correct_band(obs[:40], k[:40], psis[:40], [], refit, threshold=0.7,
                        refit_seconds=1.0, rng=np.random.default_rng(0))
    assert none == ([], None)


def test_band_bias_weighs_each_value_by_the_share_of_its_khat() -> None:
    # by hand: below the first edge 0, then each stratum's share times the value's mc se
    edges = [e for e, _ in BIAS_RATES]
    k = np.array([0.1, edges[0], 0.35, 0.45, 0.55, 0.65, 0.7])
    mc = np.array([5.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    share = dict(BIAS_RATES)
    want = (share[0.2] * 1.0 + share[0.3] * 2.0 + share[0.4] * 3.0 + share[0.5] * 4.0
            + share[0.6] * (5.0 + 6.0))
    assert band_bias(mc, k) == pytest.approx(want, rel=1e-12)
    # the shares grow with k-hat (PSIS's bias does: benchmarks/band_bias_coverage.py --rates)
    assert np.all(np.diff([r for _, r in BIAS_RATES]) > 0)


def test_a_band_left_as_psis_gives_it_carries_its_bias_estimate() -> None:
    # the refits cost more than BAND_SECONDS: no value changes, and the band's estimated
    # bias (every band value's) is the BandCorrection's bias, which loo adds to the mc se
    obs, k, psis, _, refit, calls = _band_case(30, 0.1)
    mc = np.full(k.size, 0.05)
    fixed, band = correct_band(obs, k, psis, [], refit, threshold=0.7, refit_seconds=1e4,
                               rng=np.random.default_rng(0), psis_mcse=mc, claimed=0.01)
    assert band.status == "skipped" and fixed == [] and calls == []
    assert band.bias == pytest.approx(band_bias(mc[40:70], k[40:70]), rel=1e-12)
    assert f"{band.bias:+.2f}, in mcse_elpd_loo" in band.note
    assert band.to_dict()["bias"] == band.bias
    # without the pointwise mc se the bias is unknown: 0, and the note says it is not in it
    _, band = correct_band(obs, k, psis, [], refit, threshold=0.7, refit_seconds=1e4,
                           rng=np.random.default_rng(0))
    assert band.bias == 0.0 and "not in mcse_elpd_loo" in band.note


def test_refits_that_stop_early_keep_their_exact_values_and_say_so() -> None:
    # the budget (or a failure) ends the refits after 3 of the sample: those 3 exact values
    # stay in the fixed points, the rest of the band keeps PSIS's values with the warning
    obs, k, psis, exact, refit, _ = _band_case(50, 0.05)

    def stops(idx: np.ndarray) -> tuple[list[FixedPoint], list[str]]:
        got, _ = refit(idx[:3])
        return got, ["the time budget ended the refits"]

    mc = np.full(k.size, 0.05)
    fixed, band = correct_band(obs, k, psis, [], stops, threshold=0.7, refit_seconds=1.0,
                               rng=np.random.default_rng(0), psis_mcse=mc, claimed=0.01)
    assert band.status == "skipped" and band.shifts == {} and band.correction == 0.0
    assert len(fixed) == 3 and band.sampled == sorted(f.index for f in fixed)
    assert all(f.elpd == exact[f.index] for f in fixed)
    assert "47 PSIS value(s)" in band.note and "3 of the" in band.note
    assert "the time budget ended the refits" in band.note
    # the bias is that of the 47 values left, not of the 3 refit
    left = [o for o in range(40, 90) if o not in band.sampled]
    assert band.bias == pytest.approx(band_bias(mc[left], k[left]), rel=1e-12)


def test_values_moment_matched_below_the_threshold_stay_in_the_band() -> None:
    # radon_county_intercept, seed 1: fix="auto" moment-matched 35 values with k-hat 0.45-0.70
    # (their k-hat may read low) and the band left them out, so nothing corrected them: the
    # total came out +1.18 above the exact value (z +2.9). They stay in the band with their
    # matched values: a sampled one is refit (its matched value replaced), an unsampled one
    # gets its stratum's mean difference of exact minus the estimate it holds.
    n_band = 40
    obs, k, psis, exact, refit, calls = _band_case(n_band, 0.0)
    band_idx = np.arange(40, 40 + n_band)
    matched = band_idx[k[band_idx] > 0.45]
    # each matched value is 0.3 above its exact value, whatever its PSIS value was
    mm = [FixedPoint(index=int(i), elpd=float(exact[i] + 0.3), mcse=0.01, method="mm",
                     khat=float(k[i]), psis_elpd=float(psis[i]), n_gradient_evals=0,
                     n_evals=0, seconds=0.0) for i in matched]
    psis[matched] -= 5.0  # the PSIS values the matching replaced: no longer what is corrected
    assert set(matched.tolist()) <= set(band_members(obs, k, mm, BAND_LOW, 0.7).tolist())
    fixed, band = correct_band(obs, k, psis, list(mm), refit, threshold=0.7, refit_seconds=1.0,
                               rng=np.random.default_rng(2))
    assert band.n == n_band
    # one value per observation: a refit replaced the matched value it sampled
    assert len({f.index for f in fixed}) == len(fixed)
    by_index = {f.index: f for f in fixed}
    for i in band.sampled:
        assert by_index[i].method == "exact" and by_index[i].elpd == exact[i]
    # the top stratum (0.5-0.7) holds matched values only: its mean difference is -0.3, and the
    # unsampled matched values there end at their exact values
    top = next(st for st in band.strata if st["khat"][0] == 0.5)
    assert top["mean_difference"] == pytest.approx(-0.3)
    for i in matched:
        if i not in band.sampled and k[i] > 0.5:
            assert by_index[i].method == "mm"
            assert by_index[i].elpd + band.shifts[int(i)] == pytest.approx(exact[i])
