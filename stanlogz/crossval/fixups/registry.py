"""The fix-ups users choose by name (``loo(fix=...)``, ``--fix``): one row per method, saying what
it does to the observations whose Pareto k̂ is above the threshold, so that the LOO workflow
(:func:`~stanlogz.crossval.psis_loo.loo.loo`), the command line and the loo table read the
choices, their help and their names from here (as :mod:`stanlogz.estimators.registry` does for
the evidence estimators)."""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import InputError


@dataclass(frozen=True)
class FixMethod:
    """A fix-up: its name, how the loo table names the values it recomputes (``label``), its
    one-line help, and its steps: moment matching of the draws first (``moment_match``), a
    refit (``"exact"`` or ``"ups"``) of the observations left above the threshold
    (``refit``), or one mixture importance sampling run for all of them (``mixture``, which
    also re-estimates those between k̂ 0.5 and the threshold). ``options`` names the
    :func:`~stanlogz.crossval.psis_loo.loo.loo` keyword that tunes it, if one does."""

    name: str
    label: str
    summary: str
    moment_match: bool = False
    refit: str | None = None
    mixture: bool = False
    options: str | None = None

    @property
    def acts(self) -> bool:
        """Whether it recomputes anything (``none`` does not)."""
        return self.moment_match or self.mixture or self.refit is not None


FIXUPS: dict[str, FixMethod] = {m.name: m for m in (
    FixMethod("auto", "auto", "moment matching, then exact refits where k-hat stays above the "
              "threshold (the default)", moment_match=True, refit="exact", options="mm_budget"),
    FixMethod("mm", "moment matching", "moment matching of the draws, no refit",
              moment_match=True, options="mm_budget"),
    FixMethod("exact", "exact refit", "NUTS without the observation + bridge sampling",
              refit="exact"),
    FixMethod("ups", "unbiased path sampling", "unbiased path sampling refits", refit="ups",
              options="ups_options"),
    FixMethod("none", "none", "keep the PSIS values (with the k-hat warning)"),
    FixMethod("mis", "mis", "mixture importance sampling (one HMC run on the posterior mixed "
              "with those observations' leave-one-out posteriors, no refit)", mixture=True),
)}

#: How the loo table names the values each method recomputed (a refit's own method, e.g. an
#: augmented bridge, is shown as it is).
FIX_LABELS: dict[str, str] = {m.name: m.label for m in FIXUPS.values()}


def fix_method(name: str) -> FixMethod:
    """The fix-up called ``name`` (InputError listing the choices)."""
    if name not in FIXUPS:
        raise InputError(f"fix must be one of {', '.join(FIXUPS)}, got {name!r}")
    return FIXUPS[name]


def fix_help(intro: str) -> str:
    """``--fix`` help: ``intro`` and each method's one-line summary."""
    return f"{intro}: " + "; ".join(f"{m.name}: {m.summary}" for m in FIXUPS.values())
