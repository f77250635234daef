"""The ``stanlogz`` command line: one sub-command per module in :mod:`stanlogz.commands`.

Each command module defines ``NAME``, ``HELP``, ``add_arguments(parser)`` and
``run(args, report) -> int``. Errors that stanlogz raises on purpose (:class:`StanlogzError`)
and usage errors (a mistyped flag or choice gets a "did you mean") print one line to stderr
(with ``--json`` also one JSON error object on stdout) and exit with status 2; any other
exception is a bug and prints one line ``stanlogz: internal error: ...`` (exit status 1), with
the traceback under ``--verbose``.
A stdout closed by its reader (``stanlogz loo ... | head -1``) ends the run quietly with exit
status 141, as a Unix tool killed by SIGPIPE.
"""

from __future__ import annotations

import _thread
import argparse
import atexit
import contextlib
import difflib
import importlib
import json
import os
import signal
import sys
import threading
import traceback
from collections.abc import Iterable, Iterator, Sequence
from typing import NoReturn

from ._util import deadline
from ._util.deadline import time_budget
from ._util.progress import duration
from .errors import InputError, Route, StanlogzError, speaking

COMMANDS = ["compile", "sample", "evidence", "compare", "loo", "kfold", "lfo", "cv", "bdmc",
            "pmmh", "sensitivity", "savage_dickey", "calibrate", "waic", "cache"]


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr (exit status 2), with a
    "did you mean" for a mistyped flag, sub-command or choice. The :class:`SystemExit` it raises
    carries the line as ``usage_error`` (the JSON error object of ``--json`` repeats it)."""

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None
                         ) -> tuple[argparse.Namespace, list[str]]:
        self._argv = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def _check_value(self, action: argparse.Action, value: object) -> None:
        if action.choices is not None and value not in action.choices:
            choices = ", ".join(map(str, action.choices))
            raise argparse.ArgumentError(action, f"invalid choice: {str(value)!r} (choose from "
                                         f"{choices}){did_you_mean(str(value), action.choices)}")

    def error(self, message: str) -> NoReturn:
        if "; did you mean" not in message:
            message += self._unknown_hint()
        line = f"{message} (see {self.prog} --help)"
        self._print_message(f"{self.prog}: error: {line}\n", sys.stderr)
        exc = SystemExit(2)
        exc.usage_error = line  # type: ignore[attr-defined]
        raise exc

    def _unknown_hint(self) -> str:
        """"did you mean" for the first flag on the command line that no parser knows, over the
        options of this parser and of the sub-command given (an unknown flag before the
        sub-command makes argparse take its value for the command)."""
        options = {o for a in self._actions for o in a.option_strings}
        argv = getattr(self, "_argv", [])
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                given = next((a for a in argv if a in action.choices), None)
                if given is not None:
                    options |= {o for a in action.choices[given]._actions
                                for o in a.option_strings}
        for word in argv:
            flag = word.split("=", 1)[0]
            if not flag.startswith("--") or any(o.startswith(flag) for o in options):
                continue  # a value, a known flag or an abbreviation argparse accepts
            hint = did_you_mean(flag, sorted(options))
            if hint:
                return hint
        return ""


def did_you_mean(word: str, candidates: Iterable[object]) -> str:
    """``"; did you mean X?"`` for the closest of ``candidates`` to a mistyped ``word``
    (:func:`difflib.get_close_matches`), or ``""`` when none is close."""
    close = difflib.get_close_matches(word, [str(c) for c in candidates], n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else ""


def _wants_json(argv: Sequence[str]) -> bool:
    """Whether a command line asks for ``--json`` (read from the words when the parser
    refused it; argparse takes a prefix such as ``--js`` too)."""
    for word in argv:
        if word == "--":
            return False
        if len(word) >= 4 and "--json".startswith(word):
            return True
    return False


#: Seconds after a spent --time-budget before its watchdog interrupts a step that checks none.
WATCHDOG_GRACE_S = 15.0

TIME_BUDGET_HELP = ("the longest the command may run (600, 10m, 1.5h): a sampler or "
                    "pointwise pass that would end later stops early with a line naming what "
                    "fits (fewer iterations, a subsample) (default: no limit)")


def _duration(text: str) -> float:
    """``--time-budget``'s value in seconds (argparse's one-line error otherwise)."""
    from ._util.deadline import parse_duration

    try:
        return parse_duration(text)
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every sub-command."""
    parser = _Parser(
        prog="stanlogz",
        description="Log evidence, Bayes factors and cross-validation for Stan programs.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {installed_version()}",
                        help="print the installed version and exit")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: random)")
    parser.add_argument("--quiet", action="store_true", help="no progress messages on stderr")
    parser.add_argument("--verbose", action="store_true",
                        help="on an error, also print the full log behind it (e.g. Stan's)")
    parser.add_argument("--time-budget", metavar="DURATION", type=_duration, default=None,
                        help=TIME_BUDGET_HELP)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        mod = importlib.import_module(f"stanlogz.commands.{name}")
        p = sub.add_parser(mod.NAME, help=mod.HELP, description=mod.HELP)
        # Global flags are accepted after the sub-command too.
        p.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                       help="print one JSON object on stdout")
        p.add_argument("--seed", type=int, default=argparse.SUPPRESS, help="random seed")
        p.add_argument("--quiet", action="store_true", default=argparse.SUPPRESS,
                       help="no progress messages on stderr")
        p.add_argument("--verbose", action="store_true", default=argparse.SUPPRESS,
                       help="on an error, also print the full log behind it")
        p.add_argument("--time-budget", metavar="DURATION", type=_duration,
                       default=argparse.SUPPRESS, help=TIME_BUDGET_HELP)
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


