"""Held-out observations whose importance-sampled log p(y_i | y_T) cannot be trusted, each
estimated from a refit of its own.

:func:`~stanlogz.crossval.refit.heldout.heldout_elpd` gives each held-out observation's
log p(y_i | y_T) by (mixture) importance sampling from the training and full-data draws. Those
weights are plain (not Pareto-smoothed): where their Pareto k̂ exceeds
:data:`~stanlogz._util.gpd.KHAT_HEAVY` their variance is infinite, the delta-method se does not
cover, and the estimate is most often too low (an observation far from the training posterior:
on roaches, one of log p ≈ −351 came out −357 with a se of about 1). Such an observation is
refit: NUTS on y_T and y_i (warm from the full fit), then log p(y_i | y_T) between those draws
and the training draws by the same route as a held-out set of one (the bridge; where its
overlap is poor the warped bridge, and the evidence difference where that is poor too), with
its own se. Cost: one refit (a short warmup and an eighth of the draws) and four batched
density passes per such observation; a gbs fit each, and one of the training program shared
by them, only where the warped bridge fails.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..._util import deadline
from ..._util.gpd import KHAT_HEAVY
from ..._util.seeds import Stream, stream, stream_int_seed
from ...draws import Draws
from ...draws.continuation import WarmStart, refit_draws
from ...stan.program import StanProgram
from ...stan.settings import NutsArgs
from ..observations.observations import Observations
from .fold_sums import influence_var
from .shared import SharedEvidence

#: Pareto k̂ of an observation's importance weights above which it is refit: the plain
#: weights' variance is infinite there (the CLT behind the se fails).
POINT_KHAT = KHAT_HEAVY
#: The share of the run's draws per chain a point refit keeps (at least
#: :data:`POINT_MIN_DRAWS`, and ten draws per parameter over the chains, for the warped
#: bridge's covariance): its value's se comes out at 0.008–0.02 nats on roaches at an eighth
#: (the warped bridge), against a K-fold mcse near 0.4.
POINT_DRAW_SHARE = 0.125
POINT_MIN_DRAWS = 100


@dataclass
class PointRefits:
    """The refit observations of one held-out set: ``rows`` (positions in the set),
    their ``elpd`` (log p(y_i | y_T)), the Monte Carlo se ``mcse`` of their sum, the cost and
    the route each took (``methods``)."""

    rows: np.ndarray
    elpd: np.ndarray
    mcse: float
    methods: list[str]
    n_gradient_evals: int = 0
    n_evals: int = 0
    warnings: list[str] = field(default_factory=list)
    #: the observations themselves (0-based indices into the data)
    observations: np.ndarray = field(default_factory=lambda: np.zeros(0, int))
    #: the training draws' influence on their sum (summed over those whose bridge gives it:
    #: the set's other values use the same draws) and its part of ``mcse``² (each
    #: observation's own, as counted there); None and 0 where none gives it
    train_influence: np.ndarray | None = None
    train_var: float = 0.0

    @staticmethod
    def join(v: np.ndarray, parts: list[PointRefits]) -> PointRefits:
        """Refits of disjoint observations of the held-out set ``v`` as one: their se add in
        quadrature (each part fits its own training log Z), and the training draws'
        influence is summed over the parts on the same draws (an earlier round's, on fewer
        draws, is left out of it); the cost is the parts'."""
        obs = np.concatenate([p.observations for p in parts])
        order = np.argsort(obs)
        methods = [m for p in parts for m in p.methods]
        # an earlier round's influence is on fewer draws: those parts count as independent
        last = parts[-1].train_influence
        same = [p for p in parts if p.train_influence is not None and last is not None
                and p.train_influence.shape == last.shape]
        infl = sum(p.train_influence for p in same) if same else None
        return PointRefits(np.searchsorted(v, obs[order]),
                           np.concatenate([p.elpd for p in parts])[order],
                           math.sqrt(sum(p.mcse**2 for p in parts)),
                           [methods[i] for i in order],
                           sum(p.n_gradient_evals for p in parts),
                           sum(p.n_evals for p in parts),
                           [w for p in parts for w in p.warnings], obs[order], infl,
                           sum(p.train_var for p in same))


