"""Modes of a posterior that NUTS's chains do not move between, for the evidence.

Every estimator of log Z from posterior draws takes the draws' mix of modes as the
posterior's. NUTS does not move between separated modes, so four chains from random inits
weigh them by how many chains started in each, and where every chain started in one mode
the other modes are not in the draws at all. On a two-component mixture with unordered means
(``stan_models/tests/mixture_uneven.stan``: two modes that swap the labels) gbs, smc and ais
all gave log Z off by log 2 (0.69 nats) with an se of 0.005 and no warning when the four
chains sat in one mode, and by 0.56 with an se of 0.20 when they split 3:1 between modes the
prior weighs unevenly.

:func:`search_modes` looks for them. :data:`SEARCH_CHAINS` chains from Stan's random inits
and :data:`WIDE_CHAINS` from wider ones (:data:`WIDE_INIT`), with the fit's adapted step
size and metric, run as a refit's probe does (:func:`~.continuation.probe_run`). A probe
chain whose median ends :data:`~.modes.PROBE_BEYOND` sds beyond the range of all the draws
goes on alone by :data:`CONFIRM_MORE` iterations (a chain on its way from a far init gets
there); if it is still beyond and sampled there (:func:`_settled`), it sits in another mode,
and a whole run of the fit's settings is sampled there from its last draw. The chains are
then grouped by mode (:func:`chain_groups`), and log Z is the log of the sum of each mode's
evidence, each estimated from its own chains
(:func:`stanlogz.estimators.modewise.modewise_log_z`): the modes' weights come from their
evidence, not from the chains' counts. Modes that neither the chains nor the probe found are
not in it (their mass is missing: log Z is then low); the warning says how many modes it
holds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .._util import deadline
from .._util.seeds import Stream, stream_int_seed, stream_rng
from ..errors import InitializationError, InputError, StanlogzError
from ..stan.program import StanProgram
from ..stan.settings import NutsArgs
from .continuation import (
    CONTINUATION_WARMUP,
    WARM_REFIT_WARMUP,
    WARM_WINDOWS,
    _Adapted,
    _another_fits,
    _takes_metric,
    extend_draws,
    init_from_unconstrained,
    probe_run,
)
from .core import Draws
from .modes import (
    PROBE_BEYOND,
    beyond,
    join_chains,
    random_inits,
)
from .sample import sample

#: The search's probe chains from Stan's random inits, on (-2, 2) unconstrained, beside
#: :data:`WIDE_CHAINS` from wider ones: where every one of the fit's four chains sits in one
#: of two modes alike in their basins (a chance of 1 in 8), all twelve also start there with
#: a chance of 1 in 4,096 (four alone, a refit's probe, missed the other mode in 1 of 8 seeds
#: tried)
SEARCH_CHAINS = 4
#: The probe (about 23% of a fit's iterations at the defaults: 12 chains of 100 warmup and
#: 50 draws against 4 of 2,000, and 400 more for each chain that ends elsewhere) is run where
#: the time budget has this share of the fit's seconds left
PROBE_SHARE = 0.25
#: Random inits tried per probe chain for one where the density is finite (Stan's 100)
INIT_TRIES = 100
#: Probe chains from wider random inits, uniform on (-WIDE_INIT, WIDE_INIT) unconstrained:
#: a mode outside the reach of Stan's (-2, 2) (``kfold_far_mode.stan``'s prior mode at 6,
#: with two weak observations near 3: the posterior weighs it 0.53) was missed in every one
#: of 4 seeds, log Z 0.76 low with an se of 0.001 and no warning; with 4 wide chains beside
#: 8 of Stan's, 6 seeds of 100 missed it, with 8 beside 4 none did
#: (benchmarks/evidence_modes_coverage.py)
WIDE_CHAINS = 8
WIDE_INIT = 10.0
#: Iterations a probe chain still beyond the draws goes on alone before a whole run is
#: sampled where it sits: a chain from (-10, 10) on the 1,000-parameter hierarchical normal
#: ended the probe 89 sds beyond the draws, on its way (its log density 470 below theirs),
#: and was inside them after these; taken for a mode, it cost a whole run (3 seeds of 8)
CONFIRM_MORE = 300
#: Tree depths the probe may build beyond the fit's deepest (:func:`_probe_depth`): its
#: chains, at the fit's step size, reach a mode of the fit's scale as deep
DEPTH_MARGIN = 1
#: The share of its iterations a chain must move in to be taken for a mode's (:func:`moving`):
#: a chain stuck where NUTS cannot move stays put in all of them, while NUTS on a
#: one-parameter mode, its trajectories a few points long, stays put in about 60%
#: (``kfold_far_mode.stan``: 0.5 rejected its far mode)
MOVE_SHARE = 0.1
#: The largest share of divergent transitions in a chain taken for a mode's
#: (:func:`sampled_there`)
DIVERGED_SHARE = 0.1
#: A chain whose distance beyond the draws (:func:`~.modes.beyond`) in the second half of
#: its stretch alone is below this share of the first half's is still on its way towards
#: them: on posteriordb earnings and mcycle, chains from (-10, 10) were still beyond after
#: the probe and its 300 more iterations, and each whole run sampled for them joined the
#: fit's mode (the evidence took 3-7 times as long)
DRIFT = 0.9
#: A chain whose log density (its median over its stretch alone) is below the fit's lowest
#: draw's by more than LP_MARGIN_PER_DIM per parameter and LP_MARGIN holds no mass beside
#: the fit's: a mode that low would need to be 10 times as wide on every parameter to
#: match. On posteriordb earnings, chains from wide inits crawled up from log sigma = -4
#: (the data's scale is 9.8), their density some 1e12 below the draws', each still beyond
#: after the stretch and each taken for a mode (the evidence took 25 s instead of 5 s)
LP_MARGIN_PER_DIM = math.log(10.0)
LP_MARGIN = 20.0


@dataclass
class ModeSearch:
    """What :func:`search_modes` found: ``draws`` (the fit's chains, then the chains of each
    mode found beyond them), ``groups`` (chain indices into ``draws``, one array per mode),
    ``found`` (modes the probe found beyond the fit's draws), ``unsampled`` (of those, the
    modes whose whole run did not fit the time budget: not in ``draws``), the probe's cost
    (``seconds``, ``n_gradient_evals``; the modes' runs are in ``draws``' cost), and
    ``budget_skipped``."""

    draws: Draws
    groups: list[np.ndarray]
    found: int = 0
    unsampled: int = 0
    seconds: float = 0.0
    n_gradient_evals: int = 0
    #: the time budget ended or left no room for the probe: modes beyond the chains unsought
    budget_skipped: bool = False


def chain_groups(unc: np.ndarray) -> list[np.ndarray]:
    """The chains of ``unc`` ``(chains, n, dim)`` grouped by the mode they sit in: chains a
    and b share a mode where neither's median (of its last half) ends beyond the range of the
    other's draws by more than :data:`~.modes.PROBE_BEYOND` of its sds (:func:`~.modes.beyond`),
    and groups join through shared chains. Chains mixing through one wide posterior overlap
    and share a group; chains in separated modes do not."""
    c = unc.shape[0]
    parent = list(range(c))

    def root(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for a in range(c):
        for b in range(a + 1, c):
            near = (beyond(unc[a:a + 1], unc[b:b + 1])[0] <= PROBE_BEYOND
                    and beyond(unc[b:b + 1], unc[a:a + 1])[0] <= PROBE_BEYOND)
            if near:
                parent[root(b)] = root(a)
    roots = [root(a) for a in range(c)]
    return [np.flatnonzero(np.array(roots) == r) for r in dict.fromkeys(roots)]


def search_modes(model: StanProgram, drawn: Draws, settings: NutsArgs,
                 seed: int | None) -> ModeSearch:
    """The fit ``drawn`` of ``model`` (NUTS with ``settings``), probed for modes its chains
    do not reach, and its chains (with those of each mode found) grouped by mode. Where the
    probe cannot start (no finite density at random inits) the fit's own chains are grouped."""
    groups = chain_groups(drawn.unconstrained)
    left = deadline.remaining()
    if drawn.budget_stop is not None or (left is not None
                                         and left < PROBE_SHARE * drawn.seconds):
        return ModeSearch(drawn, groups, budget_skipped=True)
    if drawn.n_draws < 4:
        return ModeSearch(drawn, groups)
    rng = stream_rng(seed, Stream.MODE_PROBE)
    starts = np.concatenate([_finite_inits(model, SEARCH_CHAINS, rng),
                             _finite_inits(model, WIDE_CHAINS, rng, WIDE_INIT, stratified=True)])
    if not len(starts):
        return ModeSearch(drawn, groups)
    adapted = None
    if drawn.step_size is not None and drawn.inv_metric is not None and _takes_metric(model):
        adapted = _Adapted(drawn.unconstrained[:, -1:], np.atleast_1d(drawn.step_size),
                           np.asarray(drawn.inv_metric), WARM_WINDOWS)
    # without the fit's metric to start from, the short warmup's windows adapt one (a
    # continuation's): the probe stays a fraction of the fit's cost
    nuts = settings.replace(warmup=min(settings.warmup, WARM_REFIT_WARMUP
                                       if adapted is not None else CONTINUATION_WARMUP),
                            max_treedepth=_probe_depth(drawn, settings))
    # no 150 more iterations for every chain: each chain beyond goes on alone (_settled)
    probed = probe_run(model, nuts, seed, drawn.unconstrained, adapted, starts, more=False)
    if probed is None:
        return ModeSearch(drawn, groups)
    p, n = probed
    far = _outside(drawn.unconstrained, p.unconstrained[:, -n:])
    if not far.size or p.budget_stop is not None:
        return ModeSearch(drawn, groups, seconds=float(p.seconds),
                          n_gradient_evals=int(p.n_gradient_evals),
                          budget_skipped=p.budget_stop is not None)
    # a whole run from each probe chain still beyond every draw so far: one per mode found
    joined, found, unsampled, skipped = drawn, 0, 0, []
    seconds, evals = float(p.seconds), int(p.n_gradient_evals)
    fit_lp = drawn.sampler.get("lp__")  # a place far below every draw's density holds no mass
    lowest = (float(np.min(fit_lp)) - LP_MARGIN_PER_DIM * model.dim - LP_MARGIN
              if fit_lp is not None and np.size(fit_lp) else -np.inf)
    for i, c in enumerate(far):
        chain = p.unconstrained[c:c + 1, -n:]
        if not _outside(joined.unconstrained, chain).size or any(
                not _outside(u, chain).size for u in skipped):
            continue  # in a mode sampled (or found and not sampled) from another probe chain
        if _below(p.sampler.get("lp__"), c, n, lowest):
            continue  # its density far below every draw's (still so after the probe)
        chain, cost = _settled(model, p, c, n, joined.unconstrained, nuts, lowest,
                               stream_int_seed(seed, Stream.MODE_PROBE, 6, i))
        seconds, evals = seconds + cost[0], evals + cost[1]
        if chain is None:
            continue  # on its way to the draws' mode, not in another
        found += 1
        if not _another_fits(drawn, settings, settings):
            unsampled += 1
            skipped.append(chain)
            continue
        init = init_from_unconstrained(model, chain[0, -1])
        try:
            run = sample(model, settings, seed=stream_int_seed(seed, Stream.MODE_PROBE, 5, i),
                         init=[init] * settings.chains)
        except (InitializationError, InputError, ValueError):
            unsampled += 1
            continue
        if run.budget_stop is not None:
            unsampled += 1
            continue
        if not sampled_there(run.unconstrained, run.sampler.get("divergent__")):
            found -= 1  # its whole run could not sample there either: not a mode
            continue
        joined = join_chains(joined, run, f"{model.name}: chains from random inits found "
                             f"another mode; {settings.chains} chains were sampled there")
    return ModeSearch(joined, chain_groups(joined.unconstrained), found=found,
                      unsampled=unsampled, seconds=seconds, n_gradient_evals=evals)


