"""Bayes-factor calibration by simulation (Schad, Nicenboim, Bürkner, Betancourt & Vasishth
2022).

Each simulation draws the true program k with the prior model probabilities, data from k's
*simulation program* (its generated quantities draw the parameters from the prior and the data
given them, as the testbed's simulation programs do), and every program's log Z on those data.
When the programs and the computation are right, the posterior probability of each program
averages to its prior probability over simulations: E[P(M_k | y)] = P(M_k). The check compares
the mean posterior probability with the prior probability in units of its standard error
(sd over simulations / sqrt(n)); a computation that is wrong somewhere (a wrong prior scale, a
biased estimator) shows up as a mean that misses. Also reported: the distribution of log BF
against the first program under each truth and the rate of decisive wrong Bayes factors.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.special import logsumexp

from .._util.progress import steps
from .._util.seeds import SeedLike, Stream, generator_seed, stream, stream_int_seed
from ..draws import sample
from ..errors import InputError
from ..estimators import lookup
from ..parallel import run_parallel, with_client
from ..stan.inputs import read_data
from ..stan.load import load_model
from ..stan.program import StanProgram
from ..stan.settings import NutsArgs
from ..testbed.simulation import simulate

#: A Bayes factor of at least this for a wrong program counts as a decisive wrong answer
#: (Jeffreys' "decisive").
DECISIVE_BF = 100.0
#: |mean posterior probability − prior probability| / se above which the check fails.
Z_LIMIT = 3.0


@dataclass
class CalibrationSummary:
    """Mean posterior probability of each program against its prior, log BF quantiles under
    each truth and the decisive-wrong rate (see :func:`calibration_summary`)."""

    prior_probs: list[float]
    mean_post_prob: list[float]
    mean_post_prob_se: list[float]
    z: list[float]
    passed: bool
    log_bf_quantiles: dict[str, dict[str, list[float]]]
    decisive_wrong_rate: float
    decisive_wrong_se: float
    n_by_truth: list[int]

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def calibration_summary(true_model: Sequence[int], log_z: np.ndarray,
                        prior_probs: Sequence[float], decisive_bf: float = DECISIVE_BF
                        ) -> CalibrationSummary:
    """The calibration check of simulated ``log_z`` ``(n_sims, K)`` whose data came from
    programs ``true_model`` (0-based), drawn with ``prior_probs``."""
    lz = np.atleast_2d(np.asarray(log_z, dtype=float))
    truth = np.asarray(true_model, dtype=int)
    prior = np.asarray(prior_probs, dtype=float)
    n, k = lz.shape
    if truth.shape != (n,) or prior.shape != (k,) or n < 2:
        raise InputError(f"need at least 2 simulations with one true model each and {k} prior "
                         f"probabilities; got {truth.shape}, {prior.shape}")
    if not np.all(np.isfinite(lz)):
        raise InputError("some simulated log Z are not finite")
    lp = lz + np.log(prior)
    post = np.exp(lp - logsumexp(lp, axis=1, keepdims=True))
    mean = post.mean(axis=0)
    se = post.std(axis=0, ddof=1) / math.sqrt(n)
    z = np.where(se > 0, (mean - prior) / np.where(se > 0, se, 1.0), 0.0)
    probs = [5, 25, 50, 75, 95]
    quant: dict[str, dict[str, list[float]]] = {}
    for t in range(k):
        rows = lz[truth == t]
        quant[str(t)] = {str(j): (np.percentile(rows[:, j] - rows[:, 0], probs).tolist()
                                  if rows.size else []) for j in range(1, k)}
    wrong = np.array([np.max(np.delete(lz[i] - lz[i, truth[i]], truth[i]))
                      > math.log(decisive_bf) for i in range(n)]) if k > 1 else np.zeros(n)
    rate = float(wrong.mean())
    return CalibrationSummary(
        prior_probs=prior.tolist(), mean_post_prob=mean.tolist(), mean_post_prob_se=se.tolist(),
        z=z.tolist(), passed=bool(np.all(np.abs(z) <= Z_LIMIT)), log_bf_quantiles=quant,
        decisive_wrong_rate=rate, decisive_wrong_se=math.sqrt(rate * (1 - rate) / n),
        n_by_truth=np.bincount(truth, minlength=k).tolist())


@dataclass
class CalibrationResult:
    """Simulations and their summary (see :func:`calibrate`).

    Attributes
    ----------
    models : list of str
        The programs compared.
    simulations : list of dict
        One row per simulated data set (its log Z of each program, the true model, ...).
    summary : CalibrationSummary
        How often and how badly the Bayes factor misleads.
    method : str
        The evidence estimator.
    warnings : list of str
        What to do about problems found.
    """

    models: list[str]
    simulations: list[dict[str, Any]]
    summary: CalibrationSummary
    method: str
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)

    @property
    def log_z(self) -> np.ndarray:
        return np.array([s["log_z"] for s in self.simulations])

    @property
    def true_model(self) -> np.ndarray:
        return np.array([s["true_model"] for s in self.simulations])

    def table(self) -> list[list[Any]]:
        s = self.summary
        return [[m, s.prior_probs[i], s.mean_post_prob[i], s.mean_post_prob_se[i], s.z[i]]
                for i, m in enumerate(self.models)]

    def to_dict(self) -> dict[str, Any]:
        return {"models": self.models, "method": self.method, "seconds": self.seconds,
                "summary": self.summary.to_dict(), "simulations": self.simulations,
                "warnings": list(self.warnings)}


def _log_z(model: StanProgram, settings: NutsArgs, method: str,
           seed: SeedLike) -> tuple[float, float]:
    """log Z of ``model`` (exact for a program without parameters) with its se."""
    if model.dim == 0:
        return float(model.log_density(np.zeros(0))), 0.0
    d = sample(model, settings, seed=stream_int_seed(seed, Stream.NUTS))
    r = lookup(method).run(model, d.unconstrained, seed=stream_int_seed(seed, Stream.ESTIMATOR))
    return float(r.log_z), float(r.log_z_se)


def _one(task: tuple[Any, ...], rng: np.random.Generator) -> dict[str, Any]:
    """One simulation: true program, data from its simulation program, every log Z."""
    mains, sims, sim_data, prior, settings, method = task
    k = int(rng.choice(len(mains), p=prior))
    seed = generator_seed(rng)  # this simulation's seed (rng itself chose the program)
    s = simulate(mains[k], sims[k], seed=stream_int_seed(seed, Stream.SIMULATE), sim_data=sim_data)
    out = [_log_z(m.with_data(s.data), settings, method, stream(seed, Stream.ROUTE, j))
           for j, m in enumerate(mains)]
    return {"true_model": k, "log_z": [v for v, _ in out], "log_z_se": [e for _, e in out],
            "data": s.data}


@with_client
def calibrate(
    models: Sequence[Any],
    sims: Sequence[Any],
    data: Any = None,
    *,
    n_sims: int = 100,
    prior_probs: Sequence[float] | None = None,
    sim_data: Any = None,
    settings: NutsArgs | None = None,
    method: str = "gbs",
    decisive_bf: float = DECISIVE_BF,
    seed: int | None = None,
    n_workers: int | None = None,
    progress: Callable[[str], None] | None = None,
    **nuts: Any,
) -> CalibrationResult:
    """Calibrate the Bayes factors between programs by simulation.

    Each simulation draws the true program by its prior probability, data from that
    program's simulation program, and the log evidence of every program on them. If the
    programs and the computation are right, the mean posterior probability of each program
    equals its prior probability; decisive Bayes factors for the wrong program are counted.

    Parameters
    ----------
    models : list of str, Path or StanModel
        The programs compared (two or more).
    sims : list of str or Path
        One simulation program per model: prior draws of its parameters, then data.
    data : dict or str, optional
        Data the models read besides the simulated data.
    n_sims : int, default 100
        Simulations.
    prior_probs : sequence of float, optional
        Prior model probabilities (default: equal).
    sim_data : dict or str, optional
        Data of the simulation programs (default: ``data``).
    settings : NutsArgs, optional
        Settings of every NUTS run; the keywords ``chains``, ``warmup``, ``draws`` (per
        chain), ``adapt_delta``, ``max_treedepth`` replace single fields.
    method : str, default "gbs"
        The evidence estimator.
    decisive_bf : float, default 100
        A Bayes factor beyond which a wrong choice counts as decisive.
    seed : int, optional
        Random seed.
    n_workers : int, optional
        Local processes (or a Dask cluster through ``client=``); results do not depend on
        how the simulations are spread.
    progress : callable, optional
        Called with one line of text per step.
    **nuts
        Sampler keywords (as ``settings``' fields).

    Returns
    -------
    CalibrationResult
        Per simulation the true program and every log Z; ``summary`` with
        ``mean_post_prob`` (and its se), ``passed`` and ``decisive_wrong_rate``.

    Raises
    ------
    InputError
        Fewer than two programs, not one simulation program per program, fewer than two
        simulations, or ``decisive_bf`` not above 1.

    See Also
    --------
    stanlogz.compare : the Bayes factors being calibrated.
    stanlogz.savage_dickey : a second route to a nested Bayes factor.

    Examples
    --------
    The executed tutorial :doc:`/tutorials/defensible_bayes_factor` calibrates two
    regressions with 30 simulations; ``stanlogz calibrate`` is the same from a shell.
    """
    t0 = time.perf_counter()
    if len(models) < 2 or len(sims) != len(models):
        raise InputError(f"calibration needs at least 2 programs and one simulation program per "
                         f"program; got {len(models)} programs and {len(sims)} simulation "
                         "programs")
    if not (isinstance(n_sims, int | np.integer) and n_sims >= 2):
        raise InputError(f"the number of simulations must be an integer >= 2, got {n_sims}")
    if not decisive_bf > 1:
        raise InputError(f"decisive_bf must be > 1, got {decisive_bf}")
    k = len(models)
    prior = np.full(k, 1.0 / k) if prior_probs is None else np.asarray(prior_probs, float)
    if prior.shape != (k,) or np.any(prior <= 0) or not math.isclose(prior.sum(), 1.0,
                                                                     abs_tol=1e-6):
        raise InputError(f"prior probabilities must be {k} positive numbers summing to 1, "
                         f"got {list(prior)}")
    lookup(method).options({})
    settings = NutsArgs.of(settings, **nuts)
    data_dict = read_data(data) if data is not None else {}
    sdata = read_data(sim_data) if sim_data is not None else data_dict
    sim_models = [load_model(s, sdata or None, seed=stream_int_seed(seed, Stream.MODEL),
                             progress=progress) for s in sims]
    # the programs read the simulated data: build each with one simulated data set
    mains = []
    for m, sm in zip(models, sim_models, strict=True):
        first = simulate(m, sm, seed=stream_int_seed(seed, Stream.SIMULATE),
                         sim_data=sdata)
        mains.append(first.model)
    if progress:
        progress(f"{n_sims} simulations of {k} programs")
    task = (mains, sim_models, sdata, prior / prior.sum(), settings, method)
    with steps(progress, int(n_sims), "calibration simulations", unit="sim") as bar:
        out = run_parallel(_one, [task] * int(n_sims), stream(seed, Stream.REPLICATE), n_workers,
                           on_done=bar.update)
    summary = calibration_summary([o["true_model"] for o in out],
                                  np.array([o["log_z"] for o in out]), prior, decisive_bf)
    warnings = []
    if not summary.passed:
        bad = [f"{m}: {summary.mean_post_prob[i]:.3f} vs {summary.prior_probs[i]:.3f}"
               for i, m in enumerate(m.name for m in mains) if abs(summary.z[i]) > Z_LIMIT]
        warnings.append("calibration fails: the mean posterior probability misses the prior "
                        f"probability by more than {Z_LIMIT:g} se ({'; '.join(bad)}): a "
                        "program, its simulation program or the log Z computation is wrong")
    return CalibrationResult([m.name for m in mains], out, summary, method,
                             time.perf_counter() - t0, warnings)
