"""The one way stanlogz turns a user's seed into random streams.

A seed (a non-negative int, a ``numpy.random.SeedSequence`` or ``None`` for fresh entropy) is
read as ``SeedSequence(seed)``. Every independent part of a computation takes a child of it by
index (:func:`child_sequence`: the i-th child as ``spawn`` would make it on a fresh sequence, but
without ``spawn``'s state, so asking twice gives the same child). Generators come from those
children (:func:`spawn_generators`); code that needs a plain integer seed (Stan's C++ sampler,
cmdstanpy, dynesty) takes :func:`int_seed`. So the same ``seed`` gives the same streams in
every command, whatever the number of workers.

Every consumer of a seed takes its own **named stream** (:class:`Stream`): :func:`stream` is the
child of the seed at the stream's index, and, given sub-indices (fold ``i``, round ``r``), the
child of that child by each in turn; :func:`stream_int_seed` and :func:`stream_rng` give it as a
plain integer seed or a generator. No seed feeds two consumers: a workflow that samples with
NUTS and then runs an estimator hands ``stream(seed, Stream.NUTS)`` to the one and
``stream(seed, Stream.ESTIMATOR)`` to the other. A task of :func:`stanlogz.parallel.run_parallel`
receives a generator spawned for it; its own named streams hang below the seed that generator
was made from (:func:`generator_seed`). ``seed=None`` means fresh entropy everywhere.
"""

from __future__ import annotations

from enum import IntEnum, unique

import numpy as np

from ..errors import InputError

SeedLike = int | np.random.SeedSequence | None

#: Integer seeds handed to C++ samplers are taken modulo 2**32 (Stan's seeds are 32-bit).
INT_SEED_MODULUS = 2**32


def as_seed_sequence(seed: SeedLike) -> np.random.SeedSequence:
    """``seed`` as a SeedSequence (fresh entropy when ``None``)."""
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if seed is not None and (not isinstance(seed, int | np.integer) or isinstance(seed, bool)
                             or seed < 0):
        raise InputError(f"seed must be a non-negative integer, got {seed!r}")
    return np.random.SeedSequence(None if seed is None else int(seed))


def child_sequence(seed: SeedLike, i: int) -> np.random.SeedSequence:
    """The i-th child of ``SeedSequence(seed)``, as ``spawn`` would make it on a fresh sequence.

    Built from the spawn key directly (not ``ss.spawn``), so asking twice gives the same child.
    """
    ss = as_seed_sequence(seed)
    return np.random.SeedSequence(ss.entropy, spawn_key=(*ss.spawn_key, i), pool_size=ss.pool_size)


def spawn_generators(seed: SeedLike, n: int) -> list[np.random.Generator]:
    """``n`` independent generators; the i-th depends only on ``seed`` and i."""
    ss = as_seed_sequence(seed)
    return [np.random.default_rng(child_sequence(ss, i)) for i in range(n)]


def int_seed(seed: SeedLike) -> int:
    """A 32-bit integer seed: an int itself (modulo 2**32), the first word a SeedSequence
    generates (31 bits), or fresh entropy for ``None``."""
    if seed is None or isinstance(seed, np.random.SeedSequence):
        ss = np.random.SeedSequence() if seed is None else seed
        return int(ss.generate_state(1)[0] & 0x7FFFFFFF)
    as_seed_sequence(seed)  # checks it
    return int(seed) % INT_SEED_MODULUS


def child_int_seed(seed: SeedLike, i: int) -> int | None:
    """:func:`int_seed` of the i-th child of ``seed``; ``None`` stays ``None`` (fresh entropy
    downstream)."""
    return None if seed is None else int_seed(child_sequence(seed, i))


