"""What a Stan program must offer to stanlogz's workflows: the :class:`StanProgram` protocol.

:class:`~stanlogz.stan.model.StanModel` is the implementation; the protocol states the contract
(log density and gradient on the unconstrained space, constrain / unconstrain, names, data
instances, NUTS) so that workflows need no concrete class and tests can pass stand-ins.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from .settings import NutsArgs


@runtime_checkable
class StanProgram(Protocol):
    """A Stan program instantiated with data, on its unconstrained space R^dim."""

    name: str

    @property
    def dim(self) -> int:
        """Number of unconstrained parameters."""
        ...

    def log_density(self, x: np.ndarray, *, propto: bool = False,
                    jacobian: bool = True) -> float:
        """The program's log density (every constant kept unless ``propto``) at ``x``."""
        ...

    def log_density_gradient(self, x: np.ndarray, *, propto: bool = False,
                             jacobian: bool = True) -> tuple[float, np.ndarray]:
        """Log density and its gradient at ``x``."""
        ...

    def log_density_many(self, xs: np.ndarray, *, propto: bool = False,
                         jacobian: bool = True) -> np.ndarray:
        """Log density at each row of ``xs`` ``(n, dim)``."""
        ...

    def constrain(self, x: np.ndarray, *, include_tp: bool = False, include_gq: bool = False,
                  seed: int | None = None) -> np.ndarray:
        """Constrained values (``param_names`` order) at unconstrained ``x``."""
        ...

    def constrain_many(self, xs: np.ndarray, *, include_tp: bool = False,
                       include_gq: bool = False, seed: int | None = None) -> np.ndarray:
        """:meth:`constrain` at each row of ``xs``."""
        ...

    def unconstrain(self, theta: np.ndarray) -> np.ndarray:
        """Unconstrained point of constrained parameter values ``theta``."""
        ...

    def param_names(self, include_tp: bool = False, include_gq: bool = False) -> list[str]:
        """Flat names of the constrained quantities (``mu``, ``beta.1``, ...)."""
        ...

    def param_unc_names(self) -> list[str]:
        """Flat names of the unconstrained coordinates."""
        ...

    def param_num(self, include_tp: bool = False, include_gq: bool = False) -> int:
        """Number of constrained quantities."""
        ...

    def with_data(self, data: Any) -> StanProgram:
        """The same program instantiated with other ``data`` (a dict or JSON path)."""
        ...

    def nuts(self, settings: NutsArgs | None = None, *, seed: int | None = None,
             init: None | Mapping[str, Any] | Sequence[Mapping[str, Any]] = None,
             save_warmup: bool = False, progress: Any = None,
             **overrides: Any) -> Any:
        """Stan's NUTS on this program with ``settings``: a
        :class:`~stanlogz.stan.nuts.NutsOutput` (not imported here: nuts imports this module)."""
        ...


#: What the API functions take as a program: an instantiated program or a ``.stan`` path.
ProgramLike = StanProgram | str | os.PathLike[str]


def with_field(model: StanProgram, data: Mapping[str, Any], field: str, value: Any
               ) -> StanProgram:
    """``model`` (bound to ``data``) with the variable ``field`` set to ``value``: through
    the model's ``with_field`` where it has one (the other variables' JSON text, the model's
    own, reused), else ``with_data`` on ``data``."""
    moved = getattr(model, "with_field", None)
    if moved is not None:
        return moved(field, value)
    return model.with_data({**dict(data), field: value})


def with_every_constant(model: StanProgram) -> tuple[StanProgram, bool]:
    """The program whose log density at ``propto`` (the flag returned) is ``model``'s with
    every constant (``propto=False``), for callers that build many data instances of it (the
    conditional log-likelihood's nodes): on the interpreter the constants-kept program itself,
    called with ``propto=True``, so that an instance is one construction instead of two (the
    program's, then its constants-kept one at its first call); else ``model`` and False."""
    kept = getattr(model, "with_every_constant", None)
    return kept() if kept is not None else (model, False)

