"""The fix-ups users choose by name (``loo(fix=...)``), each with its options class.

One :class:`FixMethod` row per method says what it does to the observations whose Pareto k̂ is
above the threshold and names its :class:`FixOptions` class: the knobs that method reads (moment
matching's time budget, unbiased path sampling's options), validated once at the public
:func:`~stanlogz.crossval.psis_loo.loo.loo` boundary, with an unknown option refused by one
line that names the method and the options it takes. The LOO workflow, the command line (the
fix-up choices and help) and the loo table read the choices, their help and their names from
here, as :mod:`stanlogz.estimators.registry` does for the evidence estimators."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Self

from ...errors import InputError

# ---------------------------------------------------------------------- options classes


@dataclass(frozen=True)
class FixOptions:
    """Options of one fix-up; each subclass lists exactly the knobs its method takes (the
    :func:`~stanlogz.crossval.psis_loo.loo.loo` keywords of the same names), with their
    defaults, and checks them when built."""

    #: The fix-up's name (as ``fix=`` takes it).
    method: ClassVar[str] = ""

    @classmethod
    def names(cls) -> list[str]:
        """The option names, in order.

        Returns
        -------
        list of str
            The names (empty for a method without options).
        """
        return [f.name for f in dataclasses.fields(cls)]

    @classmethod
    def parse(cls, values: Mapping[str, Any]) -> Self:
        """Options from a mapping of names to values.

        Parameters
        ----------
        values : mapping
            Option names to values.

        Returns
        -------
        FixOptions
            The validated options.

        Raises
        ------
        InputError
            A name the method does not take (one line naming the method and its options), or
            a bad value.
        """
        bad = [k for k in values if k not in cls.names()]
        if bad:
            raise InputError(f"fix {cls.method} has no option {bad[0]!r}; it takes: "
                             f"{', '.join(cls.names()) or 'none'}")
        return cls(**values)

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> None:
        """Checks of the values (none by default)."""


@dataclass(frozen=True)
class NoFixOptions(FixOptions):
    """``fix="none"``: the PSIS values are kept; no options."""

    method: ClassVar[str] = "none"


@dataclass(frozen=True)
class ExactOptions(FixOptions):
    """``fix="exact"``: NUTS without the observation (with ``loo``'s sampler settings) and a
    bridge; no options of its own."""

    method: ClassVar[str] = "exact"


@dataclass(frozen=True)
class MisOptions(FixOptions):
    """``fix="mis"``: one mixture HMC run (with ``loo``'s chains and draws); no options of its
    own."""

    method: ClassVar[str] = "mis"


@dataclass(frozen=True)
class MomentMatchOptions(FixOptions):
    """``fix="mm"``: ``mm_budget``, the seconds moment matching may take (None: no limit); the
    observations left keep their PSIS values with the k̂ warning."""

    method: ClassVar[str] = "mm"
    mm_budget: float | None = None

    def check(self) -> None:
        """``mm_budget`` is None or a positive number of seconds (kept as a float)."""
        from .mm_points import check_budget

        object.__setattr__(self, "mm_budget", check_budget(self.mm_budget))


@dataclass(frozen=True)
class AutoOptions(MomentMatchOptions):
    """``fix="auto"``: moment matching's ``mm_budget``; the exact refits that follow take
    ``loo``'s sampler settings."""

    method: ClassVar[str] = "auto"


@dataclass(frozen=True)
class UpsFixOptions(FixOptions):
    """``fix="ups"``: ``ups_options``, options of each refit's unbiased path sampling run
    (:class:`~stanlogz.estimators.options.UpsPathOptions`: ``n_replicates``, ``kernel``, ...)."""

    method: ClassVar[str] = "ups"
    ups_options: Mapping[str, Any] | None = None

    def check(self) -> None:
        """``ups_options`` is a mapping of options that unbiased path sampling takes (an unknown
        name: one line listing them)."""
        from ...estimators.options import UpsPathOptions

        given = self.ups_options
        if given is not None and not isinstance(given, Mapping):
            raise InputError(f"option ups_options of fix ups must be a dict of ups options, got "
                             f"{type(given).__name__}")
        try:
            UpsPathOptions.parse(dict(given or {}))
        except InputError as exc:
            raise InputError(f"ups_options of fix ups: {exc}") from None
        object.__setattr__(self, "ups_options", dict(given or {}))


# ---------------------------------------------------------------------- the methods


@dataclass(frozen=True)
class FixMethod:
    """A fix-up: its name, how the loo table names the values it recomputes (``label``), its
    one-line help, its steps (moment matching of the draws first, ``moment_match``; a refit,
    ``"exact"`` or ``"ups"``, of the observations left above the threshold, ``refit``; or one
    mixture importance sampling run for all of them, ``mixture``, which also re-estimates those
    between k̂ 0.5 and the threshold) and its options class (``Options``)."""

    name: str
    label: str
    summary: str
    Options: type[FixOptions]
    moment_match: bool = False
    refit: str | None = None
    mixture: bool = False

    @property
    def acts(self) -> bool:
        """Whether it recomputes anything (``none`` does not)."""
        return self.moment_match or self.mixture or self.refit is not None

    def options(self, values: FixOptions | Mapping[str, Any] | None = None,
                **keywords: Any) -> FixOptions:
        """The method's validated options: ``values`` (its options object or a mapping of
        option names), with the non-None ``keywords`` that name one of its options (``loo``'s
        ``mm_budget=`` and ``ups_options=``) filled in where ``values`` leaves them out.

        Parameters
        ----------
        values : FixOptions or mapping, optional
            The options; an unknown name raises.
        **keywords
            ``loo``'s loose fix-up keywords; those this method does not take are ignored (they
            have no effect on it, as before the options classes).

        Returns
        -------
        FixOptions
            An instance of ``self.Options``.

        Raises
        ------
        InputError
            Options of another method, an unknown option name or a bad value (one line naming
            the method).
        """
        if isinstance(values, FixOptions) and not isinstance(values, self.Options):
            raise InputError(f"fix {self.name} takes {self.Options.__name__}, not "
                             f"{type(values).__name__}")
        if isinstance(values, self.Options) and not any(
                v is not None for k, v in keywords.items() if k in self.Options.names()):
            return values
        if not isinstance(values, FixOptions | Mapping | None):
            raise InputError(f"fix_options must be a dict or {self.Options.__name__}, got "
                             f"{type(values).__name__}")
        given = (dataclasses.asdict(values) if isinstance(values, FixOptions)
                 else dict(values or {}))
        loose = {k: v for k, v in keywords.items()
                 if v is not None and k in self.Options.names() and k not in given}
        return self.Options.parse({**given, **loose})


FIXUPS: dict[str, FixMethod] = {m.name: m for m in (
    FixMethod("auto", "auto", "moment matching, then exact refits where k-hat stays above the "
              "threshold (the default)", AutoOptions, moment_match=True, refit="exact"),
    FixMethod("mm", "moment matching", "moment matching of the draws, no refit",
              MomentMatchOptions, moment_match=True),
    FixMethod("exact", "exact refit", "NUTS without the observation + bridge sampling",
              ExactOptions, refit="exact"),
    FixMethod("ups", "unbiased path sampling", "unbiased path sampling refits", UpsFixOptions,
              refit="ups"),
    FixMethod("none", "none", "keep the PSIS values (with the k-hat warning)", NoFixOptions),
    FixMethod("mis", "mis", "mixture importance sampling (one HMC run on the posterior mixed "
              "with those observations' leave-one-out posteriors, no refit)", MisOptions,
              mixture=True),
)}

#: How the loo table names the values each method recomputed (a refit's own method, e.g. an
#: augmented bridge, is shown as it is).
FIX_LABELS: dict[str, str] = {m.name: m.label for m in FIXUPS.values()}


def fix_method(name: str) -> FixMethod:
    """The fix-up called ``name``.

    Parameters
    ----------
    name : str
        One of :data:`FIXUPS`.

    Returns
    -------
    FixMethod
        Its row.

    Raises
    ------
    InputError
        An unknown name (the line lists the choices).
    """
    if name not in FIXUPS:
        raise InputError(f"fix must be one of {', '.join(FIXUPS)}, got {name!r}")
    return FIXUPS[name]


def fix_help(intro: str) -> str:
    """The fix option's help: ``intro`` and each method's one-line summary.

    Parameters
    ----------
    intro : str
        What the flag does.

    Returns
    -------
    str
        The help text.
    """
    return f"{intro}: " + "; ".join(f"{m.name}: {m.summary}" for m in FIXUPS.values())
