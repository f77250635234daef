"""The exact held-out predictive density log p(y_V | y_T) of a Stan program for any split (T, V).

For a normalized program, log p(y_V | y_T) = log Z(y_T ∪ y_V) − log Z(y_T), whether or not the
two data instances have the same parameters. Design:

* **Same parameters** (a fixed-size model, or group latents that stay in the program with only
  their prior once their group's data are gone): optimal bridge sampling between the two
  posteriors, with NUTS draws from both; the log weights are log p̃_full(θ) − log p̃_T(θ) on
  both sides (as the ``exact`` LOO fix-up).
* **Different parameters** (per-observation latents z_V that exist only with y_V): the training
  posterior is augmented with a normalized auxiliary density q(z_V | θ_T) — a Gaussian whose mean
  is linear in the common unconstrained coordinates and whose covariance is the residual one,
  both fitted to the full posterior's draws (an approximation of the full posterior's
  conditional of z_V). p̃_T(θ_T) q(z_V | θ_T) has normalizer Z(y_T) exactly, for any q, and lives
  on the full program's space, so the same bridge gives log Z(full) − log Z(T). The better q
  matches the conditional posterior, the closer the bridge is to a bridge on θ_T alone with the
  marginal likelihood p(y_V | θ_T) as weight (the ideal q).
* Both designs need the program run without y_V to be the full program with y_V (and its
  latents) integrated out; :func:`~stanlogz.crossval.observations.splitcheck.check_split` verifies
  that at a few full-data draws before the refit and refuses (linked latents, a latent prior that
  does not integrate to one, y_i entering other terms) with :class:`SplitError`.
* When the bridge's overlap is poor (Pareto k̂ > 0.5 on either side: the weights' variance, and
  so the bridge's error formula, may not exist), the warped bridge (the same draws moved onto
  each other by their moments; same parameters only), and where its overlap is poor too, the
  difference of two gbs evidence estimates (which needs no overlap between the posteriors): a
  rule fixed in advance, not the smaller of two noisy standard errors.

Beside the joint value, each held-out observation's log p(y_i | y_T) (``elpd_i``, loo's K-fold
convention) is estimated by importance sampling from the training posterior's (augmented)
draws: the mean of p̃_{T∪i} / (p̃_T q_i), unbiased for p(y_i | y_T) on the natural scale, with a
delta-method Monte Carlo se that includes the draws' autocorrelation.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Unpack

import numpy as np
from scipy import special

from ..._util import deadline
from ..._util.arrays import even_rows
from ..._util.deadline import StepsClock
from ..._util.display import alias
from ..._util.gpd import KHAT_HEAVY
from ..._util.progress import steps
from ..._util.seeds import (
    Stream,
    generator_seed,
    stream,
    stream_int_seed,
    stream_rng,
)
from ..._util.words import transitions
from ...draws import Draws, obtain_draws
from ...draws.continuation import WARM_REFIT_WARMUP, WarmStart, refit_draws
from ...draws.modes import modes_verdict
from ...errors import EstimationError, InputError, OverBudget, StanlogzError, option
from ...estimators.bridge.bridge import solve_bridge
from ...estimators.bridge.influence import bridge_influence
from ...estimators.bridge.warp import warped_bridge
from ...estimators.common import pareto_k
from ...parallel import SeedLike, run_parallel
from ...stan.program import StanProgram
from ...stan.settings import NutsArgs, NutsKeywords, nuts_from_keywords
from ..observations.latents import ConditionalGaussian, coordinate_map
from ..observations.observations import Observations
from ..observations.pointwise import PointwiseLogLik
from ..observations.splitcheck import check_split
from .fold_sums import influence_var
from .heldout_points import PointRefits, heavy_rows, refit_points
from .shared import SharedEvidence

HELDOUT_METHODS = ("auto", "bridge", "warped-bridge", "evidence-difference")
#: Where each held-out observation's density is the whole program on its training set and
#: itself (no per-observation terms: wells' covariates centred on all the data), its
#: mixture importance sampling (training and full draws; not where latents are drawn for
#: them) uses at most this many draws of each side, thinned evenly per chain; the
#: delta-method se is that of the draws used. On wells (3,020 households, 4 x 1,000
#: draws a side) those densities were 2 minutes of every fold's 2; None uses every draw.
INSTANCE_DRAWS: int | None = 1000


@dataclass
class HeldOut:
    """log p(y_V | y_T) for one split, with its Monte Carlo se and cost.

    ``index``: the held-out observations (0-based); ``elpd``/``mcse``: the joint log predictive
    density and its Monte Carlo se; ``elpd_i``: per held-out observation log p(y_i | y_T) (same
    order as ``index``) and ``elpd_i_mcse`` the Monte Carlo se of their sum; ``method``:
    ``"bridge"`` (same parameters), ``"augmented-bridge"`` (``n_latent`` per-observation latents
    integrated out), ``"warped-bridge"`` or ``"evidence-difference"``; ``khat``: Pareto k̂ of the
    (warped) bridge's weights (full side, training side); ``n_gradient_evals``: NUTS cost of
    the training refit; ``n_evals``: density evaluations of the estimators.
    """

    index: np.ndarray
    elpd: float
    mcse: float
    method: str
    elpd_i: np.ndarray
    elpd_i_mcse: float
    khat: tuple[float, float]
    n_latent: int
    n_gradient_evals: int
    n_evals: int
    seconds: float
    warnings: list[str] = field(default_factory=list)
    #: the part of ``mcse`` shared with every other split of the same full-data draws (the
    #: evidence difference's log Z(full), estimated once for all of them): it adds linearly,
    #: not in quadrature, over splits
    shared_mcse: float = 0.0
    #: the part of ``elpd_i_mcse`` shared in the same way: the evidence difference's log r error
    #: moves Σ elpd_i by ∂Σ elpd_i/∂log r times itself (the delta method, :class:`_Pointwise`)
    elpd_i_shared_mcse: float = 0.0
    #: whether the training refit was warm-started from the full fit
    #: (:func:`~stanlogz.draws.continuation.refit_draws`)
    warm: bool = False
    #: the training draws, kept only when asked (``keep_draws``: a precision target extends
    #: them, :mod:`.kfold_target`); not in ``to_dict``
    train_draws: Any = field(default=None, repr=False, compare=False)
    #: Pareto k̂ of each held-out observation's importance weights (same order as ``index``;
    #: NaN where not importance-sampled: a set of one, or no pointwise values)
    khat_i: np.ndarray | None = None
    #: the held-out observations (0-based) whose k̂ exceeded 0.5, refit on their own
    #: (:mod:`.heldout_points`): their ``elpd_i`` come from those refits
    refit_observations: np.ndarray = field(default_factory=lambda: np.zeros(0, int))
    #: their values, se and cost (:class:`~.heldout_points.PointRefits`; not in ``to_dict``):
    #: a precision target's next round reuses them
    points: PointRefits | None = field(default=None, repr=False, compare=False)
    #: each full-data draw's influence on Σ elpd_i over its draws' count ((chains, n); None
    #: without the full draws as a proposal): the part of ``elpd_i_mcse`` that splits sharing
    #: those draws share (:func:`.fold_sums.folds_sum_se`); not in ``to_dict``
    full_influence: np.ndarray | None = field(default=None, repr=False, compare=False)
    #: the same for ``elpd`` (the joint log p(y_V | y_T)) where a plain bridge gave it
    joint_full_influence: np.ndarray | None = field(default=None, repr=False, compare=False)
    #: the training draws' influence on ``elpd`` where a plain or warped bridge gave it: a
    #: held-out observation refit on its own shares its fold's training draws
    #: (:mod:`.heldout_points`)
    joint_train_influence: np.ndarray | None = field(default=None, repr=False, compare=False)

    se = alias("mcse", "The former name of ``mcse`` (a Monte Carlo se), kept for "
               "compatibility.")

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly dict (observations numbered from 1, as in Stan)."""
        return {"observations": [int(i) + 1 for i in self.index], "elpd": self.elpd,
                "mcse": self.mcse, "method": self.method,
                "elpd_i": [float(v) for v in self.elpd_i], "elpd_i_mcse": self.elpd_i_mcse,
                "elpd_i_shared_mcse": self.elpd_i_shared_mcse,
                "khat": [float(k) for k in self.khat], "n_latent": self.n_latent,
                "n_gradient_evals": self.n_gradient_evals, "n_evals": self.n_evals,
                "seconds": self.seconds, "warm": self.warm,
                "khat_i": None if self.khat_i is None else
                [None if not np.isfinite(k) else float(k) for k in self.khat_i],
                "refit_observations": [int(i) + 1 for i in self.refit_observations],
                "warnings": self.warnings}


