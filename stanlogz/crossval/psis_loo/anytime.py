"""elpd_loo when the run's time budget (:func:`~stanlogz.time_budget`) ends its pointwise pass
part-way: the observations done are kept and the rest estimated, with the error of that
estimate in the error bar.

Under a budget the pass visits the observations in a seeded random order, so the m of N done
when the budget ends it (:class:`~stanlogz.crossval.observations.clock.PassClock`'s anytime
mode) are a simple random sample of them. The total is then the difference estimator of
``loo(subsample=m)`` (Magnusson, Andersen, Jonasson & Vehtari 2020;
:func:`~.subsample.subsample_estimates`) around the PSIS approximation of every observation on
``APPROX_DRAWS`` thinned draws, with its subsampling se; where that approximation does not fit
in what is left of the budget, around zero (N times the mean of the m done, the plain
expansion estimator), and the result says which (:func:`anytime_pass`). Which observations get
done depends on the time they take, not on their values, so the sample stays random as far as
an observation's cost does not track its elpd.

Where every observation would fit in the budget on a share of the draws but not on all of
them, the pass stops after its first few observations instead
(:class:`~stanlogz.errors.ThinForBudget`): loo runs it again on the draws thinned evenly per
chain (fewer draws cost loo's Monte Carlo se a factor of about the root of the cut, far less
than a subsample's estimate of the rest)."""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any

import numpy as np

from ..._util import deadline
from ..._util.arrays import even_rows
from ..._util.gpd import KHAT_BAD
from ..._util.seeds import Stream, stream_rng
from ...draws import Draws
from ...errors import StanlogzError, ThinForBudget, option
from ...stan.interpreted_pointwise import MAX_ROWS
from ...stan.nuts import budget_stop_dict
from ..elpd.psis import LOGLIK_VAR_HEAVY, PsisLoo, psis_loo
from ..observations.clock import PSIS_VALUE_S, SUBSAMPLE_APPROX_DRAWS
from ..observations.pointwise import CHUNK_BYTES
from .screen import screened
from .subsample import subsample_estimates, widen_few

#: The density-difference pass's costs that do not shrink with the draws, in data instances
#: per observation: its validity check, the pass and the approximation of the observations
#: left when the budget ends it.
INSTANCES_PER_OBSERVATION = 2.2

#: The observations whose approximation (PSIS on ``SUBSAMPLE_APPROX_DRAWS`` draws) is poor,
#: k̂ above ``KHAT_BAD`` or a log-likelihood variance above ``LOGLIK_VAR_HEAVY``
#: (:func:`_poorly_approximated`), are all done and taken with certainty when a pass stops:
#: those the budget left are computed after the approximation. The difference estimator of
#: the rest is unbiased over the random order either way, but one unvisited observation whose
#: approximation is far off (an outlier: PSIS on 100 draws ~0.6 nats high) is an error its
#: subsampling se cannot see (issue 45: two budget-stopped runs of 120 at z +4.1 and +6.0).
#: ``KHAT_BAD`` as ``loo(subsample=m)``'s :func:`~.subsample.draw_sample`: at 100 draws k̂
#: reads above ``KHAT_HEAVY`` for 7-41 of 4000 ordinary observations, and read 0.13-0.67 for
#: the outlier, whose variance was 2.7-4.1 on 4 seeds (every other observation under 0.4).
#: Where more than this many are left, or they do not fit in the budget left at twice the
#: pass's median seconds per observation (less this margin), none is certain: all are
#: estimated from the random sample (the estimator stays unbiased, the outliers unseen).
CERTAIN_MAX = 20
ANYTIME_CERTAIN_MARGIN_S = 0.2

#: The most of the run's time budget left that the screen before a conditional pass may
#: take (:func:`_screen_fits`).
SCREEN_SHARE = 0.1
#: A conditional pass priced within this share of the budget left completes, and is not
#: screened (:func:`_screen_fits`): its price is its trial's wall time per observation
#: (a 100-step hidden Markov model: 3.4 s priced, 2.9-4.2 s taken), so a third leaves a
#: margin of three on it.
PASS_SURE_SHARE = 1 / 3

#: The margin on a batched pass's cost timed at a few points (its threads and a loaded
#: machine make a small timing noisy).
BATCH_MARGIN = 1.5

#: Observations the price of a batched pass is measured on (then scaled to all N): each costs
#: about the same, and every one of N = 7,000 (posteriordb 2pl_latent_reg_irt, interpreted)
#: took 286 s before sampling, an O(N²) pass of its own.
PRICE_OBSERVATIONS = 128


