"""gbs calls overlap poor on the share of the bridge's terms that carry it, not on the Pareto
k̂ of the raw ratios p/q (issue 35, item 7): the bridge's terms are bounded, so tails of p/q that
defeat plain importance sampling leave it exact; and the warning names the option that sets the
flow's layers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from scipy import stats

from benchmarks.truths.bayes_factors.truths import LogisticQuadrature
from stanlogz.draws import sample
from stanlogz.errors import speaking
from stanlogz.estimators.bridge.bridge import (
    OVERLAP_MIN_SHARE,
    bridge_overlap,
    bridge_warnings,
    gbs,
    solve_bridge,
)

T = Path(__file__).resolve().parents[3] / "stan_models" / "tests"


def test_gbs_on_a_skewed_1d_posterior_reports_no_poor_overlap(compiled) -> None:
    # bf_logistic (student-t prior, logistic likelihood): the Gaussian flow's tails are lighter
    # than the skewed posterior's on one side, so k̂ of p/q and q/p is 1.7-7 (the old warning),
    # while the bridge's terms have relative variance ~0.01 and log Z is exact to its se:
    # 4 estimates within 4.5 se of quadrature (failure probability 4 · 6.8e-6 < 1e-4)
    m = compiled("bf_logistic")
    truth = LogisticQuadrature(json.loads((T / "bf_logistic.json").read_text())).log_z(1.0, 1.0)
    old_alarm = 0
    for seed in range(4):
        r = gbs(m, sample(m, None, seed=seed).unconstrained, seed=seed)
        assert abs(r.log_z - truth) <= 4.5 * r.log_z_se, (seed, r.log_z, r.log_z_se, truth)
        assert not any("poor overlap" in w for w in r.warnings), r.warnings
        assert min(r.diagnostics["bridge_overlap_q"], r.diagnostics["bridge_overlap_p"]) > \
            0.9
        old_alarm += min(r.diagnostics["pareto_k_q"], r.diagnostics["pareto_k_p"]) > 0.7
    assert old_alarm >= 2  # what the k̂ rule flagged (seeds 0-3: 4 of 4 when this was written)


def _bridge(d: int, scale: float, seed: int = 0):
    """Optimal bridge between p = N(0, I_d) (2000 draws in 4 chains) and q = N(0, scale² I_d)
    (4000 draws); log r = 0 exactly."""
    rng = np.random.default_rng(seed)
    p = stats.multivariate_normal(np.zeros(d), np.eye(d))
    q = stats.multivariate_normal(np.zeros(d), scale**2 * np.eye(d))
    xp = p.rvs(2000, random_state=rng).reshape(2000, d)
    xq = q.rvs(4000, random_state=rng).reshape(4000, d)
    return solve_bridge((p.logpdf(xp) - q.logpdf(xp)).reshape(4, 500),
                        p.logpdf(xq) - q.logpdf(xq))


def test_poor_overlap_warning_fires_on_a_too_narrow_proposal_and_names_the_option() -> None:
    # q with 0.3 of p's scale in 10-D: ~1.5% of the terms carry the bridge on each side and
    # its log r is 0.23 ± 0.23 (seed 0); with q = p every term is equal and the share is 1;
    # half of p's scale in 10-D is a usable bridge (share ~0.2, log r 0.001 ± 0.056): no alarm
    sol = _bridge(10, 0.3)
    share = bridge_overlap(sol, 4000, 2000)
    assert max(share) < OVERLAP_MIN_SHARE
    for voice, said in (("api", "cap (default 8, chosen on held-out draws): n_layers=16,"),
                        ("cli", "--option n_layers=16")):  # the option as each caller gives it
        with speaking(voice):
            (w,) = [w for w in bridge_warnings(sol, 0.0, 0.0, 0, 0, 4000, "flow", overlap=share)
                    if "poor overlap" in w]
        assert said in w
    same = _bridge(3, 1.0)
    assert bridge_overlap(same, 4000, 2000) == (1.0, 1.0)
    assert not bridge_warnings(same, 0.0, 0.0, 0, 0, 4000, "flow", overlap=(1.0, 1.0))
    usable = _bridge(10, 0.5)
    assert min(bridge_overlap(usable, 4000, 2000)) > OVERLAP_MIN_SHARE


def test_a_short_run_with_good_overlap_is_not_flagged() -> None:
    # 100 posterior draws and 200 proposal draws of the same Gaussian: few terms, all equal
    sol = solve_bridge(np.zeros((2, 50)), np.zeros(200))
    assert not bridge_warnings(sol, 0.0, 0.0, 0, 0, 200, "flow",
                               overlap=bridge_overlap(sol, 200, 100))