#: Options that name a file the command writes: checked before any computation.
OUTPUT_OPTIONS = {"plot": "--plot", "output": "--output", "pit_plot": "--pit-plot"}


def check_output_paths(args: argparse.Namespace) -> None:
    """Refuse an output file that cannot be written before anything is built or sampled (a
    result computed for minutes must not be lost to a typo in ``--plot``)."""
    import os
    import tempfile
    from pathlib import Path

    for dest, flag in OUTPUT_OPTIONS.items():
        value = getattr(args, dest, None)
        if not isinstance(value, str):
            continue
        p = Path(value)
        if p.is_dir():
            raise InputError(f"{flag} {p} is a folder; give a file name")
        folder = p.parent
        if not folder.is_dir():
            raise InputError(f"{flag} {p}: the folder {folder} does not exist")
        try:
            fd, probe = tempfile.mkstemp(dir=folder, prefix=".stanlogz-write-check-")
            os.close(fd)
            os.unlink(probe)
        except OSError as exc:
            raise InputError(f"{flag} {p} cannot be written: {exc.strerror or exc} "
                                f"(folder {folder})") from None


def installed_version() -> str:
    """The installed distribution's version (the package's own when not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("stanlogz")
    except PackageNotFoundError:
        from . import __version__

        return __version__


def _json_error(args: argparse.Namespace, kind: str, message: str,
                routes: Sequence[Route] = ()) -> None:
    """With ``--json``, a failure is one JSON object on stdout too, so a script gets a value;
    a refusal's routes (:class:`~stanlogz.errors.Route`) are its list ``routes``."""
    if getattr(args, "json", False):
        routes = [r.to_dict() for r in routes]
        print(json.dumps({"error": message, "kind": kind, "exit_status": 2 if kind == "error"
                          else 1 if kind == "internal error" else 130, "routes": routes},
                         default=str))


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``stanlogz`` command: its exit status. Called without ``argv`` (the
    console script, ``python -m stanlogz``: the arguments are ``sys.argv``), it ends the
    process with that status once its exit handlers have run, and its ``--time-budget``
    counts from the process's start; called with ``argv`` (a program running a command in
    its own process), it returns."""
    # Importing every command takes seconds on a loaded machine; a Ctrl-C meanwhile would break
    # an extension module's import (an ImportError, not a KeyboardInterrupt), so it is held
    # until the imports are done. During the run Ctrl-C raises KeyboardInterrupt whatever
    # handler an imported library may have installed; the caller's handler is restored at the
    # end.
    held: list[int] = []
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
    try:
        status = _main(argv, held, restore_default=previous is not None)
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    if argv is None or (deadline.expired() and any(
            t.is_alive() and not t.daemon and t is not threading.main_thread()
            for t in threading.enumerate())):
        # The command's process ends here, its exit handlers run: the answer, or the refusal,
        # is written. The interpreter's own teardown of the modules took 0.6 s after every
        # command (part of what a --time-budget ran past); and where the budget's backstop
        # ended the run while units ran on threads, which cannot be stopped, the interpreter
        # would wait for them (minutes).
        with contextlib.suppress(OSError):  # a reader that closed the pipe
            sys.stdout.flush()
        with contextlib.suppress(OSError):
            sys.stderr.flush()
        atexit._run_exitfuncs()  # CPython's: what interpreter exit runs first (3.11-3.13)
        os._exit(status)
    return status


def _main(argv: Sequence[str] | None, held: list[int], *, restore_default: bool) -> int:
    try:
        from .report.output import Reporter

        parser = build_parser()
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, or a usage error already printed on one line
        usage = getattr(exc, "usage_error", None)
        if usage is not None and _wants_json(sys.argv[1:] if argv is None else argv):
            _json_error(argparse.Namespace(json=True), "error", usage)
        return int(exc.code or 0) if not isinstance(exc.code, str) else 2
    if restore_default:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        if held:
            raise KeyboardInterrupt
        check_output_paths(args)
        report = Reporter(json_mode=args.json, quiet=args.quiet)
        # the budget counts from the process's start (a user times the whole command)
        started = deadline.process_age() if argv is None else 0.0
        with speaking("cli"), time_budget(args.time_budget, spent_before=started), \
                deadline.watchdog(WATCHDOG_GRACE_S), interrupts_not_swallowed():
            status = int(args._run(args, report) or 0)
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        return status
    except BrokenPipeError:  # stdout closed by the reader (``| head``): stop quietly
        _detach_stdout()
        return 141  # 128 + SIGPIPE, what a Unix tool killed by the closed pipe returns
    except StanlogzError as exc:
        print(f"stanlogz: error: {exc}", file=sys.stderr)
        _json_error(args, "error", str(exc), exc.routes)
        if args.verbose and exc.log:
            print(exc.log, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        if deadline.expired():  # the watchdog of --time-budget, not the user
            total = args.time_budget or 0.0
            # the step ran past the budget and the grace and did not end: twice that
            route = deadline.as_option(2 * (total + WATCHDOG_GRACE_S))
            message = (f"the time budget of {duration(total)} ran out in a step "
                       f"that does not check it; run with {route.cli()}")
            print(f"stanlogz: error: {message}", file=sys.stderr)
            _json_error(args, "error", message, (route,))
            return 2
        print("stanlogz: interrupted", file=sys.stderr)
        _json_error(args, "interrupted", "interrupted")
        return 130
    except Exception as exc:  # a bug, not a bad input: one line, the traceback on request
        if args.verbose:
            traceback.print_exc(file=sys.stderr)
        print(f"stanlogz: internal error: {internal_error_text(exc)} (rerun with --verbose "
              "for the traceback)", file=sys.stderr)
        _json_error(args, "internal error", internal_error_text(exc))
        return 1


INTERRUPT_AGAIN_S = 0.2  # a swallowed Ctrl-C is raised again this much later


@contextlib.contextmanager
def interrupts_not_swallowed() -> Iterator[None]:
    """Within it, a Ctrl-C that lands where Python cannot raise it (a garbage-collector
    callback, a ``__del__``: Dask's GC diagnosis runs in every process of a cluster) is not
    lost. Python reports such an exception as "unraisable": it prints "Exception ignored in"
    with a traceback and carries on, so the run went on to its end with that text on stderr.
    Here the interrupt is delivered to the main thread again, where it ends the run with the one
    line ``stanlogz: interrupted``; what such callbacks report after it (a library's state left
    half-updated by the interrupt) is not printed, as the run is ending."""
    previous = sys.unraisablehook
    interrupted: list[bool] = []

    def hook(unraisable: object) -> None:
        exc_type = getattr(unraisable, "exc_type", None)
        if isinstance(exc_type, type) and issubclass(exc_type, KeyboardInterrupt):
            interrupted.append(True)
            # raised again in the main thread once this hook has returned: called from here, the
            # interrupt would be raised inside the hook and be unraisable once more. Should it
            # land in such a callback again, this hook runs again.
            timer = threading.Timer(INTERRUPT_AGAIN_S, _thread.interrupt_main)
            timer.daemon = True
            timer.start()
        elif not interrupted:
            previous(unraisable)  # type: ignore[arg-type]

    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = previous


def _detach_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail again on the
    closed pipe (Python's documented recipe for SIGPIPE)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no real file descriptor (captured stdout)
        pass


def internal_error_text(exc: BaseException) -> str:
    """``Type: message`` of an unexpected exception on one line (at most 300 characters)."""
    text = " ".join(str(exc).split())
    text = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


if __name__ == "__main__":
    sys.exit(main())