def pass_reserve(pw: Any, n_draws: int = 4000) -> tuple[float | None, float]:
    """What the pointwise pass of ``pw`` will take, for a sampling run under a time budget to
    keep (:func:`~stanlogz._util.deadline.reserving`): ``(seconds, seconds per draw)``. For a
    density-difference pass, ``INSTANCES_PER_OBSERVATION`` data instances per observation and
    each observation's density and PSIS at each draw, timed here on observations at 1 and 513
    points. A model that batches the pass (the interpreter) is priced both ways, and the
    cheaper at ``n_draws`` draws is kept: at 256 draws or more the pass itself times the two
    and keeps the faster (posteriordb 2pl_latent_reg_irt: batched 0.66 s a draw, the pass
    then ran per call at about a twentieth of that). ``(None, 0)`` without a budget or for
    another source."""
    if deadline.remaining() is None or getattr(pw, "source", None) != "difference":
        return None, 0.0
    n = pw.obs.n
    if n < 8:
        return None, 0.0
    x = np.zeros((513, pw.model.dim))
    if hasattr(pw.model, "instance_densities") and not getattr(pw, "_batch_failed", True):
        try:
            batched = _batched_reserve(pw, x)
        except StanlogzError:  # no estimate: the pass (or its route) says why later
            return None, 0.0
        if batched is not None:
            per_call = _per_call_reserve(pw, x, n)
            if per_call is None:
                return batched
            return min(batched, per_call, key=lambda r: r[0] + n_draws * r[1])
    return _per_call_reserve(pw, x, n) or (None, 0.0)


def _per_call_reserve(pw: Any, x: np.ndarray, n: int) -> tuple[float, float] | None:
    """:func:`pass_reserve` of the per-call pass (an instance per observation, one call per
    draw), or None where it cannot be timed."""
    columns = getattr(pw, "per_call_columns", pw.columns)
    ones, mores = [], []
    try:
        columns([0], x[:1])  # builds the baseline instances once
        # other observations in each call (an instance is built anew for each), the least
        # of three (a loaded machine preempts a call of milliseconds)
        for k in range(3):
            start = time.perf_counter()
            columns([1 + 2 * k], x[:1])
            ones.append(time.perf_counter() - start)
            start = time.perf_counter()
            columns([2 + 2 * k], x)
            mores.append(time.perf_counter() - start)
    except Exception:  # noqa: BLE001 - no estimate: the pass reports its own trouble later
        return None
    one = min(ones)
    per_draw = max(min(mores) - one, 0.0) / 512 + PSIS_VALUE_S
    return INSTANCES_PER_OBSERVATION * n * one, n * per_draw


def budget_pass_warning(m: int, n: int, approximation: str, screened: int = 0) -> str:
    """The warning of a pass that the time budget ended after ``m`` of ``n`` observations,
    ``screened`` of them taken with certainty for their density difference
    (:func:`~.screen.screened`)."""
    how = (f"the difference estimator around PSIS on {SUBSAMPLE_APPROX_DRAWS} thinned draws "
           "(as subsampling)" if approximation != "none" else
           f"{n - screened} times the mean of the {m - screened} {'others ' if screened else ''}"
           "done (no approximation of the rest fitted in the budget)")
    if screened:
        how += (f", with the {screened} whose density difference lies far from the rest "
                "computed first and taken as they are")
    counts = ("counts that error" if approximation != "none" else
              f"counts the spread of those done (widened for a sample of {m - screened}), not "
              f"a value far from them among the {n - m} not done, which a sample this small "
              f"can miss{' and the screen did not show' if screened else ''}; a longer "
              f"{option('time_budget')} computes them")
    visited = (f"the {screened} screened first, the others in random order" if screened
               else "visited in random order")
    return (f"the time budget ended the pointwise pass after {m} of {n} observations "
            f"({visited}); elpd_loo estimates the rest by {how}, and its subsampling se "
            f"{counts}")


def take(ps: PsisLoo, order: np.ndarray) -> PsisLoo:
    """The pointwise values of ``ps`` at positions ``order`` (a permutation of them)."""
    new = {int(old): j for j, old in enumerate(order)}
    pick = (lambda a: None if a is None else np.asarray(a)[order])  # noqa: E731
    return dataclasses.replace(
        ps, elpd_i=ps.elpd_i[order], lppd_i=ps.lppd_i[order], khat=ps.khat[order],
        mcse_i=pick(ps.mcse_i), bias_i=pick(ps.bias_i), var_i=pick(ps.var_i),
        influence_i={new[j]: g for j, g in ps.influence_i.items()})


