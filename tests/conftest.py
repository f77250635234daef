"""Shared fixtures for tests that need compiled Stan programs.

``compiled(name_or_path, data=None) -> StanModel`` (session-scoped factory fixture):

* ``name_or_path`` is a program name under ``stan_models/tests/`` (``"normal"``,
  ``"transforms"``) or ``stan_models/examples/``, or a path to any ``.stan`` file.
* ``data`` is anything :class:`stanlogz.stan.model.StanModel` accepts; when None, the ``.json`` file
  next to the program (same stem) is used if there is one.
* Each program is compiled at most once per session (and normally not at all: builds live in
  the per-user cache, ``~/.cache/stanlogz`` or ``$STANLOGZ_CACHE``, so CI reuses them across
  runs). Other data for the same program reuses the library via ``with_data``.

``isolated_cache`` (function-scoped) points ``STANLOGZ_CACHE`` at a temporary directory that
shares the already-built model-independent runtime with the user cache, so cache behaviour can
be tested without paying for the runtime build again.

Test programs: ``normal`` (conjugate normal, known sigma; analytic posterior and evidence) and
``transforms`` (interval, simplex, Cholesky-corr, ODE, transformed parameter, GQ).

The ``stan`` marker: every test that builds or loads a Stan program is marked ``stan`` here
(:func:`pytest_collection_modifyitems`: tests using ``compiled`` or ``isolated_cache``, directly
or through another fixture, and tests whose code names a Stan program or a workflow that loads
one), so ``pytest -m "not stan"`` runs the pure-numerics tests alone. An unmarked test that
builds or loads a program anyway fails with a message saying so (``_no_stan_unless_marked``).

The ``slow`` marker (set on the test itself): a long simulation (many seeds, data sets,
replicates or chains). Slow tests run by default; ``pytest -m "not stan and not slow"`` is the
quick pure-numerics run.
"""

from __future__ import annotations

import inspect
import os
import re
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

# A suite started as a background job of a non-interactive shell (``cmd &``) inherits Ctrl-C
# ignored, and the tests of the time budget's backstop and of Ctrl-C (which interrupt the main
# thread) could not pass there. Ctrl-C is restored to Python's default in every test process.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

from stanlogz.stan.inputs import data_to_json
from stanlogz.stan.model import StanModel
from stanlogz.toolchain import cache_root, ensure_base, find_toolchain
from tests.helpers import FakeClock

# The suite runs on the compiled backend (tests/stan/test_backends.py compares the interpreted
# one with it): its numbers were pinned there. STANLOGZ_BACKEND=auto pytest ... overrides.
os.environ.setdefault("STANLOGZ_BACKEND", "compiled")

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "stan_models"


def resolve_program(name_or_path: str | os.PathLike[str]) -> Path:
    """Path of a test/example program given its name or a path."""
    p = Path(name_or_path)
    if p.suffix == ".stan":
        return p.resolve()
    for sub in ("tests", "examples"):
        cand = MODELS / sub / f"{name_or_path}.stan"
        if cand.is_file():
            return cand
    raise FileNotFoundError(f"no Stan program named {name_or_path!r} under {MODELS}")


@pytest.fixture(scope="session")
def compiled() -> Callable[..., StanModel]:
    """Factory: ``compiled(name_or_path, data=None, seed=1) -> StanModel`` (cached per session
    by program, data and seed; each program is compiled or loaded from the cache once)."""
    libraries: dict[Path, StanModel] = {}
    instances: dict[tuple[Path, str, int], StanModel] = {}

    def make(name_or_path: str | os.PathLike[str], data: Any = None, seed: int = 1) -> StanModel:
        path = resolve_program(name_or_path)
        if data is None and path.with_suffix(".json").is_file():
            data = path.with_suffix(".json")
        key = (path, data_to_json(data), seed)
        if key not in instances:
            if path not in libraries:
                libraries[path] = instances[key] = StanModel.from_file(path, data, seed=seed)
            else:
                first = libraries[path]
                instances[key] = StanModel(first.lib_path, data, name=first.name,
                                           code=first.code, stan_file=path, seed=seed)
        return instances[key]

    return make


