"""gbs needs enough draws in each half of every chain for its flow: too few are refused before
any sampling, naming the draws per chain that do (posteriordb kronecker_gp's evidence, 438
dimensions, was refused only after 448 s of sampling, with no route)."""

from __future__ import annotations

import time

import pytest

import stanlogz
from stanlogz.errors import InputError, speaking
from stanlogz.estimators.common import check_half_size


@pytest.fixture(autouse=True)
def _cli_voice():
    """The refusals here are checked as the command line says them (flags); the API's
    keywords are checked in tests/util/test_routes.py."""
    with speaking("cli"):
        yield


def test_the_draws_a_half_needs_are_named_per_chain():
    with pytest.raises(InputError, match=r"each half has 200, need at least 561 for dimension "
                                         r"438; run with --draws 300 \(4 chains\)$"):
        check_half_size(4, 100, 438, 561)
    check_half_size(4, 300, 438, 561)  # 4 x 150 = 600 draws a half: enough


def test_evidence_refuses_too_few_draws_before_sampling(compiled, monkeypatch):
    m = compiled("eight_schools")
    sampled = []
    monkeypatch.setattr("stanlogz.api.obtain_draws",
                        lambda *a, **k: sampled.append(1))  # never reached
    start = time.perf_counter()
    with pytest.raises(InputError, match=r"too few draws: each half has 10, .*--draws \d+"):
        stanlogz.evidence(m, chains=2, warmup=50, n_draws=10, seed=1)
    assert not sampled and time.perf_counter() - start < 60


def test_cli_evidence_refuses_too_few_draws_before_sampling(compiled):
    import subprocess
    import sys
    from pathlib import Path

    compiled("eight_schools")  # the subprocess finds the library in the same cache
    tests = Path(__file__).resolve().parents[2] / "stan_models" / "tests"
    proc = subprocess.run([sys.executable, "-m", "stanlogz", "evidence",
                           str(tests / "eight_schools.stan"), "--data",
                           str(tests / "eight_schools.json"), "--chains", "2", "--draws", "10"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    assert "sampling" not in proc.stderr  # refused before NUTS started
    assert proc.stderr.strip().splitlines()[-1].endswith("run with --draws 50 (2 chains)")