def anytime_pass(pw: Any, d: Draws, r_eff: float, keep_above: float, seed: Any,
                 progress: Any = None
                 ) -> tuple[PsisLoo, np.ndarray | None, dict[str, Any] | None]:
    """PSIS-LOO of every observation, or, when the run's time budget ends the pass, of those
    done (:class:`~stanlogz.errors.ThinForBudget` where the pass would fit on fewer draws
    and ``pw``'s ``anytime_thin`` allows it): ``(ps, sample_index, estimates)`` with
    ``sample_index`` the observations done (sorted; None when all were) and ``estimates``
    those of :func:`subsample_estimates` with the approximation (``"approx"``,
    ``"approximation"``: ``"psis100"`` or ``"none"``) and ``"budget_pass"`` (m, N), or None
    when all were done. Without a budget, or for a source that cannot stop part-way, the pass
    is the plain one in the observations' order."""
    n = pw.obs.n
    unc = d.flat_unconstrained()
    con = None if d.constrained is None else d.constrained.reshape(-1, d.constrained.shape[2])
    budgeted = deadline.remaining() is not None and hasattr(pw, "anytime")
    order = (stream_rng(seed, Stream.LOO_SUBSAMPLE).permutation(n) if budgeted
             else np.arange(n))
    # far from the rest by the density difference: visited first, taken with certainty
    first = (screened(pw, d, r_eff, progress,
                      priced=lambda pw: _screen_fits(pw, unc.shape[0])) if budgeted
             else np.zeros(0, dtype=int))
    order = np.concatenate([first, order[~np.isin(order, first)]])
    rows = _approx_rows(unc.shape[0])
    done_parts: list[np.ndarray] = []
    parts: list[PsisLoo] = []
    approx_parts: list[PsisLoo] = []  # the approximation of those done, from their columns
    if budgeted:
        pw.anytime, pw.anytime_first = True, int(first.size)
    try:
        for idx, ll in pw.chunks(unc, con, d.constrained_names, index=order):
            done_parts.append(np.asarray(idx, dtype=int))
            parts.append(psis_loo(ll, r_eff, chains=d.n_chains, keep_above=keep_above))
            if budgeted:
                approx_parts.append(psis_loo(ll[rows], r_eff))
    finally:
        if budgeted:
            pw.anytime, pw.anytime_first = False, 0
    clock = getattr(pw, "last_clock", None)
    if budgeted and clock is not None and getattr(clock, "thin_to", None):
        raise ThinForBudget(int(clock.thin_to), every=bool(getattr(clock, "thin_every", True)))
    done = np.concatenate(done_parts) if done_parts else np.zeros(0, dtype=int)
    if done.size < 2:
        twice = deadline.as_option(2 * (deadline.budget_seconds() or 60.0))
        raise deadline.OverBudget(
            f"the time budget ended the pointwise pass after {done.size} of {n} observations, "
            f"too few to estimate elpd_loo; run with {twice}", routes=twice)
    sort = np.argsort(done, kind="stable")
    ps = take(PsisLoo.concatenate(parts), sort)
    if done.size == n:
        return ps, None, None
    stratum = first  # the certain stratum: the screened ones (done first), and below
    if clock is not None and clock.approximate is False:  # no time was left for it
        approx, how = np.zeros(n), "none"
    else:
        approx, poor_mask, how = _approximation(pw, d, r_eff, done,
                                                PsisLoo.concatenate(approx_parts), progress)
        poor = np.nonzero(poor_mask)[0]
        extra = _certain_left(poor, np.union1d(done, first), clock)
        if extra is not None:  # every poorly approximated one is done: the certain stratum
            for idx, part in _computed(pw, d, unc, con, extra, r_eff, keep_above, progress):
                done_parts.append(idx)
                parts.append(part)
            done = np.concatenate(done_parts)
            sort = np.argsort(done, kind="stable")
            ps = take(PsisLoo.concatenate(parts), sort)
            stratum = np.union1d(first, poor)
    index = done[sort]
    if index.size == n:
        return ps, None, None
    certain = np.isin(index, stratum) if stratum.size else None
    if certain is not None and (~certain).sum() < 2:  # too few left for the random part's
        certain = np.isin(index, first) if first.size else None  # variance: the screen's
    est: dict[str, Any] = subsample_estimates(approx, index, ps.elpd_i, ps, [], certain)
    if how == "none":  # the plain expansion estimator of the random part
        widen_few(est, int(index.size if certain is None else (~certain).sum()))
    est.update(approx=approx, certain=certain, approximation=how,
               budget_pass=(int(index.size), n), screened=first.tolist(),
               # poorly approximated and not computed: the estimate of the rest has no se
               poor_left=[] if how == "none" else np.setdiff1d(poor, index).tolist())
    if progress:
        progress(budget_pass_warning(int(index.size), n, how, int(first.size)))
    return ps, index, est


