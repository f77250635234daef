"""The estimator testbed: every requested evidence estimator, at one or more cost budgets, on
the same simulated data and posterior draws, scored against the BDMC sandwich of the true
log Z."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Unpack

import numpy as np

from .._util.jsonable import json_value
from .._util.progress import Progress
from .._util.seeds import Stream, stream_int_seed
from ..densities.fits import as_draw_matrix, gaussian_from_draws
from ..densities.target import CountingTarget, Target
from ..errors import InputError, option
from ..estimators import METHODS, lookup
from ..estimators.annealing.ais import DEFAULT_INFLATE
from ..estimators.base import EvidenceResult
from ..estimators.options import AisOptions, RaisOptions, SmcOptions
from ..estimators.shortcuts import NEEDS_PRIOR, SHORTCUTS, dynesty_available
from ..parallel import with_client
from ..stan.settings import NutsArgs, NutsKeywords, nuts_from_keywords
from .sandwich import BDMCResult, bdmc, sandwich_band
from .simulation import prior_draws, simulate

DEFAULT_ESTIMATORS = ("gbs", "gis", "ghm", "laplace", "bridge-gaussian", "ais", "smc")


# Paper 001's shortcuts (stanlogz.estimators.shortcuts), graded when the testbed knows the
# prior/likelihood split; nested sampling only when dynesty is installed.
SHORTCUT_ESTIMATORS = ("bic", "hme", "lw", "nested")


def default_estimators(prior_known: bool) -> tuple[str, ...]:
    """The estimators the testbed grades by default: :data:`DEFAULT_ESTIMATORS`, plus the
    shortcuts when the prior is known (nested sampling only when dynesty can be imported)."""
    if not prior_known:
        return DEFAULT_ESTIMATORS
    extra = tuple(e for e in SHORTCUT_ESTIMATORS if e != "nested" or dynesty_available())
    return DEFAULT_ESTIMATORS + extra


def check_estimators(names: Sequence[str], prior_known: bool) -> None:
    """One-line :class:`InputError` for an unknown estimator, a shortcut that needs the prior
    when none is known, or nested sampling without dynesty."""
    for e in names:
        if e not in METHODS and e not in SHORTCUTS:
            raise InputError(f"unknown estimator {e!r}; choose from "
                             f"{', '.join([*METHODS, *SHORTCUTS])}")
        if e in NEEDS_PRIOR and not prior_known:
            raise InputError(f"estimator {e!r} needs the prior/likelihood split: give the prior "
                             f"program ({option('prior', 'PRIOR.stan')})")
        if e == "nested" and not dynesty_available():
            raise InputError("estimator 'nested' needs dynesty: pip install dynesty (or the "
                             "'bench' extra)")




# Estimators whose cost is set by an option rather than by the number of draws they are given:
# the option and its default (the estimator's own: its options class; nested's nlive).
ANNEALING_COST = {"ais": ("n_temps", AisOptions.n_temps), "rais": ("n_temps", RaisOptions.n_temps),
                  "smc": ("n_particles", SmcOptions.n_particles),
                  "nested": ("nlive", 250)}


# Fewest draws per chain an estimator is given in a cost sweep.
MIN_SWEEP_DRAWS = 20


def budget_fractions(n: int) -> tuple[float, ...]:
    """``n`` cost fractions doubling up to 1: ``budget_fractions(3) == (0.25, 0.5, 1.0)``."""
    if int(n) < 1:
        raise InputError(f"number of budgets must be >= 1, got {n}")
    return tuple(2.0 ** -k for k in range(int(n) - 1, -1, -1))


@dataclass
class TestbedRow:
    """One estimator at one cost scored against the sandwich.

    ``budget`` is the fraction of the full cost it ran at (of its draws per chain, or of its
    temperatures for AIS); ``error`` is the estimate minus the sandwich midpoint; ``outside``
    says it lies outside :func:`sandwich_band` (None when the sandwich is not valid).
    ``draw_evals`` is the share of the NUTS gradient evaluations that produced the draws it
    used; :attr:`cost` adds its own.
    """

    __test__ = False  # not a pytest class

    method: str
    log_z: float
    se: float
    error: float
    seconds: float
    n_evals: int
    outside: bool | None
    failed: str = ""
    warnings: list[str] = field(default_factory=list)
    budget: float = 1.0
    draw_evals: int = 0

    @property
    def cost(self) -> int:
        return int(self.n_evals + self.draw_evals)


@dataclass
class TestbedResult:
    """Every estimator's result on one simulated data set, with the BDMC sandwich."""

    __test__ = False  # not a pytest class

    sandwich: BDMCResult
    rows: list[TestbedRow]
    n_draws: int
    sampling_seconds: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)

    HEADER = ("method", "budget", "log Z", "se", "error", "outside", "seconds", "evals", "cost")

    def table_rows(self) -> list[list[Any]]:
        """Rows for :meth:`stanlogz.report.output.Reporter.table`, the sandwich first."""
        s = self.sandwich
        out: list[list[Any]] = [
            ["bdmc lower", "", s.lower.log_z, s.lower.log_z_se, s.lower.log_z - s.midpoint, "",
             round(s.lower.seconds, 3), s.lower.n_evals, s.lower.n_evals],
            ["bdmc upper", "", s.upper.log_z, s.upper.log_z_se, s.upper.log_z - s.midpoint, "",
             round(s.upper.seconds, 3), s.upper.n_evals, s.upper.n_evals],
        ]
        for r in self.rows:
            if r.failed:
                out.append([r.method, r.budget, "failed", "", "", "", round(r.seconds, 3),
                            r.n_evals, r.cost])
            else:
                out.append([r.method, r.budget, r.log_z, r.se, r.error,
                            {True: "yes", False: "no", None: "n/a"}[r.outside],
                            round(r.seconds, 3), r.n_evals,
                            r.cost])
        return out

    def to_dict(self) -> dict[str, Any]:
        return json_value({
            "sandwich": self.sandwich.to_dict(),
            "estimators": [{**r.__dict__, "cost": r.cost} for r in self.rows],
            "n_draws": self.n_draws, "sampling_seconds": self.sampling_seconds, **self.info,
        })