# ---------------------------------------------------------------- entry point
def heldout_elpd(
    model: StanProgram,
    data: Mapping[str, Any],
    observations: Observations,
    held_out: Sequence[int] | np.ndarray,
    *,
    full_draws: Any = None,
    train_draws: Any = None,
    pointwise: bool = True,
    settings: NutsArgs | None = None,
    seed: int | np.random.SeedSequence | None = None,
    method: str = "auto",
    progress: Callable[[str], None] | None = None,
    full_evidence: Callable[[StanProgram, np.ndarray], tuple[Any, bool]] | None = None,
    warm_refits: bool = True,
    keep_draws: bool = False,
    point_refits: bool = True,
    train_evidence: Callable[[StanProgram, np.ndarray], tuple[Any, bool]] | None = None,
    points: PointRefits | None = None,
    train_log_density: np.ndarray | None = None,
    **nuts_keywords: Unpack[NutsKeywords],
) -> HeldOut:
    """log p(y_V | y_T) of the program ``model`` (a :class:`StanModel`, any data) for the
    observations ``held_out`` (0-based indices V into ``observations`` of ``data``) given the
    others (T), with its Monte Carlo se.

    ``full_draws``: posterior draws given all of ``data`` (a :class:`Draws` or an unconstrained
    ``(chains, n, dim)`` array), shared between splits; ``train_draws``: draws given y_T. Either
    is sampled with NUTS when missing, with ``settings`` (a
    :class:`~stanlogz.stan.settings.NutsArgs`) whose fields ``chains``, ``warmup``, ``draws``,
    ``adapt_delta`` and ``max_treedepth`` replace when given. Works when the
    two data instances have the same parameters and when y_V carries its own latent parameters
    (indexed by observation along their first axis); a program whose parameters change in any
    other way raises :class:`InputError`. ``pointwise`` adds each held-out observation's
    log p(y_i | y_T). ``method``: ``"auto"`` (the bridge; where its k̂ exceeds 0.5, the warped
    bridge, and where its k̂ does too, the evidence difference),
    ``"bridge"``, ``"warped-bridge"`` (:func:`~stanlogz.estimators.bridge.warp.warped_bridge`:
    the same parameters only) or ``"evidence-difference"``.
    Seeds derive from ``seed`` by ``SeedSequence`` spawning. ``full_evidence(full, draws)``
    (from :func:`heldout_many`) gives the full program's log Z shared by all splits.

    Cost: one NUTS run per missing draw set (``HeldOut.n_gradient_evals`` counts the training
    refit), four log-density evaluations per draw for the bridge, one more per draw and
    held-out observation for ``elpd_i``, four more for the warped bridge when the bridge's
    overlap is poor, and two gbs fits when the warped bridge's is poor too.
    Every call builds its own data instances, so splits can run in parallel threads.

    Parameters
    ----------
    model : StanModel
        The program, built with any data.
    data : dict
        All of its data.
    observations : Observations
        The observation structure of ``data``
        (:func:`~stanlogz.crossval.observations.observations.find_observations`).
    held_out : sequence of int
        0-based indices of the held-out observations V (at least one, not all).
    full_draws : Draws or ndarray, optional
        Posterior draws given all of ``data`` (an unconstrained array: chains x draws x
        parameters; sampled when missing).
    train_draws : Draws or ndarray, optional
        Posterior draws given y_T (sampled when missing).
    pointwise : bool, default True
        Also give each held-out observation's log p(y_i | y_T).
    settings : NutsArgs, optional
        Settings of the NUTS runs.
    seed : int or SeedSequence, optional
        Random seed.
    method : {"auto", "bridge", "warped-bridge", "evidence-difference"}, default "auto"
        The estimator of log p(y_V | y_T).
    progress : callable, optional
        Called with one line of text per step.
    full_evidence : callable, optional
        ``full_evidence(full, draws) -> (log Z, ...)`` shared between splits (from
        :func:`heldout_many`: a :class:`SharedEvidence`, whose ``once`` also runs the
        check of the density-difference terms once for all splits).
    warm_refits : bool, default True
        Start the training refit from the full fit
        (:func:`~stanlogz.draws.continuation.refit_draws`: its last draws, a short warmup)
        where the two programs have the same parameters; False samples it cold.
    keep_draws : bool, default False
        Keep the training draws in ``HeldOut.train_draws``.
    point_refits : bool, default True
        Refit each held-out observation whose importance weights are heavy-tailed (Pareto
        k̂ above 0.5: their se would not hold) on the training data and itself, and take its
        log p(y_i | y_T) from that refit (:mod:`.heldout_points`); False keeps the importance
        sampling estimate (``HeldOut.khat_i`` says which are unreliable).
    train_evidence : callable, optional
        ``train_evidence(train, draws) -> (log Z, ...)``: the training program's log Z, shared
        (as ``full_evidence``) by the held-out sets of one training set.
    points : PointRefits, optional
        The point refits of an earlier call on the same held-out set (``HeldOut.points``; a
        precision target's rounds): their values are kept and those observations are not
        refit again.
    train_log_density : ndarray, optional
        The training program's log density at ``train_draws`` (flat), where already known:
        the observations of one set refit on their own share it.
    **nuts_keywords
        ``chains``, ``warmup``, ``draws``, ``adapt_delta``, ``max_treedepth``.

    Returns
    -------
    HeldOut
        ``elpd`` (log p(y_V | y_T)) with its ``mcse``, the pointwise ``elpd_i`` with
        ``elpd_i_mcse``, the ``method`` used, the bridge's ``khat``, the cost
        (``n_gradient_evals``, ``n_evals``) and ``warnings``.

    Raises
    ------
    InputError
        An unknown ``method``, a held-out set that is empty, holds every observation or an
        index out of range, draws of the wrong shape, or a program whose parameters change
        with the held-out data in an unsupported way.

    See Also
    --------
    heldout_many : many held-out sets sharing the full-data draws.
    stanlogz.kfold : K-fold cross-validation built on it.

    Examples
    --------
    The last observation of the shipped normal-mean program held out; its log predictive
    density given the other nine is a normal density in closed form (run from the
    repository root):

    >>> import json, numpy as np, stanlogz
    >>> from scipy import stats
    >>> from stanlogz.crossval.observations.observations import find_observations
    >>> data = json.load(open("stan_models/examples/normal_mean.data.json"))
    >>> m = stanlogz.StanModel.from_file("stan_models/examples/normal_mean.stan", data)
    >>> h = stanlogz.heldout_elpd(m, data, find_observations(data), [9], seed=2,
    ...                           chains=2, warmup=300, draws=500)
    >>> h.method, h.elpd_i.shape
    ('bridge', (1,))
    >>> y = np.array(data["y"])
    >>> prec = 1 / 2.0**2 + 9  # the posterior of mu given y_1..y_9 (sigma = 1)
    >>> truth = stats.norm(y[:9].sum() / prec, np.sqrt(1 + 1 / prec)).logpdf(y[9])
    >>> bool(abs(h.elpd - truth) < 5 * h.mcse)  # a z-test: fails with P < 1e-6
    True
    """
    nuts = nuts_from_keywords(settings, nuts_keywords, "heldout_elpd")
    if method not in HELDOUT_METHODS:
        raise InputError(f"method must be one of {', '.join(HELDOUT_METHODS)}, got {method!r}")
    t0 = time.perf_counter()
    v = np.unique(np.asarray(held_out, dtype=int).ravel())
    if v.size == 0 or v.size >= observations.n:
        raise InputError(f"a held-out set needs between 1 and {observations.n - 1} of the "
                         f"{observations.n} observations, got {v.size}")
    if v.min() < 0 or v.max() >= observations.n:
        raise InputError(f"held-out observation out of range 1..{observations.n}")
    everything = np.arange(observations.n)
    keep = np.setdiff1d(everything, v)
    full = model.with_data(dict(data))
    train = model.with_data(observations.subset(data, keep))
    common = coordinate_map(full, train, everything, keep)
    extra = np.setdiff1d(np.arange(full.dim), common)
    warns: list[str] = []
    fd = _draws(full, full_draws, nuts, stream_int_seed(seed, Stream.NUTS), progress, "all data")
    flat0 = fd.unconstrained.reshape(-1, full.dim)
    # the last held-out observation: a trailing block (leave-future-out) is a valid split
    check_split(full, data, observations, int(v[-1]),
                flat0[np.unique(np.linspace(0, len(flat0) - 1, 3).astype(int))])
    warm = False
    if train_draws is None:  # cold or warm, probed from the other side (draws.modes)
        if progress:
            progress(f"NUTS on {train.name} (without {_numbers(v)})")
        ws = WarmStart.of(full, fd.unconstrained if fd.step_size is None else fd)
        if ws is not None and extra.size:  # a latent per held-out observation dropped
            ws = ws.restricted(train, common)
        td, warm = refit_draws(train, nuts, seed=stream_int_seed(seed, Stream.REFIT_NUTS),
                               warm=ws, cold=not warm_refits)
    else:
        td = _draws(train, train_draws, nuts, stream_int_seed(seed, Stream.REFIT_NUTS),
                    progress, f"without {_numbers(v)}")
    if train_draws is None:  # a refit the budget cut short: not done (an anytime caller
        deadline.check_not_cut(td, f"the refit without {_numbers(v)}")  # estimates the set)
    n_grad = td.n_gradient_evals if train_draws is None else 0
    for what, d in (("all data", fd), (f"the refit without {_numbers(v)}", td)):
        n_div = int(np.sum(d.sampler.get("divergent__", np.zeros(1)) > 0))
        if n_div:
            warns.append(f"{transitions(n_div)} in NUTS on {what}: the held-out value "
                         f"may be biased; raise {option('adapt_delta')} or reparameterize")
    xf = fd.unconstrained  # (c, n, dim_full)
    xt = td.unconstrained  # (c, n, dim_train)
    flat_f, flat_t = xf.reshape(-1, full.dim), xt.reshape(-1, train.dim)
    if train_log_density is not None and np.shape(train_log_density) != (len(flat_t),):
        raise InputError(f"train_log_density must have one value per training draw "
                         f"({len(flat_t)}), got shape {np.shape(train_log_density)}")
    lp_t_at_t = _finite(train.log_density_many(flat_t) if train_log_density is None
                        else train_log_density)
    lp_t_at_f = _finite(train.log_density_many(flat_f[:, common]))
    lp_f_at_f = _finite(full.log_density_many(flat_f))
    q = ConditionalGaussian.fit(flat_f[:, common], flat_f[:, extra]) if extra.size else None
    aug, log_q_t = _augment(flat_t, common, extra, full.dim, q,
                              stream_rng(seed, Stream.AUGMENT))
    lp_f_at_t = _finite(full.log_density_many(aug))
    n_evals = 2 * len(flat_f) + 2 * len(flat_t)
    # chains that ended in different places (a warm refit's probe found them, or cold chains
    # split between modes) where the held-out density differs between them: NUTS does not
    # weight the modes, so no se given these draws holds (modes alike for it: a symmetry)
    term = (lp_f_at_t - lp_t_at_t - log_q_t).reshape(xt.shape[:2])  # its log weight
    unmixed, spread = modes_verdict(td.unconstrained, f"the refit without {_numbers(v)}",
                                    "the held-out value", quantity=term)  # spread: widens se
    warns.extend(w for w in getattr(td, "warnings", ()) if w not in warns)  # the probe's
    if unmixed:
        warns.append(unmixed)
    elpd, se, khat = float("nan"), float("inf"), (float("nan"), float("nan"))
    # the full and the training draws' influence on the bridge's log r (a plain or warped one)
    joint_full = joint_train = None
    shared_se = 0.0
    if method != "evidence-difference" and not extra.size:
        lw_f = (lp_f_at_f - lp_t_at_f).reshape(xf.shape[:2])
        lw_t = (lp_f_at_t - lp_t_at_t).reshape(xt.shape[:2])
        elpd, se = _bridge([(lw_f, lw_t)])
        khat = (pareto_k(-lw_f), pareto_k(lw_t))
        if np.isfinite(elpd):
            joint_full, joint_train = bridge_influence(lw_f, lw_t, elpd)
    elif method != "evidence-difference":
        # cross-fitting: q fitted on one half of the full draws bridges with the other half
        # (q evaluated at the draws it was fitted to would bias log r downwards), then swapped
        n = xf.shape[1] // 2
        halves = (slice(0, n), slice(n, 2 * n))
        lw_full = (lp_f_at_f - lp_t_at_f).reshape(xf.shape[:2])
        pairs = []
        for use, fit, rng in ((halves[0], halves[1], stream_rng(seed, Stream.AUGMENT, 0)),
                              (halves[1], halves[0], stream_rng(seed, Stream.AUGMENT, 1))):
            x_fit = xf[:, fit].reshape(-1, full.dim)
            q_k = ConditionalGaussian.fit(x_fit[:, common], x_fit[:, extra])
            x_use = xf[:, use].reshape(-1, full.dim)
            lw_f = lw_full[:, use] - q_k.log_pdf(x_use[:, common], x_use[:, extra]).reshape(
                xf.shape[0], n)
            a_k, lq_k = _augment(flat_t, common, extra, full.dim, q_k, rng)
            lw_t = _finite(full.log_density_many(a_k)) - lp_t_at_t - lq_k
            pairs.append((lw_f, lw_t.reshape(xt.shape[:2])))
        n_evals += 2 * len(flat_t)
        elpd, se = _bridge(pairs)
        khat = (max(pareto_k(-p[0]) for p in pairs), max(pareto_k(p[1]) for p in pairs))
    used = "augmented-bridge" if extra.size else "bridge"
    poor = not all(np.isfinite(k) and k <= KHAT_HEAVY for k in khat) or not np.isfinite(se)
    # where the plain bridge's overlap is poor, the warped bridge: the same draws, moved onto
    # each other by their moments (for a fold of roaches' 26 observations, k-hat 1.8-3.0
    # plain, 0.1-0.4 warped, in a tenth of the evidence difference's seconds; the two agreed
    # to 0.0006 +- 0.0004 nats over 12 replicates of one fold)
    if not extra.size and (method == "warped-bridge" or (method == "auto" and poor)):
        try:
            wb = warped_bridge(full.log_density_many, train.log_density_many, xf, xt,
                               lp_f_at_f, lp_t_at_t)
        except EstimationError:
            wb = None
        n_evals += 2 * (len(flat_f) + len(flat_t))
        light = wb is not None and np.isfinite(wb.se) and all(
            np.isfinite(k) and k <= KHAT_HEAVY for k in wb.khat)
        if wb is not None and (light or method == "warped-bridge"):
            elpd, se, khat, used = wb.log_r, wb.se, wb.khat, "warped-bridge"
            joint_full, joint_train = wb.influence if wb.influence else (None, None)
            poor = not light
    elif method == "warped-bridge":
        raise InputError("the warped bridge needs the same parameters with and without the "
                         "held-out data; use method='auto'")
    if method == "evidence-difference" or (method == "auto" and poor):
        diff = _evidence_difference(full, train, xf, xt, seed, full_evidence,
                                    train_evidence)
        n_evals += diff[2]
        # A rule fixed in advance (poor bridge overlap -> the evidence difference), not the
        # smaller of two noisy se, which would select the error bars that came out too small.
        if np.isfinite(diff[0]) and np.isfinite(diff[1]):
            elpd, se, used = diff[0], diff[1], "evidence-difference"
            joint_full = joint_train = None
            shared_se = diff[3]
        elif method == "auto":
            warns.append(f"held-out {_numbers(v)}: the bridge's overlap is poor (k-hat "
                         f"{max(khat):.2f}) and the evidence difference failed; its se may "
                         "not cover the error")
    if not np.isfinite(elpd):
        raise EstimationError(f"no estimate of log p(y_V | y_T) for held-out {_numbers(v)}: the "
                              "bridge and the evidence difference both failed")
    if se > 0.1:
        warns.append(f"held-out {_numbers(v)}: Monte Carlo se {se:.2f} of log p(y_V | y_T); "
                     "run more draws")
    elpd_i_shared = shared_se
    khat_i, refit, point_values = np.full(v.size, np.nan), np.zeros(0, int), None
    full_influence = None
    if v.size == 1 or not pointwise:
        elpd_i = np.array([elpd]) if v.size == 1 else np.full(v.size, np.nan)
        elpd_i_mcse = se if v.size == 1 else float("nan")
        full_influence = joint_full if v.size == 1 else None
    else:
        sides = [_Side(aug, lp_t_at_t + log_q_t, lp_f_at_t, xt.shape[:2])]
        if not extra.size:  # the full draws join as a second proposal (mixture IS)
            sides.append(_Side(flat_f, lp_t_at_f, lp_f_at_f, xf.shape[:2]))
        pw = None if extra.size else _factorized(full, data, observations, v, flat_f,
                                                 lp_f_at_f - lp_t_at_f,
                                                 getattr(full_evidence, "once", None))
        log_r = elpd
        if pw is None:  # every T ∪ {i} evaluated whole: a density of N terms per value
            sides, log_r = _thin_sides(sides, elpd, used)
            inst = [model.with_data(observations.subset(data, np.union1d(keep, [i])))
                    for i in v]
            pos = [coordinate_map(full, m, everything, np.union1d(keep, [i]))
                   for m, i in zip(inst, v, strict=True)]
            terms = None
        else:  # log p̃_{T ∪ i} = log p̃_T + log p(y_i | θ): one term per value
            inst, pos = [None] * v.size, [common] * v.size
            terms = [pw.columns(v, sd.x) for sd in sides]
        pt = _Pointwise(inst, pos, extra, q, common, sides, log_r, kong=used == "bridge",
                        terms=terms)
        n_evals += v.size * sum(len(sd.x) for sd in sides)
        elpd_i, khat_i = pt.elpd_i.copy(), pt.khat_i
        refit = heavy_rows(khat_i) if point_refits else np.zeros(0, int)
        before = points if point_refits and points is not None and points.rows.size else None
        if before is not None:  # an earlier call's refit observations stay refit
            refit = np.union1d(refit, np.searchsorted(v, before.observations))
        elpd_i_mcse, slope = pt.sum_se(np.setdiff1d(np.arange(v.size), refit))
        full_influence = pt.full_influence
        # The evidence difference's log r comes from other estimates (two gbs fits), so its
        # error reaches Σ elpd_i through the mixture density, ∂Σ elpd_i/∂log r = slope; it
        # is taken as independent of the importance-sampling error (the delta method; coverage
        # in benchmarks/coverage_cv.py, parts ed).
        elpd_i_shared = 0.0
        if used in ("evidence-difference", "warped-bridge"):  # log r from other estimates
            elpd_i_mcse, elpd_i_shared = propagate_log_r(elpd_i_mcse, slope, se, shared_se)
        if refit.size:  # heavy-tailed weights: these observations get refits of their own
            new = refit if before is None else np.setdiff1d(
                refit, np.searchsorted(v, before.observations))
            done = [] if before is None else [before]
            if new.size:
                done.append(refit_points(
                    heldout_elpd, model, data, observations, v, new, full,
                    fd.unconstrained if fd.step_size is None else fd, td, lp_t_at_t, nuts,
                    seed, SharedEvidence(stream_int_seed(seed, Stream.REFIT_ESTIMATOR, 1)),
                    progress))
                n_grad += done[-1].n_gradient_evals
                n_evals += done[-1].n_evals
                warns.extend(w for w in done[-1].warnings if w not in warns)
            point_values = PointRefits.join(v, done)
            elpd_i[point_values.rows] = point_values.elpd
            # the rest's error and theirs are independent but for the training draws both
            # use: those draws' influence adds draw by draw (fold_sums.influence_var)
            elpd_i_mcse = _with_points(elpd_i_mcse, pt.train_influence, point_values)
    if unmixed:  # loo's NA: the value stands, its se does not
        se = elpd_i_mcse = float("nan")
        full_influence = joint_full = joint_train = None
    elif spread > 0:  # modes alike for it: half their values' range (weights unknown)
        se, elpd_i_mcse = math.hypot(se, spread), math.hypot(elpd_i_mcse, spread)
    return HeldOut(v, float(elpd), float(se), used, elpd_i, float(elpd_i_mcse),
                   (float(khat[0]), float(khat[1])), int(extra.size), int(n_grad), int(n_evals),
                   time.perf_counter() - t0, warns, float(shared_se), float(elpd_i_shared),
                   warm, td if keep_draws else None, khat_i, v[refit], point_values,
                   full_influence, joint_full, joint_train)


