"""Typed exceptions raised by stanlogz; each message is one line that names the problem.

A refusal or a piece of advice names the way forward as a typed :class:`Route` (a command and
its options by their API keyword names), not as command-line text: the route renders as flags
on the command line (``--fix exact``) and as Python keywords in the API (``fix='exact'``),
whichever voice is in force (:func:`speaking`); an error keeps its routes in ``routes``.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

#: The sampler settings: a Python caller gives them in ``settings=NutsArgs(...)``.
_SAMPLER = ("chains", "warmup", "draws", "adapt_delta", "max_treedepth", "init_radius", "thin")
#: Keywords whose command-line flag is not the keyword with ``-`` for ``_``.
_FLAGS = {"with_loo": "loo", "use_evidence": "evidence", "mcse_target": "mcse"}
#: Keywords that are a context manager in Python, not an argument.
_CONTEXT = ("time_budget",)
#: The voice routes speak in: "api" (Python keywords) or "cli" (flags); process-wide, so the
#: threads of a run share it (the command line sets it for the whole command). A unit of work
#: run elsewhere (a Dask worker's thread) speaks in its run's voice: ``_HERE`` (this thread).
_VOICE = {"voice": "api"}
_HERE = threading.local()
_lock = threading.Lock()


def voice() -> str:
    """The voice routes render in now: ``"cli"`` or ``"api"``."""
    return getattr(_HERE, "voice", None) or _VOICE["voice"]


@contextlib.contextmanager
def speaking_here(name: str | None) -> Iterator[None]:
    """In this thread only, routes render in the voice ``name`` (a unit of work on a worker,
    in its run's voice); None keeps the voice in force."""
    saved = getattr(_HERE, "voice", None)
    _HERE.voice = name or saved
    try:
        yield
    finally:
        _HERE.voice = saved


@contextlib.contextmanager
def speaking(name: str) -> Iterator[None]:
    """Inside the block routes render as command-line flags (``"cli"``) or as Python keywords
    (``"api"``); the previous voice is restored on exit."""
    if name not in ("cli", "api"):
        raise ValueError(f"voice must be 'cli' or 'api', got {name!r}")
    with _lock:
        saved, _VOICE["voice"] = _VOICE["voice"], name
    try:
        yield
    finally:
        _VOICE["voice"] = saved


@dataclass(frozen=True)
class Route:
    """A way forward that a refusal or a piece of advice names: a stanlogz command (``""``: the
    same command again) with options by their API keyword names.

    A route with neither command nor options is a change to the program, said in ``note``
    (``Route(note="a log_lik generated quantity")``). An option's value ``...`` names the
    option alone (``raise adapt_delta``); True is a switch. ``cli_values`` gives the
    command-line text of a value that differs from the Python one (``k=None`` is ``--k
    groups``); ``note`` is prose said after the route in either voice (``"(about 3 min
    here)"``); ``api_text`` replaces the Python rendering where the command line's option has
    no keyword (the verbose switch: the error's ``log``). ``str(route)`` renders in the voice
    in force.

    Examples
    --------
    >>> r = Route("kfold", {"k": 10})
    >>> r.cli(), r.api()
    ('stanlogz kfold --k 10', 'stanlogz.kfold(..., k=10)')
    """

    command: str = ""
    options: Mapping[str, Any] = field(default_factory=dict)
    cli_values: Mapping[str, str] = field(default_factory=dict)
    note: str = ""
    api_text: str = ""

    def argv(self) -> list[str]:
        """The command-line words: the command (when named) and each option's flag and value."""
        out = [self.command] if self.command else []
        for key, value in self.options.items():
            out.append("--" + _FLAGS.get(key, key.replace("_", "-")))
            if key in self.cli_values:
                out.append(str(self.cli_values[key]))
            elif isinstance(value, (list, tuple)):
                out.extend(str(v) for v in value)
            elif value is not ... and value is not True:
                out.append(f"{value:g}" if isinstance(value, float) else str(value))
        return out

    def cli(self) -> str:
        """The route as a shell user types it (``stanlogz kfold --k 10`` or ``--fix exact``)."""
        words = self.argv()
        return " ".join(["stanlogz"] + words if self.command else words)

    def api(self) -> str:
        """The route as a Python caller writes it (``stanlogz.kfold(..., k=10)`` or
        ``fix='exact'``; sampler settings inside ``settings=NutsArgs(...)``)."""
        if self.api_text:
            return self.api_text

        def kw(key: str, value: Any) -> str:
            if value is ...:  # the argument alone: its name (a setting: where it goes)
                return f"{key}=..." if key in _SAMPLER else key
            return f"{key}={value!r}"

        plain = [kw(k, v) for k, v in self.options.items()
                 if k not in _SAMPLER and k not in _CONTEXT]
        nuts = [kw(k, v) for k, v in self.options.items() if k in _SAMPLER]
        if nuts:
            plain.append(f"settings=NutsArgs({', '.join(nuts)})")
        text = ", ".join(plain)
        if self.command:
            text = f"stanlogz.{self.command.replace('-', '_')}(...{', ' + text if text else ''})"
        context = [f"stanlogz.time_budget({self.options[k]!r})"
                   if self.options[k] is not ... else "stanlogz.time_budget"
                   for k in _CONTEXT if k in self.options]
        return " under ".join(([text] if text else []) + context)

    def followable(self) -> bool:
        """Whether the route is a command line that can be run as it stands (a command or
        options, each with its value)."""
        return bool(self.command or self.options) and all(
            v is not ... for v in self.options.values())

    def to_dict(self) -> dict[str, Any]:
        """The route as JSON: command, options (API keywords; an option named alone is
        null), argv, both renderings, the note and whether it can be run as it stands."""
        return {"command": self.command,
                "options": {k: None if v is ... else v for k, v in self.options.items()},
                "argv": self.argv(), "cli": self.cli(), "api": self.api(), "note": self.note,
                "followable": self.followable()}

    def __str__(self) -> str:
        if not (self.command or self.options):
            return self.note
        text = self.cli() if voice() == "cli" else self.api()
        text = f"`{text}`" if self.command else text  # a whole command is quoted as code
        return f"{text} {self.note}" if self.note else text


def option(name: str, cli: str | None = None) -> Route:
    """The argument ``name`` alone, as a message names it (``--obs-fields`` on the command
    line, ``obs_fields`` in Python); ``cli`` is a placeholder value said after the flag."""
    return Route(options={name: ...}, cli_values={name: cli} if cli else {})


class StanlogzError(Exception):
    """Base class of every error stanlogz raises on purpose.

    ``log`` holds the full text behind the one-line message when there is more (e.g. Stan's
    own sampler log); the command line's verbose switch prints it. ``routes`` holds the
    :class:`Route` objects the message names, first the one to try first.
    """

    def __init__(self, message: str = "", *, log: str | None = None,
                 routes: Route | tuple[Route, ...] = ()) -> None:
        super().__init__(message)
        self.log = log
        self.routes: tuple[Route, ...] = (routes,) if isinstance(routes, Route) else tuple(routes)


class ToolchainError(StanlogzError):
    """The Stan toolchain (stanc, headers, C++ compiler) is missing or unusable."""


class StanCompileError(StanlogzError):
    """stanc rejected the Stan program (syntax or semantic error) or the C++ build failed."""


class DataError(StanlogzError):
    """Data for a Stan program is missing, unreadable or mis-shaped."""


class InitializationError(StanlogzError):
    """No initial point with a finite log density and gradient was found."""


class InputError(StanlogzError):
    """An argument given to the API or the CLI is invalid."""


class EstimationError(StanlogzError):
    """An estimator could not produce a result (e.g. its fixed point failed)."""


class ArgumentTypeError(InputError, TypeError):
    """A public function got an argument of the wrong type (a number where a program path is
    expected, a string for a list of programs, ...); the message names the argument. Also a
    :class:`TypeError`, so code catching Python's own error for this keeps working."""


# The refusals of particular steps: subclasses of InputError that the step which can say more
# (a route, the observations done so far) catches by type.


class LostDraws(StanlogzError):
    """The interpreter's sampler returned draws without their parameter values (stanli writes
    none where the generated quantities fail their checks, where Stan writes the parameters and
    NaN for the quantities): :meth:`~stanlogz.stan.interpreted.InterpretedModel.nuts` turns to
    the compiled sampler under ``auto``."""


class SkipObsValues(Exception):  # noqa: N818 - a signal to logo(), not an error
    """Leave-one-group-out's observation-level values would not fit in the run's time
    budget left (:class:`~stanlogz.crossval.logo.budget.ObsWatch`; caught by ``logo``, whose
    result then says so in a warning, never shown as an error)."""


class ThinForBudget(Exception):  # noqa: N818 - a signal to loo, not an error
    """An anytime pointwise pass stopped to be run again on ``draws`` of the posterior draws
    (thinned evenly per chain): on all of them it would not fit in the run's time budget
    (:func:`~stanlogz.crossval.psis_loo.anytime.anytime_pass`; caught by ``loo``, never
    shown)."""

    def __init__(self, draws: int, every: bool = True) -> None:
        super().__init__(f"the pass fits the time budget on {draws} draws")
        #: whether every observation fits on them (else: enough for an anytime estimate)
        self.draws, self.every = draws, every


class OverBudget(InputError):
    """A step would end after the run's time budget, so it stopped early (the message says
    how far it got and what fits in the budget)."""


class BudgetSpent(OverBudget):
    """The run's time budget ran out inside a step that cannot say more (a pass's single
    observation): the step that can, catches it and says what fits."""


class PassBudget(InputError):
    """The conditional pass spent its time budget before the last observation."""


class SplitError(InputError):
    """Deleting the held-out observations does not give the program's held-out model."""


class NoConditional(InputError):
    """The program's density cannot be normalized over the held-out data value (it refuses
    other values, is not integrable over them, or the quadrature does not converge)."""

    #: the observed values have several entries per observation (a row each): the routes name
    #: K-fold over whole observations first
    several_values: bool = False


class NotGaussian(InputError):
    """The program's density is not quadratic in the held-out data value (or is not integrable
    over it), so the closed-form normalization does not apply."""

    #: the observed values have several entries per observation (a row each): the routes name
    #: K-fold over whole observations first
    several_values: bool = False


class AmbiguousResponse(InputError):
    """Several observation arrays could hold the observed values; ``example`` is the one the
    refusal suggests (an array the model block samples)."""

    def __init__(self, message: str, fields: tuple[str, ...] = (), example: str = "",
                 routes: Route | tuple[Route, ...] = ()) -> None:
        super().__init__(message, routes=routes)
        self.fields, self.example = fields, example


class BackendUnsupported(InputError):
    """The chosen density backend cannot do what was asked (the interpreter offers no
    ``jacobian=False``, say): the message names the missing capability and the backend that
    has it."""
