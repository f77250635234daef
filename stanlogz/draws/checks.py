"""Signs in the draws that the posterior is improper or badly explored, so that log Z means
little: R-hat and divergences, unconstrained draws that run away, parameters without a prior."""

from __future__ import annotations

import numpy as np

from ..stan.code import unused_parameters
from ..stan.program import StanProgram
from .core import Draws

#: Unconstrained draws beyond this magnitude mean a parameter ran away (exp(50) ~ 5e21): the
#: posterior is almost surely improper, and no log Z exists.
RUNAWAY_ABS = 50.0


def normalization_warnings(model: StanProgram, d: Draws) -> list[str]:
    """Warnings that the posterior may be improper or badly explored, so log Z means little."""
    out: list[str] = []
    try:
        s = d.summary()
    except Exception:  # summary needs >= 4 draws per chain; estimating needs no summary
        s = None
    if s is not None:
        out += [w for w in s.warnings if "R-hat" in w or "diverged" in w]
    absmax = np.max(np.abs(d.unconstrained), axis=(0, 1))
    if np.any(absmax > RUNAWAY_ABS):
        j = int(np.argmax(absmax))
        name = d.unc_names[j] if j < len(d.unc_names) else f"x.{j + 1}"
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