def heldout_many(
    model: StanProgram,
    data: Mapping[str, Any],
    observations: Observations,
    held_out_sets: Sequence[Sequence[int] | np.ndarray],
    *,
    full_draws: Any,
    settings: NutsArgs | None = None,
    seed: SeedLike = None,
    n_workers: int = 1,
    progress: Callable[[str], None] | None = None,
    anytime: bool = False,
    expected: float | None = None,
    warm_refits: bool = True,
    keep_draws: bool = False,
    **nuts_keywords: Unpack[NutsKeywords],
) -> list[HeldOut]:
    """:func:`heldout_elpd` for every held-out set (e.g. each observation for exact
    leave-one-out), sharing ``full_draws``; ``n_workers`` refits at once (threads, or the
    cluster of :func:`stanlogz.parallel.use_executor`). Set i's seed is child i of
    the seed's ``REFIT`` stream, so results do not depend on ``n_workers``. Every refit runs NUTS
    with ``settings`` and the loose keywords, as :func:`heldout_elpd`.

    Parameters
    ----------
    model : StanModel
        The program, built with any data; every refit builds its own training instance.
    data : dict
        All of its data, the same for every set.
    observations : Observations
        The observation structure of ``data``, which every set's indices refer to.
    held_out_sets : sequence of sequences of int
        The held-out sets (0-based indices), one refit each.
    full_draws : Draws or ndarray
        Posterior draws given all of ``data`` (an unconstrained array: chains x draws x
        parameters), shared by every set.
    settings : NutsArgs, optional
        Settings of every refit (a workflow's own, passed on as they are when no loose
        keyword is given).
    seed : int or SeedSequence, optional
        Random seed (set i's seed is child i of its ``REFIT`` stream).
    n_workers : int, default 1
        Refits at once.
    progress : callable, optional
        Called with one line of text per step.
    anytime : bool, default False
        Under a time budget, skip the refits that would not fit (:class:`RefitWatch`;
        their entries are None) instead of refusing the run.
    expected : float, optional
        Seconds one refit should take, for the first :class:`RefitWatch` check.
    warm_refits : bool, default True
        Warm-start every refit from ``full_draws`` where the parameters are the same
        (:func:`heldout_elpd`).
    keep_draws : bool, default False
        Keep every refit's training draws (:func:`heldout_elpd`).
    **nuts_keywords
        ``chains``, ``warmup``, ``draws``, ``adapt_delta``, ``max_treedepth``.

    Returns
    -------
    list of HeldOut
        One per held-out set, in order.

    Raises
    ------
    InputError
        As :func:`heldout_elpd`, for any set.

    See Also
    --------
    heldout_elpd : one held-out set.
    stanlogz.kfold : K-fold cross-validation built on it.

    Examples
    --------
    Exact leave-one-out of the first three observations of the normal-mean program, sharing
    one full-data NUTS run (run from the repository root):

    >>> import json, stanlogz
    >>> from stanlogz.crossval.observations.observations import find_observations
    >>> data = json.load(open("stan_models/examples/normal_mean.data.json"))
    >>> m = stanlogz.StanModel.from_file("stan_models/examples/normal_mean.stan", data)
    >>> full = stanlogz.sample(m, chains=2, warmup=300, draws=500, seed=1)
    >>> hs = stanlogz.heldout_many(m, data, find_observations(data), [[0], [1], [2]],
    ...                            full_draws=full, seed=3, chains=2, warmup=300, draws=500)
    >>> [h.index.tolist() for h in hs], all(h.mcse > 0 for h in hs)
    ([[0], [1], [2]], True)
    """
    nuts = nuts_from_keywords(settings, nuts_keywords, "heldout_many")
    total = len(held_out_sets)
    bar = steps(progress, total, "held-out refits", unit="refit")
    # Splits that fall back to the evidence difference share one log Z(full) from the shared
    # full draws (estimated once, so its error is common to them and the K-fold mc se adds it
    # linearly); without shared draws every split samples and estimates its own.
    shared = (None if full_draws is None
              else SharedEvidence(stream_int_seed(seed, Stream.SHARED_EVIDENCE)))

    watch = RefitWatch(expected) if anytime else None

    def one(v: Any, rng: np.random.Generator) -> HeldOut | None:
        if watch is not None and not watch.next_fits():
            return None  # the budget ended the refits: the caller estimates this set
        try:
            return heldout_elpd(model, data, observations, v, full_draws=full_draws,
                                settings=nuts, seed=generator_seed(rng), full_evidence=shared,
                                warm_refits=warm_refits, keep_draws=keep_draws)
        except OverBudget:
            if watch is None:
                raise
            watch.stopped = True
            return None

    warmup = min(nuts.warmup, WARM_REFIT_WARMUP) if warm_refits and full_draws is not None \
        else nuts.warmup  # a warm refit's iterations: the clock's rate per iteration
    clock = StepsClock("held-out refits", total, warmup + nuts.draws)

    def done() -> None:
        skipped = watch is not None and watch.stopped  # the set just ended was not refit
        bar.update(lambda k: f"held-out set {k}/{total} "
                   + ("left out by the time budget" if skipped else "done"))
        if watch is not None:
            watch.done()  # anytime: stop where the next refit would not fit
        else:
            clock.done()  # the run's time budget: the refits left at the rate so far

    with bar:
        return run_parallel(one, [np.asarray(v, dtype=int) for v in held_out_sets],
                            stream(seed, Stream.REFIT),
                            n_workers=n_workers, backend="thread" if n_workers > 1 else "serial",
                            on_done=done)

