"""Mixture importance sampling as a fix-up (``loo(..., fix="mis")``): only the observations
with k̂ above the threshold take the mixture estimate from one extra run; the others keep their
PSIS values; the Monte Carlo se adds the PSIS part and the mixture part as independent pieces.
Truth: the closed-form LOO of the conjugate normal-mean example with an influential last point.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

import stanlogz
from benchmarks.truths.crossval.truths import normal_mean_loo as _exact
from stanlogz.crossval.fixups.fixups import SUM_SE, FixedPoint, fixed_variance

EX = Path(__file__).resolve().parents[3] / "stan_models" / "examples"
BASE = json.loads((EX / "normal_outlier.data.json").read_text())


def test_mis_fixes_only_the_influential_point(compiled) -> None:
    d = dict(BASE, y=BASE["y"][:-1] + [12.0])  # y10 11 sd from the rest: PSIS k-hat > 1
    m = compiled(EX / "normal_mean.stan", d)
    r = stanlogz.loo(m, fix="mis", chains=4, warmup=300, n_draws=1000, seed=5)
    ex = _exact(d)
    assert r.khat[-1] > r.threshold
    # mis fixes every point from k-hat 0.5 up (one mixture run serves them all)
    assert [f.index for f in r.fixed] == [int(i) for i in np.nonzero(r.khat > 0.5)[0]]
    assert all(f.method == "mis" for f in r.fixed) and not r.unfixed_bad()
    fixed = {f.index for f in r.fixed}
    keep = np.array([i not in fixed for i in range(10)])
    np.testing.assert_array_equal(r.elpd_i[keep], r.psis_elpd_i[keep])
    # benchmarks/mixture_loo.py --mode fixup: ±2 se of the fixed points and of the total cover
    # >= 0.95 at y10 = 12, so the error over se is about N(0, 1) or narrower; 4.5 se then
    # fails with probability < 1e-5 per value
    for f in r.fixed:
        assert abs(f.elpd - ex[f.index]) < 4.5 * f.mcse
    assert abs(r.elpd_loo - ex.sum()) < 4.5 * r.mcse_elpd_loo
    # independent parts add: PSIS values (posterior draws) and the mixture run's joint se
    joint = r.fixed[0].diagnostics[SUM_SE]
    assert math.isclose(r.mcse_elpd_loo, math.sqrt(r.mcse_psis**2 + r.mcse_bias**2 + joint**2),
                        rel_tol=1e-12)
    # the PSIS value it replaced was off by far more than the fixed one's se
    assert abs(r.psis_elpd_i[-1] - ex[-1]) > abs(r.elpd_i[-1] - ex[-1])


def test_no_high_khat_means_no_mixture_run(compiled) -> None:
    d = dict(BASE, y=BASE["y"][:-1] + [1.0])
    m = compiled(EX / "normal_mean.stan", d)
    r = stanlogz.loo(m, fix="mis", chains=2, warmup=200, n_draws=500, seed=6)
    ref = stanlogz.loo(m, fix="none", chains=2, warmup=200, n_draws=500, seed=6)
    assert not r.fixed and r.elpd_loo == ref.elpd_loo and r.mcse_elpd_loo == ref.mcse_elpd_loo


def test_fixed_variance_counts_the_mixture_run_once() -> None:
    def fp(i: float, se: float, joint: float | None) -> FixedPoint:
        return FixedPoint(i, 0.0, se, "mis" if joint else "exact", 1.0, 0.0, 0, 0, 0.0,
                          diagnostics={SUM_SE: joint} if joint else {})

    # two mixture points sharing one run (joint se 0.5), one exact refit (se 0.3)
    pts = [fp(0, 0.4, 0.5), fp(1, 0.2, 0.5), fp(2, 0.3, None)]
    assert math.isclose(fixed_variance(pts), 0.5**2 + 0.3**2)
