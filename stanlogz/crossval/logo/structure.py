"""Which parameters of a Stan program are a group's latents, found from the program itself.

For leave-one-group-out without refits (:mod:`.estimator`) the unconstrained vector splits
into hyperparameters φ and one block a_g per group, such that

    log p(θ, y) = Σ_g [log p(y_g | a_g, φ) + log p(a_g | φ)] + r(φ)

(Gelman & Hill 2007's varying-intercept and varying-slope models are of this form). A block is
the entries of every parameter with an axis of the group count J (``vector[J] a``,
``matrix[J, K] b``, ``array[J] vector[K] c``) at index g. Three numerical checks at a few
posterior draws, from the program's density on data instances with group rows deleted:

* deleting any group's rows keeps every parameter (a parameter of size N, one per
  observation, would vanish: refused);
* the terms of group g's data, f(θ) − f_{−g}(θ), do not move when the other groups' latents
  move (group g's observations use no other group's latents);
* the mixed difference of f between block g and the other blocks is zero (no CAR field or
  random walk over groups linking the blocks' priors).

Anything else is refused by name with the route that works (``kfold(group=..., k=None)``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import InputError, Route, StanlogzError, option
from ...stan.program import StanProgram
from ..observations.latents import _shapes, split_name
from ..observations.observations import Observations, observation_labels

#: Relative tolerance of the numerical structure checks (density sums are exact to ~1e-12).
TOL = 1e-7

def logo_route(group: str, note: str = "") -> Route:
    """Leave-one-group-out by exact refits: ``kfold`` over the groups of ``group``."""
    return Route("kfold", {"group": group, "k": None}, cli_values={"k": "groups"}, note=note)


@dataclass
class GroupStructure:
    """The groups of one data set and each group's latent coordinates.

    ``labels``: the group labels (1-based indices into the latents' group axis), one per group;
    ``rows``: each group's observations (0-based); ``coords``: each group's unconstrained
    coordinates in the program; ``latents``: parameter name -> its group axis (0-based);
    ``hyper``: the coordinates of no group (φ)."""

    group: str
    labels: np.ndarray
    rows: list[np.ndarray]
    coords: list[np.ndarray]
    latents: dict[str, int]
    hyper: np.ndarray

    @property
    def n_groups(self) -> int:
        """Number of groups with observations."""
        return int(self.labels.size)


def refuse(group: str, text: str) -> InputError:
    """The one-line refusal: what is wrong and the route that works."""
    route = logo_route(group, "(exact refits, one per group) works instead")
    return InputError(f"leave-one-group-out without refits: {text}; {route}", routes=route)


def find_groups(model: StanProgram, data: Mapping[str, Any], obs: Observations,
                group: str) -> GroupStructure:
    """The group structure of ``model`` (bound to ``data``) along the per-observation integer
    labels in data variable ``group``; :class:`InputError` naming what is not found."""
    lab = observation_labels(data, obs, group, str(option("group")))
    labels, inverse = np.unique(lab, return_inverse=True)
    if labels.size < 2:
        raise InputError(f"{option('group')} {group}: every observation is in one group; "
                         "nothing to hold out")
    if labels.min() < 1:
        raise refuse(group, f"the labels of {group} must be the 1-based indices of the group "
                     f"parameters, found {int(labels.min())}")
    names = model.param_unc_names()
    shapes = _shapes(names)
    top = int(labels.max())
    sizes = sorted({s for sh in shapes.values() for s in sh if s >= top})
    ints = {int(v) for v in data.values() if isinstance(v, int | np.integer)
            and not isinstance(v, bool)}
    j = top if top in sizes else next((s for s in sizes if s in ints), None)
    if j is None:
        raise refuse(group, f"no parameter of {model.name} has an axis of {top} or more "
                     f"entries indexed by {group}")
    latents: dict[str, int] = {}
    for base, sh in shapes.items():
        axes = [a for a, s in enumerate(sh) if s == j]
        if len(axes) == 1 and not (sh[0] == obs.n and obs.n != j):
            latents[base] = axes[0]
        elif len(axes) > 1:
            raise refuse(group, f"parameter {base} of shape {sh} has several axes of size {j}")
    if not latents:
        raise refuse(group, f"no parameter of {model.name} is indexed by {group}")
    coords: list[list[int]] = [[] for _ in range(j)]
    hyper = []
    for k, name in enumerate(names):
        base, idx = split_name(name)
        if base in latents:
            coords[idx[latents[base]] - 1].append(k)
        else:
            hyper.append(k)
    rows = [np.flatnonzero(inverse == g) for g in range(labels.size)]
    return GroupStructure(group, labels, rows, [np.asarray(coords[int(lb) - 1])
                                                 for lb in labels], latents,
                          np.asarray(hyper, dtype=int))


def instance(model: StanProgram, data: Mapping[str, Any], obs: Observations,
             keep: np.ndarray, st: GroupStructure) -> StanProgram:
    """The program on the observations ``keep``, refused unless it has the same parameters
    (a parameter that changes size follows the observations, not the groups)."""
    try:
        m = model.with_data(obs.subset(data, keep))
    except StanlogzError as exc:
        raise refuse(st.group, f"{model.name} rejects the data without a group's rows "
                     f"({str(exc).splitlines()[0]})") from None
    if m.param_unc_names() != model.param_unc_names():
        changed = sorted({split_name(n)[0] for n in
                          set(m.param_unc_names()) ^ set(model.param_unc_names())})
        raise refuse(st.group, f"parameter(s) {', '.join(changed)} change size when a group's "
                     "rows are deleted (one per observation, not per group)")
    return m


def check_structure(model: StanProgram, data: Mapping[str, Any], obs: Observations,
                    st: GroupStructure, x: np.ndarray) -> None:
    """Refuse (:class:`InputError`, one line) unless the density splits into independent
    group terms at the unconstrained draws ``x`` ``(k, dim)`` (see the module docstring)."""
    x = np.asarray(x, dtype=float).reshape(-1, model.dim)
    f = model.log_density_many(x)
    scale = 1.0 + np.max(np.abs(f))
    every = np.arange(obs.n)
    sign = np.where(np.arange(model.dim) % 2 == 0, 0.3, -0.3)
    for g, (rows, c) in enumerate(zip(st.rows, st.coords, strict=True)):
        label = int(st.labels[g])
        if not c.size:
            raise refuse(st.group, f"group {label} has no latent parameter")
        others = np.setdiff1d(np.concatenate(st.coords), c)
        without = instance(model, data, obs, np.setdiff1d(every, rows), st)
        d0 = f - without.log_density_many(x)
        x2 = x.copy()
        x2[:, others] += sign[others]
        d2 = model.log_density_many(x2) - without.log_density_many(x2)
        if np.max(np.abs(d2 - d0)) > TOL * scale:
            raise refuse(st.group, f"the observations of group {label} depend on other groups' "
                         "latent parameters")
        x3 = x.copy()
        x3[:, c] += sign[c]
        x4 = x2.copy()
        x4[:, c] += sign[c]
        mixed = (model.log_density_many(x4) - model.log_density_many(x3)
                 - model.log_density_many(x2) + f)
        if np.max(np.abs(mixed)) > TOL * scale:
            raise refuse(st.group, f"the latent parameters of group {label} are linked to other "
                         "groups' (a CAR field or a random walk over groups)")
