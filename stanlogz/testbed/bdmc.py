"""Bidirectional Monte Carlo (Grosse, Ghahramani & Adams 2015) and an estimator testbed.

On data simulated from the model, the parameters that generated the data are an exact posterior
sample. Forward AIS then gives a stochastic lower bound on log Z and reverse AIS from that
sample a stochastic upper bound: the true log Z is sandwiched between them. The testbed runs
every requested evidence estimator on the same simulated data and posterior draws and scores it
against the sandwich.

Simulation comes from Stan: a *simulation program* without parameters whose generated
quantities draw the parameters from the prior and then the data given them, using the same
names as the main program's parameters and data.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..densities.fits import as_draw_matrix, gaussian_from_draws
from ..densities.target import CountingTarget, Target
from ..draws import group_flat_names
from ..errors import DataError, InputError
from ..estimators import METHODS, get_method
from ..estimators.ais import DEFAULT_INFLATE, LOW_ESS_FRACTION, AISResult, ais, reverse_ais
from ..estimators.base import EvidenceResult, _jsonable
from ..estimators.shortcuts import NEEDS_PRIOR, SHORTCUTS, dynesty_available
from ..mcmc.annealing import HMCTuning
from ..parallel import as_seed_sequence, child_sequence, with_client

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
                             "program (--prior PRIOR.stan)")
        if e == "nested" and not dynesty_available():
            raise InputError("estimator 'nested' needs dynesty: pip install dynesty (or the "
                             "'bench' extra)")

Progress = Callable[[str], None]


def _seed_int(seed: Any, i: int) -> int:
    """A 31-bit integer seed for sub-task ``i`` derived from ``seed``."""
    return int(child_sequence(seed, i).generate_state(1)[0] & 0x7FFFFFFF)


# ---------------------------------------------------------------------------- simulation


@dataclass
class Simulation:
    """One simulated data set with the parameters that produced it.

    ``data`` is everything the main program reads (simulation data merged with the simulated
    data); ``params`` the true parameter values (constrained); ``x_true`` the same point in the
    main program's unconstrained space — an exact posterior sample; ``model`` the main program
    with ``data``.
    """

    data: dict[str, Any]
    params: dict[str, Any]
    x_true: np.ndarray
    model: Any
    seed: int


def split_variables(names: Sequence[str], values: np.ndarray) -> dict[str, Any]:
    """Stan flat output (``"mu"``, ``"beta.1"``, ``"L.2.1"``...) as variables, column-major."""
    values = np.asarray(values, dtype=float).ravel()
    if values.size != len(names):
        raise DataError(f"simulation produced {values.size} values for {len(names)} names")
    out: dict[str, Any] = {}
    for name, (shape, cols) in group_flat_names(list(names)).items():
        v = values[cols]
        out[name] = float(v[0]) if shape == () else v.reshape(shape, order="F")
    return out


def _stan_value(v: Any) -> Any:
    """A JSON-friendly Stan data value; integer-valued numbers become ints (a real accepts an
    int, but an int variable rejects 1.0)."""
    a = np.asarray(v, dtype=float)
    if np.all(np.isfinite(a)) and np.all(a == np.round(a)) and np.all(np.abs(a) < 2**31):
        a = a.astype(int)
    return a.item() if a.ndim == 0 else a.tolist()


def _param_bases(model: Any) -> list[str]:
    return list(dict.fromkeys(n.split(".")[0] for n in model.param_names()))


def _binder(main: Any) -> Callable[[dict[str, Any]], Any]:
    """data -> main program with that data, for a StanModel or a ``.stan`` path."""
    if isinstance(main, str | os.PathLike):
        from ..api import check_stan_file
        from ..stan.model import StanModel

        path = check_stan_file(main)
        built: list[Any] = []

        def bind(data: dict[str, Any]) -> Any:
            if not built:
                built.append(StanModel.from_file(path, data))
                return built[0]
            return built[0].with_data(data)

        return bind
    if not callable(getattr(main, "with_data", None)):
        raise InputError(f"main program must be a StanModel or a .stan path, not "
                         f"{type(main).__name__}")
    return main.with_data


def simulate(
    main: Any, sim: Any, *, seed: int | None = None, sim_data: dict[str, Any] | None = None
) -> Simulation:
    """Simulate data and true parameters with ``sim`` and attach the data to ``main``.

    ``sim`` is a :class:`stanlogz.stan.model.StanModel` of the simulation program built with its
    data,
    ``sim_data``, which is also passed on to the main program. ``main`` is the main program as a
    StanModel (any data) or a ``.stan`` path.
    """
    bind = _binder(main)
    seed = _seed_int(seed, 0) if seed is None else int(seed)
    names = sim.param_names(include_gq=True)
    if not names:
        raise DataError("the simulation program generates no quantities")
    flat = sim.constrain(np.zeros(0), include_gq=True, seed=seed)
    sims = split_variables(names, flat)
    data = {k: _stan_value(v) for k, v in (sim_data or {}).items()}
    data.update({k: _stan_value(v) for k, v in sims.items()})
    # Stan ignores unknown data variables, so the program can be built once with everything
    # to learn its parameter names, then again with the data alone.
    bases = _param_bases(bind(data))
    missing = [b for b in bases if b not in sims]
    if missing:
        raise DataError(f"the simulation program does not generate parameter {missing[0]!r}")
    params = {b: sims[b] for b in bases}
    data = {k: v for k, v in data.items() if k not in params}
    model = bind(data)
    x_true = np.asarray(model.unconstrain_dict(params), dtype=float)
    if not np.isfinite(model.log_density(x_true)):
        raise DataError("the simulated parameters have zero density under the main program")
    return Simulation(data=data, params=params, x_true=x_true, model=model, seed=seed)


def prior_draws(main: Any, sim: Any, n: int, *, seed: int | None = None) -> np.ndarray:
    """``n`` exact prior draws in ``main``'s unconstrained space, from the simulation program.

    ``main`` is the main program with data (e.g. :attr:`Simulation.model`); each run of the
    simulation program's generated quantities gives one prior draw of the parameters.
    """
    if int(n) < 1:
        raise InputError(f"number of prior draws must be >= 1, got {n}")
    seed = _seed_int(seed, 3) if seed is None else int(seed)
    names = sim.param_names(include_gq=True)
    flat = sim.constrain_many(np.zeros((int(n), 0)), include_gq=True, seed=seed)
    bases = _param_bases(main)
    out = np.empty((int(n), main.dim))
    for i, row in enumerate(flat):
        v = split_variables(names, row)
        out[i] = main.unconstrain_dict({b: v[b] for b in bases})
    return out


# ---------------------------------------------------------------------------- the sandwich

# A lower bound above the upper one by more than this many spreads of the gap (≈ 2.3% one-sided
# false alarm for Gaussian bound errors) means the stochastic bounds have not converged.
INVERTED_SPREADS = 2.0

# The AIS bias falls about as 1/T, so doubling T should halve the gap; a gap that keeps more
# than this share of itself points to a bias that more temperatures do not remove.
STALLED_GAP_RATIO = 0.75



@dataclass
class BDMCResult:
    """Stochastic lower (forward AIS) and upper (reverse AIS) bounds on log Z.

    ``history`` holds one row per schedule length tried when doubling T toward ``gap_tol``
    (``"role": "selection"``) and, when T was chosen that way, the fresh run at the chosen T
    whose bounds are reported (``"role": "reported"``): a round is chosen *because* its gap came
    out small, which favours a high lower and a low upper bound, so its own bounds are not
    reported. ``inverted`` says the lower bound exceeds the upper by more than
    :data:`INVERTED_SPREADS` spreads of the gap; ``valid`` that the sandwich is neither inverted
    nor wider than ``gap_tol`` (see :attr:`warnings`).
    """

    lower: AISResult
    upper: AISResult
    history: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    gap_tol: float | None = None
    closed: bool = True  # False when doubling T stopped at max_temps with the gap still open

    @property
    def gap(self) -> float:
        return self.upper.log_z - self.lower.log_z

    @property
    def gap_se(self) -> float:
        return math.hypot(self.lower.log_z_se, self.upper.log_z_se)

    @property
    def inverted(self) -> bool:
        return bool(self.gap < -INVERTED_SPREADS * self.gap_se)

    @property
    def valid(self) -> bool:
        """Neither inverted nor with a gap at or above the tolerance."""
        return (not self.inverted and self.closed
                and (self.gap_tol is None or self.gap < self.gap_tol))

    @property
    def warnings(self) -> list[str]:
        """Warnings about the sandwich itself, then those of the two AIS runs."""
        own = list(self.notes)
        if self.inverted:
            own.insert(0, f"BDMC bounds are inverted: lower {self.lower.log_z:.3f} > upper "
                          f"{self.upper.log_z:.3f} by {-self.gap:.3f} nats, more than "
                          f"{INVERTED_SPREADS:g} spreads ({self.gap_se:.3f}); the bounds are "
                          "not yet valid and the spreads understate the error: use more AIS "
                          "chains or temperatures")
        return own + self.lower.warnings + self.upper.warnings

    @property
    def midpoint(self) -> float:
        return 0.5 * (self.lower.log_z + self.upper.log_z)

    @property
    def n_evals(self) -> int:
        return int(sum(h["n_evals"] for h in self.history))

    @property
    def seconds(self) -> float:
        return float(sum(h["seconds"] for h in self.history))

    def to_dict(self) -> dict[str, Any]:
        return {
            "lower": self.lower.log_z, "lower_se": self.lower.log_z_se,
            "upper": self.upper.log_z, "upper_se": self.upper.log_z_se,
            "gap": self.gap, "gap_se": self.gap_se, "midpoint": self.midpoint,
            "inverted": self.inverted, "valid": self.valid, "gap_tol": self.gap_tol,
            "n_temps": self.lower.n_temps, "n_chains": self.lower.n_chains,
            "lower_spread": self.lower.spread, "upper_spread": self.upper.spread,
            "upper_start_tau": self.upper.start_tau,
            "history": self.history, "warnings": self.warnings,
        }


@with_client
def bdmc(
    target: Target,
    base: Target,
    posterior_sample: np.ndarray,
    *,
    n_chains: int = 16,
    n_temps: int = 1000,
    gap_tol: float | None = 1.0,
    max_temps: int = 16000,
    max_chains: int = 128,
    schedule: str = "adaptive",
    seed: int | None = None,
    n_workers: int | None = None,
    hmc_steps: int = 10,
    base_draws: np.ndarray | None = None,
    base_log_z: float = 0.0,
    progress: Progress | None = None,
    tuning: HMCTuning | None = None,
) -> BDMCResult:
    """The BDMC sandwich: forward AIS and reverse AIS from an exact posterior sample.

    Every reverse chain starts at ``posterior_sample`` (one exact sample, shape ``(dim,)``, or
    several, ``(n, dim)``) or at a state of a β=1 chain from it (see
    :func:`~stanlogz.estimators.ais.reverse_ais`, whose spread accounts for the shared start).
    With ``gap_tol`` set, T doubles until the gap is below it or T would exceed ``max_temps`` (an
    inverted sandwich, see :attr:`BDMCResult.inverted`, doubles too); when either direction's
    weight ESS is below :data:`LOW_ESS_FRACTION` of its chains, the chains double too (up to
    ``max_chains``). The bounds reported are then those of a fresh, independent run at the
    chosen T and chains, not of the round that passed the test. Both directions share one HMC
    tuning and schedule (``tuning``, or a pilot on the first round).
    """
    if gap_tol is not None and not gap_tol > 0:
        raise InputError(f"gap tolerance must be positive, got {gap_tol}")
    ss = as_seed_sequence(seed)
    common = dict(schedule=schedule, n_workers=n_workers, hmc_steps=hmc_steps,
                  base_draws=base_draws, base_log_z=base_log_z)
    history: list[dict[str, Any]] = []

    def run(t: int, k: int, round_: int, role: str) -> BDMCResult:
        nonlocal tuning
        t0 = time.perf_counter()
        lo = ais(target, base, n_temps=t, n_chains=k, seed=child_sequence(ss, 2 * round_),
                 tuning=tuning, **common)
        tuning = lo.tuning
        hi = reverse_ais(target, base, posterior_sample, n_temps=t, n_chains=k, tuning=tuning,
                         seed=child_sequence(ss, 2 * round_ + 1), **common)
        history.append({
            "role": role, "n_temps": t, "n_chains": k, "lower": lo.log_z,
            "lower_se": lo.log_z_se, "upper": hi.log_z, "upper_se": hi.log_z_se,
            "gap": hi.log_z - lo.log_z, "seconds": time.perf_counter() - t0,
            "n_evals": lo.n_evals + hi.n_evals,
        })
        if progress is not None:
            progress(f"BDMC T={t} ({role}): lower {lo.log_z:.3f} upper {hi.log_z:.3f} "
                     f"gap {hi.log_z - lo.log_z:.3f}")
        return BDMCResult(lo, hi, history, gap_tol=gap_tol)

    if gap_tol is None:
        return run(int(n_temps), int(n_chains), 0, "reported")
    t, k, round_ = int(n_temps), int(n_chains), 0
    while True:
        res = run(t, k, round_, "selection")
        # An inverted sandwich has not converged either: keep doubling.
        if (res.gap < gap_tol and not res.inverted) or 2 * t > max_temps:
            break
        # Low weight ESS makes the log-mean-exp and its spread unreliable: more chains.
        if min(res.lower.ess, res.upper.ess) < LOW_ESS_FRACTION * k:
            k = min(2 * k, max(k, int(max_chains)))
        t, round_ = 2 * t, round_ + 1
    n_selection = len(history)
    prev = history[-2]["gap"] if n_selection > 1 else math.inf
    sel, last_gap = res, res.gap
    # Seeds of the fresh run lie beyond any selection round's (at most 64 doublings).
    res = run(t, k, 64, "reported")
    res.notes.append(f"BDMC bounds are a fresh run at T={t}, K={k}, independent of the "
                     f"{n_selection} round(s) that chose T (those are in the history)")
    if last_gap >= gap_tol or sel.inverted:
        res.closed = False
    if sel.inverted:
        res.notes.append(f"BDMC selection stopped at the largest T={t} with an inverted "
                         f"sandwich (gap {last_gap:.2f} nats): the bounds have not converged; "
                         "raise the temperatures or give a better base")
    elif last_gap >= gap_tol:
        res.notes.append(f"BDMC gap {last_gap:.2f} nats is above the tolerance {gap_tol:g} at "
                         f"the largest T={t}")
        if last_gap > STALLED_GAP_RATIO * prev:
            res.notes.append(
                f"BDMC gap did not shrink as T doubled ({prev:.2f} -> {last_gap:.2f} nats): "
                "the chains may be unable to move between modes whose share the base distorts "
                "(e.g. a symmetric posterior and a base fitted to draws); a base with the "
                "posterior's symmetries, such as the prior, may close it")
    elif not res.valid and not res.inverted:
        res.notes.append(f"BDMC gap {res.gap:.2f} nats of the fresh run is at or above the "
                         f"tolerance {gap_tol:g} (the selection round's was {last_gap:.2f}): "
                         "the sandwich is not valid; raise the temperatures (--temps)")
    return res


# ---------------------------------------------------------------------------- testbed


# Estimators whose cost is set by an option rather than by the number of draws they are given:
# the option and its default (the estimator's own).
ANNEALING_COST = {"ais": ("n_temps", 1000), "rais": ("n_temps", 1000),
                  "smc": ("n_particles", 128), "nested": ("nlive", 250)}

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
        return _jsonable({
            "sandwich": self.sandwich.to_dict(),
            "estimators": [{**r.__dict__, "cost": r.cost} for r in self.rows],
            "n_draws": self.n_draws, "sampling_seconds": self.sampling_seconds, **self.info,
        })


def sandwich_band(s: BDMCResult, n_spread: float = 2.0) -> tuple[float, float]:
    """The interval an estimate must fall in: between the two bounds, each widened by
    ``n_spread`` of its spreads (the bounds are stochastic; an inverted, noise-sized sandwich
    still gives a band). The upper bound's spread counts the shared exact sample's share of the
    variance (:attr:`~stanlogz.estimators.ais.AISResult.spread`), and the bounds come from a run
    not selected for its small gap (:func:`bdmc`), so the band is not narrowed by either."""
    lo = min(s.lower.log_z - n_spread * s.lower.log_z_se, s.upper.log_z - n_spread *
             s.upper.log_z_se)
    hi = max(s.upper.log_z + n_spread * s.upper.log_z_se, s.lower.log_z + n_spread *
             s.lower.log_z_se)
    return lo, hi


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


@with_client
def testbed(
    target: Target,
    draws: np.ndarray,
    posterior_sample: np.ndarray,
    estimators: Sequence[str] = DEFAULT_ESTIMATORS,
    *,
    base: Target | None = None,
    base_draws: np.ndarray | None = None,
    n_chains: int = 16,
    n_temps: int = 1000,
    gap_tol: float | None = 1.0,
    seed: int | None = None,
    n_workers: int | None = None,
    estimator_options: dict[str, dict[str, Any]] | None = None,
    budgets: Sequence[float] = (1.0,),
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
    """
    check_estimators(estimators, prior is not None)
    x = as_draw_matrix(draws)
    if base is None:
        base = gaussian_from_draws(x, inflate=DEFAULT_INFLATE)
    if sandwich is None:
        sandwich = bdmc(target, base, posterior_sample, n_chains=n_chains, n_temps=n_temps,
                        gap_tol=gap_tol, base_draws=base_draws, seed=_seed_int(seed, 1),
                        n_workers=n_workers, progress=progress)
    fractions = sorted({float(f) for f in budgets})
    if not fractions or fractions[0] <= 0 or fractions[-1] > 1:
        raise InputError(f"budgets must be fractions in (0, 1], got {list(budgets)}")
    d3 = np.asarray(draws, dtype=float)
    d3 = d3[None] if d3.ndim == 2 else d3
    rows = []
    options = estimator_options or {}
    for k, name in enumerate(estimators):
        for f in fractions:
            if progress is not None:
                progress(f"estimator {name} (budget {f:g})")
            d_use, opts, per_chain = _at_budget(name, d3, options.get(name, {}), f)
            draw_evals = round(evals_per_draw * per_chain * d3.shape[0])
            counting = CountingTarget(target)
            t0 = time.perf_counter()
            try:
                # One seed per estimator at every budget: common random numbers across costs.
                if name in SHORTCUTS:
                    res = SHORTCUTS[name](counting, d_use, prior=prior, prior_draws=prior_draws,
                                          n_obs=n_obs, seed=_seed_int(seed, 100 + k), **opts)
                else:
                    res = get_method(name)(counting, d_use, seed=_seed_int(seed, 100 + k),
                                           **opts)
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
    chains: int = 4,
    warmup: int = 1000,
    draws: int = 1000,
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
) -> TestbedResult:
    """Compile both programs, simulate a data set, draw with NUTS and run :func:`testbed`.

    ``budgets`` are the cost fractions each estimator runs at (see :func:`testbed`); rows are
    charged the NUTS gradient evaluations of the draws they use.

    With ``prior_path`` (the program with the observations removed, taking the same data; its
    density must integrate to one) BDMC anneals from the prior, started from exact prior draws
    made by the simulation program, instead of from a Gaussian fitted to the NUTS draws; the
    prior/likelihood split also lets the testbed grade paper 001's shortcuts (BIC with n = the
    number of values the simulation program generates besides the parameters, the harmonic
    mean, likelihood weighting), which ``estimators=None`` (:func:`default_estimators`) adds.
    """
    from ..api import check_stan_file, read_data
    from ..draws import sample
    from ..stan.model import StanModel

    main_file, sim_file = check_stan_file(model_path), check_stan_file(sim_path)
    if estimators is None:
        estimators = default_estimators(prior_path is not None)
    check_estimators(estimators, prior_path is not None)
    sim_dict = read_data(sim_data) or {}
    if progress is not None:
        progress(f"compiling {main_file.name} and {sim_file.name}")
    sim = StanModel.from_file(sim_file, sim_dict or None)
    s = simulate(main_file, sim, seed=_seed_int(seed, 0), sim_data=sim_dict)
    if progress is not None:
        progress(f"simulated data (seed {s.seed}); NUTS {chains}x{draws}")
    t0 = time.perf_counter()
    d = sample(s.model, chains=chains, warmup=warmup, draws=draws, seed=_seed_int(seed, 2))
    t_nuts = time.perf_counter() - t0
    base, base_draws = None, None
    if prior_path is not None:
        base = StanModel.from_file(check_stan_file(prior_path), s.data)
        if base.dim != s.model.dim:
            raise InputError(f"prior program has {base.dim} parameters, the model {s.model.dim}")
        base_draws = prior_draws(s.model, sim, n_prior_draws, seed=_seed_int(seed, 3))
    # The observations: what the simulation program generates besides the parameters.
    n_obs = sum(int(np.asarray(v).size) for k, v in s.data.items() if k not in sim_dict)
    res = testbed(s.model, d.unconstrained, s.x_true, estimators, base=base,
                  base_draws=base_draws, n_chains=n_chains, n_temps=n_temps, gap_tol=gap_tol,
                  seed=seed, n_workers=n_workers, estimator_options=estimator_options,
                  budgets=budgets, evals_per_draw=d.n_gradient_evals / max(1, chains * draws),
                  progress=progress, prior=base, prior_draws=base_draws, n_obs=n_obs)
    res.sampling_seconds = t_nuts
    res.info.update({"model": str(main_file), "simulation": str(sim_file),
                     "simulation_seed": s.seed, "true_params": s.params, "data": s.data,
                     "ais_base": "prior" if prior_path is not None else "gaussian from draws",
                     "n_obs": n_obs})
    return res


