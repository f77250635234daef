"""Typed exceptions raised by stanlogz; each message is one line that names the problem."""

from __future__ import annotations


class StanlogzError(Exception):
    """Base class of every error stanlogz raises on purpose.

    ``log`` holds the full text behind the one-line message when there is more (e.g. Stan's
    own sampler log); ``stanlogz --verbose`` prints it.
    """

    def __init__(self, message: str = "", *, log: str | None = None) -> None:
        super().__init__(message)
        self.log = log


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