def _probe_depth(drawn: Draws, settings: NutsArgs) -> int:
    """The probe's largest tree depth: :data:`DEPTH_MARGIN` above the deepest tree of the fit
    (its settings' where the fit recorded none). The probe's chains from far inits build the
    deepest trees there are: on posteriordb ldaK2 and low_dim_gauss_mix_collapse, whose fits
    take 23 gradients an iteration, the probe cost three times the fit's gradients."""
    depth = drawn.sampler.get("treedepth__")
    if depth is None or not np.size(depth):
        return int(settings.max_treedepth)
    return int(min(settings.max_treedepth, int(np.max(depth)) + DEPTH_MARGIN))


def _settled(model: StanProgram, p: Draws, c: int, n: int, fit: np.ndarray, nuts: NutsArgs,
             lowest: float, seed: int) -> tuple[np.ndarray | None, tuple[float, int]]:
    """Probe chain ``c`` of ``p`` (beyond ``fit``'s draws in its last ``n``), gone on alone by
    :data:`CONFIRM_MORE` iterations with its adapted metric (its step size adapted again over
    :data:`~.continuation.WARM_REFIT_WARMUP` first): its last ``n``
    draws ``(1, n, dim)`` where it is still beyond ``fit``, None where it was on its way to
    their mode or where its log density (median) is below ``lowest``; and the cost
    ``(seconds, gradient evals)``. Where it cannot go on (no
    continuation, or the time budget ended it), its last ``n`` draws as they were."""
    here = p.unconstrained[c:c + 1, -n:]
    one = replace(chain_subset(p, np.array([c])), seconds=0.0, n_gradient_evals=0)
    try:
        # its step size adapted again first: the probe's, adapted on the way from a far init,
        # diverged in a third to half of a one-parameter mode's transitions (seed 19 of
        # benchmarks/evidence_modes_coverage.py), and the chain was dropped as diverging
        more = extend_draws(model, one, CONFIRM_MORE, nuts, seed=seed)
    except (InitializationError, InputError, ValueError):
        return here, (0.0, 0)
    cost = (float(more.seconds), int(more.n_gradient_evals))
    if more.n_draws <= one.n_draws or more.budget_stop is not None:
        return here, cost
    last = more.unconstrained[:, -n:]
    stretch = more.unconstrained[:, -CONFIRM_MORE:]
    if not sampled_there(stretch, more.sampler.get("divergent__")):
        return None, cost  # stuck, or diverging, where NUTS cannot sample: not a mode
    if _below(more.sampler.get("lp__"), 0, CONFIRM_MORE, lowest):
        return None, cost  # its density far below every draw's: no mass to speak of
    half = CONFIRM_MORE // 2
    early, late = beyond(fit, stretch[:, :half])[0], beyond(fit, stretch[:, half:])[0]
    if late < DRIFT * early:
        return None, cost  # still on its way towards the draws
    return (last if beyond(fit, last)[0] > PROBE_BEYOND else None), cost


