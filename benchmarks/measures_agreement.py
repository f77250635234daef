"""Agreement of stanlogz's LOO predictive measures with arviz-stats on shared inputs.

arviz-stats is not a dependency of stanlogz (ArviZ 0.x on Python 3.11 does not bring it), so
this check is a script, not a test: install arviz-stats (``pip install arviz-stats``, or unpack
its wheel onto PYTHONPATH) and run

    python3 -m benchmarks.measures_agreement

It prints the largest difference per quantity between ``arviz_stats.base.array_stats``
(``loo_score`` for CRPS/SCRPS pointwise; ``metrics`` for MAE, MSE, RMSE, accuracy and balanced
accuracy of the LOO predictive mean) and :func:`stanlogz.crossval.checks.measures.loo_measures`
on the same PSIS log weights. Estimates agree to rounding; se's differ by convention where
noted (arviz-stats divides by N, loo and stanlogz by N − 1; arviz-stats' balanced-accuracy se
is its own formula).
"""

from __future__ import annotations

import numpy as np

from stanlogz.crossval.checks.measures import loo_measures
from stanlogz.crossval.checks.predictive import loo_log_weights


def main() -> None:
    try:
        from arviz_stats import __version__
        from arviz_stats.base import array_stats
    except ImportError:
        raise SystemExit("arviz-stats is not importable: pip install arviz-stats (or put its "
                         "unpacked wheel on PYTHONPATH)") from None
    rng = np.random.default_rng(8)
    s, n = 800, 30
    theta = rng.normal(0.4, 0.3, size=s)
    y = rng.normal(0.5, 1.2, size=n) + 5.0          # positive: see the note on CRPS below
    ll = -0.5 * (y[None] - 5.0 - theta[:, None]) ** 2
    lw = loo_log_weights(ll)
    yr = 5.0 + theta[:, None] + rng.normal(size=(s, n))
    ms = {m.name: m for m in loo_measures(lw, y, yr, ["crps", "scrps", "mae", "mse", "rmse"])}
    print(f"arviz-stats {__version__}; N = {n}, S = {s}")
    for kind in ("crps", "scrps"):
        az = np.array([float(np.asarray(array_stats.loo_score(
            yr[:, i][None, :], y[i], lw[:, i][None, :], kind=kind)).ravel()[0])
            for i in range(n)])
        print(f"{kind:6s} pointwise max |diff| {np.max(np.abs(az - ms[kind].pointwise)):.2e}")
    w = np.exp(lw - lw.max(axis=0))
    mu = np.sum(w * yr, axis=0) / w.sum(axis=0)
    for kind in ("mae", "mse", "rmse"):
        est, se = array_stats.metrics(y, mu, kind=kind)
        print(f"{kind:6s} estimate |diff| {abs(float(est) - ms[kind].estimate):.2e}; se ratio "
              f"stanlogz/arviz {ms[kind].se / float(se):.6f} (sqrt(N/(N-1)) = "
              f"{np.sqrt(n / (n - 1)):.6f})")
    yb = (rng.uniform(size=n) < 0.5).astype(float)
    lin = rng.normal(0.8 * (2 * yb - 1), 1.5, size=n)          # informative, imperfect
    p = 1 / (1 + np.exp(-(lin[None, :] + rng.normal(0, 0.5, size=(s, n)))))
    lwb = loo_log_weights(np.where(yb[None] == 1, np.log(p), np.log1p(-p)))
    mb = {m.name: m for m in loo_measures(lwb, yb, None, ["acc", "bacc"], mu=p)}
    wb = np.exp(lwb - lwb.max(axis=0))
    pb = np.sum(wb * p, axis=0) / wb.sum(axis=0)
    for ours, kind in (("acc", "acc"), ("bacc", "acc_balanced")):
        est, se = array_stats.metrics(yb, pb, kind=kind)
        print(f"{ours:6s} estimate |diff| {abs(float(est) - mb[ours].estimate):.2e}; se "
              f"stanlogz {mb[ours].se:.4f}, arviz {float(se):.4f}")


if __name__ == "__main__":
    main()