@unique
class Stream(IntEnum):
    """The table of named streams: each consumer of a seed and the child index it takes.

    The indices are fixed (changing one changes every fixed-seed result that uses it) and
    distinct, so two consumers of one seed never share a stream. Stages of one method that are
    numbered together (``CV_*``, ``UPS_*``) keep consecutive indices.
    """

    #: Unbiased cross-validation (:mod:`stanlogz.crossval.refit.unbiased`): the validation
    #: splits, the tuning split, the path parameters, the replicates and the draws behind them.
    CV_SPLITS = 0
    CV_TUNING = 1
    CV_LAMBDAS = 2
    CV_REPLICATES = 3
    CV_SAMPLING = 4
    #: The Stan program's own RNG (generated quantities, bridgestan's ``new_rng``).
    MODEL = 10
    #: A workflow's NUTS draws of the posterior (its first fit).
    NUTS = 11
    #: The evidence estimator run on those draws (sub-index: the refinement round, or the
    #: estimator's position in the testbed).
    ESTIMATOR = 12
    #: More draws appended to existing chains (sub-index: the round).
    EXTEND = 13
    #: One program of a comparison (sub-index: its position); evidence() and loo() split it.
    PROGRAM = 14
    #: Unbiased Bayes factors between the programs of a comparison.
    UNBIASED_BF = 15
    #: The choice between programs (split into ``STACKING`` and ``PSEUDO_BMA``).
    CHOICE = 17
    #: Draws of the prior (NUTS for Savage–Dickey and prior sensitivity, a simulation program
    #: for the testbed).
    PRIOR_NUTS = 20
    #: Draws from a fitted or heavy-tailed proposal (a bridge's proposal draws, importance
    #: sampling, the prior's Cauchy proposals; sub-index: the fold).
    PROPOSAL = 21
    #: Data simulated from a simulation program.
    SIMULATE = 22
    #: Evidence routes of a nested or modified program, or of one program of a calibration
    #: (sub-index: which one).
    ROUTE = 23
    #: One simulation of a calibration (sub-index: its number).
    REPLICATE = 24
    #: Points at which a route to the prior density or a group structure is checked.
    PROBE = 25
    #: HMC step-size tuning on an annealing path.
    HMC_TUNING = 30
    #: Forward annealing runs (AIS / SMC chains; sub-index: a retry).
    TEMPERED_FWD = 31
    #: Reverse annealing runs (from posterior draws back to the base).
    TEMPERED_REV = 32
    #: The fit of a normalizing flow or another proposal (sub-index: the fold).
    FLOW_FIT = 34
    #: The per-chain or per-run generators of annealing run in parallel.
    WORKERS = 35
    #: A pilot annealing run that places the temperatures.
    ANNEAL_PILOT = 36
    #: The start points of annealing chains (base draws, or spread posterior draws).
    ANNEAL_STARTS = 37
    #: The pilot that sets how far reverse annealing's starts are spread.
    ANNEAL_SPACING = 38
    #: The tempered bridge a bridge estimate falls back to.
    TEMPERED_BRIDGE = 39
    #: Folds of K-fold cross-validation (which observation goes to which fold).
    FOLDS = 40
    #: Refits without held-out observations (sub-index: the fold, set or prefix).
    REFIT = 41
    #: NUTS draws of a training set or a held-out program.
    REFIT_NUTS = 42
    #: The bridge or UPS estimate of a refit's held-out density.
    REFIT_ESTIMATOR = 43
    #: The full data's log Z shared by the refits that fall back to the evidence difference.
    SHARED_EVIDENCE = 44
    #: The augmenting proposal of a held-out refit's bridge (and its two halves).
    AUGMENT = 45
    #: K-fold to a precision target: the continuation rounds (sub-index: the round).
    KFOLD_TARGET = 46
    #: A held-out observation whose importance-sampled value is unreliable, refit on its own
    #: (:mod:`stanlogz.crossval.refit.heldout_points`; sub-index: its position in the set).
    POINT_REFIT = 47
    #: A warm-started refit's probe from random inits, and the cold refit it may call for
    #: (:mod:`stanlogz.draws.modes`; sub-index 1: the cold refit).
    MODE_PROBE = 48
    #: Pseudo-marginal MCMC: the outer chain.
    PMMH_CHAIN = 50
    #: Pseudo-marginal MCMC: the inner proposal fitted at a point (sub-index: the fit's number).
    PMMH_FIT = 51
    #: Pseudo-marginal MCMC: the inner importance weights and the estimates made from them.
    PMMH_WEIGHTS = 52
    #: Randomized LOO-PIT values of the predictive checks.
    PIT = 60
    #: The bootstrap of the predictive checks' metrics.
    METRICS = 61
    #: The bootstrap behind stacking weights.
    STACKING = 62
    #: The Bayesian bootstrap of pseudo-BMA+ weights.
    PSEUDO_BMA = 63
    #: The BDMC sandwich that brackets the true log Z (testbed).
    SANDWICH = 70
    #: UPS: pilot runs, moment estimates, re-pilot, second moments and replicates.
    UPS_PILOT = 1000
    UPS_MOMENTS = 1001
    UPS_REPILOT = 1002
    UPS_M2 = 1003
    UPS_REPLICATES = 1004
    UPS_LAMBDAS = 1005
    #: PSIS-LOO: the subsample of observations, the held-out refits and the mixture IS run.
    LOO_SUBSAMPLE = 7901
    LOO_HELDOUT = 7902
    LOO_MIXTURE = 7903
    #: LOO's self-check: its random points (sub-index 0), its refits (1) and a repair's rounds
    #: (2, 3, ...).
    LOO_VERIFY = 7904
    #: The conditional route's brute-force self-check: its observations and draws.
    LOO_VERIFY_CONDITIONAL = 7905
    #: The k-hat band's difference estimator: its sample (0) and its refits (1).
    LOO_BAND = 7906
    #: PSIS-LOO where the chains sit in several modes (:mod:`stanlogz.crossval.psis_loo.modes`;
    #: sub-index 0, k: mode k's evidence; 1, k: mode k's LOO).
    LOO_MODES = 7907
    #: Leave-one-group-out: the draws picked for the observation-level values.
    LOGO_OBS = 7920
    #: Exact LFO under a time budget: the random order of the forecast origins.
    LFO_ORIGINS = 7930