def _below(lp: np.ndarray | None, c: int, n: int, lowest: float) -> bool:
    """Whether chain ``c``'s log density (the median of its last ``n``, of ``lp`` ``(chains,
    iterations)``) lies below ``lowest`` (:data:`LP_MARGIN` under the fit's lowest)."""
    return lp is not None and bool(np.size(lp)) and bool(np.median(lp[c, -n:]) < lowest)


def sampled_there(x: np.ndarray, divergent: np.ndarray | None = None) -> bool:
    """Whether NUTS sampled where the draws ``x`` ``(chains, n, dim)`` are: every chain moved
    (:func:`moving`) and at most :data:`DIVERGED_SHARE` of the last ``n`` transitions of
    ``divergent`` ``(chains, >= n)`` diverged. On posteriordb GLMM_Poisson, probe chains from
    wide inits moved in every iteration with every transition divergent; seven whole runs
    were sampled there, each taken for a mode."""
    if not moving(x):
        return False
    if divergent is None or not np.size(divergent):
        return True
    div = np.asarray(divergent, dtype=float)[:, -x.shape[1]:]
    return bool(np.mean(div) <= DIVERGED_SHARE)


def moving(x: np.ndarray) -> bool:
    """Whether every chain of ``x`` ``(chains, n, dim)`` moved in at least :data:`MOVE_SHARE`
    of its iterations: a chain stuck where NUTS cannot move (a wide init on
    ``latent_poisson_lower1.stan`` at tau = 33, where the fit's step size diverges at once)
    stays put in all of them."""
    if x.shape[1] < 2:
        return True
    moved = np.any(np.diff(x, axis=1) != 0, axis=2).mean(axis=1)
    return bool(np.all(moved >= MOVE_SHARE))