def _score(name: str, res: EvidenceResult, sandwich: BDMCResult, seconds: float,
           counted: int, budget: float, draw_evals: int) -> TestbedRow:
    lz = float(res.log_z)
    lo, hi = sandwich_band(sandwich)
    # Against a sandwich that is not valid (inverted, or its gap still open) no verdict.
    outside = None if not sandwich.valid else not (lo <= lz <= hi)
    return TestbedRow(
        method=name, log_z=lz, se=float(res.log_z_se), error=lz - sandwich.midpoint,
        seconds=float(res.seconds) if res.seconds else seconds,
        n_evals=int(res.n_evals) if res.n_evals else counted, outside=outside,
        warnings=list(res.warnings), budget=budget, draw_evals=draw_evals,
    )


def _at_budget(name: str, draws: np.ndarray, options: dict[str, Any], fraction: float
               ) -> tuple[np.ndarray, dict[str, Any], int]:
    """Draws and options for ``name`` at ``fraction`` of its full cost, and the draws it uses
    per chain."""
    opts = dict(options)
    n = draws.shape[1]
    if name in ANNEALING_COST:
        key, default = ANNEALING_COST[name]
        opts[key] = max(2, round(fraction * int(opts.get(key, default))))
        return draws, opts, n
    m = min(n, max(MIN_SWEEP_DRAWS, round(fraction * n)))
    return draws[:, :m], opts, m