@pytest.fixture
def isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh ``STANLOGZ_CACHE`` whose runtime (bridge object, PCH) links to the user cache."""
    base = ensure_base(find_toolchain())
    target = tmp_path / "cache"
    monkeypatch.setenv("STANLOGZ_CACHE", str(target))
    root = cache_root()
    (root / "base" / base.name).symlink_to(base, target_is_directory=True)
    return root


#: Source text of a test that loads a Stan program without the ``compiled`` fixture.
_USES_STAN = re.compile(
    r"\.stan\b|StanModel|\bmain\(|load_model|load_observed|from_file|from_code|"
    r"run_example\(|subprocess\.run\(|"
    r"\b(evidence|compare|loo|kfold|lfo|cv|pmmh|run_testbed|heldout_elpd|heldout_many|"
    r"sample_cmdstanpy|ensure_base|build|find_toolchain)\(|\b(PROG|PROGRAMS|MODEL|NORMAL|"
    r"OUTER|INNER|MAIN_STAN|SIM_STAN|EX|TESTS|MODELS|FIX)\b")
_STAN_FIXTURES = {"compiled", "isolated_cache"}


def _uses_stan(fn: Any) -> bool:
    try:
        return bool(fn is not None and _USES_STAN.search(inspect.getsource(fn)))
    except (OSError, TypeError):
        return False


def _needs_stan(item: pytest.Item) -> bool:
    names = set(getattr(item, "fixturenames", ()))
    if _STAN_FIXTURES & names:
        return True
    info = getattr(item, "_fixtureinfo", None)
    defs = getattr(info, "name2fixturedefs", {}) if info is not None else {}
    fixtures = [d.func for n in names - {"_no_stan_unless_marked"} for d in defs.get(n, ())]
    return _uses_stan(getattr(item, "function", None)) or any(map(_uses_stan, fixtures))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test that builds or loads a Stan program ``stan``."""
    for item in items:
        if _needs_stan(item):
            item.add_marker(pytest.mark.stan)


@pytest.fixture(autouse=True)
def _no_auto_self_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """loo's self-check off unless a test asks for it (``verify=K``): on by default it adds up
    to four refits to every loo of a small program, and the tests that pin loo's numbers would
    pin the check's too (tests/crossval/psis_loo/test_verify_*.py test it)."""
    monkeypatch.setenv("STANLOGZ_VERIFY", "0")


@pytest.fixture(autouse=True)
def _no_stan_unless_marked(request: pytest.FixtureRequest,
                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A test not marked ``stan`` may neither build nor load a Stan program."""
    if request.node.get_closest_marker("stan") is not None:
        return
    import importlib

    stan_model = importlib.import_module("stanlogz.stan.model")
    toolchain_build = importlib.import_module("stanlogz.toolchain.build")  # the name is a function

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"{request.node.nodeid} builds or loads a Stan program: mark it "
                             "stan (pytest.mark.stan) or teach conftest._USES_STAN its name")

    monkeypatch.setattr(stan_model, "_load_library", refuse)
    monkeypatch.setattr(importlib.import_module("stanlogz.stan.interpreted"), "_load_library",
                        refuse)
    monkeypatch.setattr(toolchain_build, "run_stanc", refuse)
    monkeypatch.setattr(toolchain_build, "_run", refuse)


def arviz_from_csv(files: list[str]) -> Any:
    """ArviZ's own InferenceData of CmdStan CSV files with their log_lik (the reference that
    stanlogz's readers are compared with): ``az.from_cmdstan`` on ArviZ 0.x, which 1.x dropped;
    there ``az.from_cmdstanpy`` of cmdstanpy's reader."""
    import warnings

    import arviz as az

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if hasattr(az, "from_cmdstan"):
            return az.from_cmdstan(files, log_likelihood="log_lik")
        import cmdstanpy

        return az.from_cmdstanpy(cmdstanpy.from_csv(files), log_likelihood="log_lik")


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    """An injected clock for the time budget: ``clock.t`` is the time the budget reads."""
    from stanlogz._util import deadline

    fake = FakeClock()
    monkeypatch.setattr(deadline, "clock", fake)
    return fake
