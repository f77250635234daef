"""A Gaussianizing flow whose complexity is chosen on held-out posterior draws.

The last ``validation_fraction`` of every chain is held out. The whitening Gaussian is the
candidate of :func:`stanlogz.flows.whitening.gaussian_candidates` (sample, shrunk, score-fitted)
with the highest mean held-out log density, and the flow's layers are added on the remaining
draws while they raise that held-out log density (early stopping). With few draws for the
dimension this keeps the proposal at a well-fitted Gaussian instead of an overfitted flow.
With too few draws to hold any out (fewer than ``MIN_VALIDATION`` in the held-out part) the
proposal is the shrunk Gaussian of all of them, with no layers: layers chosen on nothing overfit.

With fewer draws than a dense covariance needs (``structured=True``), the whitening is the
diagonal-plus-low-rank candidate of :func:`stanlogz.flows.lowrank.low_rank_candidates` with the
highest held-out log density, and the layers act on single whitened coordinates: draws and
memory then grow with ``d``, not ``d^2``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..densities.target import Target, has_cheap_gradient
from ..errors import InputError
from .gaussianize import GaussianizingFlow, one_blas_thread
from .lowrank import iter_low_rank_candidates
from .whitening import GaussianFit, gaussian_candidates, shrunk_gaussian

#: fewest held-out draws for a meaningful comparison of mean log densities
MIN_VALIDATION = 50


def min_train_draws(dim: int) -> int:
    """The fewest training draws for the validated fit: the score and shrunk fits need only
    a few more draws than dimensions (the sample covariance needs twice as many)."""
    return max(dim + 10, 20)


#: fewest draws in a fitting half for the structured (diagonal plus low rank) whitening: enough
#: for :data:`MIN_VALIDATION` held-out draws at the default validation fraction
STRUCTURED_MIN_DRAWS = 5 * MIN_VALIDATION
#: structured ranks in a row that score below the best before the search stops
RANK_PATIENCE = 2


def min_fit_draws(dim: int, validation_fraction: float = 0.2) -> int:
    """The fewest draws in a fitting half for :func:`fit_validated_flow` to validate."""
    return max(math.ceil(min_train_draws(dim) / (1.0 - validation_fraction)) + 1,
               MIN_VALIDATION * 2)


def split_for_validation(chains: np.ndarray, fraction: float) -> tuple[np.ndarray, np.ndarray]:
    """The first ``1 - fraction`` and the last ``fraction`` of every chain, each flattened to
    ``(n, dim)``; contiguous blocks keep held-out draws apart from their autocorrelated
    neighbours in the training part."""
    if not 0 < fraction < 1:
        raise InputError(f"validation fraction must be strictly between 0 and 1, got {fraction}")
    n = chains.shape[1]
    cut = n - max(1, int(round(fraction * n)))
    d = chains.shape[2]
    return chains[:, :cut].reshape(-1, d), chains[:, cut:].reshape(-1, d)


def gradients(target: Target, x: np.ndarray) -> tuple[np.ndarray | None, int]:
    """Gradients of the log density at the rows of ``x`` (None when any is unavailable) and the
    number of gradient evaluations spent on them."""
    if not has_cheap_gradient(target):
        return None, 0
    out = np.empty_like(x)
    n = 0
    try:
        for i, row in enumerate(x):
            n += 1
            out[i] = target.log_density_gradient(row)[1]
    except Exception:  # noqa: BLE001 - a gradient that fails just rules the score fit out
        return None, n
    return (out if np.all(np.isfinite(out)) else None), n


def fit_validated_flow(target: Target, chains: np.ndarray, rng: np.random.Generator, *,
                       n_layers: int | None = None, validation_fraction: float = 0.2,
                       structured: bool = False, **flow_options: Any
                       ) -> tuple[GaussianizingFlow, dict[str, Any]]:
    """A flow fitted to posterior draws ``chains`` (chains, n, dim), its whitening and number of
    layers chosen on held-out draws; returns the flow and what was chosen (``whitening``, the
    candidates' held-out log densities, ``validation_log_q`` per layer). ``structured`` fits
    the diagonal-plus-low-rank whitening (see the module docstring)."""
    train, val = split_for_validation(chains, validation_fraction)
    d = chains.shape[2]
    if structured:
        if val.shape[0] < MIN_VALIDATION:
            raise InputError(f"too few draws for the structured proposal: {val.shape[0]} held "
                             f"out, need {MIN_VALIDATION}")
        with one_blas_thread():
            # ranks in increasing order (the diagonal first), stopping once RANK_PATIENCE in a
            # row score below the best (at d = 10,002 the ranks past the best cost most of the
            # fit)
            cands = iter_low_rank_candidates(train)
            pick = next(cands)
            lr_scores = {pick.name: float(np.mean(pick.log_density_many(val)))}
            worse = 0
            for c in cands:
                lr_scores[c.name] = float(np.mean(c.log_density_many(val)))
                if lr_scores[c.name] > lr_scores[pick.name]:
                    pick, worse = c, 0
                else:
                    worse += 1
                    if worse >= RANK_PATIENCE:
                        break
        flow = GaussianizingFlow.fit(train, n_layers=n_layers, rng=rng, whitening=pick,
                                     validation=val, **flow_options)
        return flow, {"whitening": pick.name, "whitening_scores": lr_scores, "validated": True,
                      "validation_log_q": list(flow.validation_log_q), "n_gradient_evals": 0}
    if val.shape[0] < MIN_VALIDATION or train.shape[0] < min_train_draws(d):
        # Too few draws to choose the layers on held-out ones: a Gaussian (no layers unless
        # asked for), its covariance shrunk toward the diagonal (Ledoit-Wolf). Eight layers
        # fitted without validation on 200 draws in 88 dimensions left one draw carrying the
        # bridge, and log Z 7-90 se off (benchmarks/flow_few_draws.py).
        x = np.concatenate([train, val])
        fit = shrunk_gaussian(x)
        if fit is None:
            raise InputError("draws do not vary: their covariance is singular")
        flow = GaussianizingFlow.fit(x, n_layers=0 if n_layers is None else n_layers, rng=rng,
                                     whitening=(fit.mean, fit.chol), **flow_options)
        return flow, {"whitening": "shrunk", "validated": False}
    with one_blas_thread():
        grad, n_grad = gradients(target, train)
        cands = gaussian_candidates(train, grad)
        scores = {c.name: float(np.mean(c.log_density_many(val))) for c in cands}
    if not cands:
        raise InputError("draws do not vary: their covariance is singular")
    best: GaussianFit = max(cands, key=lambda c: scores[c.name])
    flow = GaussianizingFlow.fit(train, n_layers=n_layers, rng=rng,
                                 whitening=(best.mean, best.chol), validation=val, **flow_options)
    info = {"whitening": best.name, "whitening_scores": scores, "validated": True,
            "validation_log_q": list(flow.validation_log_q), "n_gradient_evals": n_grad}
    return flow, info
