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


# The refusals of particular steps: subclasses of InputError that the step which can say more
# (a route, the observations done so far) catches by type.


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

    def __init__(self, message: str, fields: tuple[str, ...] = (), example: str = "") -> None:
        super().__init__(message)
        self.fields, self.example = fields, example


class BackendUnsupported(InputError):
    """The chosen density backend cannot do what was asked (the interpreter offers no
    ``jacobian=False``, say): the message names the missing capability and the backend that
    has it."""