class RefitWatch:
    """The anytime mode of :func:`heldout_many` under a time budget: before each refit,
    ``stopped`` once it would end (at the slowest refit so far, or ``expected`` seconds
    before the first, with a fifth more) after the budget less ``RESERVE_SHARE`` of it; the
    sets not started then come back as None."""

    #: the part of the budget kept for what follows the refits (the sets left, estimated)
    RESERVE_SHARE = 0.1

    def __init__(self, expected: float | None = None) -> None:
        self.last = deadline.clock()
        self.slowest = float(expected or 0.0)
        self.measured = False
        self.stopped = False

    def done(self) -> None:
        """One refit ended: its time counts."""
        now = deadline.clock()
        took = now - self.last
        self.slowest = took if not self.measured else max(self.slowest, took)
        self.last, self.measured = now, True

    def next_fits(self) -> bool:
        """Whether another refit fits (False from the first that does not on)."""
        left = deadline.remaining()
        total = deadline.budget_seconds() or 0.0
        if left is not None and left - self.RESERVE_SHARE * total < 1.2 * self.slowest:
            self.stopped = True
        return not self.stopped


def _augment(x_train: np.ndarray, common: np.ndarray, extra: np.ndarray, dim: int,
             q: ConditionalGaussian | None, rng: np.random.Generator
             ) -> tuple[np.ndarray, np.ndarray]:
    """Training draws on the full program's space, the latents ``extra`` drawn from ``q``, and
    log q at them (zeros without latents)."""
    if q is None:
        return x_train, np.zeros(len(x_train))
    out = np.empty((len(x_train), dim))
    out[:, common] = x_train
    out[:, extra] = q.draw(x_train, rng)
    return out, q.log_pdf(x_train, out[:, extra])


