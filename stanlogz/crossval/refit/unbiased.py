"""Unbiased leave-n_V-out Bayesian cross-validation (Rischard, Jacob & Pillai 2018, §2.2).

The objective is CV = average over all splits (T, V), |V| = n_V, of −log p(y_V | y_T). Each
replicate draws a split uniformly, a λ from the tuned q(λ), and runs coupled chains on
π_λ(θ) ∝ p(θ) p(y_T | θ) p(y_V | θ)^λ (the geometric path between the posterior given T and the
posterior given all data); −Ê(λ)/q(λ) is then unbiased for CV itself. Replicates are
independent, so their mean has a CLT confidence interval and they can run on any number of
workers. Leave-one-out is n_V = 1 (splits drawn over observations).

The path's tuning (k, m, initial distributions, proposals, q) is fitted once on a separate random
split; a fixed tuning keeps every replicate unbiased for any split.

The squared-error criterion (Rischard, Jacob & Pillai 2018, §3.3.1) needs no path: per split,
unbiased MCMC on p(θ | y_T) of h(θ) = Σ_{j∈V} (y_j − y_rep_j(θ))², with ``y_rep`` the
program's posterior predictive generated quantity (one draw per evaluation, so
E[h | θ] = Σ_j Var(y_j | θ) + (E[y_j | θ] − y_j)², the expected squared error of a
prediction given θ).
"""

from __future__ import annotations

import hashlib
import math
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar, Unpack

import numpy as np
from scipy import stats

from ..._util import deadline
from ..._util.seeds import Stream, stream, stream_int_seed
from ...densities.fits import gaussian_from_draws
from ...draws import obtain_draws
from ...errors import EstimationError, InputError
from ...estimators.ups.ups import (
    replicate_tail_k,
    replicate_tasks,
    run_replicates,
    run_replicates_in_time,
    tail_warnings,
    ups,
)
from ...mcmc.paths import two_posterior_path
from ...parallel import as_seed_sequence, with_client
from ...stan.nuts import budget_stop_dict
from ...stan.program import ProgramLike, StanProgram
from ...stan.settings import NutsArgs, NutsKeywords, nuts_from_keywords
from ..elpd.base import ElpdResult
from ..names import CVNames
from ..observations.observations import Observations, load_observed
from .cv_routes import PointwisePath, routed_source

#: Pilot runs per lambda grid point for the tuning (UPS's default is 100): the tuning only sets
#: k, m, proposals and q, which affect the variance, never the unbiasedness; on stack-loss 100
#: pilots cost 10x the evaluations of 200 replicates.
CV_PILOT = 30

#: Cross-validation criteria: name -> what one split's value is.
CRITERIA = {"log": "-log p(y_V | y_T)",
            "squared_error": "E[sum_V (y_j - y_rep_j)^2 | y_T]"}



