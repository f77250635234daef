"""LOO's self-check on Stan programs (loo(verify=K), --verify K): it flags issue 44's case 1
(PSIS on a log_lik conditional on one latent per observation, values at k̂ 0.3–0.7 several of
their mc se too high) and repairs the answer to the exact one, it passes a program whose PSIS
error bars are right, and ``--verify 0`` turns it off.

Failure probabilities, from benchmarks/loo_verify.py (docs/features/self-check.md): on case 1
with these settings the check flagged 29 of 30 seeds (the worst checked z: median 7.3, 10% below
4.7, against 2.50), and the repaired elpd_loo was within 3 of its mc se of the exact one in 30
of 30. The seed used here flags with z 6.2 and 11.3, a margin that a changed random stream is
unlikely to erase (a fresh seed would fail this test with probability about 0.03, the measured
miss rate). On normal_mean the check passed 20 of 20 seeds (false-alarm rate ≤ 0.05 by design);
this seed's largest |z| is 0.9 against 2.50, and the elpd_loo it leaves is identical to the one
without the check. The fix="mm" run uses fewer draws to stay short: its z (5.8, 8.5, 7.1) are far
above 2.50; it tests the withheld path, not the power.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

import stanlogz
from stanlogz.cli import main
from stanlogz.crossval.observations.checked import critical_z
from stanlogz.crossval.psis_loo import verify_tests
from tests.conftest import MODELS

TESTS = MODELS / "tests"
EXAMPLES = MODELS / "examples"
CASE1 = TESTS / "selfcheck_latent.stan"
NORMAL = EXAMPLES / "normal_mean.stan"


def _case1_truth() -> float:
    """Σ log p(y_i) (the observations are independent): p(y_i) = 2 N(y_i | 0, s)
    Φ(y_i / (σ s)), s = sqrt(1 + σ²)."""
    d = json.loads(CASE1.with_suffix(".json").read_text())
    y, sig = np.asarray(d["y"]), d["sigma"]
    s = np.sqrt(1 + sig**2)
    return float(np.sum(np.log(2) + stats.norm.logpdf(y, 0, s)
                        + stats.norm.logcdf(y / (sig * s))))


@pytest.fixture
def own_refits_capped(monkeypatch):
    """The own-parameter refits at their count cap alone (MAX_OWN_REFITS): case 1's 15 values,
    each alone in moving its latent, are otherwise all refit exactly where their refits are
    cheap (loo._own_refits_fit), which leaves the self-check nothing to check."""
    import stanlogz.crossval.psis_loo.loo as loo_module
    from stanlogz.crossval.psis_loo.own_latent import MAX_OWN_REFITS

    monkeypatch.setattr(loo_module, "_own_refits_fit", lambda n, seconds: n <= MAX_OWN_REFITS)


@pytest.mark.stan
@pytest.mark.slow  # about 15 exact refits (the repair), ~20 s
def test_case1_is_flagged_and_repaired_to_the_exact_answer(compiled, own_refits_capped):
    m = compiled(CASE1)
    # 12 of the 15 values checked (Bonferroni |z| > 2.87): at auto's K = 4 the check flagged 29
    # of 30 runs (benchmarks/loo_verify.py) and its one miss had a largest z of 2.48, with the
    # values at k-hat 0.3-0.7 biased by 4-9 of their mc se (median largest z 7.3); the test
    # fails only if all 12 checked values stay under 2.87 and the repair then misses, which
    # no run came near (failure probability far below 1e-4 on these per-point z)
    r = stanlogz.loo(m, seed=1, log_lik="log_lik", verify=12)
    v = r.verification
    truth = _case1_truth()
    assert v is not None and v.status == "repaired" and v.failed
    # before the check the answer was far off (PSIS biased upward); after, exact within 3 mcse
    assert v.elpd_before - truth > 5 * r.mcse_elpd_loo
    assert abs(r.elpd_loo - truth) <= 3 * r.mcse_elpd_loo
    assert any(w.startswith("self-check") and "were refit too" in w for w in r.warnings)
    assert 0 < v.share < 1 and v.seconds > 0
    printed = repr(r)
    assert "Self-check (repaired" in printed and "FAIL" in printed


@pytest.mark.stan
def test_case1_without_refits_withholds_the_mcse(compiled):
    m = compiled(CASE1)
    # fewer draws to keep it short: this seed's z are 5.8, 8.5 and 7.1 against 2.50
    r = stanlogz.loo(m, seed=2, log_lik="log_lik", verify=4, fix="mm", chains=2, warmup=300,
                     n_draws=500)
    v = r.verification
    assert v.status == "withheld" and np.isnan(r.mcse_elpd_loo)
    assert "self-check" in r.mcse_na_reason() and "MCSE of elpd_loo is NA" in repr(r)
    assert r.to_dict()["mcse_elpd_loo"] is None


@pytest.mark.stan
def test_a_program_whose_error_bars_hold_passes_unchanged(compiled, monkeypatch):
    m = compiled(NORMAL, EXAMPLES / "normal_mean.data.json")
    # the check at family-wise level 1e-4 (the three tests at 1e-4 / 3 each: |z| > 4.6 for 4
    # points, the sum one-sided above 4.2, the total above 4.1): where the error bars are
    # right it passes with probability >= 1 - 1e-4 (the test's own failure probability)
    for name in ("MAX_ALPHA", "SUM_ALPHA", "TOTAL_ALPHA"):
        monkeypatch.setattr(verify_tests, name, 1e-4 / 3)
    r = stanlogz.loo(m, seed=1, verify=4)
    off = stanlogz.loo(m, seed=1, verify=0)
    v = r.verification
    assert v.status == "passed" and len(v.points) == 4 and not v.failed
    assert all(abs(p.z) <= v.critical_z for p in v.points)
    assert off.verification is None
    assert r.elpd_loo == off.elpd_loo and r.mcse_elpd_loo == off.mcse_elpd_loo
    assert "self-check: 4 value(s) recomputed by exact refits agree" in repr(r)


@pytest.mark.stan
def test_cli_flag_and_json_keys(compiled, capsys):
    compiled(NORMAL, EXAMPLES / "normal_mean.data.json")
    base = ["loo", str(NORMAL), "--data", str(EXAMPLES / "normal_mean.data.json"), "--seed", "1",
            "--json", "--quiet"]
    assert main(base + ["--verify", "0"]) == 0
    assert json.loads(capsys.readouterr().out)["verification"] is None
    assert main(base + ["--verify", "1"]) == 0
    v = json.loads(capsys.readouterr().out)["verification"]
    assert v["status"] == "passed" and len(v["points"]) == 1
    assert {"observation", "route", "estimate", "mcse", "reference", "reference_se", "z",
            "passed", "khat", "why"} <= set(v["points"][0])
    assert {"critical_z", "alpha", "seconds", "share", "note", "elpd_before"} <= set(v)
    # one point: the two-sided normal quantile at 1.25% (the sum test has another 1.25%, the
    # second stage 2.5%)
    assert v["critical_z"] == pytest.approx(critical_z(1, 0.0125), abs=1e-9)
    assert v["critical_z"] == pytest.approx(2.497705, abs=1e-6)
    assert v["sum_test"] is None or set(v["sum_test"]) == {"observations", "z", "critical_z",
                                                          "passed"}


@pytest.mark.stan
def test_cli_bad_verify_is_one_line(capsys):
    rc = main(["loo", str(NORMAL), "--data", str(EXAMPLES / "normal_mean.data.json"),
               "--verify", "some"])
    err = capsys.readouterr().err
    assert rc != 0 and "--verify takes auto or a number" in err and "Traceback" not in err


def test_verify_refused_where_it_cannot_refit():
    ll = np.random.default_rng(0).normal(-1.0, 0.3, size=(4, 100, 12))
    with pytest.raises(stanlogz.InputError, match="verify refits observations"):
        stanlogz.loo(ll, verify=3)
    assert stanlogz.loo(ll).verification is None  # auto: nothing to refit, nothing said


@pytest.mark.stan
def test_case1_by_default_refits_every_value_alone_in_moving_its_latent(compiled):
    # each of case 1's 15 observations alone moves its latent; their refits are cheap, so all
    # are refit exactly (no PSIS value is left for the self-check to doubt) and the answer is
    # the exact one within its mc se: |z| <= 4 fails with probability 6e-5 when the se holds
    r = stanlogz.loo(compiled(CASE1), seed=1, log_lik="log_lik", verify=0)
    assert sorted(f.index for f in r.fixed) == list(range(15))
    assert all(f.method != "mm" for f in r.fixed)
    assert any("refit exactly" in w for w in r.warnings)
    assert np.isfinite(r.mcse_elpd_loo)
    assert abs(r.elpd_loo - _case1_truth()) <= 4 * r.mcse_elpd_loo
