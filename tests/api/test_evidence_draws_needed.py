"""gbs needs enough draws in each half of every chain for its flow: too few are refused before
any sampling, naming the draws per chain that do (posteriordb kronecker_gp's evidence, 438
dimensions, was refused only after 448 s of sampling, with no route)."""

from __future__ import annotations

import time

import pytest

import stanlogz
from stanlogz.errors import InputError
from stanlogz.estimators.common import check_half_size


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