def _screen_fits(pw: Any, n_draws: int | None = None) -> bool:
    """Whether the screen's density difference (``pw.proxy``) on ``SUBSAMPLE_APPROX_DRAWS``
    draws is needed and fits: False where the pass itself at ``n_draws`` draws is priced
    (``pw.expected_seconds``) within ``PASS_SURE_SHARE`` of the run's time budget left (it
    completes, and a screen would only cost time), or where the screen does not fit in
    ``SCREEN_SHARE`` of that budget by :func:`pass_reserve`'s price (one data instance per
    observation: 5,000 compiled ones could take minutes); True where it has no price (the
    screen's own pass then checks the budget)."""
    proxy = getattr(pw, "proxy", None)
    left = deadline.remaining()
    if proxy is None or left is None:
        return proxy is not None
    expected = getattr(pw, "expected_seconds", None)
    if expected is not None and n_draws is not None:
        whole = expected(n_draws, pw.obs.n)
        if whole is not None and whole <= PASS_SURE_SHARE * left:
            return False
    try:
        fixed, per_draw = pass_reserve(proxy, SUBSAMPLE_APPROX_DRAWS)
    except StanlogzError:
        return False
    return fixed is None or fixed + SUBSAMPLE_APPROX_DRAWS * per_draw <= SCREEN_SHARE * left


def _approx_rows(n_draws: int) -> np.ndarray:
    """The ``SUBSAMPLE_APPROX_DRAWS`` evenly thinned draws of the approximation."""
    return even_rows(n_draws, SUBSAMPLE_APPROX_DRAWS)


def _poorly_approximated(approx: PsisLoo) -> np.ndarray:
    """Which observations' approximation (PSIS on ``SUBSAMPLE_APPROX_DRAWS`` draws) is poor:
    k̂ above ``KHAT_BAD``, or a log-likelihood variance above ``LOGLIK_VAR_HEAVY``
    (its ratios are heavy whatever k̂ reads from 100 draws)."""
    poor = approx.khat > KHAT_BAD
    if approx.var_i is not None:
        poor |= approx.var_i > LOGLIK_VAR_HEAVY
    return poor


def _computed(pw: Any, d: Draws, unc: np.ndarray, con: np.ndarray | None, obs: np.ndarray,
              r_eff: float, keep_above: float, progress: Any
              ) -> list[tuple[np.ndarray, PsisLoo]]:
    """PSIS-LOO of the observations ``obs`` on all the draws, after a stopped pass (whose
    clock kept the time :func:`_certain_left` counted): ``(index, values)`` per block."""
    if not obs.size:
        return []
    if progress:
        progress(f"computing {obs.size} observation(s) left whose approximation is poor: "
                 f"{', '.join(str(i + 1) for i in obs)}")
    checked = getattr(pw, "budget_checked", True)
    pw.budget_checked = False
    try:
        return [(np.asarray(idx, dtype=int),
                 psis_loo(ll, r_eff, chains=d.n_chains, keep_above=keep_above))
                for idx, ll in pw.chunks(unc, con, d.constrained_names, index=obs)]
    finally:
        pw.budget_checked = checked


def _certain_left(poor: np.ndarray, done: np.ndarray, clock: Any) -> np.ndarray | None:
    """The observations ``poor`` not done, to be computed and taken with certainty, or None
    where they are more than ``CERTAIN_MAX`` or do not fit in the run's time budget left at
    twice the pass's median seconds per observation (less ``ANYTIME_CERTAIN_MARGIN_S``): then
    none is certain, and the visited ones stay a simple random sample of all."""
    left = np.setdiff1d(poor, done)
    if left.size > CERTAIN_MAX:
        return None
    times = [] if clock is None else list(getattr(clock, "times", []))
    per_obs = float(np.median(times)) if times else 0.0
    budget_left = deadline.remaining()
    if (left.size and budget_left is not None
            and 2 * per_obs * left.size > budget_left - ANYTIME_CERTAIN_MARGIN_S):
        return None
    return left


