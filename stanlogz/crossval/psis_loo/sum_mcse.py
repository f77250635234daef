"""Monte Carlo se of a sum of PSIS-LOO values computed from one set of draws, from the
pointwise log-likelihood alone: :func:`sum_mcse`.

Every elpd_i is estimated from the same posterior draws, so their Monte Carlo errors are
correlated (a chain that over-visits a large hierarchical scale moves all of them together);
sqrt(Σ mcse_i²) treats them as independent and under-covers (benchmarks/loo_conditional.py).
The joint error is the delta method on the summed per-draw influence,
:meth:`~stanlogz.crossval.elpd.psis.PsisLoo.total_mcse` (formula:
:func:`~stanlogz.crossval.elpd.psis.influence_mcse`), the one ``loo()`` reports for a
program and for a fit alike; this is a shortcut to it.
"""

from __future__ import annotations

import numpy as np

from ...errors import InputError
from ..elpd.psis import psis_loo


def sum_mcse(ll: np.ndarray) -> float:
    """Monte Carlo se of Σ_i elpd_i from the pointwise values ``ll`` ``(chains, draws, N)``
    (log p(y_i | ·, θ) at each draw), errors of all observations taken jointly: the
    ``mcse_psis`` of ``loo()`` on the same values."""
    ll = np.asarray(ll, dtype=float)
    if ll.ndim != 3:
        raise InputError(f"ll must be (chains, draws, N), got {ll.shape}")
    return psis_loo(ll).total_mcse()
