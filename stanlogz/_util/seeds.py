"""The one way stanlogz turns a user's seed into random streams.

A seed (a non-negative int, a ``numpy.random.SeedSequence`` or ``None`` for fresh entropy) is
read as ``SeedSequence(seed)``. Every independent part of a computation takes a child of it by
index (:func:`child_sequence`: the i-th child as ``spawn`` would make it on a fresh sequence, but
without ``spawn``'s state, so asking twice gives the same child). Generators come from those
children (:func:`spawn_generators`); code that needs a plain integer seed (Stan's C++ sampler,
cmdstanpy, dynesty) takes :func:`int_seed`. So the same ``--seed`` gives the same streams in
every command, whatever the number of workers.
"""

from __future__ import annotations

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
