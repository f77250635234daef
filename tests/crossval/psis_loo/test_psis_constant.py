"""A log-likelihood constant over the draws (issue 35 item 7): the importance ratios are equal,
so PSIS's weights are uniform and elpd_i = log p(y_i) exactly; k̂ is NaN (posterior's
``pareto_khat`` NA for constant draws, as loo 2.7+ reports) and the point is neither "very bad"
nor warned about."""

from __future__ import annotations

import numpy as np

import stanlogz
from stanlogz.crossval.elpd.psis import psis_loo


def test_constant_log_likelihood_is_exact_and_not_flagged() -> None:
    rng = np.random.default_rng(3)
    ll = rng.normal(-1.0, 0.3, (2000, 20))
    ll[:, 3] = -1.5  # e.g. an observation no parameter touches
    ps = psis_loo(ll)
    assert np.isnan(ps.khat[3]) and np.all(np.isfinite(np.delete(ps.khat, 3)))
    assert abs(ps.elpd_i[3] + 1.5) < 1e-12 and ps.mcse_i[3] < 1e-12
    r = stanlogz.loo(ll)
    assert r.khat_counts() == {"good": 20, "bad": 0, "very bad": 0}
    assert r.unfixed_bad() == [] and not any("k-hat" in w for w in r.warnings)
    assert np.isfinite(r.mcse_elpd_loo)
    a = r.to_arviz()
    assert not bool(a.warning if hasattr(a, "warning") else a["warning"])