def _bridge(pairs: list[tuple[np.ndarray, np.ndarray]]) -> tuple[float, float]:
    """log r and its se from one optimal bridge, or the mean of two cross-fitted ones (disjoint
    full-side draws, shared training draws: the training-side errors are added as if perfectly
    correlated, and the se is at least half the two estimates' difference); (nan, inf) when a
    bridge has no solution."""
    try:
        sols = [solve_bridge(lw_f, lw_t) for lw_f, lw_t in pairs]
    except EstimationError:
        return float("nan"), float("inf")
    if len(sols) == 1:
        return sols[0].log_r, sols[0].se
    k = len(sols)
    var = (sum(s.re2_p for s in sols) + sum(math.sqrt(s.re2_q) for s in sols) ** 2) / k**2
    est = [s.log_r for s in sols]
    return float(np.mean(est)), max(math.sqrt(var), (max(est) - min(est)) / 2)


def _with_points(se_rest: float, rest_train: np.ndarray | None, points: PointRefits) -> float:
    """se of Σ elpd_i: the importance-sampled rest (``se_rest``, whose training draws'
    influence is ``rest_train``) and the observations refit on their own, whose bridges use
    the same training draws (``points.train_influence``, summed over them)."""
    var = se_rest**2 + points.mcse**2
    b = points.train_influence
    if rest_train is not None and b is not None and b.shape == rest_train.shape:
        var += influence_var(rest_train + b) - influence_var(rest_train) - points.train_var
    return math.sqrt(max(var, 0.0))


