"""The heavy-tail diagnostic of UPS / CV replicates (their CLT interval needs finite variance)."""

from __future__ import annotations

import numpy as np

from stanlogz.estimators.ups.ups import replicate_tail_k, tail_warnings


def test_tail_k_flags_infinite_variance_and_passes_normal_replicates():
    rng = np.random.default_rng(7)
    # Pareto tail with index 0.8 (infinite mean and variance, true k = 1.25) vs normal tails:
    # over 300 seeds k-hat had mean 1.21, sd 0.16 (heavy) and mean -0.06, sd 0.07 (normal), so
    # the bounds 0.5 and 0.35 sit 4.5 and 5.9 sds away: failure probability < 1e-5.
    heavy = rng.pareto(0.8, size=4000) * rng.choice([-1.0, 1.0], size=4000)
    light = rng.normal(size=4000)
    k_heavy, k_light = replicate_tail_k(heavy), replicate_tail_k(light)
    assert k_heavy > 0.5 and k_light < 0.35
    assert tail_warnings(k_heavy) and "heavy-tailed" in tail_warnings(k_heavy)[0]
    assert tail_warnings(k_light) == []
    assert np.isnan(replicate_tail_k(light[:10])) and tail_warnings(float("nan")) == []
