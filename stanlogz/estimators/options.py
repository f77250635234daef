"""One frozen, validated options class per evidence estimator (``**options``).

Each class lists exactly the options its estimator takes, with the estimator's defaults;
constructing one checks every value's type and range and raises a one-line
:class:`~stanlogz.errors.InputError` that names the method. ``seed`` is not an option: it is an
argument of :func:`stanlogz.evidence` itself (the command line's seed).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Self

import numpy as np

from ..errors import InputError
from ..mcmc.unbiased import DEFAULT_MAX_ITER
from ..parallel.local import BACKENDS

# ---------------------------------------------------------------------- the base class


@dataclasses.dataclass(frozen=True)
class MethodOptions:
    """Options of one estimator; subclasses are frozen dataclasses with a ``method`` name."""

    method: ClassVar[str] = ""
    #: The options that must be None or > 0 (checked with the types).
    positive_options: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def names(cls) -> list[str]:
        """The option names, in order."""
        return [f.name for f in dataclasses.fields(cls)]

    @classmethod
    def parse(cls, values: Mapping[str, Any]) -> Self:
        """Options from a mapping of names to values (unknown names: one-line InputError)."""
        cls._known(values)
        return cls(**values)

    @classmethod
    def _known(cls, values: Mapping[str, Any]) -> None:
        bad = [k for k in values if k not in cls.names()]
        if bad:
            raise InputError(f"method {cls.method} has no option {bad[0]!r}; it takes: "
                             f"{', '.join(cls.names()) or 'none'}")

    def __post_init__(self) -> None:
        hints = typing.get_type_hints(type(self))
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if not _has_type(value, hints[f.name]):
                raise InputError(f"option {f.name} of method {self.method} must be "
                                 f"{_type_name(hints[f.name])}, got {value!r}")
        self.positive(*self.positive_options)
        self.check()

    def check(self) -> None:
        """Range and choice checks beyond the types (none by default)."""

    def require(self, name: str, ok: bool, what: str) -> None:
        """InputError ``option NAME of method M must be WHAT, got VALUE`` unless ``ok``."""
        if not ok:
            raise InputError(f"option {name} of method {self.method} must be {what}, got "
                             f"{getattr(self, name)!r}")

    def positive(self, *names: str) -> None:
        """Each named option is None or > 0."""
        for n in names:
            v = getattr(self, n)
            self.require(n, v is None or v > 0, "positive")

    def choice(self, name: str, allowed: Sequence[str]) -> None:
        """The named option is one of ``allowed``."""
        self.require(name, getattr(self, name) in allowed,
                     "one of " + ", ".join(repr(a) for a in allowed))

    def updated(self, values: Mapping[str, Any]) -> Self:
        """A copy with ``values`` replacing single options (validated; unknown names: one-line
        InputError)."""
        self._known(values)
        return dataclasses.replace(self, **values)

    def kwargs(self) -> dict[str, Any]:
        """The options as keyword arguments of the estimator function."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


def _types(hint: Any) -> tuple[Any, ...]:
    """The classes a value of type ``hint`` may be: ``int | None`` -> (int, NoneType); a float
    also takes an int; generics reduce to their origin (``dict[str, Any]`` -> dict)."""
    args = typing.get_args(hint) if isinstance(hint, types.UnionType) or \
        typing.get_origin(hint) is typing.Union else (hint,)
    out = tuple(typing.get_origin(a) or a for a in args)
    return out + (int,) if float in out else out


def _has_type(value: Any, hint: Any) -> bool:
    allowed = _types(hint)
    if isinstance(value, np.integer):
        value = int(value)
    elif isinstance(value, np.floating):
        value = float(value)
    ok = isinstance(value, allowed)
    return ok and (bool in allowed or not isinstance(value, bool))


def _type_name(hint: Any) -> str:
    return " or ".join("None" if t is type(None) else getattr(t, "__name__", str(t))
                       for t in _types(hint))


# ---------------------------------------------------------------------- flows and bridges