def _thin_sides(sides: list[_Side], log_r: float, used: str) -> tuple[list[_Side], float]:
    """The sides on at most :data:`INSTANCE_DRAWS` draws each, and the log r their mixture
    takes: a plain bridge's is solved again on the draws kept, so that it is the mixture's
    own (Kong's) estimate there. The one from every draw is not, and it moved every
    observation's value alike: a fold of 40 was 0.074 off with an mcse of 0.008 at half the
    draws (``benchmarks/kfold_whole_coverage.py``). A log r from other estimates (the warped
    bridge, the evidence difference) keeps its own, its error propagated. One side alone
    (latents drawn from q for the held-out observations) keeps every draw: on
    latent_poisson_lower1.stan the thinned folds' mcse came out smaller than the unthinned
    ones' and the two totals differed by 4 of it (weights p̃ / (p̃_T q) heavier than 1,000
    draws show)."""
    if len(sides) != 2:
        return sides, log_r
    thin = [_thinned(sd, INSTANCE_DRAWS) for sd in sides]
    if used != "bridge" or thin[0] is sides[0] and thin[1] is sides[1]:
        return thin, log_r
    lw = [(sd.log_full - sd.log_train).reshape(sd.shape) for sd in thin]
    again, _ = _bridge([(lw[1], lw[0])])  # (full side, training side)
    return (thin, again) if np.isfinite(again) else (sides, log_r)