@dataclass(frozen=True)
class TestbedOptions:
    """How :func:`testbed` grades, one object from :func:`run_testbed` (whose keywords of the
    same names fill it) or a direct caller.

    Attributes
    ----------
    n_chains : int
        AIS chains of each bound of the BDMC sandwich.
    n_temps : int
        Temperatures of the sandwich's first schedule (doubled until the gap is below
        ``gap_tol``).
    gap_tol : float or None
        The widest sandwich accepted, in nats (``None``: one round at ``n_temps``).
    seed : int or None
        Random seed (the sandwich's and each estimator's derive from it).
    n_workers : int or None
        Chains or replicates run at once.
    estimator_options : dict or None
        Per estimator name, its options.
    budgets : sequence of float
        Cost fractions in (0, 1] each estimator runs at; others raise
        :class:`~stanlogz.InputError`.
    """

    __test__ = False  # not a pytest class

    n_chains: int = 16
    n_temps: int = 1000
    gap_tol: float | None = 1.0
    seed: int | None = None
    n_workers: int | None = None
    estimator_options: dict[str, dict[str, Any]] | None = None
    budgets: Sequence[float] = (1.0,)

    def __post_init__(self) -> None:
        fractions = self.fractions
        if not fractions or fractions[0] <= 0 or fractions[-1] > 1:
            raise InputError(f"budgets must be fractions in (0, 1], got {list(self.budgets)}")

    @property
    def fractions(self) -> list[float]:
        """The budgets, each once, in increasing order."""
        return sorted({float(f) for f in self.budgets})


@with_client
def testbed(
    target: Target,
    draws: np.ndarray,
    posterior_sample: np.ndarray,
    estimators: Sequence[str] = DEFAULT_ESTIMATORS,
    *,
    options: TestbedOptions | None = None,
    base: Target | None = None,
    base_draws: np.ndarray | None = None,
    evals_per_draw: float = 0.0,
    sandwich: BDMCResult | None = None,
    progress: Progress | None = None,
    prior: Target | None = None,
    prior_draws: np.ndarray | None = None,
    n_obs: int | None = None,
) -> TestbedResult:
    """Run ``estimators`` on ``target`` with ``draws`` and score them against BDMC.

    ``draws`` are posterior draws ``(chains, n, dim)`` shared by all estimators;
    ``posterior_sample`` an exact posterior sample (the simulated truth). The AIS base defaults
    to a Gaussian fitted to the draws (covariance inflated); a normalized prior target with exact
    prior draws (``base_draws``) gives the prior→posterior path. An estimator that raises is
    reported as failed with its message.

    Each estimator runs once per fraction in ``budgets`` (e.g. :func:`budget_fractions`): with
    that fraction of the draws of each chain (the first ones), or for AIS of its temperatures.
    ``evals_per_draw`` (NUTS gradient evaluations per draw, if known) charges each row for the
    draws it used. A ``sandwich`` already computed for this target and sample is used as is.

    The shortcuts of :data:`SHORTCUT_ESTIMATORS` need ``prior`` (the normalized prior on the
    target's space, so that log L = log target − log prior), likelihood weighting exact prior
    draws (``prior_draws``, or a prior that samples) and BIC the number of observations
    ``n_obs``; nested sampling uses the prior as its reference when it is given.

    ``options`` (:class:`TestbedOptions`, its defaults when omitted) holds the sandwich's AIS
    settings, the seed, the workers, each estimator's options and the budgets.
    """
    o = options if options is not None else TestbedOptions()
    check_estimators(estimators, prior is not None)
    x = as_draw_matrix(draws)
    if base is None:
        base = gaussian_from_draws(x, inflate=DEFAULT_INFLATE)
    if sandwich is None:
        sandwich = bdmc(target, base, posterior_sample, n_chains=o.n_chains,
                        n_temps=o.n_temps, gap_tol=o.gap_tol, base_draws=base_draws,
                        seed=stream_int_seed(o.seed, Stream.SANDWICH),
                        n_workers=o.n_workers, progress=progress)
    fractions = o.fractions
    d3 = np.asarray(draws, dtype=float)
    d3 = d3[None] if d3.ndim == 2 else d3
    rows = []
    options = o.estimator_options or {}
    for name in estimators:  # one-line errors for bad options before any work
        if name in METHODS:
            lookup(name).options(options.get(name, {}))
    for k, name in enumerate(estimators):
        for f in fractions:
            if progress is not None:
                progress(f"estimator {name} (budget {f:g})")
            d_use, opts, per_chain = _at_budget(name, d3, options.get(name, {}), f)
            draw_evals = round(evals_per_draw * per_chain * d3.shape[0])
            counting = CountingTarget(target)
            t0 = time.perf_counter()
            # One seed per estimator at every budget: common random numbers across costs.
            unit_seed = stream_int_seed(o.seed, Stream.ESTIMATOR, k)
            try:
                if name in SHORTCUTS:
                    res = SHORTCUTS[name](counting, d_use, prior=prior, prior_draws=prior_draws,
                                          n_obs=n_obs, seed=unit_seed, **opts)
                else:
                    res = lookup(name).run(counting, d_use, seed=unit_seed, options=opts)
            except Exception as exc:  # an estimator under test may fail; the testbed reports it
                msg = str(exc).splitlines()[0] if str(exc) else ""
                rows.append(TestbedRow(name, math.nan, math.nan, math.nan,
                                       time.perf_counter() - t0, counting.n_evals, False,
                                       failed=f"{type(exc).__name__}: {msg}", budget=f,
                                       draw_evals=draw_evals))
                continue
            rows.append(_score(name, res, sandwich, time.perf_counter() - t0, counting.n_evals,
                               f, draw_evals))
    return TestbedResult(sandwich=sandwich, rows=rows, n_draws=x.shape[0],
                         info={"budgets": fractions})