@dataclasses.dataclass(frozen=True)
class GbsOptions(MethodOptions):
    """Gaussianized bridge sampling (:func:`stanlogz.estimators.bridge.bridge.gbs`)."""

    method: ClassVar[str] = "gbs"
    n_layers: int | None = None
    f_err: float = 0.1
    f_eva: float = 0.1
    n_q: int | None = None
    max_n_q_factor: float = 20.0
    flow_options: dict | None = None
    validate: bool = True
    swap_halves: bool = True
    tempered: str = "auto"
    folds: int = 2
    proposal: str = "auto"

    positive_options = ("n_layers", "f_err", "f_eva", "n_q", "max_n_q_factor")

    def check(self) -> None:
        self.choice("tempered", ("auto", "always", "never"))
        self.choice("proposal", ("auto", "dense", "structured"))
        if self.folds != 2 and self.folds < 3:
            raise InputError(f"option folds of method gbs must be 2 (two orientations) or at "
                             f"least 3 (cross-fitting), got {self.folds}")


@dataclasses.dataclass(frozen=True)
class GisOptions(MethodOptions):
    """Gaussianized importance sampling (:func:`stanlogz.estimators.bridge.baselines.gis`)."""

    method: ClassVar[str] = "gis"
    n_layers: int | None = None
    n_q: int | None = None
    flow_options: dict | None = None
    positive_options = ("n_layers", "n_q")


@dataclasses.dataclass(frozen=True)
class GhmOptions(MethodOptions):
    """Gaussianized harmonic mean (:func:`stanlogz.estimators.bridge.baselines.ghm`)."""

    method: ClassVar[str] = "ghm"
    n_layers: int | None = None
    flow_options: dict | None = None
    positive_options = ("n_layers",)


@dataclasses.dataclass(frozen=True)
class BridgeGaussianOptions(MethodOptions):
    """Bridge sampling with a Gaussian proposal (``bridge_gaussian``)."""

    method: ClassVar[str] = "bridge-gaussian"
    n_q: int | None = None
    positive_options = ("n_q",)


@dataclasses.dataclass(frozen=True)
class BridgeWarp3Options(BridgeGaussianOptions):
    """Warp-III bridge sampling (``bridge_warp3``)."""

    method: ClassVar[str] = "bridge-warp3"


@dataclasses.dataclass(frozen=True)
class LaplaceOptions(MethodOptions):
    """The Laplace approximation at the mode (no options)."""

    method: ClassVar[str] = "laplace"


# ---------------------------------------------------------------------- annealing


@dataclasses.dataclass(frozen=True)
class AnnealOptions(MethodOptions):
    """Options of one annealing run between a base and a target, forward
    (:func:`~.ais.ais`) or reverse (:func:`~.ais.reverse_ais`), with their defaults; the seed,
    the HMC tuning and the base's draws and log Z are arguments of those functions."""

    method: ClassVar[str] = "ais"
    n_chains: int = 16
    n_temps: int = 1000
    schedule: str | Sequence | np.ndarray = "adaptive"
    n_workers: int | None = None
    hmc_steps: int = 10
    transitions_per_temp: int = 1
    jitter: float = 0.1
    backend: str = "auto"

    positive_options = ("n_chains", "n_temps", "n_workers", "hmc_steps", "transitions_per_temp")

    def check(self) -> None:
        self.require("jitter", 0.0 <= self.jitter < 1.0, "in [0, 1)")
        self.choice("backend", BACKENDS)


@dataclasses.dataclass(frozen=True)
class AisOptions(AnnealOptions):
    """Annealed importance sampling from a Gaussian fitted to the draws
    (:func:`stanlogz.estimators.annealing.ais.ais_estimate`; the :class:`AnnealOptions` plus
    ``inflate``, the covariance factor of the Gaussian)."""

    inflate: float = 1.5
    positive_options = (*AnnealOptions.positive_options, "inflate")


@dataclasses.dataclass(frozen=True)
class RaisOptions(AisOptions):
    """Reverse AIS from the draws (:func:`stanlogz.estimators.annealing.ais.rais_estimate`)."""

    method: ClassVar[str] = "rais"
    spread_starts: int = 10

    def check(self) -> None:
        super().check()
        self.require("spread_starts", self.spread_starts >= 0, ">= 0")