@dataclass
class _Side:
    """One set of proposal draws on the full program's space: the log density of the training
    proposal p̃_T q and of the full program at them, and their (chains, n) shape."""

    x: np.ndarray
    log_train: np.ndarray
    log_full: np.ndarray
    shape: tuple[int, ...]


def _thinned(sd: _Side, most: int | None) -> _Side:
    """``sd`` on at most ``most`` of its draws (all when None), spread evenly over each chain
    as :meth:`~stanlogz.draws.core.Draws.thinned` spreads them."""
    chains, n = sd.shape[0], int(np.prod(sd.shape[1:]))
    if most is None or chains * n <= most:
        return sd
    keep = even_rows(n, max(1, most // chains))
    rows = (np.arange(chains)[:, None] * n + keep[None, :]).ravel()
    return _Side(sd.x[rows], sd.log_train[rows], sd.log_full[rows], (chains, keep.size))


class _Pointwise:
    """log p(y_i | y_T) for each held-out observation (data instance ``inst[i]`` on the full
    coordinates ``pos[i]``) by importance sampling, the Pareto k̂ of each one's weights, and
    (:meth:`sum_se`) the delta-method se of a sum of them (the terms share the draws).

    One side: importance sampling from the (augmented) training posterior. Two sides: mixture
    importance sampling from both posteriors (balance heuristic), the full posterior normalized
    by the bridge's log r = log Z_full − log Z_T. That log r solves the same mixture's
    self-consistency equation (the optimal bridge is Kong et al.'s 2003 likelihood estimator
    for two samples), and with the normalizers estimated from the same draws the asymptotic
    variance is at most the one with log r known (Tan 2004), so the delta-method se with log r
    held fixed is the one reported. The weights are not smoothed: where an observation's k̂
    exceeds 0.5 their variance is infinite and its se does not hold
    (:mod:`.heldout_points` refits it)."""

    def __init__(self, inst: list[Any], pos: list[np.ndarray], extra: np.ndarray,
                 q: ConditionalGaussian | None, common: np.ndarray, sides: list[_Side],
                 log_r: float, kong: bool = False, terms: list[np.ndarray] | None = None
                 ) -> None:
        self.sides, self.log_r, self.kong = sides, log_r, kong
        self.n_all = n_all = sum(len(sd.x) for sd in sides)
        dens = []  # log density of the proposal (the mixture) per draw
        for sd in sides:
            if len(sides) == 1:
                dens.append(sd.log_train)
                continue
            lt = math.log(len(sides[0].x) / n_all) + sd.log_train
            lf = math.log(len(sides[1].x) / n_all) + sd.log_full - log_r
            dens.append(np.logaddexp(lt, lf))
        self.dens = dens
        logs = [np.empty((len(inst), len(sd.x))) for sd in sides]
        for k, (m, p) in enumerate(zip(inst, pos, strict=True)):
            if terms is None:  # the whole program per observation (wells: 0.4 s each)
                deadline.check_spent("the held-out densities")
            other = np.flatnonzero(~np.isin(extra, p))  # latents drawn from q the instance lacks
            for j, sd in enumerate(sides):
                # log p̃_{T ∪ i}: the instance's density, or (a factorized program) log p̃_T
                # plus the observation's term
                lp = m.log_density_many(sd.x[:, p]) if terms is None else \
                    sd.log_train + terms[j][:, k]
                lw = _finite(lp) - dens[j]
                if q is not None and other.size:
                    lw = lw + q.log_pdf(sd.x[:, common], sd.x[:, extra[other]], cols=other)
                logs[j][k] = lw
        self.logs = logs
        both = np.concatenate(logs, axis=1)
        self.elpd_i = special.logsumexp(both, axis=1) - math.log(n_all)
        self.khat_i = np.array([pareto_k(row) for row in both])

    def sum_se(self, rows: np.ndarray | None = None) -> tuple[float, float]:
        """The se of Σ elpd_i over ``rows`` (all when None) and its derivative in ``log_r``
        (0 with one side, which does not use it); :attr:`full_influence` keeps the full-data
        draws' part of it."""
        sides, n_all, log_r = self.sides, self.n_all, self.log_r
        sel = slice(None) if rows is None else rows
        elpd_i = self.elpd_i[sel]
        # influence of each draw on Σ_i log p̂_i: Σ_i (w_i / p̂_i − 1), plus, when log r is the
        # pooled draws' own bridge (Kong's estimating equation), the term it propagates through
        # the mixture density (M-estimation sandwich; without it the se was ~3x too large)
        infl = [np.exp(lg[sel] - elpd_i[:, None]).sum(axis=0) for lg in self.logs]
        slope = 0.0
        if len(sides) == 2:
            # responsibility of the full posterior in the mixture: ∂ log w_i / ∂ log r at a
            # draw, so ∂ elpd_i / ∂ log r is its w_i-weighted mean (in [0, 1] per observation)
            resp_f = [np.exp(math.log(len(sides[1].x) / n_all) + sd.log_full - log_r
                             - self.dens[j]) for j, sd in enumerate(sides)]
            slope = sum(float(np.sum(g * r)) for g, r in zip(infl, resp_f, strict=True)) / n_all
        if self.kong and len(sides) == 2:
            a00 = -sum(float(np.sum(r * (1.0 - r))) for r in resp_f) / n_all
            if a00 < 0:  # influence − slope / a00 · ψ_0, with ψ_0 = resp_f − n_f / n
                u0 = slope / a00
                frac_f = len(sides[1].x) / n_all
                infl = [g - u0 * (r - frac_f) for g, r in zip(infl, resp_f, strict=True)]
        var = 0.0
        #: each full-data draw's influence on the sum over n_all (the second side's), which
        #: every split of the same full draws shares: :func:`.fold_sums.folds_sum_se`
        self.full_influence = self.train_influence = None
        for j, sd in enumerate(sides):
            g = infl[j].reshape(sd.shape)
            var += influence_var(g / n_all)  # (n_j / n_all)² τ var(g) / n_j, n_j = g.size
            if j == 1:
                self.full_influence = g / n_all
            else:  # the training draws', which refits of single observations share
                self.train_influence = g / n_all
        return math.sqrt(var), slope


def _evidence_difference(full: Any, train: Any, xf: np.ndarray, xt: np.ndarray,
                         seed: SeedLike,
                         full_evidence: Callable[[StanProgram, np.ndarray], tuple[Any, bool]]
                         | None = None,
                         train_evidence: Callable[[StanProgram, np.ndarray], tuple[Any, bool]]
                         | None = None) -> tuple[float, float, int, float]:
    """log Z(full) − log Z(T) from two gbs estimates on the two posteriors' draws, its se,
    cost and the part of the se that ``full_evidence`` (log Z(full) shared by all splits)
    contributes; (nan, inf, 0, 0) when either estimate fails. ``train_evidence`` gives
    log Z(T) the same way (shared by the refit observations of one split)."""
    from ...estimators.bridge.bridge import gbs

    seed_full = stream_int_seed(seed, Stream.ESTIMATOR)
    try:
        a, counted = (full_evidence(full, xf) if full_evidence
                      else (gbs(full, xf, seed=seed_full), True))
        b, counted_t = (train_evidence(train, xt) if train_evidence else
                        (gbs(train, xt, seed=stream_int_seed(seed, Stream.REFIT_ESTIMATOR)), True))
    except (EstimationError, InputError):
        return float("nan"), float("inf"), 0, 0.0
    return (a.log_z - b.log_z, math.hypot(a.log_z_se, b.log_z_se),
            int((b.n_evals if counted_t else 0) + (a.n_evals if counted else 0)),
            float(a.log_z_se) if full_evidence else 0.0)


def _draws(model: StanProgram, given: Any, nuts: NutsArgs, seed: int | None,
           progress: Callable[[str], None] | None, what: str) -> Draws:
    if isinstance(given, np.ndarray):  # unconstrained values: no constrained columns needed
        arr = np.asarray(given, dtype=float)
        if arr.ndim != 3 or arr.shape[2] != model.dim:
            raise InputError(f"draws for {model.name} ({what}) must be (chains, n, "
                             f"{model.dim}), got {arr.shape}")
        return Draws(unconstrained=arr)
    if given is None and progress:
        progress(f"NUTS on {model.name} ({what})")
    return obtain_draws(model, given, nuts, seed=seed)


def _factorized(full: StanProgram, data: Mapping[str, Any], observations: Observations,
                v: np.ndarray, flat_f: np.ndarray, lp_diff: np.ndarray,
                once: Callable[[Any, Callable[[], None]], None] | None = None
                ) -> PointwiseLogLik | None:
    """The density-difference source of log p(y_i | θ) (loo's, O(1) per value) where it is
    the held-out observations' term of the program: its check passes at 3 full-data draws
    (the N terms sum to the full-data difference, the constraints do not depend on the data)
    and there the terms of V sum to ``lp_diff`` = log p̃_full − log p̃_T. None otherwise.
    ``once`` (:meth:`SharedEvidence.once`) runs the check, the same for every split of one
    program, data set and full draws, for the first split only (N instances of the program:
    a fifth of roaches' K-fold)."""
    rows = np.unique(np.linspace(0, len(flat_f) - 1, 3).astype(int))
    try:
        pw = PointwiseLogLik(full, data, observations, "difference")
        at = flat_f[rows]
        if once is None:
            pw.check(at)
        else:
            once(("pointwise check", at.tobytes()), lambda: pw.check(at))
            pw.checked = True
        got = pw.columns(v, at).sum(axis=1)
    except StanlogzError:
        return None
    want = lp_diff[rows]
    with np.errstate(invalid="ignore"):
        same = np.abs(got - want) <= 1e-9 * (1.0 + np.abs(want) + np.abs(got))
    return pw if bool(np.all(same)) else None


def _finite(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a, dtype=float).copy()
    a[~np.isfinite(a)] = -np.inf
    return a


def _numbers(v: np.ndarray) -> str:
    """Observations as Stan numbers: '3' or '3, 5, 9' (at most 6 shown)."""
    shown = ", ".join(str(int(i) + 1) for i in v[:6])
    return f"observation {shown}" if v.size == 1 else \
        f"observations {shown}{', ...' if v.size > 6 else ''}"


def propagate_log_r(se_fixed: float, slope: float, log_r_se: float, shared_se: float
                    ) -> tuple[float, float]:
    """se of Σ elpd_i with an independent error in log r propagated by the delta method
    (``slope`` = ∂Σ elpd_i/∂log r, ``se_fixed`` the se with log r held fixed), and the part of
    it that comes from the ``shared_se`` part of ``log_r_se`` (for :func:`shared_sum_se`)."""
    return math.hypot(se_fixed, slope * log_r_se), abs(slope) * shared_se


def shared_sum_se(se: Sequence[float], shared: Sequence[float]) -> float:
    """se of a sum of split estimates whose errors are independent apart from a part
    ``shared[k]`` of ``se[k]`` that comes from one common estimate (it adds linearly)."""
    own = sum(max(s * s - c * c, 0.0) for s, c in zip(se, shared, strict=True))
    common = sum(shared)
    return float(math.sqrt(own + common * common))
