"""Signs in the draws that the posterior is improper or badly explored, so that log Z means
little: R-hat and divergences, unconstrained draws that run away, parameters without a prior."""

from __future__ import annotations

import numpy as np

from ..stan.code import unused_parameters
from ..stan.prior_statements import prior_reach
from ..stan.program import StanProgram
from .core import Draws
from .mode_search import chain_subset

#: Unconstrained draws beyond this magnitude mean a parameter ran away (exp(50) ~ 5e21): the
#: posterior is almost surely improper, and no log Z exists.
RUNAWAY_ABS = 50.0


def normalization_warnings(model: StanProgram, d: Draws,
                           groups: list[np.ndarray] | None = None) -> list[str]:
    """Warnings that the posterior may be improper or badly explored, so log Z means little.
    Where ``groups`` holds the chains of more than one mode (chain indices, one array per
    mode: :func:`~.mode_search.chain_groups`), R-hat and divergences are read per mode: the
    chains' disagreement across modes is what the mode-wise log Z takes into account."""
    out: list[str] = []
    names = list(model.param_names()) if hasattr(model, "param_names") else None
    several = groups is not None and len(groups) > 1
    for k, part in enumerate([chain_subset(d, g) for g in groups] if several else [d]):
        try:
            # the parameters' diagnostics (every generated quantity's cost seconds at many draws)
            s = part.summary(names)
        except Exception:  # summary needs >= 4 draws per chain; estimating needs no summary
            continue
        out += [w if not several else f"mode {k + 1}: {w}" for w in s.warnings
                if "R-hat" in w or "diverged" in w]
    absmax = np.max(np.abs(d.unconstrained), axis=(0, 1))
    limit = _runaway_limits(model, d, absmax.size)
    if np.any(absmax > limit):
        j = int(np.argmax(np.where(absmax > limit, absmax, -np.inf)))
        name = _unc_name(d, j)
        out.append(
            f"unconstrained draws of {name} reach |{absmax[j]:.3g}|: the posterior is probably "
            "improper (a parameter without a proper prior?); log Z is then meaningless"
        )
    for name in unused_parameters(getattr(model, "code", "") or ""):
        out.append(
            f"parameter {name} never appears in the model block: its implicit prior is flat "
            "(improper, or on a bounded interval unnormalized); give it a proper prior"
        )
    return out


def _unc_name(d: Draws, j: int) -> str:
    return d.unc_names[j] if j < len(d.unc_names) else f"x.{j + 1}"


def _runaway_limits(model: StanProgram, d: Draws, dim: int) -> np.ndarray:
    """Per unconstrained coordinate, the magnitude beyond which its draws ran away:
    :data:`RUNAWAY_ABS`, or further where the program gives the parameter a proper prior that
    reaches further (:func:`~stanlogz.stan.priors.prior_reach`: N(0, 100) reaches 636)."""
    limit = np.full(dim, RUNAWAY_ABS)
    code = getattr(model, "code", "") or ""
    if not code:
        return limit
    try:
        reach = prior_reach(code, getattr(model, "data_json", None) or "{}")
    except Exception:  # an unparsable program: the plain limit
        return limit
    for j in range(dim):
        base = _unc_name(d, j).split(".")[0].split("[")[0]
        if base in reach:
            limit[j] = max(RUNAWAY_ABS, reach[base])
    return limit
