"""The sampler settings: one frozen object that every NUTS run in stanlogz takes.

A workflow receives a :class:`NutsArgs` once (from the API keywords or the CLI flags) and passes
it, unchanged or through :meth:`NutsArgs.replace`, to every NUTS run it starts: the first fit,
exact refits, K-fold / LFO folds, held-out runs and the evidence's draws. The defaults are
CmdStan's and are declared here only.
"""

from __future__ import annotations

import dataclasses
import numbers
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict

from ..errors import InputError

#: The keyword names that a :class:`NutsArgs` holds (API functions accept each of them).
NUTS_FIELDS = ("chains", "warmup", "draws", "adapt_delta", "max_treedepth", "init_radius", "thin",
               "backend")

#: The density backends (:mod:`stanlogz.stan.backend`): compiled C++ (BridgeStan ABI),
#: interpreted (stanli, no build), or auto (interpreted where it can, else compiled).
BACKENDS = ("auto", "compiled", "interpreted")


#: The backend when neither ``backend=`` (on the command line its option) nor
#: ``$STANLOGZ_BACKEND`` names one: auto, the interpreter where the program runs there and
#: the compiled build for what it lacks. Measured on the corpus (docs/features/backends.md):
#: the two agree within their error bars on every program both answer, and the interpreter
#: answers without a build (the README's loo from a fresh venv in seconds, not minutes).
DEFAULT_BACKEND = "auto"


def default_backend() -> str:
    """``$STANLOGZ_BACKEND`` when set, else :data:`DEFAULT_BACKEND`."""
    return os.environ.get("STANLOGZ_BACKEND", "").strip().lower() or DEFAULT_BACKEND


#: cmdstanpy's / CmdStan's names of the sampler settings -> the keyword stanlogz takes
CMDSTANPY_NAMES = {"iter_sampling": "n_draws", "iter_warmup": "warmup", "num_samples": "n_draws",
                   "num_warmup": "warmup", "max_depth": "max_treedepth", "delta": "adapt_delta",
                   "thin": "thin", "parallel_chains": "chains"}


def check_cmdstanpy_names(keywords: Mapping[str, Any] | Any, what: str) -> None:
    """Refuse cmdstanpy's or CmdStan's names of sampler settings with the name stanlogz uses
    (a one-line :class:`~stanlogz.InputError`: "did you mean n_draws=?")."""
    known = {k: v for k, v in CMDSTANPY_NAMES.items() if k != v}
    hits = [k for k in keywords if k in known]
    if hits:
        raise InputError(f"{what}() got {', '.join(hits)}: cmdstanpy's name(s); did you mean "
                         + ", ".join(f"{known[k]}=" for k in hits) + " (sampler settings: "
                         f"{', '.join(NutsKeywords.__annotations__)})")


def _integer(label: str, v: Any, lo: int) -> None:
    if not (isinstance(v, numbers.Integral) and not isinstance(v, bool) and v >= lo):
        raise InputError(f"{label} must be an integer >= {lo}, got {v!r}")


