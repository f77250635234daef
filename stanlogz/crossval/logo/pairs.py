"""The data instances of leave-one-group-out's integrals: per group, its rows plus a reference
set of rows, and the reference set alone.

log p(y_g | φ) = log ∫ exp f_{g+R} da_g − log ∫ exp f_R da_g for any set R of rows outside
group g: every term not involving y_g (R's own terms, which use only φ and other groups'
latents, and every prior) cancels between the two. R is, in order of preference,

* no rows (one reference instance for every group);
* one row of another group, when the program rejects empty data (``int<lower=1> N``): the
  instances stay as small as the group, so each density call costs about as much as on the
  group's rows alone (0.7 µs a gradient on the Poisson random intercept of docs/guide/logo.md,
  against 4.6 µs on all 150 rows);
* every row outside the group (the full data against the data without the group), when the
  program rejects one row too.

The first two are checked against the last at a few points (:func:`check_pairs`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import InputError
from ...stan.program import StanProgram
from .structure import GroupStructure, instance, refuse


@dataclass
class Pairs:
    """Per group: the program on its rows plus ``refs[g]`` (``ones``), on ``refs[g]`` alone
    (``zeros``); ``full`` when the references are every row outside the group."""

    ones: list[StanProgram]
    zeros: list[StanProgram]
    refs: list[np.ndarray]
    full: bool


def make_pairs(model: StanProgram, data: dict[str, Any], obs: Any, st: GroupStructure
               ) -> Pairs:
    """The instance pairs of every group (see the module docstring)."""
    n_g = st.n_groups
    try:
        none = instance(model, data, obs, np.zeros(0, dtype=int), st)
        empty = np.zeros(0, dtype=int)
        return Pairs([instance(model, data, obs, r, st) for r in st.rows], [none] * n_g,
                     [empty] * n_g, False)
    except InputError:
        pass
    try:
        refs = [st.rows[(g + 1) % n_g][:1] for g in range(n_g)]
        return Pairs([instance(model, data, obs, np.union1d(r, ref), st)
                      for r, ref in zip(st.rows, refs, strict=True)],
                     [instance(model, data, obs, ref, st) for ref in refs], refs, False)
    except InputError:
        pass
    every = np.arange(obs.n)
    refs = [np.setdiff1d(every, r) for r in st.rows]
    return Pairs([model] * n_g, [instance(model, data, obs, ref, st) for ref in refs], refs,
                 True)


def check_pairs(model: StanProgram, data: dict[str, Any], obs: Any, st: GroupStructure,
                pairs: Pairs, x: np.ndarray) -> None:
    """The group's terms must be the same on both instance pairs (full − without g): the rest
    of the density does not depend on group g's data."""
    if pairs.full:
        return
    every = np.arange(obs.n)
    f = model.log_density_many(x)
    for g, rows in enumerate(st.rows):
        without = instance(model, data, obs, np.setdiff1d(every, rows), st)
        a = pairs.ones[g].log_density_many(x) - pairs.zeros[g].log_density_many(x)
        b = f - without.log_density_many(x)
        if np.max(np.abs(a - b)) > 1e-7 * (1 + np.max(np.abs(f))):
            raise refuse(st.group, f"the terms of group {int(st.labels[g])}'s data differ "
                         "between the data alone and the data with the other groups (the "
                         "program uses the data beyond per-observation terms)")