@dataclasses.dataclass(frozen=True)
class SmcOptions(MethodOptions):
    """Adaptive-tempering SMC from a Gaussian fitted to the draws
    (:func:`stanlogz.estimators.annealing.smc.smc_estimate`)."""

    method: ClassVar[str] = "smc"
    inflate: float = 1.5
    n_particles: int = 64
    max_particles: int | None = None
    n_runs: int = 16
    #: particles of the pilot run (None: max(n_particles, 128))
    pilot_particles: int | None = None
    ess_fraction: float = 0.5
    hmc_steps: int = 10
    n_moves: int = 2
    max_rounds: int = 8
    #: also run back from the posterior draws, to check the forward runs (doubles the cost)
    reverse: bool = True
    n_workers: int | None = None
    backend: str = "auto"
    positive_options = ("inflate", "n_particles", "max_particles", "n_runs", "hmc_steps",
                        "n_moves", "max_rounds", "n_workers", "pilot_particles")

    def check(self) -> None:
        self.require("ess_fraction", 0.0 < self.ess_fraction < 1.0, "in (0, 1)")
        self.choice("backend", BACKENDS)


@dataclasses.dataclass(frozen=True)
class UpsPathOptions(MethodOptions):
    """Options of one unbiased path sampling run along a given path (:func:`~.ups.ups`), with
    its defaults; the seed and the chains' initial distribution (``init``) are arguments of
    :func:`~.ups.ups` itself."""

    method: ClassVar[str] = "ups"
    n_replicates: int = 100
    kernel: str = "rwmh"
    n_workers: int | None = None
    grid: int | str | Sequence | np.ndarray = 10
    proposal_cov: float | Sequence | np.ndarray | Callable | None = None
    proposal_scale: float = 1.0
    coupling: str = "reflection"
    k: int | None = None
    m: int | None = None
    n_pilot: int = 100
    quantile: float = 0.99
    k_factor: float = 1.0
    m_factor: float = 5.0
    adapt: bool = True
    q: str = "tuned"
    n_m2: int | None = None
    hmc_step_size: float | None = None
    hmc_n_steps: int = 10
    omega: float = 0.1
    max_iter: int = DEFAULT_MAX_ITER
    ci_level: float = 0.95
    ci: str = "t"
    positive_options = ("n_workers", "proposal_scale", "k_factor", "m_factor", "n_m2",
                        "hmc_step_size", "hmc_n_steps", "max_iter")

    def check(self) -> None:
        self.choice("kernel", ("rwmh", "hmc"))
        self.choice("q", ("tuned", "uniform"))
        self.choice("ci", ("t", "normal"))
        self.require("n_replicates", self.n_replicates >= 2, ">= 2 (for a standard error)")
        self.require("n_pilot", self.n_pilot >= 2, ">= 2")
        if (self.k is None) != (self.m is None):
            raise InputError(f"options k and m of method {self.method} go together: give both, "
                             f"or neither")
        self.require("k", self.k is None or 0 <= self.k <= self.m, f"in [0, m={self.m}]")
        self.require("quantile", 0.0 < self.quantile <= 1.0, "in (0, 1]")
        self.require("omega", 0.0 < self.omega <= 1.0, "in (0, 1]")
        self.require("ci_level", 0.0 < self.ci_level < 1.0, "in (0, 1)")


@dataclasses.dataclass(frozen=True)
class UpsOptions(UpsPathOptions):
    """Unbiased path sampling along base -> target
    (:func:`stanlogz.estimators.ups.ups.ups_estimate`): ``base`` and ``inflate`` choose the base,
    and per-lambda re-fitting (``adapt``) is off; the rest are :class:`UpsPathOptions`."""

    base: str = "gaussian"
    inflate: float = 1.0
    adapt: bool = False
    positive_options = (*UpsPathOptions.positive_options, "inflate")

    def check(self) -> None:
        super().check()
        self.choice("base", ("gaussian", "laplace"))
