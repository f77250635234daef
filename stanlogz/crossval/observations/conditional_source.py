"""The pointwise-source interface shared by the conditional log-likelihoods log p(y_i | y₋ᵢ, θ):
``columns``, ``chunks`` and ``matrix`` from one ``column(i, unc)``, and the parts of
:class:`~.pointwise.PointwiseLogLik`'s interface that have nothing to check here.

The full pass (``chunks``) costs O(N²·S) density terms and can run for minutes: with a
``progress`` callback set on the source it reports the observations done with the time left
(:class:`PassClock`: a tqdm bar on a terminal, else a line every ``EVERY_S`` seconds); with a
``budget`` (seconds) it stops cleanly once that is spent, saying how far it got
(:class:`PassBudget`)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ..._util.deadline import BudgetSpent, positive_seconds
from ..._util.progress import Progress
from ...errors import InputError, Route
from ...stan.program import StanProgram
from .clock import APPROX_SHARE, PassClock, PassState
from .observations import Observations, lfo_route, recursive_model
from .pointwise import CHUNK_BYTES, column_chunks


def check_pass_budget(budget: float | None) -> None:
    """:class:`InputError` unless ``budget`` is None or a positive number of seconds."""
    if budget is not None and not isinstance(budget, int | float):
        raise InputError(f"cond_budget must be a number of seconds, got {budget!r}")
    positive_seconds("cond_budget", budget)


def start_pass(pw: Any, progress: Progress, n_draws: int, budget: float | None = None,
               chains: int | None = None, refit_seconds: float | None = None,
               draws: np.ndarray | None = None) -> None:
    """Announce the full pass of the pointwise source ``pw`` at ``n_draws`` draws through
    ``progress`` (with its expected cost where ``pw`` has a ``cost_line``); a conditional
    pass (O(N² S)) also reports the time left as it goes and stops at ``budget`` seconds
    (:class:`PassBudget`: how far it got and how long the rest would take). ``chains``: the
    chains behind the ``n_draws`` draws, so that a pass over the run's time budget can name
    fewer draws per chain; ``refit_seconds``: the seconds of one sampling run, so that it can
    name K-fold where ten refits would take less than the pass; ``draws``: the unconstrained
    draws of the pass, at which a source with a ``calibrate`` times its density first (its
    expected cost, in the line and in the budget's decisions, rests on that)."""
    if draws is not None and hasattr(pw, "calibrate"):
        pw.calibrate(draws)
    if chains:
        pw.draw_shape = (chains, n_draws // chains)
    if refit_seconds:
        pw.refit_seconds = refit_seconds
    conditional = hasattr(pw, "cost_line")
    if conditional:
        pw.progress, pw.budget = progress, budget
    elif hasattr(pw, "progress"):
        pw.progress = progress  # a density-difference pass reports its clock too
    if not progress:
        return
    progress(f"pointwise log-likelihood of {pw.obs.n} observations ({pw.source}) at "
             f"{n_draws} draws")
    cost = pw.cost_line(n_draws) if conditional else None
    if cost:
        progress(cost)


class ColumnsByObservation(PassState):
    """``columns`` of an object with ``column(i, unc)`` and a ``model`` with ``dim``."""

    model: StanProgram

    def column(self, i: int, unc: np.ndarray) -> np.ndarray:
        """log p(y_i | y₋ᵢ, θ) at unconstrained draws ``unc``."""
        raise NotImplementedError

    def columns(self, index: Sequence[int] | np.ndarray, unc: np.ndarray) -> np.ndarray:
        """``(S, len(index))`` log p(y_i | y₋ᵢ, θ) at unconstrained draws ``unc``."""
        idx = [int(i) for i in np.asarray(index, dtype=int).ravel()]
        unc = np.asarray(unc, dtype=float).reshape(-1, self.model.dim)
        out = np.empty((unc.shape[0], len(idx)))
        for j, i in enumerate(idx):
            if self._clock is not None and self._clock.stopped:
                break  # an anytime pass stopped at the budget: the rest is estimated
            try:
                out[:, j] = self.column(i, unc)
            except BudgetSpent:  # inside observation i: an anytime pass keeps those done
                clock = self._clock  # in this block too (its caller trims to them)
                if clock is None or not clock.anytime or clock.done < clock.least_done:
                    raise
                clock.stopped = True
                break
            if self._clock is not None:
                self._clock.update(obs=(i,))
        return out


class ClockedColumns(ColumnsByObservation):
    """``chunks`` of a source whose columns cost much (one per observation, each a quadrature
    or a small optimization at every draw): the pass reports its clock, stops at ``budget``
    seconds and, as an anytime pass, at the run's time budget keeping the observations done."""

    obs: Observations
    #: Seconds the full pass may take (None: no limit; :class:`PassBudget` beyond).
    budget: float | None = None
    #: What the clock's lines and refusals call the pass.
    pass_name = "conditional log-likelihood"
    #: The least part of an observation's time that does not shrink with the draws
    #: (:class:`PassClock`'s ``floor``).
    cost_floor = APPROX_SHARE

    def _series_routes(self) -> tuple[Route, ...]:
        """Leave-future-out where the program recurses over its observations (a time
        series: a log_lik of independent terms does not fit it), for the pass's refusal."""
        code = getattr(self.model, "code", None)
        return (lfo_route(self.obs),) if recursive_model(code) else ()

    def chunks(self, unc: np.ndarray, constrained: np.ndarray | None = None,
               names: list[str] | None = None, chunk_bytes: int = CHUNK_BYTES,
               index: Sequence[int] | np.ndarray | None = None
               ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """``(index, block)`` over the observations ``index`` (default all), the progress with
        the time left reported through ``self.progress``."""
        n = self.obs.n if index is None else len(np.asarray(index).ravel())
        clock = self._clock = PassClock(self.progress, n, self.pass_name,
                                        self.budget, draws=self.draw_shape,
                                        refit_seconds=self.refit_seconds, anytime=self.anytime,
                                        checked=self.budget_checked, thin=self.anytime_thin,
                                        floor=self.cost_floor, series=self._series_routes(),
                                        first=self.anytime_first)
        expected = getattr(self, "expected_seconds", None)
        if expected is not None and not self.anytime and self.budget_checked:  # far beyond
            # the run's time budget (not a pass the caller kept time for: _computed's)
            clock.check_expected(expected(len(unc), n))
        if expected is not None:  # the clock prices thinned draws by the source's costs
            clock.expected = lambda draws: expected(draws, n)
        if expected is not None and clock.thin_before(lambda draws: expected(draws, n)):
            clock.close()  # fits on fewer draws only: stopped before it starts (thin_to)
            self.last_clock, self._clock = clock, None
            return
        try:
            for idx, block in column_chunks(self, unc, chunk_bytes, index):
                if clock.stopped:  # an anytime pass: the observations done, then no more
                    idx, block = clock.trim(idx, block)
                    if idx.size:
                        yield idx, block
                    return
                yield idx, block
        except BudgetSpent:  # inside an observation: the clock says how far, and what fits
            if clock.anytime and clock.done >= clock.least_done:
                clock.stopped = True  # the observations done are kept; the rest estimated
                return
            clock.spent()
            raise
        finally:
            clock.close()
            self.last_clock, self._clock = clock, None


class ConditionalSourceBase(ClockedColumns):
    """A pointwise source of log p(y_i | y₋ᵢ, θ) (``source = "conditional"``)."""

    source = "conditional"

    def matrix(self, unc: np.ndarray, constrained: np.ndarray | None = None,
               names: list[str] | None = None) -> np.ndarray:
        """``(S, N)`` matrix of log p(y_i | y₋ᵢ, θ)."""
        return self.columns(np.arange(self.obs.n), unc)

    def check(self, unc: np.ndarray, ll: np.ndarray | None = None) -> None:
        """Nothing to check: the normalization holds for any program (its conditions are
        checked observation by observation, draw by draw)."""

    def compare_log_lik(self, unc: np.ndarray, n_obs: int = 5) -> str | None:
        """No generated quantity to compare."""
        return None

    def held_out_model(self, i: int) -> Any:
        """Refits go through :mod:`~stanlogz.crossval.refit.heldout`, which checks that
        deleting y_i gives the program's held-out model."""
        raise InputError(f"{self.model.name}: refits need the split check of the held-out "
                         "program")