def plot_testbed(result: TestbedResult, path: str | Path) -> None:
    """Each estimator's estimate (±se) against its cost, one line per estimator through its
    budgets, over the BDMC sandwich band (the paper's figures)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = result.sandwich
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.axhspan(*sandwich_band(s), color="0.93", label="sandwich ± 2 spreads")
    ax.axhspan(min(s.lower.log_z, s.upper.log_z), max(s.lower.log_z, s.upper.log_z),
               color="0.8", label="BDMC sandwich")
    ax.axhline(s.lower.log_z, color="0.4", lw=0.8)
    ax.axhline(s.upper.log_z, color="0.4", lw=0.8)
    rows = [r for r in result.rows if not r.failed and np.isfinite(r.log_z)]
    markers = "osD^v<>ph*"
    methods = list(dict.fromkeys(r.method for r in rows))
    for i, m in enumerate(methods):
        mine = sorted((r for r in rows if r.method == m), key=lambda r: r.cost)
        se = np.array([r.se if np.isfinite(r.se) else 0.0 for r in mine])
        ax.errorbar([max(r.cost, 1) for r in mine], [r.log_z for r in mine], yerr=se,
                    fmt=markers[i % len(markers)] + "-", capsize=3, lw=1, label=m)
    ax.set_xscale("log")
    ax.set_xlabel("cost (log-density gradient evaluations; NUTS draws included when known)")
    ax.set_ylabel("log Z")
    title = f"estimators vs BDMC (gap {s.gap:.2f} nats, T={s.lower.n_temps})"
    ax.set_title(title + ("\nsandwich INVERTED: bounds not yet valid" if s.inverted else ""))
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    fig.savefig(str(path), dpi=120)
    plt.close(fig)
