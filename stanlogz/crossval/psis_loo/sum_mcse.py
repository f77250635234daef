"""Monte Carlo se of a sum of PSIS-LOO values computed from one set of draws.

Every elpd_i is estimated from the same posterior draws, so their Monte Carlo errors are
correlated (a chain that over-visits a large hierarchical scale moves all of them together);
sqrt(Σ mcse_i²) treats them as independent and under-covers (benchmarks/loo_conditional.py).
The delta method on the importance-sampling estimates gives the joint error: with
r_is = 1 / p(y_i | ·, θ_s) and m_i = mean_s r_is, elpd_i = −log m_i and
δ Σ_i elpd_i ≈ −mean_s Σ_i (r_is / m_i − 1), whose variance is that of the per-draw series
g_s = Σ_i r_is / m_i times its autocorrelation time over the number of draws.
"""

from __future__ import annotations

import numpy as np

from ...estimators.common import autocorr_time


def sum_mcse(ll: np.ndarray) -> float:
    """Monte Carlo se of Σ_i elpd_i from the pointwise values ``ll`` ``(chains, draws, N)``
    (log p(y_i | ·, θ) at each draw), errors of all observations taken jointly."""
    ll = np.asarray(ll, dtype=float)
    if ll.ndim != 3:
        raise ValueError(f"ll must be (chains, draws, N), got {ll.shape}")
    neg = -ll
    shift = neg.max(axis=(0, 1), keepdims=True)
    r = np.exp(neg - shift)
    g = np.sum(r / r.mean(axis=(0, 1), keepdims=True), axis=2)
    return float(np.sqrt(autocorr_time(g) * np.var(g, ddof=1) / g.size))