@with_client
def run_testbed(
    model_path: str | Path,
    sim_path: str | Path,
    sim_data: dict[str, Any] | str | Path | None = None,
    estimators: Sequence[str] | None = None,
    *,
    settings: NutsArgs | None = None,
    n_chains: int = 16,
    n_temps: int = 1000,
    gap_tol: float | None = 1.0,
    seed: int | None = None,
    n_workers: int | None = None,
    estimator_options: dict[str, dict[str, Any]] | None = None,
    prior_path: str | Path | None = None,
    n_prior_draws: int = 1000,
    budgets: Sequence[float] = (1.0,),
    progress: Progress | None = None,
    **nuts_keywords: Unpack[NutsKeywords],
) -> TestbedResult:
    """Compile both programs, simulate a data set, draw with NUTS (``settings``, a
    :class:`~stanlogz.stan.settings.NutsArgs` whose fields ``chains``, ``warmup``, ``draws``,
    ``adapt_delta`` and ``max_treedepth`` replace) and run :func:`testbed`.

    ``n_chains`` to ``budgets`` make the :class:`TestbedOptions` of :func:`testbed` (the cost
    fractions each estimator runs at, ...); rows are charged the NUTS gradient evaluations of
    the draws they use.

    With ``prior_path`` (the program with the observations removed, taking the same data; its
    density must integrate to one) BDMC anneals from the prior, started from exact prior draws
    made by the simulation program, instead of from a Gaussian fitted to the NUTS draws; the
    prior/likelihood split also lets the testbed grade the shortcuts of Grosse, Ghahramani &
    Adams (2015) (BIC with n = the number of values the simulation program generates besides the
    parameters, the harmonic mean, likelihood weighting), which ``estimators=None``
    (:func:`default_estimators`) adds.

    Parameters
    ----------
    model_path : str or Path
        The program whose log Z is estimated (a ``.stan`` file).
    sim_path : str or Path
        The simulation program: no parameters; its generated quantities draw the model's
        parameters from the prior and then its data, with the model's names.
    sim_data : dict, str or Path, optional
        The simulation program's data (a dict or a Stan JSON file).
    estimators : sequence of str, optional
        The estimators graded (default :func:`default_estimators`).
    settings : NutsArgs, optional
        Settings of the NUTS run on the simulated data.
    n_chains : int, default 16
        AIS chains of each bound.
    n_temps : int, default 1000
        Temperatures of the first schedule (doubled until the gap is below ``gap_tol``).
    gap_tol : float or None, default 1.0
        The widest sandwich accepted, in nats (``None``: one round at ``n_temps``).
    seed : int, optional
        Random seed (simulation, NUTS, bounds and estimators derive from it).
    n_workers : int, optional
        Chains or replicates run at once.
    estimator_options : dict, optional
        Per estimator name, its options.
    prior_path : str or Path, optional
        The prior program (the model without its observations): anneal from the prior and
        grade the shortcuts.
    n_prior_draws : int, default 1000
        Exact prior draws made by the simulation program (with ``prior_path``).
    budgets : sequence of float, default (1.0,)
        Cost fractions in (0, 1] each estimator runs at.
    progress : callable, optional
        Called with one line of text per step.
    **nuts_keywords
        ``chains``, ``warmup``, ``draws``, ``adapt_delta``, ``max_treedepth``.

    Returns
    -------
    TestbedResult
        The BDMC ``sandwich`` (lower and upper bounds, ``gap``, ``valid``), one row per
        estimator and budget (``rows``: log Z, se, error against the sandwich's midpoint,
        ``outside``, cost) and ``n_draws``.

    Raises
    ------
    InputError
        An unknown estimator, one that needs ``prior_path`` without it (or dynesty, not
        installed), budgets outside (0, 1], or a prior program with other parameters than
        the model.

    See Also
    --------
    stanlogz.ais : the lower bound.
    stanlogz.reverse_ais : the upper bound.

    Examples
    --------
    The guide :doc:`/guide/bdmc` runs it from a shell (``stanlogz bdmc``). gbs graded on
    the shipped normal-mean testbed, with short runs (from the repository root):

    >>> import stanlogz
    >>> r = stanlogz.run_testbed("stan_models/bdmc/normal_mean.stan",
    ...                          "stan_models/bdmc/normal_mean_sim.stan",
    ...                          "stan_models/bdmc/normal_mean_sim.data.json", ["gbs"],
    ...                          n_chains=8, n_temps=100, seed=1, n_workers=1,
    ...                          chains=2, warmup=300, draws=500)
    >>> r.sandwich.lower.bound, r.sandwich.upper.bound, [row.method for row in r.rows]
    ('lower', 'upper', ['gbs'])
    """
    from ..draws import obtain_draws
    from ..stan.inputs import check_stan_file, read_data
    from ..stan.model import StanModel

    nuts = nuts_from_keywords(settings, nuts_keywords, "run_testbed")
    options = TestbedOptions(n_chains, n_temps, gap_tol, seed, n_workers, estimator_options,
                             budgets)
    main_file, sim_file = check_stan_file(model_path), check_stan_file(sim_path)
    if estimators is None:
        estimators = default_estimators(prior_path is not None)
    check_estimators(estimators, prior_path is not None)
    sim_dict = read_data(sim_data) or {}
    if progress is not None:
        progress(f"compiling {main_file.name} and {sim_file.name}")
    sim = StanModel.from_file(sim_file, sim_dict or None)
    s = simulate(main_file, sim, seed=stream_int_seed(seed, Stream.SIMULATE),
                 sim_data=sim_dict)
    if progress is not None:
        progress(f"simulated data (seed {s.seed}); NUTS {nuts.chains}x{nuts.draws}")
    t0 = time.perf_counter()
    d = obtain_draws(s.model, None, nuts, seed=stream_int_seed(seed, Stream.NUTS))
    t_nuts = time.perf_counter() - t0
    base, base_draws = None, None
    if prior_path is not None:
        base = StanModel.from_file(check_stan_file(prior_path), s.data)
        if base.dim != s.model.dim:
            raise InputError(f"prior program has {base.dim} parameters, the model {s.model.dim}")
        base_draws = prior_draws(s.model, sim, n_prior_draws,
                                 seed=stream_int_seed(seed, Stream.PRIOR_NUTS))
    # The observations: what the simulation program generates besides the parameters.
    n_obs = sum(int(np.asarray(v).size) for k, v in s.data.items() if k not in sim_dict)
    res = testbed(s.model, d.unconstrained, s.x_true, estimators, options=options, base=base,
                  base_draws=base_draws,
                  evals_per_draw=d.n_gradient_evals / max(1, d.n_chains * d.n_draws),
                  progress=progress, prior=base, prior_draws=base_draws, n_obs=n_obs)
    res.sampling_seconds = t_nuts
    res.info.update({"model": str(main_file), "simulation": str(sim_file),
                     "simulation_seed": s.seed, "true_params": s.params, "data": s.data,
                     "ais_base": "prior" if prior_path is not None else "gaussian from draws",
                     "n_obs": n_obs})
    return res