def point_draws(draws: int, chains: int, dim: int) -> int:
    """Draws per chain of a point refit in a run of ``draws`` per chain and ``chains`` chains,
    on ``dim`` parameters (:data:`POINT_DRAW_SHARE`, at least :data:`POINT_MIN_DRAWS` and ten
    per parameter over the chains; never more than the run's)."""
    return min(draws, max(POINT_MIN_DRAWS, math.ceil(POINT_DRAW_SHARE * draws),
                          math.ceil(10 * dim / chains)))


def heavy_rows(khat: np.ndarray) -> np.ndarray:
    """Positions whose k̂ exceeds :data:`POINT_KHAT` (or is not finite: too few finite
    weights to tell)."""
    k = np.asarray(khat, dtype=float)
    return np.flatnonzero(~(k <= POINT_KHAT))


def refit_points(estimate: Callable[..., Any], model: StanProgram, data: Mapping[str, Any],
                 observations: Observations, v: np.ndarray, rows: np.ndarray, full: StanProgram,
                 full_draws: Draws | np.ndarray, train_draws: Draws,
                 train_log_density: np.ndarray, nuts: NutsArgs,
                 seed: Any, shared_train: SharedEvidence,
                 progress: Callable[[str], None] | None = None) -> PointRefits:
    """log p(y_i | y_T) for the held-out observations ``v[rows]``, each from NUTS on y_T and
    y_i (warm from ``full_draws``) and ``estimate`` (:func:`heldout_elpd`) between those draws
    and ``train_draws`` (where the training program's log density is
    ``train_log_density``, computed once for all of them). ``shared_train`` gives the
    training program's gbs log Z, shared by the observations of the set (its error adds
    linearly over those that use it).

    A refit the time budget cuts raises :class:`~stanlogz.errors.BudgetSpent` (the set is
    not done: an anytime K-fold estimates it by PSIS)."""
    keep = np.setdiff1d(np.arange(observations.n), v)
    warm = WarmStart.of(full, full_draws)
    nuts = nuts.replace(draws=point_draws(nuts.draws, nuts.chains, full.dim))
    elpd = np.empty(rows.size)
    methods: list[str] = []
    var, n_shared, n_grad, n_evals = 0.0, 0, 0, 0
    infl: np.ndarray | None = None  # the training draws' influence, summed
    infl_var = 0.0
    warns: list[str] = []
    for j, r in enumerate(rows):
        i = int(v[r])
        with_i = np.union1d(keep, [i])
        d_i = observations.subset(data, with_i)
        m_i = model.with_data(d_i)
        if progress:
            progress(f"NUTS on {m_i.name} (observation {i + 1} with the training data: its "
                     "importance weights are heavy-tailed)")
        s = stream(seed, Stream.POINT_REFIT, j)
        # no probe for other modes (stanlogz.draws.modes): the fold's training refit had one,
        # and y_T with y_i added rules out more than y_T alone
        drawn, _ = refit_draws(m_i, nuts, seed=stream_int_seed(s, Stream.NUTS), warm=warm,
                               probe=False)
        deadline.check_not_cut(drawn, f"the refit of observation {i + 1}")
        h = estimate(model, d_i, replace(observations, n=int(with_i.size)),
                     [int(np.searchsorted(with_i, i))], full_draws=drawn,
                     train_draws=train_draws, pointwise=False, settings=nuts, seed=s,
                     train_evidence=shared_train, train_log_density=train_log_density)
        elpd[j] = h.elpd
        methods.append(h.method)
        n_grad += drawn.n_gradient_evals
        n_evals += h.n_evals
        warns.extend(w for w in h.warnings if w not in warns)
        n_shared += h.method == "evidence-difference"
        var += h.mcse**2
        a = h.joint_train_influence
        if a is not None and a.shape == train_draws.unconstrained.shape[:2]:
            infl = a.copy() if infl is None else infl + a
            infl_var += influence_var(a)
    if n_shared:  # each such se holds the shared log Z(T)'s in quadrature; it adds linearly
        t = float(shared_train.result.log_z_se)
        var += (n_shared**2 - n_shared) * t * t
    mcse = math.sqrt(var)
    return PointRefits(rows, elpd, mcse, methods, n_grad, n_evals, warns, v[rows], infl,
                       infl_var)
