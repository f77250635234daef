"""loo's convention for the Pareto k̂ of a LOO result after its fix-ups (what
:meth:`~stanlogz.crossval.psis_loo.loo.LooResult.to_arviz` hands to ArviZ)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..fixups.fixups import FixedPoint


def fixed_khat(khat: np.ndarray, index: np.ndarray, fixed: Sequence[FixedPoint]
               ) -> tuple[np.ndarray, np.ndarray]:
    """loo's Pareto k̂ after fix-ups, and each point's fix method (``""``: not fixed): a
    moment-matched point gets the k̂ of the ratios its estimate uses (loo's
    ``loo_moment_match``), an exactly recomputed one (refit, bridge, UPS) gets 0 (brms'
    ``reloo``); the other points keep their PSIS k̂."""
    k = np.array(khat, dtype=float)
    methods = np.full(k.size, "", dtype=object)
    where = {int(o): j for j, o in enumerate(np.asarray(index))}
    for f in fixed:
        j = where.get(int(f.index))
        if j is None:
            continue
        after = f.khat_after
        k[j] = float(after) if after is not None and np.isfinite(after) else 0.0
        methods[j] = f.method
    return k, methods.astype(str)