@dataclass(frozen=True)
class NutsArgs:
    """Settings of Stan's NUTS (CmdStan's defaults): chains, warmup and kept draws per chain,
    target acceptance ``adapt_delta``, ``max_treedepth``, the uniform initialization radius on
    the unconstrained scale and thinning, and the density ``backend`` that serves the run (one
    of :data:`BACKENDS`). Invalid values raise :class:`~stanlogz.InputError`."""

    chains: int = 4
    warmup: int = 1000
    draws: int = 1000
    adapt_delta: float = 0.8
    max_treedepth: int = 10
    init_radius: float = 2.0
    thin: int = 1
    backend: str = field(default_factory=default_backend)

    def __post_init__(self) -> None:
        for label, lo in (("chains", 1), ("warmup", 0), ("draws", 1), ("max_treedepth", 1),
                          ("thin", 1)):
            _integer(label, getattr(self, label), lo)
            object.__setattr__(self, label, int(getattr(self, label)))
        ad = self.adapt_delta
        if not (isinstance(ad, numbers.Real) and not isinstance(ad, bool) and 0.0 < ad < 1.0):
            raise InputError(f"adapt_delta must be in (0, 1), got {ad!r}")
        if not (isinstance(self.init_radius, numbers.Real) and self.init_radius >= 0.0):
            raise InputError(f"init_radius must be >= 0, got {self.init_radius!r}")
        if self.backend not in BACKENDS:
            raise InputError(f"backend must be one of {', '.join(BACKENDS)}, got "
                             f"{self.backend!r}")
        object.__setattr__(self, "adapt_delta", float(ad))
        object.__setattr__(self, "init_radius", float(self.init_radius))

    def replace(self, **changes: Any) -> NutsArgs:
        """A copy with ``changes`` applied (None values are ignored), validated again."""
        changes = {k: v for k, v in changes.items() if v is not None}
        unknown = sorted(set(changes) - set(NUTS_FIELDS))
        if unknown:
            hint = {k: CMDSTANPY_NAMES[k].replace("n_draws", "draws") for k in unknown
                    if k in CMDSTANPY_NAMES}
            raise InputError(f"unknown sampler setting(s): {', '.join(unknown)}" + (
                "; did you mean " + ", ".join(f"{v}= (for {k})" for k, v in hint.items())
                if hint else "") + f" (settings: {', '.join(NUTS_FIELDS)})")
        return dataclasses.replace(self, **changes) if changes else self

    @classmethod
    def of(cls, settings: NutsArgs | None = None, **overrides: Any) -> NutsArgs:
        """``settings`` (default: the defaults) with the non-None ``overrides`` applied: the one
        way an API function turns its ``settings=`` and loose keywords into one object."""
        if settings is not None and not isinstance(settings, NutsArgs):
            raise InputError(f"settings must be a NutsArgs, got {type(settings).__name__}")
        return (settings or cls()).replace(**overrides)

    def as_dict(self) -> dict[str, Any]:
        """The settings as a plain dict (for JSON output and reports)."""
        return dataclasses.asdict(self)


class NutsKeywords(TypedDict, total=False):
    """The loose sampler keywords a workflow accepts besides ``settings=`` (``**nuts:
    Unpack[NutsKeywords]``): ``n_draws`` is ``draws`` per chain where ``draws`` names existing
    draws."""

    chains: int | None
    warmup: int | None
    draws: int | None
    n_draws: int | None
    adapt_delta: float | None
    max_treedepth: int | None
    backend: str | None


def nuts_from_keywords(settings: NutsArgs | None, keywords: Mapping[str, Any],
                       what: str) -> NutsArgs:
    """``settings`` with the loose sampler ``keywords`` of the API function ``what`` applied
    (:meth:`NutsArgs.of`); a keyword that is not one raises :class:`~stanlogz.InputError`."""
    check_cmdstanpy_names(keywords, what)
    kw = dict(keywords)
    n_draws = kw.pop("n_draws", None)
    if kw.get("draws") is None:
        kw["draws"] = n_draws
    unknown = sorted(set(kw) - set(NutsKeywords.__annotations__))
    if unknown:
        raise InputError(f"{what}() got unexpected keyword(s) {', '.join(unknown)} (sampler "
                         f"settings: {', '.join(NutsKeywords.__annotations__)})")
    if isinstance(settings, NutsArgs) and all(v is None for v in kw.values()):
        return settings  # validated where it was made (a workflow passing its settings on)
    return NutsArgs.of(settings, **kw)


def split_nuts_keywords(settings: NutsArgs | None, keywords: Mapping[str, Any],
                        what: str) -> tuple[NutsArgs, dict[str, Any]]:
    """For an API function ``what`` whose ``**keywords`` also carry other options (an
    estimator's): ``settings`` with the loose sampler keywords among them applied (``chains``,
    ``warmup``, ``n_draws``, ``adapt_delta``, ``max_treedepth``; :func:`nuts_from_keywords`), and
    the other keywords."""
    check_cmdstanpy_names(keywords, what)
    loose = {k: v for k, v in keywords.items() if k in NutsKeywords.__annotations__
             and k != "draws"}
    rest = {k: v for k, v in keywords.items() if k not in loose}
    return nuts_from_keywords(settings, loose, what), rest