@dataclass(repr=False)
class CVResult(CVNames, ElpdResult):
    """Unbiased estimate of the cross-validation objective: the mean over splits of
    −log p(y_V | y_T) (or of the squared-error score).

    The objective is a mean per split; the names of the elpd interface
    (:class:`~stanlogz.crossval.elpd.base.ElpdResult`) mean what they mean for LOO, K-fold and
    LFO, on the scale of the sum over observations: ``elpd`` = −N · ``estimate`` and ``mcse`` =
    N · ``estimate_mcse`` (leave-one-out with the log score; NaN otherwise).

    Attributes
    ----------
    model : str
        The program's name.
    estimate : float
        The objective, a mean per split (JSON ``cv``).
    estimate_mcse : float
        Its Monte Carlo se over the independent replicates (random splits, random λ, coupled
        chains): the error against the exact objective over all splits of these data (JSON
        ``cv_mcse``; it was ``se`` before issue 34).
    ci : tuple of float
        The objective's confidence interval, at level ``ci_level``.
    n_valid : int
        Held-out observations per split (``n_obs``: all observations).
    replicates : ndarray
        The unbiased replicates.
    splits : ndarray
        The held-out observations (0-based) of each replicate, one row each.
    criterion : str
        The score (``"log"``: log predictive density).
    n_samples : int
        Posterior draws given all data (the coupled chains' initial distribution).
    warnings : list of str
        What to do about problems found.
    budget_stop : dict or None
        What the run's time budget ended: ``"replicates"`` (``done`` of ``asked``: the
        splits past the first ``done`` of the seeded order were not run; the replicates are
        independent, so the estimate and interval of those done are honest, only wider) and
        ``"sampling"`` (NUTS stopped past its warmup); None when it ended nothing.

    See Also
    --------
    stanlogz.cv : makes it.
    """

    kind: ClassVar[str] = "cv"
    model: str
    estimate: float
    estimate_mcse: float
    ci: tuple[float, float]
    ci_level: float
    n_valid: int
    replicates: np.ndarray
    splits: np.ndarray  # (S, n_valid), 0-based observation indices
    lambdas: np.ndarray
    meeting_times: np.ndarray
    tail_k: float
    n_evals: int
    n_evals_tuning: int
    seconds: float
    observations: Observations
    criterion: str = "log"
    n_samples: int = 0
    warnings: list[str] = field(default_factory=list)
    budget_stop: dict[str, Any] | None = None

    @property
    def on_elpd_scale(self) -> bool:
        """Whether the objective is −elpd_loo / N (n_V = 1 and the log score)."""
        return self.n_valid == 1 and self.criterion == "log"

    @property
    def elpd(self) -> float:
        """The objective on the elpd scale for n_V = 1 and the log score: elpd_loo ≈ −N · CV,
        the sum over observations (NaN otherwise)."""
        return -self.n_obs * self.estimate if self.on_elpd_scale else float("nan")

    @property
    def mcse(self) -> float:
        """Monte Carlo se of :attr:`elpd`: N · ``estimate_mcse`` (NaN where ``elpd`` is)."""
        return self.n_obs * self.estimate_mcse if self.on_elpd_scale else float("nan")

    @property
    def se(self) -> float:
        """loo's between-observation se of elpd, sqrt(N var(elpd_i)): not estimated (NaN). The
        replicates' spread mixes the observations' spread with the chains' error; the error
        of the estimate itself is :attr:`mcse` (:func:`stanlogz.loo` gives ``se``)."""
        return float("nan")

    @property
    def p(self) -> float:
        """The effective number of parameters: not estimated (NaN)."""
        return float("nan")

    @property
    def elpd_i(self) -> np.ndarray:
        """Pointwise elpd: not estimated, NaN for each of the N observations (the replicates
        are of random splits)."""
        return np.full(self.observations.n, np.nan)

    def table(self) -> list[list[Any]]:
        """Summary rows: (quantity, estimate, Monte Carlo se, CI low, CI high)."""
        what = CRITERIA[self.criterion]
        rows = [[f"cv ({what})", self.estimate, self.estimate_mcse, *self.ci]]
        if self.on_elpd_scale:
            rows.append(["elpd_loo (= -N cv)", self.elpd, self.mcse,
                         -self.n_obs * self.ci[1], -self.n_obs * self.ci[0]])
        return [[r[0], *(round(float(v), 4) for v in r[1:])] for r in rows]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable dict: the elpd interface's keys (``elpd``, ``se``, ``mcse``: None
        where not defined), the objective ``cv`` with ``cv_mcse`` and ``ci``, and the per-split
        replicates."""
        return {**self.elpd_dict(), "model": self.model, "criterion": self.criterion,
                "cv": self.estimate, "cv_mcse": self.estimate_mcse, "ci": list(self.ci),
                "ci_level": self.ci_level, "n_valid": self.n_valid,
                "n_splits": int(self.replicates.size),
                "replicates": self.replicates.tolist(),
                "splits": (self.splits + 1).tolist(), "lambdas": self.lambdas.tolist(),
                "meeting_times": self.meeting_times.tolist(), "tail_k": self.tail_k,
                "n_evals": self.n_evals, "n_evals_tuning": self.n_evals_tuning,
                "seconds": self.seconds, "warnings": self.warnings,
                "budget_stop": self.budget_stop}


def draw_splits(n: int, n_valid: int, splits: int, seed: Any) -> np.ndarray:
    """``splits`` validation sets of size ``n_valid`` drawn uniformly from ``range(n)``."""
    rng = np.random.default_rng(seed)
    return np.array([np.sort(rng.choice(n, size=n_valid, replace=False))
                     for _ in range(splits)], dtype=int)


@with_client
def cv(
    model: ProgramLike,
    data: Any = None,
    *,
    n_valid: int = 1,
    splits: int = 100,
    obs: str | None = None,
    obs_fields: list[str] | None = None,
    draws: Any = None,
    settings: NutsArgs | None = None,
    seed: int | None = None,
    criterion: str = "log",
    outcome: str = "y",
    kernel: str = "rwmh",
    n_workers: int | None = None,
    ci_level: float = 0.95,
    ups_options: dict[str, Any] | None = None,
    progress: Any = None,
    **nuts_keywords: Unpack[NutsKeywords],
) -> CVResult:
    """Unbiased leave-``n_valid``-out cross-validation of a Stan program.

    ``splits`` independent replicates, each unbiased for the objective: the mean
    −log p(y_V | y_T) (``criterion="log"``) or the expected squared prediction error of the
    held-out ``outcome`` (``criterion="squared_error"``), from coupled Markov chains; their
    mean has a confidence interval from the replicates.

    Parameters
    ----------
    model : str, Path or StanModel
        The program.
    data : dict or str, optional
        Its data.
    n_valid : int, default 1
        Observations held out per split.
    splits : int, default 100
        Independent replicates.
    obs, obs_fields : str, list of str, optional
        The observation count and the data variables indexed by observation.
    draws : Draws, cmdstanpy fit, CSV paths or InferenceData, optional
        Draws given all data: the initial distribution of the coupled chains (NUTS with
        ``settings`` when omitted).
    settings : NutsArgs, optional
        Sampler settings; the keywords ``chains``, ``warmup``, ``n_draws``, ``adapt_delta``,
        ``max_treedepth`` replace single fields.
    seed : int, optional
        Random seed.
    criterion : {"log", "squared_error"}, default "log"
        The objective; ``"squared_error"`` needs a ``y_rep`` generated quantity with one
        posterior-predictive draw per observation.
    outcome : str, default "y"
        The held-out data variable of ``"squared_error"``.
    kernel : {"rwmh", "hmc"}, default "rwmh"
        The coupled chains' kernel.
    n_workers : int, optional
        Local processes for the splits (or a Dask cluster through ``client=``).
    ci_level : float, default 0.95
        Level of the confidence interval.
    ups_options : dict, optional
        Options of the tuning run (:func:`stanlogz.estimators.ups.ups.ups`; ``n_pilot``
        defaults to :data:`CV_PILOT`).
    progress : callable, optional
        Called with one line of text per step.
    **nuts_keywords
        Single fields of ``settings``, by name (see ``settings``).

    Returns
    -------
    CVResult
        ``estimate`` with ``estimate_mcse`` and ``ci`` (on the elpd scale ``elpd`` and
        ``mcse``), the ``replicates`` and their ``lambdas``,
        ``warnings``.

    Raises
    ------
    InputError
        Bad arguments; or a program whose parameters change with the observations other
        than by per-observation latents (those are cross-validated with n_valid = 1 on the
        path of loo's pointwise log-likelihood, :mod:`.cv_routes`).

    See Also
    --------
    stanlogz.loo : PSIS-LOO, with fix-ups.
    stanlogz.kfold : K-fold by refits.

    Examples
    --------
    The executed tutorial :doc:`/tutorials/dask` runs ``cv`` with 20 splits on a Dask cluster;
    the ``cv`` command with 20 splits is the same from a shell.
    """
    t0 = time.perf_counter()
    nuts = nuts_from_keywords(settings, nuts_keywords, "cv")
    if not (isinstance(splits, int | np.integer) and splits >= 2):
        raise InputError(f"splits must be an integer >= 2 (for a standard error), got {splits!r}")
    if not 0.0 < ci_level < 1.0:
        raise InputError(f"ci_level must be in (0, 1), got {ci_level}")
    if criterion not in CRITERIA:
        raise InputError(f"criterion must be one of {', '.join(CRITERIA)}, got {criterion!r}")
    model, data_dict, observations = load_observed(model, data, obs, obs_fields, seed=seed,
                                                   progress=progress, settings=nuts)
    n = observations.n
    if not (isinstance(n_valid, int | np.integer) and 1 <= n_valid < n):
        raise InputError(f"n_valid must be an integer in 1..{n - 1} (there are {n} "
                         f"observations), got {n_valid!r}")
    squared = None if criterion == "log" else _SquaredError(model, data_dict, observations,
                                                             outcome)
    ss = as_seed_sequence(seed)
    d = obtain_draws(model, draws, nuts, seed=stream_int_seed(ss, Stream.CV_SAMPLING),
                     progress=progress)
    g = gaussian_from_draws(d.unconstrained)

    def held_out(v: np.ndarray) -> Any:
        m = model.with_data(observations.without(data_dict, v))
        if m.dim != model.dim:
            raise InputError(f"leaving out observations changes the number of parameters of "
                             f"{model.name} ({model.dim} -> {m.dim}); cross-validate over "
                             "groups instead")
        return m

    def init(lam: float) -> tuple[np.ndarray, np.ndarray]:
        return g.mean, g.cov

    routed = None  # loo's pointwise source, where the held-out program changes the parameters
    if model.with_data(observations.without(data_dict, np.array([0]))).dim != model.dim:
        routed = routed_source(model, data_dict, observations, d.flat_unconstrained(), n_valid,
                               criterion, kernel)

    def path(v: np.ndarray) -> Any:
        if routed is not None:
            return PointwisePath(model, routed, int(v[0]))
        if squared is None:
            return two_posterior_path(held_out(v), model)
        return squared.path(held_out(v), v)

    if progress:
        progress(f"tuning on a random split (n_V = {n_valid}, {criterion} criterion)")
    tune_split = draw_splits(n, n_valid, 1, stream(ss, Stream.CV_TUNING, 0))[0]
    # The initial distribution and proposal come from the full-data posterior at every lambda
    # (each pi_lambda lies between two posteriors that differ by n_V observations), so only k,
    # m and q are tuned (adapt=False: per-lambda moments from few pilots can be worse). The
    # squared-error criterion needs no path: lambda stays 0, the posterior given T.
    options = {"n_pilot": CV_PILOT, "adapt": False, **(ups_options or {})}
    if squared is not None:
        options.update(grid=[0.0, 1.0], q="uniform")
    tuned = ups(path(tune_split), init=init, n_replicates=2, seed=stream(ss, Stream.CV_TUNING, 1),
                kernel=kernel, n_workers=n_workers, **options)
    tuning = tuned.tuning
    val = draw_splits(n, n_valid, int(splits), stream(ss, Stream.CV_SPLITS))
    if squared is None:
        lam_rng = np.random.default_rng(stream(ss, Stream.CV_LAMBDAS))
        lams = np.array([tuning.sample_q(lam_rng) for _ in range(val.shape[0])])
    else:
        lams = np.zeros(val.shape[0])
    ks: list[int] = []  # each replicate's k, recorded as its task is built

    def make(i: int, j: int) -> list:
        built = [t for v, lam in zip(val[i:j], lams[i:j], strict=True)
                 for t in replicate_tasks(path(v), tuning, [lam], tuned.kernel_config)]
        ks.extend(t[6] for t in built)
        return built

    asked, budget_stop = len(val), None
    if getattr(d, "budget_stop", None):  # the draws only start the chains: still unbiased
        budget_stop = {"sampling": budget_stop_dict(d.budget_stop)}
    if progress:
        progress(f"{asked} unbiased replicates")
    if deadline.remaining() is None:
        out = run_replicates(make(0, asked), stream(ss, Stream.CV_REPLICATES), n_workers)
    else:  # the splits the budget leaves time for: a prefix of the seeded order
        out = run_replicates_in_time(make, asked, stream(ss, Stream.CV_REPLICATES), n_workers,
                                     what="cv's replicates")
        if len(out) < asked:
            budget_stop = {**(budget_stop or {}),
                           "replicates": {"done": len(out), "asked": asked}}
            val, lams = val[:len(out)], lams[:len(out)]
    e_hat = np.array([o[0] for o in out], dtype=float)
    reps = -e_hat / tuning.q_density(lams) if squared is None else e_hat
    if not np.all(np.isfinite(reps)):
        raise EstimationError("non-finite cross-validation replicates: the path or the kernel "
                              "is unstable; try kernel='hmc' or more draws")
    s = reps.size
    est, se = float(reps.mean()), float(reps.std(ddof=1) / math.sqrt(s))
    z = float(stats.t.ppf(0.5 + ci_level / 2, s - 1))
    taus = np.array([o[1] for o in out], dtype=int)
    tail_k = replicate_tail_k(reps)
    warns = tail_warnings(tail_k)
    if np.mean(taus > np.array(ks[:taus.size])) > 0.05:
        warns.append("over 5% of replicates met after k: estimates stay unbiased but are "
                     "noisier; pass ups_options={'k_factor': 2}")
    if budget_stop is not None:
        warns.append(f"the time budget ended the replicates: {s} of {asked} splits done "
                     "(the first ones of the seeded order); the estimate and its interval are "
                     "theirs")
    if s < 30:
        warns.append("fewer than 30 splits: the CI relies on near-normal replicates")
    return CVResult(
        model=model.name, estimate=est, estimate_mcse=se, ci=(est - z * se, est + z * se),
        ci_level=ci_level, n_valid=int(n_valid), replicates=reps, splits=val,
        lambdas=lams, meeting_times=taus, tail_k=float(tail_k),
        n_evals=int(sum(o[3] for o in out)),
        n_evals_tuning=int(tuned.n_evals + tuned.n_evals_tuning),
        seconds=time.perf_counter() - t0, observations=observations, criterion=criterion,
        n_samples=int(d.n_chains * d.n_draws), warnings=warns, budget_stop=budget_stop,
    )


class _SquaredError:
    """The squared-error criterion's test function for one program and data set."""

    def __init__(self, model: StanProgram, data: dict[str, Any], obs: Observations,
                 outcome: str) -> None:
        if outcome not in obs.fields:
            raise InputError(f"outcome {outcome!r} is not one of the observation arrays "
                             f"({', '.join(obs.fields)})")
        y = np.asarray(data[outcome], dtype=float)
        if y.ndim != 1:
            raise InputError(f"outcome {outcome!r} must be a vector of one value per observation")
        names = model.param_names(include_tp=True, include_gq=True)
        index = {nm: j for j, nm in enumerate(names)}
        n_rep = sum(nm.startswith("y_rep.") for nm in names)
        cols = [index.get(f"y_rep.{i + 1}") for i in range(obs.n)]
        if n_rep != obs.n or None in cols:
            raise InputError(f"the squared-error criterion needs a y_rep generated quantity with "
                             f"one posterior-predictive draw per observation ({obs.n}); "
                             f"{model.name} has {n_rep}")
        self.model, self.y, self.cols = model, y, np.array(cols, dtype=int)

    def path(self, train: Any, valid: np.ndarray) -> _TestFunctionPath:
        return _TestFunctionPath(train, self, np.asarray(valid, dtype=int))

    def h(self, x: np.ndarray, valid: np.ndarray) -> float:
        # One posterior-predictive draw at x; its seed is a hash of x, so h is a deterministic
        # function of the state (reproducible for any worker count).
        seed = int.from_bytes(hashlib.blake2b(x.tobytes(), digest_size=4).digest(), "little")
        gq = self.model.constrain(x, include_tp=True, include_gq=True, seed=seed >> 1)
        return float(np.sum((self.y[valid] - gq[self.cols[valid]]) ** 2))


class _TestFunctionPath:
    """p(θ | y_T) for every lambda, with dU/dλ := the squared-error test function, so UPS's
    unbiased estimate at lambda = 0 is unbiased for E[h | y_T]."""

    def __init__(self, train: Any, sq: _SquaredError, valid: np.ndarray) -> None:
        self.train, self.sq, self.valid = train, sq, valid

    @property
    def dim(self) -> int:
        return int(self.train.dim)

    def U(self, lam: float, x: np.ndarray) -> float:
        return float(self.train.log_density(x))

    def grad_x(self, lam: float, x: np.ndarray) -> tuple[float, np.ndarray]:
        return self.train.log_density_gradient(x)

    def dU_dlam(self, lam: float, x: np.ndarray) -> float:
        return self.sq.h(np.asarray(x, dtype=float), self.valid)
