"""Whether a refit's chains found one posterior or several: a warm-started refit's probe, and
the split R-hat that judges it.

A warm-started refit (:func:`~stanlogz.draws.continuation.refit_draws`) starts every chain at
the full-data fit's last draws. Where the training data leave a mode that the full data rule
out, those chains never see it, and their R-hat cannot tell: on a two-mode prior whose second
mode one precise observation rules out, warm K-fold was 2.7 nats off with an mcse of 0.008
and no warning. A **probe** of :data:`PROBE_CHAINS` chains from Stan's random inits (uniform
on (-2, 2), unconstrained), with the adapted step size and metric, runs
:data:`~stanlogz.draws.continuation.WARM_REFIT_WARMUP` warmup iterations and
:data:`PROBE_DRAWS` draws; where the split R-hat of its draws and the warm chains' last ones
exceeds :data:`PROBE_RHAT` on any parameter, the chains ended in different places, and the
refit is run cold as well, its chains joined to the warm ones. If the two sets found different
modes, the joined chains' R-hat says so to whoever reads them
(:func:`~stanlogz.crossval.refit.heldout.heldout_elpd` withholds the held-out value's se); if
the probe had only not converged yet, they agree and the draws are twice as many.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

#: Split R-hat above which a refit's chains (1,000 draws each at the defaults) are taken to
#: have ended in different places: their se is then withheld (converged chains give about
#: 1.00, sd near 0.002)
RHAT_MODES = 1.1
#: ... and above which a probe's short chains (:data:`PROBE_DRAWS` each, against the refit's
#: last as many) call for the other refit: a far mode gives 5-8 (benchmarks/refit_modes.py);
#: at 1.1 the probe fired on 4 of 100 refits of one-mode programs (R-hat 1.11-1.3: chains
#: of 50 draws, not modes), each a needless second refit
PROBE_RHAT = 1.5
#: The probe's chains and draws per chain (after its warmup)
PROBE_CHAINS = 4
PROBE_DRAWS = 50


def split_rhat(x: np.ndarray) -> Any:
    """Split R-hat of series shaped ``(chains, n)`` (a float) or ``(chains, n, k)`` (one per
    column): every chain cut in two halves, between-half against within-half variance (1 when
    the halves agree; NaN if too short, inf where the halves are constant but differ)."""
    x = np.asarray(x, dtype=float)
    scalar = x.ndim == 2
    if scalar:
        x = x[..., None]
    h = x.shape[1] // 2
    if h < 2:
        out = np.full(x.shape[2], np.nan)
    else:
        halves = np.concatenate([x[:, :h], x[:, h:2 * h]])
        w = np.mean(np.var(halves, axis=1, ddof=1), axis=0)
        b = h * np.var(np.mean(halves, axis=1), axis=0, ddof=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.sqrt(((h - 1) / h * w + b / h) / w)
        out = np.where(w > 0, out, np.where(b == 0, 1.0, np.inf))
    return float(out[0]) if scalar else out


def max_rhat(unconstrained: np.ndarray) -> float:
    """The largest split R-hat over the parameters of draws ``(chains, n, dim)`` (NaN with one
    chain of fewer than 4 draws)."""
    r = split_rhat(unconstrained)
    return float(np.max(r)) if np.size(r) and not np.all(np.isnan(r)) else float("nan")


def random_inits(dim: int, chains: int, rng: np.random.Generator) -> np.ndarray:
    """Stan's default inits on the unconstrained scale: uniform on (-2, 2), ``(chains, dim)``."""
    return rng.uniform(-2.0, 2.0, size=(chains, dim))


def join_chains(a: Any, b: Any, warning: str) -> Any:
    """The :class:`~stanlogz.draws.Draws` ``a`` and ``b`` (same draws per chain) as one run of
    their chains together, costs added, with ``warning``."""
    n = min(a.n_draws, b.n_draws)
    constrained = None
    if a.constrained is not None and b.constrained is not None \
            and a.constrained.shape[2] == b.constrained.shape[2]:
        constrained = np.concatenate([a.constrained[:, :n], b.constrained[:, :n]])
    sampler = {k: np.concatenate([v[:, :n], b.sampler[k][:, :n]])
               for k, v in a.sampler.items()
               if k in b.sampler and np.ndim(v) >= 2 and np.ndim(b.sampler[k]) >= 2}

    def both(x: Any, y: Any) -> Any:
        if x is None or y is None:
            return None
        return np.concatenate([np.atleast_1d(x), np.atleast_1d(y)])

    return replace(
        a, unconstrained=np.concatenate([a.unconstrained[:, :n], b.unconstrained[:, :n]]),
        constrained=constrained,
        constrained_names=list(a.constrained_names) if constrained is not None else [],
        sampler=sampler,
        step_size=both(a.step_size, b.step_size),
        inv_metric=both(a.inv_metric, b.inv_metric),
        seconds=float(a.seconds + b.seconds),
        n_gradient_evals=int(a.n_gradient_evals + b.n_gradient_evals),
        warnings=list(a.warnings) + [w for w in b.warnings if w not in a.warnings] + [warning])
