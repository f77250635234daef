"""The shipped examples run and print numbers that agree with their exact values.

Each example is run as a user would (a subprocess from the repository root). Tolerances: the
printed estimate must lie within 4 reported standard errors (+ a small floor for rounding of the
printed digits) of the closed-form truth — a false failure has probability below 1e-4 when the
standard error is honest.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NUM = r"(-?\d+\.\d+)"


def run_example(name: str) -> str:
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / name)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_evidence_quickstart_matches_exact_log_z_and_bayes_factor():
    out = run_example("evidence_quickstart.py")
    lz, se = map(float, re.search(rf"gbs: log Z = {NUM} ± {NUM}", out).groups())
    assert abs(lz - -13.275816) < 4 * se + 2e-4  # closed form in normal_mean.stan
    row = re.search(rf"regression_null\s+{NUM}\s+{NUM}\s+{NUM}\s+{NUM}", out)
    log_bf, bf_se = float(row[3]), float(row[4])
    assert abs(log_bf - -5.9387) < 4 * bf_se + 2e-4  # exact log BF by quadrature (README)


def test_bdmc_testbed_sandwich_brackets_the_exact_log_z():
    out = run_example("bdmc_testbed.py")
    lo, hi = map(float, re.search(rf"sandwich: \[{NUM}, {NUM}\]", out).groups())
    truth = float(re.search(rf"exact log Z of the simulated data: {NUM}", out)[1])
    lower_se = float(re.search(rf"bdmc lower\s+{NUM}\s+{NUM}", out)[2])
    upper_se = float(re.search(rf"bdmc upper\s+{NUM}\s+{NUM}", out)[2])
    # Stochastic bounds: each may cross the truth only by its Monte Carlo spread.
    assert lo <= truth + 4 * lower_se
    assert hi >= truth - 4 * upper_se
    gbs, gbs_se = map(float, re.search(rf"\n\s+gbs\s+1\s+{NUM}\s+{NUM}", out).groups())
    assert abs(gbs - truth) < 4 * gbs_se + 1e-3


def test_ups_cross_validation_term_matches_exact_value():
    out = run_example("ups_cross_validation.py")
    m = re.search(rf"UPS\s+log p\(y_N \| y_1..N-1\) = {NUM} ± {NUM}", out)
    est, se = float(m[1]), float(m[2])
    truth = float(re.search(rf"exact log p\(y_N \| y_1..N-1\) = {NUM}", out)[1])
    assert abs(est - truth) < 4 * se + 2e-4  # replicates are i.i.d. and unbiased