def _finite_inits(model: StanProgram, k: int, rng: np.random.Generator,
                  radius: float = 2.0, stratified: bool = False) -> np.ndarray:
    """Up to ``k`` random inits, uniform on (-``radius``, ``radius``) unconstrained (Stan's
    own at 2), at which the density and its gradient are finite, from at most
    :data:`INIT_TRIES` per chain (Stan's own retries; given inits are not retried:
    posteriordb GLMM_Poisson's probe failed at its first), ``(<= k, dim)``. ``stratified``:
    each round of ``k`` is a Latin hypercube, so that on every parameter each of ``k``
    equal slices of the range holds one init (:func:`_latin`)."""
    x = (np.concatenate([_latin(model.dim, k, rng) for _ in range(INIT_TRIES)])
         if stratified else random_inits(model.dim, INIT_TRIES * k, rng) / 2.0) * radius
    try:
        lp = np.asarray(model.log_density_many(x), dtype=float)
    except StanlogzError:
        return x[:0]
    kept = []
    for xi in x[np.isfinite(lp)][:2 * k]:  # a finite density whose gradient is not: Stan retries
        try:
            value, grad = model.log_density_gradient(xi)
        except (StanlogzError, ValueError, FloatingPointError):
            continue
        if np.isfinite(value) and np.all(np.isfinite(grad)):
            kept.append(xi)
        if len(kept) == k:
            break
    return np.array(kept).reshape(-1, x.shape[1])


