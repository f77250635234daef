"""More posterior draws: continue every chain of a :class:`~stanlogz.draws.Draws` from its last
draw with Stan's NUTS, and append the new draws; and warm-started refits (:func:`refit_draws`):
NUTS on a program with other data (a training set) started from a full-data fit."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import stanio

from .._util import deadline
from .._util.seeds import Stream, stream_int_seed, stream_rng
from ..errors import InitializationError, InputError
from ..stan.program import StanProgram
from ..stan.settings import NutsArgs
from .core import Draws
from .modes import (
    PROBE_BEYOND,
    PROBE_DRAWS,
    PROBE_MORE,
    RHAT_MODES,
    beyond,
    join_chains,
    max_rhat,
    probe_chains,
    random_inits,
)
from .sample import sample

#: warmup iterations of a continued chain whose draws carry no adapted metric (or whose
#: sampler takes none): it starts in the typical set, so only the step size and metric need
#: re-adapting, from the unit metric (Stan's adaptation windows fit in 150 iterations)
CONTINUATION_WARMUP = 150

#: warmup iterations of a warm-started refit (:func:`refit_draws`) or continued chains with an
#: adapted metric, when the settings ask for more: the chains start at the fit's last draws,
#: inside (or next to) the posterior's typical set, with its step sizes and metric. The metric
#: is kept and only the step size adapts (:data:`WARM_WINDOWS`): any window short enough to
#: fit here estimates a poorer metric than the fit's, whose window was 500 draws, even for a
#: left-out group whose latent widens to its prior. The bias this leaves against cold refits
#: and the cost it saves: docs/features/warm-refits.md (benchmarks/warm_refits.py).
WARM_REFIT_WARMUP = 100


#: Stan's adaptation windows (init buffer, term buffer, metric window) of a warm start: none,
#: so that no metric window ends, the metric stays as given and the step size adapts over the
#: whole warmup. The interpreter takes no windows, but below 150 warmup iterations Stan (and
#: stanli, which follows it) shrinks CmdStan's windows without restarting its window counter,
#: which likewise never ends a metric window: both backends keep the given metric
#: (``tests/crossval/refit/test_warm_refits.py``; the choice: benchmarks/warm_refits.py).
WARM_WINDOWS = (0, 0, 0)


def init_from_unconstrained(model: StanProgram, x: np.ndarray) -> dict[str, Any]:
    """Constrained values of ``model``'s parameters at unconstrained ``x``, as a Stan init
    (the flat values shaped into Stan variables by stanio, which reads Stan's flat names as
    CmdStan CSV headers: arrays in Stan's order, tuples as Stan JSON tuples)."""
    names = list(model.param_names(False, False))
    values = np.asarray(model.constrain(np.asarray(x, dtype=float)))[: len(names)]
    return {name: _json_tuples(var.extract_reshape(values))
            for name, var in stanio.parse_header(",".join(names)).items()}


def _json_tuples(value: Any) -> Any:
    """stanio's Python tuples (Stan tuples) as Stan JSON's ``{"1": ..., "2": ...}`` objects
    (stanlogz writes a Python tuple as an array)."""
    if isinstance(value, tuple):
        return {str(i + 1): _json_tuples(v) for i, v in enumerate(value)}
    if isinstance(value, np.ndarray) and value.dtype == object:
        return [_json_tuples(v) for v in value]
    return value


def extend_draws(model: StanProgram, draws: Draws, n_more: int, settings: NutsArgs | None = None, *,
                 seed: int | None = None, warmup: int | None = None,
                 progress: Any = None) -> Draws:
    """``draws`` with ``n_more`` further draws per chain from NUTS chains started at each chain's
    last draw. Where the draws carry their adapted step sizes and metrics and the sampler
    takes them, the chains start from those and ``warmup`` (default
    :data:`WARM_REFIT_WARMUP`) iterations adapt the step size only; else ``warmup`` (default
    :data:`CONTINUATION_WARMUP`) iterations re-adapt step size and metric. The other sampler
    settings, e.g. ``adapt_delta``, come from ``settings``. The cost fields add up;
    ``sampling_cost_known`` stays what it was for the first draws."""
    if n_more < 1:
        raise InputError(f"need at least one more draw per chain, got {n_more}")
    inits = [init_from_unconstrained(model, x) for x in draws.unconstrained[:, -1]]
    start = WarmStart.adapted(draws) if _takes_metric(model) else None
    if warmup is None:
        warmup = CONTINUATION_WARMUP if start is None else WARM_REFIT_WARMUP
    nuts = NutsArgs.of(settings, chains=draws.n_chains, warmup=warmup, draws=int(n_more))
    more = sample(model, nuts, seed=seed, init=inits, progress=progress, warm=start)
    if more.n_chains != draws.n_chains:
        # the time budget ended the continuation while some chains were still in their warmup:
        # those came back without draws (their warning says so), and the others cannot be
        # matched to their chains here, so no chain is extended: the caller sees no new draws
        return draws
    constrained = None
    if draws.constrained is not None and more.constrained is not None \
            and draws.constrained.shape[2] == more.constrained.shape[2]:
        constrained = np.concatenate([draws.constrained, more.constrained], axis=1)
    sampler = {k: np.concatenate([v, more.sampler[k]], axis=1)
               for k, v in draws.sampler.items() if k in more.sampler}
    return Draws(
        unconstrained=np.concatenate([draws.unconstrained, more.unconstrained], axis=1),
        constrained=constrained,
        constrained_names=list(draws.constrained_names) if constrained is not None else [],
        unc_names=list(draws.unc_names),
        sampler=sampler,
        step_size=more.step_size,
        inv_metric=more.inv_metric,
        seconds=float(draws.seconds + more.seconds),
        n_gradient_evals=int(draws.n_gradient_evals + more.n_gradient_evals),
        source=draws.source,
        sampling_cost_known=draws.sampling_cost_known,
        max_treedepth=draws.max_treedepth,
        warnings=list(draws.warnings),
        adapt_delta=draws.adapt_delta,
    )


@dataclass(frozen=True)
class WarmStart:
    """Where warm-started refits begin: the full-data fit of a program (with all data), as the
    last draw of each of its chains on the unconstrained scale (``last``: ``(chains, dim)``)
    and as constrained inits (``inits``, one per chain, made once so that refits running in
    threads share them), the program's unconstrained parameter names (``names``) and, when
    known, its adapted step sizes ``(chains,)`` and diagonal inverse metrics
    ``(chains, dim)``."""

    names: tuple[str, ...]
    inits: tuple[dict[str, Any], ...]
    last: np.ndarray
    step_size: np.ndarray | None = None
    inv_metric: np.ndarray | None = None

    @classmethod
    def of(cls, model: StanProgram, draws: Any) -> WarmStart | None:
        """The warm start of ``draws`` (a :class:`Draws` or an unconstrained ``(chains, n,
        dim)`` array of ``model``); None without draws, when their shape is not that, or when
        their last draws do not constrain (the refits then run cold)."""
        x = getattr(draws, "unconstrained", draws)
        if x is None:
            return None
        x = np.asarray(x, dtype=float)
        if x.ndim != 3 or x.shape[1] < 1 or x.shape[2] != model.dim:
            return None
        adapted = cls.adapted(draws) if hasattr(draws, "unconstrained") else None
        return cls._at(model, x[:, -1], *((adapted.step_size, adapted.inv_metric) if adapted
                                           else (None, None)))

    @classmethod
    def _at(cls, model: StanProgram, last: np.ndarray, step_size: np.ndarray | None,
            inv_metric: np.ndarray | None) -> WarmStart | None:
        """The warm start of ``model`` at the unconstrained points ``last`` ``(chains, dim)``;
        None where they do not constrain to inits."""
        last = np.ascontiguousarray(last)
        try:
            inits = tuple(init_from_unconstrained(model, row) for row in last)
        except (InputError, ValueError, KeyError, IndexError):
            return None
        return cls(tuple(model.param_unc_names()), inits, last, step_size, inv_metric)

    @staticmethod
    def adapted(draws: Any) -> _Adapted | None:
        """The last draws, step sizes and inverse metrics of ``draws`` (a :class:`Draws`), with
        a warm start's adaptation windows, or None where it carries no positive finite ones
        of its chains' shape."""
        x = np.asarray(draws.unconstrained, dtype=float)
        step = getattr(draws, "step_size", None)
        metric = getattr(draws, "inv_metric", None)
        if step is None or metric is None or x.ndim != 3 or x.shape[1] < 1 \
                or np.shape(metric) != (x.shape[0], x.shape[2]) or np.size(step) != x.shape[0]:
            return None
        step = np.asarray(step, dtype=float).reshape(-1)
        metric = np.asarray(metric, dtype=float)
        if not (np.all(np.isfinite(metric)) and np.all(metric > 0)
                and np.all(np.isfinite(step)) and np.all(step > 0)):
            return None
        return _Adapted(np.ascontiguousarray(x[:, -1:]), step, metric, WARM_WINDOWS)

    def restricted(self, train: StanProgram, cols: np.ndarray) -> WarmStart | None:
        """The warm start of a training program whose unconstrained coordinates are the full
        program's ``cols`` (one latent per held-out observation dropped; crossval's
        ``coordinate_map`` gives them): the same last draws, step sizes and metrics on those
        coordinates; None where the last draws do not initialize ``train``."""
        cols = np.asarray(cols, dtype=int)
        metric = (None if self.inv_metric is None
                  else np.ascontiguousarray(np.asarray(self.inv_metric)[:, cols]))
        return self._at(train, self.last[:, cols], self.step_size, metric)

    def fits(self, train: StanProgram) -> bool:
        """Whether ``train`` has the same unconstrained parameters as the full program (a
        program whose parameters change with its data, e.g. one latent per observation,
        starts warm through :meth:`restricted`, or is refit cold)."""
        return train.dim == len(self.names) and tuple(train.param_unc_names()) == self.names


@dataclass(frozen=True)
class _Adapted:
    """NUTS's ``warm=`` argument: last draws, step sizes, inverse metrics and the adaptation
    windows (:data:`WARM_WINDOWS`; the compiled sampler's: the interpreter takes none)."""

    unconstrained: np.ndarray
    step_size: np.ndarray
    inv_metric: np.ndarray
    windows: tuple[int, int, int] | None = None


def refit_draws(train: StanProgram, settings: NutsArgs, *, seed: int | None,
                warm: WarmStart | None, progress: Any = None, probe: bool = True,
                cold: bool = False) -> tuple[Draws, bool]:
    """NUTS draws of the training program ``train`` (the full program with other data), and
    whether they were warm-started.

    Warm (``warm`` given and :meth:`WarmStart.fits` ``train``): chain c starts at the full fit's
    last draw of chain c (cycled when the chain counts differ), passed as constrained inits,
    from the full fit's adapted step size (the chains' median) and inverse metrics, with at
    most :data:`WARM_REFIT_WARMUP` warmup iterations that adapt the step size only (where
    the full fit carries no metric or the sampler takes none: at most
    :data:`CONTINUATION_WARMUP`, whose windows adapt one from the unit metric). Cold
    otherwise (``settings`` as they are), when the warm inits fail to initialize (a
    constraint that depends on the data), and when ``cold`` asks for it.

    ``probe`` (where ``warm`` fits): the refit is checked by short chains started the other
    way (:mod:`.modes`: from random inits for a warm refit, from the full fit for a cold one);
    where they end elsewhere, a whole refit is run that other way as well and the chains
    joined (under a time budget, the probe's chains joined instead)."""
    if warm is None or not warm.fits(train):
        return sample(train, settings, seed=seed, progress=progress), False
    inits = [warm.inits[c % len(warm.inits)] for c in range(settings.chains)]
    adapted = None
    if warm.step_size is not None and warm.inv_metric is not None and _takes_metric(train):
        adapted = _Adapted(warm.last[:, None, :], warm.step_size, warm.inv_metric,
                           WARM_WINDOWS)
    # without a metric to start from, the windows re-adapt one from the unit metric
    nuts = settings.replace(warmup=min(settings.warmup, WARM_REFIT_WARMUP if adapted
                                       else CONTINUATION_WARMUP))

    def warm_run() -> Draws:
        return sample(train, nuts, seed=seed, init=inits, progress=progress, warm=adapted)

    def cold_run() -> Draws:
        return sample(train, settings, seed=stream_int_seed(seed, Stream.MODE_PROBE, 1),
                      progress=progress)

    def probed_cold(drawn: Draws) -> Draws:  # checked by chains from the full fit's draws
        starts = warm.last[np.arange(probe_chains(settings.chains)) % len(warm.last)]
        return _probed(train, nuts, seed, drawn, adapted, starts, "from the full fit",
                       "from random inits", warm_run, progress,
                       lambda: _another_fits(drawn, settings, nuts))

    if cold:
        drawn = sample(train, settings, seed=seed, progress=progress)
        if not probe or drawn.budget_stop is not None:
            return drawn, False
        return probed_cold(drawn), False
    try:
        drawn = warm_run()
    except InitializationError:
        return sample(train, settings, seed=seed, progress=progress), False
    if not probe or drawn.budget_stop is not None:
        return drawn, True
    r = max_rhat(drawn.unconstrained)
    if r > RHAT_MODES and _another_fits(drawn, nuts, settings):
        # the full fit's metric does not fit this posterior (radon: a county whose homes were
        # all held out, its intercept back at its wide prior): cold, probed as a cold refit is
        again = cold_run()
        again = replace(again, seconds=float(drawn.seconds + again.seconds),
                        n_gradient_evals=int(drawn.n_gradient_evals + again.n_gradient_evals),
                        warnings=[*again.warnings, f"NUTS on {train.name}: the chains started "
                                  f"from the full fit did not mix (split R-hat {r:.2f} > "
                                  f"{RHAT_MODES}): refit from random inits"])
        return probed_cold(again), False
    starts = random_inits(train.dim, probe_chains(settings.chains),
                          stream_rng(seed, Stream.MODE_PROBE))
    return _probed(train, nuts, seed, drawn, adapted, starts, "from random inits",
                   "from the full fit", cold_run, progress,
                   lambda: _another_fits(drawn, nuts, settings)), True


#: A second whole refit under a time budget is priced at the first's seconds per iteration
#: times this (a cold run's early warmup, before its step size is adapted, is slower: up to
#: 2.6x the rest on the wells example) ...
ANOTHER_MARGIN = 2.0
#: ... and run where that fits in this share of the budget left.
ANOTHER_SHARE = 0.5


def _another_fits(drawn: Draws, ran: NutsArgs, other: NutsArgs) -> bool:
    """Whether a second whole refit with ``other``'s iterations fits in the run's time budget
    (always without one), priced from ``drawn``, a run of ``ran``'s. Before, any budget
    ruled it out: posteriordb radon_county_intercept under 30 s (11 s left, a refit of about
    2 s) joined the probe's short chains for its three one-house counties instead, whose
    split R-hat (1.16-1.25) then made the mc se NA where the run without a budget had one."""
    left = deadline.remaining()
    if left is None:
        return True
    per_iteration = drawn.seconds / max(ran.warmup + ran.draws, 1)
    cost = ANOTHER_MARGIN * per_iteration * (other.warmup + other.draws)
    return drawn.seconds > 0 and cost <= ANOTHER_SHARE * left


def probe_run(model: StanProgram, nuts: NutsArgs, seed: int | None, fit: np.ndarray,
              adapted: _Adapted | None, starts: np.ndarray, more: bool = True
              ) -> tuple[Draws, int] | None:
    """:mod:`.modes`' probe of the draws ``fit`` ``(chains, n, dim)``: chains started at
    ``starts`` (unconstrained, ``(chains, dim)``) with ``adapted``'s step sizes and metrics
    (cycled) where given, ``nuts``'s warmup and :data:`~.modes.PROBE_DRAWS` draws; where one
    ends beyond ``fit`` (:func:`~.modes.beyond`), all go on by :data:`~.modes.PROBE_MORE`
    iterations (a chain on its way gets there, one in another mode stays; not where ``more``
    is false: the caller goes on with the chains beyond on its own). Returns the probe's
    draws and the draws per chain to compare (the last ones), None where it cannot start."""
    c = np.arange(starts.shape[0])
    p_warm = None if adapted is None else _Adapted(
        starts[:, None, :], adapted.step_size[c % adapted.step_size.size],
        adapted.inv_metric[c % adapted.inv_metric.shape[0]], WARM_WINDOWS)
    try:
        p_inits = [init_from_unconstrained(model, x) for x in starts]
        p = sample(model, nuts.replace(chains=c.size, draws=min(PROBE_DRAWS, nuts.draws)),
                   seed=stream_int_seed(seed, Stream.MODE_PROBE), init=p_inits, warm=p_warm)
    except (InitializationError, InputError, ValueError, KeyError, IndexError):
        return None
    n = p.n_draws
    if more and p.budget_stop is None and beyond(fit, p.unconstrained)[0] > PROBE_BEYOND:
        try:
            p = extend_draws(model, p, PROBE_MORE, nuts, warmup=0,
                             seed=stream_int_seed(seed, Stream.MODE_PROBE, 2))
        except InitializationError:
            pass
    return p, n


def _probed(train: StanProgram, nuts: NutsArgs, seed: int | None, drawn: Draws,
            adapted: _Adapted | None, starts: np.ndarray, probe_from: str, drawn_from: str,
            other: Any, progress: Any, other_fits: Any = lambda: True) -> Draws:
    """``drawn`` checked by :mod:`.modes`' probe, chains started at ``starts`` (unconstrained,
    ``(chains, dim)``, :func:`~.modes.probe_chains`) with the full fit's step size and metric
    where ``adapted``: as it is (the probe's cost added) where the probe's chains agree with
    it; else joined with ``other()`` (a whole refit started the probe's way), or, where that
    does not fit in the time budget (``other_fits()`` false), with the probe's chains."""
    probed = probe_run(train, nuts, seed, drawn.unconstrained, adapted, starts)
    if probed is None:
        return drawn  # no finite density where the probe starts: nothing to compare
    p, n = probed
    far, j = beyond(drawn.unconstrained, p.unconstrained[:, -n:])
    costed = replace(drawn, seconds=float(drawn.seconds + p.seconds),
                     n_gradient_evals=int(drawn.n_gradient_evals + p.n_gradient_evals))
    if p.budget_stop is not None or not far > PROBE_BEYOND:
        return costed
    p = p.thinned(n) if p.n_draws > n else p
    name = list(train.param_unc_names())[j]
    why = (f"NUTS on {train.name}: chains {probe_from} ended elsewhere than those "
           f"{drawn_from} ({name}: {far:.1f} sd beyond the range of their draws)")
    if not other_fits():  # no time for another refit: the probe's chains join
        return join_chains(costed.thinned(n) if costed.n_draws > n else costed, p,
                           f"{why}; their chains joined (the time budget holds no other refit)")
    if progress:
        progress(f"{why}: refitting {probe_from} as well")
    return join_chains(costed, other(), f"{why}; refit {probe_from} as well and the chains "
                       "joined")


def _takes_metric(model: StanProgram) -> bool:
    """Whether ``model``'s NUTS starts from a given step size and metric (the interpreter's,
    and a compiled library with ``slz_nuts_run``)."""
    return bool(getattr(model, "nuts_takes_warm", False))


def warm_refit_share(draws: Draws) -> float:
    """The share of the full fit ``draws``'s cost that one warm refit repeats (1.0 when its
    cost is unknown): the kept draws' leapfrog steps with :data:`WARM_REFIT_WARMUP` more
    iterations at the same rate, and its probe's (:mod:`.modes`:
    :func:`~.modes.probe_chains` chains of as many warmup iterations and
    :data:`~.modes.PROBE_DRAWS` draws), over all its steps (the cold warmup's costly first
    phase, far from the typical set, is what a warm refit skips)."""
    steps = draws.sampler.get("n_leapfrog__")
    if not draws.sampling_cost_known or steps is None or draws.n_gradient_evals <= 0 \
            or draws.n_draws < 1:
        return 1.0
    kept = float(np.sum(steps))
    probe = probe_chains(draws.n_chains) * (WARM_REFIT_WARMUP + min(PROBE_DRAWS, draws.n_draws)) / (
        draws.n_chains * draws.n_draws)
    return float(min(1.0, kept * (1.0 + WARM_REFIT_WARMUP / draws.n_draws + probe)
                     / draws.n_gradient_evals))


def warm_refit_seconds(draws: Draws) -> float:
    """Seconds one warm refit should take, from the full fit ``draws`` (its seconds times
    :func:`warm_refit_share`; 0.0 when its seconds are unknown)."""
    return float((draws.seconds or 0.0) * warm_refit_share(draws))
