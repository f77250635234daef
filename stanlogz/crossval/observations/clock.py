"""The clock of a long pointwise pass (the conditional log-likelihood's O(N²·S) pass, the
density-difference pass of a costly program): observations done, the time left, and a budget
that stops the pass cleanly (:class:`PassBudget`: how far it got and how long the rest would
take)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..._util import deadline
from ..._util.progress import Progress, duration, steps, time_left
from ...errors import PassBudget, Route

#: Seconds between the plain progress lines of a long pass (the first after ``FIRST_S``).
EVERY_S = 10.0
FIRST_S = 3.0
#: Observations done before the time left is estimated.
MIN_ESTIMATE = 3
#: Seconds (or a hundredth of the observations) a pass runs before the time budget judges it.
DECIDE_S = 5.0
#: Before ``MIN_ESTIMATE`` observations (or before the pass, on its cost estimate) a pass is
#: stopped only when it would take this many times the budget left (the run's one margin).
EARLY_MARGIN = deadline.EARLY_MARGIN
#: A pass with more time left than this, over at least twice ``SUBSAMPLE_HINT`` observations,
#: names subsampling once (posteriordb sat-hier_2pl: 19,200 observations, 13 minutes).
HINT_S = 300.0
SUBSAMPLE_HINT = 1000
#: The smallest subsample a refusal over the time budget names.
SUBSAMPLE_MIN = 100
#: Refits of the K-fold a refusal over the time budget names where they cost less than the pass.
KFOLD_REFITS = 10
#: Draws in all at which a refusal over the time budget may name the pass (``loo``'s
#: ``pointwise_draws``: the draws sampled, thinned), most first.
ROUTE_POINTWISE_DRAWS = (2000, 1000, 400)
#: The share of the run's budget left that an anytime pass on thinned draws may take (the
#: rest: PSIS, the fix-ups and the margin of the estimates).
THIN_SHARE = 0.7
#: Draws per chain a refusal over the time budget may name, fewest last.
ROUTE_DRAWS = (500, 250)
#: Thinned draws at which ``loo(subsample=m)`` approximates every observation (the PSIS
#: approximation the m observations drawn at random correct): its cost is part of a
#: subsample's.
SUBSAMPLE_APPROX_DRAWS = 100
#: Observations an anytime pass (``anytime=True``) does before it may stop at the budget: the
#: fewest from which the total is estimated (a pass stopped with fewer is refused).
ANYTIME_MIN = 20
#: Seconds an anytime pass keeps, beyond the approximation of every observation, for the
#: observations still running when it stops and the estimate that follows.
ANYTIME_MARGIN_S = 0.25
#: The least part of an observation's time its approximation at ``SUBSAMPLE_APPROX_DRAWS``
#: draws takes (the observations not done get one when an anytime pass stops): each also pays
#: a cost that does not shrink with the draws (a density-difference instance: 0.6 ms of 4.4 ms
#: at 4000 draws, regression.stan, N = 1000).
APPROX_SHARE = 0.2
#: Seconds PSIS takes per log-likelihood value (draw x observation) of the observations an
#: anytime pass keeps, smoothed after it stops (about 180 ns measured on a loaded 2-core
#: machine: ``psis_loo`` of a 4000 x 500 block).
PSIS_VALUE_S = 2e-7


def fewest_cut(n_draws: int, cost: Callable[[int], float | None], budget: float) -> int | None:
    """The most draws of ``ROUTE_POINTWISE_DRAWS`` fewer than ``n_draws`` whose pass
    (``cost(m)`` seconds; None: unknown) fits in ``budget`` seconds; None when none does."""
    for m in ROUTE_POINTWISE_DRAWS:
        if m < n_draws:
            c = cost(m)
            if c is not None and c <= budget:
                return m
    return None


def robust_time_left(times: Sequence[float], total: int) -> float:
    """Seconds left after the steps that took ``times`` (seconds each), of ``total``: the
    rate so far with the slowest step counted as a median one (the first observation pays the
    one-time costs, and one wide conditional on quadrature can take as long as a dozen
    Gaussian ones; at N = 1000 the plain rate after it overestimated the pass 14-fold)."""
    t = np.asarray(times, dtype=float)
    return time_left(float(t.sum() - t.max() + np.median(t)), t.size, total)


class PassClock:
    """Observations of a long pass counted through ``progress``: a bar (tqdm shows the rate
    and the time left) when the callback draws bars, else a line with the time left every
    ``EVERY_S`` seconds. ``budget``: seconds after which :meth:`update` raises
    :class:`PassBudget` (None: no limit). ``clock`` is the time source (seconds). ``draws``:
    (chains, draws per chain) of the pass, when known, so that a refusal over the run's time
    budget can name fewer draws; ``refit_seconds``: one sampling run of the program, so that
    it can name K-fold where its refits cost less than the pass; ``series``: the
    leave-future-out route of a time series, which a conditional pass's refusal names in
    place of a log_lik of independent terms. Threads that share the pass
    may call :meth:`update` at once."""

    def __init__(self, progress: Progress, total: int, desc: str,
                 budget: float | None = None,
                 clock: Callable[[], float] = time.perf_counter,
                 draws: tuple[int, int] | None = None,
                 refit_seconds: float | None = None, anytime: bool = False,
                 checked: bool = True, thin: bool = False,
                 floor: float = APPROX_SHARE, series: tuple[Route, ...] = (),
                 first: int = 0) -> None:
        self.total, self.desc, self.clock, self.done = total, desc, clock, 0
        #: the refit routes of a time series (leave-future-out), named by a conditional
        #: pass's refusal in place of a log_lik of independent terms
        self.series = series
        #: observations an anytime pass visits first and must finish before it may stop
        #: (those the screen before it takes with certainty, :attr:`least_done` counts them)
        self.first = first
        #: the least part of an observation's time that does not shrink with the draws (its
        #: approximation and a pass on thinned draws cost at least this share of it)
        self.floor = floor
        #: an anytime pass that may be run again on fewer draws: once ``MIN_ESTIMATE``
        #: observations are done, where every observation fits in the budget on the draws
        #: thinned but not on all, it stops with :attr:`thin_to` (the draws in all) set
        self.thin, self.thin_to = thin, None
        #: the source's expected seconds of the whole pass on so many draws (None: unknown),
        #: which tells the part of an observation's time that thinning saves
        self.expected: Callable[[int], float | None] | None = None
        #: whether every observation fits on ``thin_to`` draws (False: only the fewest an
        #: anytime estimate needs, :meth:`_thinned_for_some`)
        self.thin_every = True
        #: stop at the run's time budget instead of refusing, keeping the observations done
        #: (:attr:`stopped`, :attr:`done_obs`) once ``ANYTIME_MIN`` are
        self.anytime, self.stopped = anytime, False
        #: whether an anytime pass kept time to approximate the observations it leaves (None
        #: until decided)
        self.approximate: bool | None = None
        self.checked = checked  # False: the run's time budget is not checked (a pass the
        # caller has kept time for: the approximation of an anytime pass stopped)
        self.done_obs: list[int] = []
        self.draws = draws  # (chains, draws per chain) of the pass, for the routes it names
        self.refit_seconds = refit_seconds  # one sampling run: K-fold's refits, when cheaper
        self.budget = budget
        self.steps = steps(progress, total, desc, unit="obs")
        self.t0 = self.last = clock()
        self.next = self.t0 + FIRST_S
        self.times: list[float] = []
        self.hinted = False
        self._lock = threading.Lock()

    @property
    def least_done(self) -> int:
        """The observations an anytime pass needs before it may stop: ``ANYTIME_MIN`` drawn
        at random beyond the :attr:`first` it visits first (all, where there are fewer)."""
        return min(ANYTIME_MIN + self.first, self.total)

    def update(self, n: int = 1, obs: Sequence[int] = ()) -> None:
        """``n`` more observations done (``obs``: which, for an anytime pass);
        :class:`PassBudget` once the budget is spent."""
        with self._lock:
            self.done_obs.extend(int(i) for i in obs)
            self._update(n)

    def _update(self, n: int) -> None:
        self.done += n
        now = self.clock()
        self.times.extend([(now - self.last) / n] * n)
        self.last = now
        if self.budget is not None and now - self.t0 > self.budget and self.done < self.total:
            left = duration(time_left(now - self.t0, self.done, self.total))
            routes = (Route(options={"cond_budget": ...}),
                      Route(options={"subsample": ...}, cli_values={"subsample": "M"}))
            raise PassBudget(
                f"the {self.desc} stopped at its budget of {self.budget:g} s after "
                f"{self.done}/{self.total} observations (about {left} more at this rate); "
                f"raise the budget ({routes[0]}), or estimate elpd_loo from M observations "
                f"drawn at random ({routes[1]})", routes=routes)
        self._check_time_budget(now)
        line = None
        if not self.steps.drawn and now >= self.next and self.done < self.total:
            self.next = now + EVERY_S
            line = self.line(now - self.t0)
        self.steps.update(line, n)

    def _check_time_budget(self, now: float) -> None:
        """:class:`~stanlogz.errors.OverBudget` when the pass would end after the
        run's time budget (:func:`~stanlogz.time_budget`) at its rate so far, naming a
        subsample that fits (or the budget the whole pass needs)."""
        left_budget = deadline.remaining()
        if left_budget is None or self.done >= self.total or not self.checked:
            return
        elapsed = now - self.t0
        if self.anytime:
            self._check_anytime(now, left_budget)
            return
        if left_budget > 0 and (self.done < MIN_ESTIMATE or (
                elapsed < DECIDE_S and self.done < self.total / 100)):
            return  # judged on three observations and a few seconds (or a hundredth of them)
        left = (robust_time_left(self.times, self.total) if self.done >= MIN_ESTIMATE
                else time_left(elapsed, self.done, self.total))
        if left > left_budget:
            self._refuse(elapsed, left, left_budget)

    def _check_anytime(self, now: float, left_budget: float) -> None:
        """Stop the pass (:attr:`stopped`) once ``ANYTIME_MIN`` observations are done and the
        budget left is what the approximation of those left at ``SUBSAMPLE_APPROX_DRAWS``
        draws, the PSIS of those done and ``ANYTIME_MARGIN_S`` need. Where the approximation
        does not fit once ``ANYTIME_MIN`` are done, the pass goes on without it
        (:attr:`approximate` False: the rest is estimated from those done alone). Refuses
        when the budget is spent before ``ANYTIME_MIN`` are done."""
        if self.stopped:
            return
        per_obs = (robust_time_left(self.times, self.done + 1) if self.done >= MIN_ESTIMATE
                   else (now - self.t0) / max(self.done, 1))
        chains, per_chain = self.draws if self.draws else (1, 0)
        if self.thin and self.done >= MIN_ESTIMATE:
            self.thin = False  # decided once
            self.thin_to = self._thinned_fit(per_obs, chains * per_chain, left_budget)
            if self.thin_to is not None:
                self.stopped = True
                return
        share = min(1.0, max(SUBSAMPLE_APPROX_DRAWS / (chains * per_chain), self.floor)
                    if per_chain else 1.0)
        keep = self.done * chains * per_chain * PSIS_VALUE_S + ANYTIME_MARGIN_S  # PSIS after
        approx = per_obs * share * (self.total - self.done)
        enough = self.done >= self.least_done
        if enough and self.approximate is None:  # decided once, when enough are done
            self.approximate = left_budget > keep + approx
        if left_budget > keep + (approx if self.approximate is not False else 0.0):
            return
        if enough:
            self.stopped = True
        elif left_budget <= 0:
            elapsed = now - self.t0
            self._refuse(elapsed, time_left(elapsed, self.done, self.total), left_budget)

    def thin_before(self, expected: Callable[[int], float | None]) -> bool:
        """Before the pass: where its cost estimate (``expected(draws)`` seconds on that many
        draws; None when unknown) on all the draws is beyond the budget left but fits on fewer
        (:meth:`_thinned_fit`), stop it at once with :attr:`thin_to` set (a quadrature pass
        whose first observation alone could outlast the budget). True when it did."""
        left_budget = deadline.remaining()
        if not (self.thin and self.anytime and self.draws) or left_budget is None:
            return False
        n_draws = self.draws[0] * self.draws[1]
        full = expected(n_draws)
        if full is None or full <= THIN_SHARE * left_budget:
            return False

        def cost(m: int) -> float | None:  # an observation's cost counted as the floor's
            c = expected(m)                 # share of the whole at the least
            return None if c is None else max(c, self.floor * full)

        self.thin_to = fewest_cut(n_draws, cost, THIN_SHARE * left_budget)
        if self.thin_to is None:  # the price may be off: the fewest draws within its margin
            self.thin_to = self._thinned_for_some(n_draws, cost, left_budget,
                                                  slack=EARLY_MARGIN)
        if self.thin_to is None and self._out_of_reach(n_draws, cost, left_budget):
            self._refuse(0.0, full, left_budget, estimated=True)
        # where nothing fits by the estimate, the rate measured decides (:meth:`_thinned_fit`)
        self.stopped = self.thin_to is not None
        return self.stopped

    def _out_of_reach(self, n_draws: int, cost: Callable[[int], float | None],
                      left_budget: float) -> bool:
        """Whether the ``ANYTIME_MIN`` observations an estimate needs would take more than
        ``EARLY_MARGIN`` times the budget left even on the fewest draws a pass is thinned to:
        a refusal before the pass, not after it has spent the budget (a hidden Markov model
        of 100 steps under 40 s: 3.4 s an observation on 400 draws, 11 s on 4000)."""
        c = cost(min(min(ROUTE_POINTWISE_DRAWS), n_draws))
        return c is not None and c * self.least_done / self.total \
            > EARLY_MARGIN * max(left_budget, 0.0)

    def _thinned_for_some(self, n_draws: int, cost: Callable[[int], float | None],
                          left_budget: float, done: int = 0, slack: float = 1.0
                          ) -> int | None:
        """Where no thinning fits the whole pass (``cost(draws)`` seconds) and the draws
        sampled would not even reach the ``ANYTIME_MIN`` observations an anytime estimate
        needs (``done`` already done on them) in ``THIN_SHARE`` of the budget left: the most
        draws of ``ROUTE_POINTWISE_DRAWS`` on which they would (the rest is then estimated
        from more observations, each at a larger Monte Carlo error; a hidden Markov model of
        100 steps on the interpreter did 11 at 4000 draws in 255 s and was refused). Where
        none fits in that share but the draws sampled would not reach them in all the budget
        left (a certain refusal), the fewest draws of ``ROUTE_POINTWISE_DRAWS`` where they
        would in all of it (stan_models/tests/latent_poisson_lower1 under 6 s: 12
        observations, the pass priced at 7 s on 4000 draws with 2 s left, was refused with a
        route to 400 draws that answered in the same budget); ``slack``: how far beyond all
        the budget left a priced cost may be and still be tried on the fewest draws (the
        price before the pass, which can be off by its margin; the rate measured then
        decides); None otherwise."""
        least = self.least_done
        budget = THIN_SHARE * left_budget

        def some(m: int, k: int) -> float | None:
            c = cost(m)
            return None if c is None else c * k / self.total

        full = some(n_draws, least - done)
        if full is None or full <= budget:
            return None
        m = fewest_cut(n_draws, lambda m: some(m, least), budget)
        fewest = min(ROUTE_POINTWISE_DRAWS)
        if m is None and full > left_budget and fewest < n_draws:
            c = some(fewest, least)
            m = fewest if c is not None and c <= slack * left_budget else None
        if m is not None:
            self.thin_every = False
        return m

    def _thinned_fit(self, per_obs: float, n_draws: int, left_budget: float) -> int | None:
        """The most draws (of ``ROUTE_POINTWISE_DRAWS``, fewer than ``n_draws``) on which a
        pass over every observation fits in ``THIN_SHARE`` of the budget left, where the pass
        on all of them does not (an observation's cost counted as the ``floor`` share at the
        least); None otherwise: every observation at fewer draws is a smaller error than the
        subsample's estimate of the rest (loo's mc se grows as the root of the draws cut).
        Where none fits the whole pass, the draws on which an anytime estimate's fewest
        observations would (:meth:`_thinned_for_some`)."""
        budget = THIN_SHARE * left_budget
        if not n_draws or per_obs * (self.total - self.done) <= budget:
            return None
        cost = lambda m: self._thinned_cost(per_obs, m, n_draws)  # noqa: E731
        return (fewest_cut(n_draws, cost, budget)
                or self._thinned_for_some(n_draws, cost, left_budget, self.done))

    def _thinned_cost(self, per_obs: float, m: int, n_draws: int) -> float:
        """Seconds of the whole pass on ``m`` of ``n_draws`` draws at ``per_obs`` seconds per
        observation on all of them: where the source prices its pass (:attr:`expected`), the
        time measured less what its costs say the draws cut save (a quadrature node's build
        and call and the far-mode search do not shrink with the draws: most of a hidden Markov
        model's time on the interpreter); else a ``floor`` share at least does not shrink."""
        share = max(m / n_draws, self.floor)
        e_all, e_m = (None, None) if self.expected is None else (self.expected(n_draws),
                                                                  self.expected(m))
        if e_all and e_m is not None and e_m <= e_all:  # the source knows its fixed costs:
            # the time measured less what the source's costs say the draws cut save
            share = max(m / n_draws, 1.0 - (e_all - e_m) / (self.total * per_obs))
        return self.total * per_obs * share

    def trim(self, idx: np.ndarray, block: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The observations of ``idx`` (and columns of ``block``) done, once the anytime pass
        has stopped (all of them before)."""
        if not self.stopped:
            return idx, block
        with self._lock:
            keep = np.isin(idx, np.asarray(self.done_obs, dtype=int))
        return idx[keep], block[:, keep]

    def spent(self) -> None:
        """The run's budget ran out inside an observation (its quadrature checks the budget
        at every node): the refusal, with the whole pass at least as long as the observations
        begun so far took."""
        with self._lock:
            elapsed = self.clock() - self.t0
            begun = self.done + 1
            self._refuse(elapsed, elapsed / begun * (self.total - begun),
                         deadline.remaining() or 0.0, least=True)

    def check_expected(self, seconds: float | None) -> None:
        """:class:`~stanlogz.errors.OverBudget` before the pass starts when its cost
        estimate (``seconds``) is beyond ``EARLY_MARGIN`` times the run's budget left."""
        left_budget = deadline.remaining()
        if seconds is None or left_budget is None:
            return
        if seconds > EARLY_MARGIN * max(left_budget, 0.0):
            self._refuse(0.0, seconds, left_budget, estimated=True)

    def _refuse(self, elapsed: float, left: float, left_budget: float,
                estimated: bool = False, least: bool = False) -> None:
        """Raise the refusal of a pass that would take ``elapsed + left`` seconds."""
        per_obs = (elapsed + left) / self.total
        available = elapsed + max(left_budget, 0.0)
        routes = [r for r in [self._route(per_obs, available)] if r]
        difference = self.desc.startswith("density-difference")
        if difference and self.refit_seconds and \
                KFOLD_REFITS * self.refit_seconds < elapsed + left:
            # refits leave observations out, which the difference pass has shown is valid; a
            # conditional pass is taken where it is not (diamonds: predictors centred in
            # transformed data), and kfold's split check refuses it
            routes.append(Route("kfold", note=f"({KFOLD_REFITS} refits of about "
                                f"{duration(self.refit_seconds)} each)"))
        if self.desc.startswith("conditional") and self.series:
            routes.extend(self.series)  # a time series: its terms are not independent
        elif self.desc.startswith("conditional"):  # O(N²·S); the integrated pass is O(N·S)
            routes.append(Route(note="a log_lik generated quantity where the observations are "
                                "independent given the parameters (a pass linear in N)"))
        routes.append(deadline.as_option(deadline.whole_budget(elapsed + left, elapsed),
                                         "for the whole run"))
        done = ("by its cost estimate" if estimated else
                f"{self.done} done in {duration(elapsed)}")
        raise deadline.OverBudget(
            f"the {self.desc} of {self.total} observations would take "
            f"{'at least' if least else 'about'} {duration(elapsed + left)} here ({done}), "
            f"more than {deadline.left_text(available)}; run with "
            + ", or ".join(map(str, routes)),
            routes=tuple(r for r in routes if isinstance(r, Route)))

    def _route(self, per_obs: float, available: float) -> Route | None:
        """Options under which the pass fits in 60% of ``available`` seconds at ``per_obs``
        seconds per observation (its cost grows with the draws): the draws thinned for the
        pass, fewer draws per chain, a subsample of the observations drawn at random, or
        both; None when none fits."""
        chains, per_chain = self.draws if self.draws else (1, 0)
        n_draws = chains * per_chain
        # the draws sampled, thinned for the pass: no new run, no subsampling error
        m = fewest_cut(n_draws, lambda m: self._thinned_cost(per_obs, m, n_draws),
                       0.6 * available)
        if m is not None:
            return Route(options={"pointwise_draws": m}, note=f"(the pass on {m} of the "
                         f"{n_draws} draws; about "
                         f"{duration(self._thinned_cost(per_obs, m, n_draws))})")
        fewer = [d for d in ROUTE_DRAWS if d < per_chain]
        for d in fewer:  # every observation at fewer draws first: no subsampling error
            cost = self.total * per_obs * d / per_chain
            if cost <= 0.6 * available:
                return Route(options={"draws": d}, note=f"({chains * d} draws; about "
                             f"{duration(cost)} for this pass)")
        # every observation is also approximated at SUBSAMPLE_APPROX_DRAWS thinned draws
        approx = self.total * per_obs * (min(1.0, SUBSAMPLE_APPROX_DRAWS / (chains * per_chain))
                                          if per_chain else 0.0)
        for d in [per_chain] + fewer:
            cost = per_obs * (d / per_chain if per_chain else 1.0)
            fewer_draws = {"draws": d} if d < per_chain else {}
            m = int((0.6 * available - approx) / cost) // 50 * 50
            if SUBSAMPLE_MIN <= m < self.total:
                return Route(options={"subsample": m, **fewer_draws},
                             note=f"(elpd_loo from {m} observations drawn at random, with its "
                             f"se; about {duration(cost * m + approx)} for this pass)")
        return None

    def line(self, elapsed: float) -> str:
        """The plain progress line after ``elapsed`` seconds (the time left once
        ``MIN_ESTIMATE`` observations are done)."""
        head = f"{self.desc}: {self.done}/{self.total} observations in {duration(elapsed)}"
        if self.done < MIN_ESTIMATE:
            return f"{head}, estimating the time left"
        left = robust_time_left(self.times, self.total)
        line = f"{head}, about {duration(left)} left"
        if not self.hinted and left > HINT_S and self.total >= 2 * SUBSAMPLE_HINT:
            self.hinted = True
            hint = Route(options={"subsample": SUBSAMPLE_HINT})
            line += (f" ({hint} would estimate elpd_loo from {SUBSAMPLE_HINT} observations "
                     "drawn at random, with its se, in a fraction of the time)")
        return line

    def close(self) -> None:
        """The pass is over."""
        self.steps.close()


class PassState:
    """What a pointwise source keeps of its passes over the observations (the
    density-difference source and the conditional ones alike): set by
    :func:`~.conditional_source.start_pass` and by the caller that runs an anytime pass, read
    by the pass's :class:`PassClock`."""

    #: Where a long pass reports its clock (None: nothing).
    progress: Progress = None
    #: The clock of the pass under way (None between passes).
    _clock: PassClock | None = None
    #: (chains, draws per chain) of the pass (set by ``start_pass``).
    draw_shape: tuple[int, int] | None = None
    #: Seconds of one sampling run of the program (set by ``start_pass``).
    refit_seconds: float | None = None
    #: Whether the next pass stops at the run's time budget keeping the observations done
    #: (:class:`PassClock`'s ``anytime``; set by the caller that estimates the rest)
    anytime: bool = False
    #: Whether that anytime pass may stop to be run again on fewer draws (:class:`PassClock`'s
    #: ``thin``; set by a caller that can thin them)
    anytime_thin: bool = False
    #: False while a pass the caller kept time for runs (its clock checks no budget)
    budget_checked: bool = True
    #: A cheaper pointwise source (the density difference) that screens which observations a
    #: budget-stopped pass takes with certainty (:mod:`~stanlogz.crossval.psis_loo.screen`)
    proxy: Any = None
    #: The observations that screen picked (None before it ran)
    screened: Any = None
    #: How many of the observations an anytime pass is given it visits first, to be done
    #: before it may stop (:class:`PassClock`'s ``first``; set by the caller that screens)
    anytime_first: int = 0
    #: The clock of the last pass (what an anytime pass decided)
    last_clock: PassClock | None = None