def _latin(dim: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """``k`` points of a Latin hypercube on (-1, 1)^dim, ``(k, dim)``: on each coordinate one
    point falls in each of ``k`` equal slices. Uniform inits on (-10, 10) left a far mode's
    basin (a third of the range) without any of 8 chains in about 1 run of 33 (benchmarks:
    1 seed of 100); the slices place at least two there."""
    u = (np.argsort(rng.uniform(size=(dim, k)), axis=1).T + rng.uniform(size=(k, dim))) / k
    return 2.0 * u - 1.0


def _outside(fit: np.ndarray, probe: np.ndarray) -> np.ndarray:
    """The probe's chains (indices) whose median ends beyond the range of all the fit's
    draws by more than :data:`~.modes.PROBE_BEYOND` sds."""
    return np.array([c for c in range(probe.shape[0])
                     if beyond(fit, probe[c:c + 1])[0] > PROBE_BEYOND], dtype=int)


def chain_subset(draws: Draws, chains: np.ndarray) -> Draws:
    """The chains ``chains`` (indices) of ``draws``, with their sampler columns, step sizes
    and metrics; the cost stays the whole run's."""
    idx = np.asarray(chains, dtype=int)

    def pick(x: Any) -> Any:
        if x is None or np.ndim(x) == 0 or np.shape(x)[0] != draws.n_chains:
            return x
        return np.asarray(x)[idx]

    return replace(draws, unconstrained=draws.unconstrained[idx],
                   constrained=pick(draws.constrained),
                   sampler={k: pick(v) for k, v in draws.sampler.items()},
                   step_size=pick(draws.step_size), inv_metric=pick(draws.inv_metric),
                   warnings=list(draws.warnings))
