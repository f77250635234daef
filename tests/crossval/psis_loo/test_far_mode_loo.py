"""A far mode that one observation rules out, in LOO (the self-check) and PSIS-LFO.

``far_mode_one_precise.json``: one precise observation at 6 (sd 0.3) and 18 weak ones (sd 30)
under a prior with modes at 0 and 6. Given all data the posterior sits at 6; without the
precise one it has the mode at 0 as well (weight about 0.5). The draws never visit 0, so every
k̂ reads fine and PSIS (or moment matching) is off by about log 2 = 0.69 nats on that
observation, with an mc se near 0.02: z above 30, no warning, before this check. The
self-check now spends one of its slots on the most informative observation (largest
posterior variance of its log-likelihood); its exact refit starts warm at 6, the probe from
random inits falls to 0, the chains are joined, they disagree, and the refit's se is NA,
so the check cannot pass and mcse_elpd_loo is NA with warnings that say why. The barrier
between the modes is about 28 nats, so which side each chain ends on does not depend on the
seed: nothing here is statistical beyond that.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import stanlogz
from stanlogz.crossval.observations.checked import CheckedPoint, Verification, z_score
from stanlogz.crossval.psis_loo.verify import Candidate, choose

TESTS = Path(__file__).resolve().parents[3] / "stan_models" / "tests"
FAR = TESTS / "kfold_far_mode.stan"
ONE = TESTS / "far_mode_one_precise.json"


def _exact_first() -> float:
    """log p(y_1 | y_-1), closed form: each prior component is conjugate to the normal
    observations, so the evidence of any subset is a two-term mixture of normal marginals."""
    from scipy import stats
    from scipy.special import logsumexp

    d = json.loads(ONE.read_text())
    y, s = np.array(d["y"]), np.array(d["s"])

    def log_z(idx: np.ndarray) -> float:
        cov = np.diag(s[idx] ** 2) + 0.4**2
        return float(logsumexp([np.log(0.5) + stats.multivariate_normal.logpdf(
            y[idx], np.full(idx.size, m), cov) for m in (0.0, 6.0)]))

    return log_z(np.arange(y.size)) - log_z(np.arange(1, y.size))


@pytest.mark.stan
def test_the_self_check_finds_the_far_mode_no_k_hat_sees(compiled) -> None:
    model = compiled(FAR, data=ONE)
    r = stanlogz.loo(model, seed=3, verify=4)
    first = next(p for p in r.verification.points if p.index == 0)
    assert first.why == "most informative" and not first.passed and math.isnan(first.z)
    # what the draws said: one mode's value, about log 2 above the truth
    assert first.estimate - _exact_first() > 0.5
    assert math.isnan(r.mcse_elpd_loo)
    assert any("its chains disagree" in w and "observation 1" in w for w in r.warnings)
    assert any("could not be checked" in w for w in r.warnings)
    assert "MCSE of elpd_loo is NA" in str(r)
    # the refit's joined chains: nearer the truth than one mode (0.69 off); no se to test by
    assert abs(r.elpd_i[0] - _exact_first()) < 0.69


def test_choose_spends_a_slot_on_the_most_informative_observation() -> None:
    cands = [Candidate(i, 0.1, "psis", -1.0, 0.01, var=v)
             for i, v in enumerate([0.01, 0.02, 0.9, 0.01, 0.03])]
    picked = choose(cands, 3, np.random.default_rng(0))
    assert picked[0] == (cands[2], "most informative")
    assert [w for _, w in picked[1:]] == ["random", "random"]
    # one slot left after the band: it stays random, as before
    band = [Candidate(i, 0.6, "psis", -1.0, 0.01, var=0.1) for i in range(5, 8)]
    assert "most informative" not in {w for _, w in choose(band + cands, 3,
                                                           np.random.default_rng(0))}
    # no variances (a fit read without its log-likelihood's spread): random, as before
    plain = [Candidate(i, 0.1, "psis", -1.0, 0.01) for i in range(5)]
    assert {w for _, w in choose(plain, 3, np.random.default_rng(0))} == {"random"}


def test_a_reference_without_a_se_cannot_pass_and_prints_na() -> None:
    assert math.isnan(z_score(-1.0, 0.01, -1.5, float("nan")))
    assert z_score(-1.0, 0.0, -1.5, 0.0) == math.inf  # both exact and different: as before
    p = CheckedPoint(0, "psis", -1.0, 0.01, -1.5, float("nan"), float("nan"), False)
    assert p.z_text == "z NA"
    row = Verification("withheld", [p], 2.0).rows()[0]
    assert row[6] == row[7] == "NA" and row[8] == "FAIL"
    # both exact and different: infinitely far, not NA
    far = CheckedPoint(1, "psis", -1.0, 0.0, -1.5, 0.0, math.inf, False)
    assert far.z_text == "z = +inf"
