"""Bidirectional Monte Carlo (Grosse, Ghahramani & Adams 2015): a sandwich around the true log Z.

On data simulated from the model (:mod:`stanlogz.testbed.simulation`), the parameters that
generated the data are an exact posterior sample. Forward AIS then gives a stochastic lower bound
on log Z and reverse AIS from that sample a stochastic upper bound: the true log Z is sandwiched
between them. :mod:`stanlogz.testbed.run` scores estimators against the sandwich.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._util.progress import Progress
from .._util.seeds import Stream, stream
from ..densities.target import Target
from ..errors import InputError, option
from ..estimators.annealing.ais import LOW_ESS_FRACTION, AISResult, ais, reverse_ais
from ..mcmc.annealing import HMCTuning
from ..parallel import as_seed_sequence, with_client

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
    :func:`~stanlogz.estimators.annealing.ais.reverse_ais`, whose spread accounts for the shared
    start). With ``gap_tol`` set, T doubles until the gap is below it or T would exceed
    ``max_temps`` (an inverted sandwich, see :attr:`BDMCResult.inverted`, doubles too); when either
    direction's weight ESS is below :data:`LOW_ESS_FRACTION` of its chains, the chains double too
    (up to ``max_chains``). The bounds reported are then those of a fresh, independent run at the
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
        lo = ais(target, base, n_temps=t, n_chains=k, seed=stream(ss, Stream.TEMPERED_FWD, round_),
                 tuning=tuning, **common)
        tuning = lo.tuning
        hi = reverse_ais(target, base, posterior_sample, n_temps=t, n_chains=k, tuning=tuning,
                         seed=stream(ss, Stream.TEMPERED_REV, round_), **common)
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
                         f"the sandwich is not valid; raise the temperatures ({option('temps')})")
    return res


def sandwich_band(s: BDMCResult, n_spread: float = 2.0) -> tuple[float, float]:
    """The interval an estimate must fall in: between the two bounds, each widened by
    ``n_spread`` of its spreads (the bounds are stochastic; an inverted, noise-sized sandwich
    still gives a band). The upper bound's spread counts the shared exact sample's share of the
    variance (:attr:`~stanlogz.estimators.annealing.ais.AISResult.spread`), and the bounds come from
    a run not selected for its small gap (:func:`bdmc`), so the band is not narrowed by either."""
    lo = min(s.lower.log_z - n_spread * s.lower.log_z_se, s.upper.log_z - n_spread *
             s.upper.log_z_se)
    hi = max(s.upper.log_z + n_spread * s.upper.log_z_se, s.lower.log_z + n_spread *
             s.lower.log_z_se)
    return lo, hi