def stream(seed: SeedLike, name: Stream, *sub: int) -> np.random.SeedSequence:
    """The named stream ``name`` of ``seed`` (then its child by each of ``sub`` in turn).

    Parameters
    ----------
    seed : int, numpy.random.SeedSequence or None
        The seed the stream belongs to (``None``: fresh entropy).
    name : Stream
        Which consumer's stream.
    *sub : int
        Sub-indices (a fold, a round, a program's position), each a further child.

    Returns
    -------
    numpy.random.SeedSequence
        The stream; asking twice gives the same one.
    """
    if not isinstance(name, Stream):
        raise TypeError(f"name must be a Stream, got {name!r}")
    ss = child_sequence(seed, int(name))
    for i in sub:
        ss = child_sequence(ss, int(i))
    return ss


def stream_int_seed(seed: SeedLike, name: Stream, *sub: int) -> int | None:
    """:func:`int_seed` of :func:`stream` (for Stan, cmdstanpy, dynesty and functions that take
    an integer seed); ``None`` stays ``None`` (fresh entropy downstream).

    Parameters
    ----------
    seed : int, numpy.random.SeedSequence or None
        The seed the stream belongs to.
    name : Stream
        Which consumer's stream.
    *sub : int
        Sub-indices, as for :func:`stream`.

    Returns
    -------
    int or None
        A 31-bit integer seed, or ``None`` when ``seed`` is ``None``.
    """
    return None if seed is None else int_seed(stream(seed, name, *sub))


def stream_rng(seed: SeedLike, name: Stream, *sub: int) -> np.random.Generator:
    """A generator on ``stream(seed, name, *sub)`` (:func:`stream`'s arguments; fresh entropy
    when ``seed`` is ``None``)."""
    return np.random.default_rng(stream(seed, name, *sub))


def drawn_sequence(rng: np.random.Generator) -> np.random.SeedSequence:
    """A new seed drawn from ``rng``: for a consumer called again and again on one generator
    (each call advances ``rng``, so each gets its own seed).

    Parameters
    ----------
    rng : numpy.random.Generator
        The generator the seed is drawn from.

    Returns
    -------
    numpy.random.SeedSequence
        A seed with 63 bits of entropy from ``rng``.
    """
    return np.random.SeedSequence(int(rng.integers(2**63)))


def generator_seed(rng: np.random.Generator) -> np.random.SeedSequence:
    """The SeedSequence ``rng`` was made from: the seed of a task of
    :func:`stanlogz.parallel.run_parallel`, below which the task takes its named streams.

    Parameters
    ----------
    rng : numpy.random.Generator
        A generator made from a seed (as :func:`spawn_generators` makes them).

    Returns
    -------
    numpy.random.SeedSequence
        Its seed sequence (the same however far ``rng`` has been drawn from).
    """
    ss = rng.bit_generator.seed_seq
    if not isinstance(ss, np.random.SeedSequence):
        raise TypeError("the generator was not made from a SeedSequence")
    return ss
