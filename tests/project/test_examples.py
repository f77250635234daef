"""The shipped examples run and print numbers that agree with their exact values.

Each example is run as a user would (a subprocess from the repository root). Tolerances: the
printed estimate must lie within the larger of 4.5 reported standard errors and a floor of 5 times
the estimator's actual sd (+ 1e-4 for the rounding of the printed digits), and the reported se
must lie below a cap. The se of one run can be tiny by chance, so the floor carries the guarantee:
failing needs an error beyond 5 sd (P < 1e-6 for Gaussian errors). Each sd and cap was measured
by rerunning the example's computation with 40-200 other seeds (numbers below); every cap is at
least 15 sd of the se above its mean, so each test fails with probability below 1e-4.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NUM = r"(-?\d+\.\d+)"
# A table cell (stanlogz.report.output): numbers below 1e-3 are printed as "%.4g", e.g. "5.824e-05".
CELL = r"(-?\d+(?:\.\d+)?(?:e[-+]?\d+)?)"
Z_TOL = 4.5
PRINTED = 1e-4  # rounding of two printed 4-decimal numbers


def run_example(name: str) -> str:
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / name)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_evidence_quickstart_matches_exact_log_z_and_bayes_factor():
    out = run_example("evidence_quickstart.py")
    lz, se = map(float, re.search(rf"gbs: log Z = {NUM} ± {NUM}", out).groups())
    # gbs with default NUTS settings, 200 seeds: error sd 0.0011 (floor 0.0055), se 0.0009 +-
    # 0.0005 (max 0.0027)
    assert abs(lz - -13.275816) < max(Z_TOL * se, 0.0055) + PRINTED  # closed form
    assert se < 0.01
    row = re.search(rf"regression_null\s+{CELL}\s+{CELL}\s+{CELL}\s+{CELL}", out)
    log_bf, bf_se = float(row[3]), float(row[4])
    # compare() with defaults, 80 seeds: error sd 0.0046 (floor 0.023), se 0.0049 +- 0.0005 (max
    # 0.0061)
    assert abs(log_bf - -5.9387) < max(Z_TOL * bf_se, 0.023) + PRINTED  # exact log BF (README)
    assert bf_se < 0.02


def test_bdmc_testbed_sandwich_brackets_the_exact_log_z():
    out = run_example("bdmc_testbed.py")
    lo, hi = map(float, re.search(rf"sandwich: \[{NUM}, {NUM}\]", out).groups())
    truth = float(re.search(rf"exact log Z of the simulated data: {NUM}", out)[1])
    lower_se = float(re.search(rf"bdmc lower\s+{CELL}\s+{CELL}", out)[2])
    upper_se = float(re.search(rf"bdmc upper\s+{CELL}\s+{CELL}", out)[2])
    # Stochastic bounds: each may cross the truth only by its Monte Carlo spread. With 16 AIS
    # chains (bound - truth) / spread is close to a t statistic with 15 degrees of freedom:
    # P(t_15 > 5.5) = 3e-5 per bound (60 seeds: never beyond 2.7 spreads).
    assert lo <= truth + 5.5 * lower_se + PRINTED
    assert hi >= truth - 5.5 * upper_se - PRINTED
    # The sandwich is narrow: over 60 seeds the gap was 0.003 +- 0.015 nats (range -0.023 to
    # 0.051), and each bound 0.00 +- 0.01 from the truth; 0.08 is 5 sd of the gap.
    assert abs(hi - lo) < 0.08
    gbs, gbs_se = map(float, re.search(rf"\n\s+gbs\s+1\s+{CELL}\s+{CELL}", out).groups())
    # 60 seeds: error sd 0.0005 (floor 0.0026), se 0.0005 +- 0.00024 (min 6e-5, max 0.001)
    assert abs(gbs - truth) < max(Z_TOL * gbs_se, 0.0026) + PRINTED
    assert gbs_se < 0.005


def test_ups_cross_validation_term_matches_exact_value():
    out = run_example("ups_cross_validation.py")
    m = re.search(rf"UPS\s+log p\(y_N \| y_1..N-1\) = {NUM} ± {NUM}", out)
    est, se = float(m[1]), float(m[2])
    truth = float(re.search(rf"exact log p\(y_N \| y_1..N-1\) = {NUM}", out)[1])
    # replicates are i.i.d. and unbiased; 40 seeds: error sd 0.0043 (floor 0.022), se 0.0043 +-
    # 0.0005 (max 0.0054)
    assert abs(est - truth) < max(Z_TOL * se, 0.022) + PRINTED
    assert se < 0.015
    # cv under a 5 s budget: the splits that fit (30 or more of 100,000, flagged), or, on a
    # machine too loaded for 30, a refusal naming a budget
    m = re.search(r"cv under 5 s: \S+ ± \S+ from (\d+) splits \(budget_stop (.*)\)", out)
    if m is None:
        assert re.search(r"cv under 5 s refused: .*run with stanlogz.time_budget", out), out
    else:
        assert 30 <= int(m[1]) < 100_000 and "'replicates'" in m[2], out
