"""Choosing pmmh's batch size: the number of importance weights averaged into each batch weight.

The noise of the 1/Z estimates grows with the spread of the log batch weights; with too small a
batch the chain sticks on large estimates and many estimates are negative (the sign-corrected
expectations are then noise). The pseudo-marginal literature (Doucet, Pitt, Deligiannidis &
Kohn 2015) tunes the estimator's noise by the sd of its log; here the batch grows until the sd of
the log batch weights at a few states of the chain is at most a target (their sd falls like
1/sqrt(batch) once it is small), and doubles again during warmup when negative estimates show up.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import EstimationError
from ..estimators.reciprocal.reciprocal import batch_log_weights

#: sd of the log batch weights the automatic batch aims at
TARGET_LOG_SD = 0.2
#: the first batch tried, and the largest one chosen
START_BATCH, MAX_BATCH = 10, 1000
#: share of negative 1/Z estimates among warmup states that doubles the batch
MAX_NEGATIVE = 0.01
N_BATCHES = 100  # batch weights per sd measurement


def log_weight_sd(source: Any, rng: np.random.Generator, batch: int,
                  n_batches: int = N_BATCHES) -> float:
    """sd of ``n_batches`` log batch weights of ``batch`` weights each (inf when a batch is all
    zero or the weights overflow)."""
    try:
        lw = batch_log_weights(source, rng, n_batches, batch)
    except EstimationError:
        return math.inf
    return float(np.std(lw, ddof=1)) if np.all(np.isfinite(lw)) else math.inf


def choose_batch(weights_at: Callable[[np.ndarray], Any], points: Sequence[np.ndarray],
                 rng: np.random.Generator, start: int = START_BATCH, cap: int = MAX_BATCH,
                 target_sd: float = TARGET_LOG_SD) -> tuple[int, float]:
    """The smallest batch (from ``start``, growing) whose log batch weights have a median sd
    over the states in ``points`` of at most ``target_sd``, capped at ``cap``; and that sd.

    The median, not the largest: at a state far in the tail the weights' variance may be
    infinite (a proposal narrower than the inner density there), and no batch tames it.
    """
    b = min(max(1, int(start)), cap)
    while True:
        sd = float(np.median([log_weight_sd(weights_at(p), rng, b) for p in points]))
        if sd <= target_sd or b >= cap:
            return b, sd
        grow = (sd / target_sd) ** 2 if math.isfinite(sd) else 4.0
        b = min(cap, max(2 * b, int(math.ceil(1.1 * b * grow))))


def probe_points(history: np.ndarray, rng: np.random.Generator, k: int = 4) -> list[np.ndarray]:
    """The mean of ``history`` (warmup states) and ``k`` of its states, spread over it."""
    if history.shape[0] == 0:
        return []
    idx = rng.choice(history.shape[0], size=min(k, history.shape[0]), replace=False)
    return [history.mean(axis=0)] + [history[i] for i in idx]