def _approximation(pw: Any, d: Draws, r_eff: float, done: np.ndarray,
                   done_approx: PsisLoo, progress: Any) -> tuple[np.ndarray, np.ndarray, str]:
    """PSIS-LOO of every observation on ``SUBSAMPLE_APPROX_DRAWS`` evenly thinned draws (what
    ``loo(subsample=m)`` corrects): its values, which are poor (:func:`_poorly_approximated`)
    and ``"psis100"``, ``done_approx`` for the observations ``done`` (from their columns),
    the others evaluated; or zeros, none poor and ``"none"`` where the budget ends that too."""
    n = pw.obs.n
    approx, poor = np.zeros(n), np.zeros(n, dtype=bool)
    approx[done], poor[done] = done_approx.elpd_i, _poorly_approximated(done_approx)
    rest = np.setdiff1d(np.arange(n), done)
    unc = d.flat_unconstrained()[_approx_rows(d.n_chains * d.n_draws)]
    if progress:
        progress(f"approximate PSIS-LOO of the {rest.size} observations left on "
                 f"{unc.shape[0]} thinned draws")
    # the pass kept time for it, at a share of an observation's time that is a guess where
    # the cost does not shrink with the draws (AR(5)'s closed form on the interpreter: 102
    # observations past its 38 s, ended by the backstop), so its clock checks the budget
    try:
        for idx, block in pw.chunks(unc, index=rest):
            one = psis_loo(block, r_eff)
            approx[idx], poor[idx] = one.elpd_i, _poorly_approximated(one)
    except deadline.OverBudget:  # past the budget (or spent inside a quadrature)
        return np.zeros(n), np.zeros(n, dtype=bool), "none"
    return approx, poor, f"psis{SUBSAMPLE_APPROX_DRAWS}"


def budget_flags(d: Draws, est: dict[str, Any] | None,
                 thinned: tuple[int, int] | None = None) -> dict[str, Any] | None:
    """What the time budget ended, for the result's JSON: ``{"sampling": {draws_kept,
    draws_asked} or None, "pass": {observations_done, observations, approximation, screened
    (the observations taken with certainty for their density difference, 1-based)} or
    None}``, with ``"pass_draws": {draws_used, draws}`` where it ran the pass on ``thinned``
    = (used, all) draws; None when it ended nothing."""
    stop = getattr(d, "budget_stop", None)
    passed = None if est is None else est.get("budget_pass")
    if stop is None and passed is None and thinned is None:
        return None
    out = {"sampling": None if stop is None else budget_stop_dict(stop),
           "pass": None if passed is None else {"observations_done": int(passed[0]),
                                                "observations": int(passed[1]),
                                                "approximation": est["approximation"],
                                                # 1-based, as the warnings name them
                                                "screened": [int(i) + 1 for i in
                                                             est.get("screened", [])]}}
    if thinned is not None:
        out["pass_draws"] = {"draws_used": int(thinned[0]), "draws": int(thinned[1])}
    return out


def with_mm_cut(flags: dict[str, Any] | None, cuts: list[dict[str, int]]
                ) -> dict[str, Any] | None:
    """``flags`` (:func:`budget_flags`) with ``"moment_matching": {observations_done,
    observations}`` where the time budget ended moment matching (``cuts``: one entry per
    stage it ended, the points above the threshold and the band below; summed)."""
    if not cuts:
        return flags
    out = dict(flags or {"sampling": None, "pass": None})
    out["moment_matching"] = {key: sum(c[key] for c in cuts)
                              for key in ("observations_done", "observations")}
    return out


