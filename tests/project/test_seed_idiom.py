"""One seed idiom: the package turns seeds into random streams only through the named streams of
:mod:`stanlogz._util.seeds`. A seed drawn from a generator (``int(rng.integers(2**31 - 1))``)
or a bare child index would bring back the idioms the table replaced."""

from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "stanlogz"

#: ``rng.integers(2**31 ...)`` in any spacing: an integer seed drawn from a generator
DRAWN_SEED = re.compile(r"integers\(\s*2\s*\*\*\s*31")
#: the child-by-index primitives, for the seeds module and run_parallel's task i only
BARE_CHILD = re.compile(r"\b(child_sequence|child_int_seed|spawn_generators)\(")
PRIMITIVE_USERS = {"_util/seeds.py", "parallel/__init__.py", "parallel/dask.py"}


def _sources() -> list[tuple[str, str]]:
    return [(p.relative_to(PACKAGE).as_posix(), p.read_text()) for p in PACKAGE.rglob("*.py")]


def test_the_walk_sees_the_package():
    names = {n for n, _ in _sources()}
    assert {"_util/seeds.py", "api.py", "crossval/psis_loo/loo.py"} <= names


def test_no_seed_is_drawn_from_a_generator_with_integers():
    hits = [f"{n}:{i + 1}" for n, text in _sources()
            for i, line in enumerate(text.splitlines()) if DRAWN_SEED.search(line)]
    assert not hits, f"use stanlogz._util.seeds.stream_int_seed / drawn_sequence: {hits}"


def test_bare_child_indices_stay_in_the_seeds_module_and_run_parallel():
    hits = [f"{n}:{i + 1}" for n, text in _sources() if n not in PRIMITIVE_USERS
            for i, line in enumerate(text.splitlines()) if BARE_CHILD.search(line)]
    assert not hits, f"take a named stream (stanlogz._util.seeds.stream): {hits}"


def test_the_patterns_match_what_they_forbid():
    assert DRAWN_SEED.search("seed=int(rng.integers(2**31 - 1))")
    assert DRAWN_SEED.search("int(r.integers(2 ** 31))")
    assert BARE_CHILD.search("child_int_seed(seed, 3)")
    assert not BARE_CHILD.search("stream(seed, Stream.NUTS)")