def _batched_reserve(pw: Any, x: np.ndarray) -> tuple[float, float] | None:
    """:func:`pass_reserve` of a pass the model batches (the interpreter: many observations'
    instances at each draw in one native call), with a margin of ``BATCH_MARGIN``; None where
    the batched path does not serve. Timed on one observation at 8 points (a call's fixed
    cost), then on ``PRICE_OBSERVATIONS`` observations spread over the data at 8 and at 136
    points (a row's build, and a draw), scaled to all N:

    - each observation's row is built once in the pass, whatever the draws;
    - each call pays the fixed cost: one per ``MAX_ROWS`` rows, and the pass makes more calls
      with more draws (its blocks hold ``CHUNK_BYTES`` of values);
    - each draw costs every row's evaluation.

    (Counting the whole build again per block, as this did, priced posteriordb
    2pl_latent_reg_irt's pass at 4000 draws at about 10 minutes for about 2; the budget then
    stopped its sampling after 113 draws a chain.)"""
    n = pw.obs.n
    some = sorted({int(i) for i in np.linspace(0, n - 1, min(n, PRICE_OBSERVATIONS))})
    pw.columns(some[:1], x[:1])  # the one-time costs: the baselines, the program's rewrite
    start = time.perf_counter()
    pw.columns(some[:1], x[:8])
    fixed = time.perf_counter() - start
    seconds = []
    for k in (8, 136):
        start = time.perf_counter()
        pw.columns(some, x[:k])
        seconds.append(time.perf_counter() - start)
    if pw._batch_failed:
        return None
    m = len(some)
    per_draw = n / m * max(seconds[1] - seconds[0], 0.0) / 128
    # the m rows at 8 points less the one row of the fixed call: m - 1 builds and 8 draws each
    per_row = max(seconds[0] - fixed - 8 * per_draw / n * (m - 1), 0.0) / max(m - 1, 1)
    calls_per_draw = 8 * n / CHUNK_BYTES
    return (BATCH_MARGIN * (n * per_row + math.ceil(n / MAX_ROWS) * fixed),
            BATCH_MARGIN * (per_draw + fixed * calls_per_draw) + n * PSIS_VALUE_S)


def full_run_seconds(d: Draws, nuts: Any) -> float | None:
    """Seconds a refit at the settings ``nuts`` would take, from the run that drew ``d``: its
    sampling time, scaled up to every iteration and chain where the time budget stopped it
    (its chains kept ``budget_stop`` draws of those asked); None when unknown."""
    if not d.seconds:
        return None
    if not d.budget_stop:
        return float(d.seconds)
    kept, asked = d.budget_stop[:2]
    warmup = getattr(nuts, "warmup", 1000)
    chains = d.budget_stop[3] / d.budget_stop[2] if len(d.budget_stop) > 2 else 1.0
    return float(d.seconds) * (warmup + asked) / max(warmup + kept, 1) * chains


def refit_prices(d: Draws, nuts: Any) -> tuple[float | None, float | None]:
    """Seconds of one cold refit and of one warm refit (started from ``d``) at the settings
    ``nuts``, from the run that drew ``d`` (None: unknown). Where ``d`` holds more draws per
    chain than the settings ask (chains continued to a precision target), both are priced
    at the settings' draws, at the rate of ``d``'s kept iterations."""
    from ...draws.continuation import WARM_REFIT_WARMUP, warm_refit_share

    cold = full_run_seconds(d, nuts)
    if cold is None:
        return None, None
    asked = int(getattr(nuts, "draws", d.n_draws))
    steps = d.sampler.get("n_leapfrog__")
    if d.n_draws > asked and not d.budget_stop and steps is not None \
            and d.n_gradient_evals > 0:
        per_iteration = float(d.seconds) * float(np.sum(steps)) / d.n_gradient_evals \
            / d.n_draws
        warmup = int(getattr(nuts, "warmup", 1000))
        return (min(cold, cold * (warmup + asked) / (warmup + d.n_draws)),
                per_iteration * (min(warmup, WARM_REFIT_WARMUP) + asked))
    return cold, cold * warm_refit_share(d)


def within_budget(refit: Any) -> Any:
    """``refit(indices, stage)`` for a self-check whose refits the time budget may end: a
    refit refused for time gives no values and says so, and the answer stands."""

    def call(indices: np.ndarray, stage: int) -> tuple[list[Any], list[str]]:
        try:
            return refit(indices, stage)
        except deadline.OverBudget as exc:
            return [], [f"the time budget ended its refits: {str(exc).splitlines()[0]}"]

    return call


def poor_left_note(poor_left: list[int]) -> str | None:
    """Why the mc se is NA where a stopped pass left observations whose approximation is poor
    uncomputed (``poor_left``, 0-based; :func:`anytime_pass`): their approximated values are
    off beyond what the difference estimator's se covers. None when there are none."""
    if not poor_left:
        return None
    return (f"the time budget ended the pointwise pass before {len(poor_left)} observation(s) "
            "whose approximation is poor were computed "
            f"({', '.join(str(i + 1) for i in poor_left[:10])}): heavy ratios, whose "
            "approximated values the difference estimator's se does not cover, so the total "
            f"has no Monte Carlo se; a longer {option('time_budget')} computes them")
