"""How observations are dealt to K-fold's folds: random and balanced, stratified, or by group
(:func:`make_folds`)."""

from __future__ import annotations

import numpy as np

from ...errors import InputError, Route, option


def make_folds(n: int, k: int | None, rng: np.random.Generator, *,
               strata: np.ndarray | None = None, groups: np.ndarray | None = None
               ) -> np.ndarray:
    """The fold (0-based) of each of ``n`` observations: random balanced folds; with ``strata``
    each stratum is spread evenly over the folds; with ``groups`` whole groups are dealt to
    folds (``k=None``: one fold per group, leave-one-group-out)."""
    if strata is not None and groups is not None:
        raise InputError(f"choose {option('stratify')} or {option('group')}, not both")
    if groups is not None:
        labels, inverse = np.unique(groups, return_inverse=True)
        if k is None:
            return inverse.astype(int)
        logo = Route(options={"k": None}, cli_values={"k": "groups"})
        _check_k(k, labels.size, f"groups; {logo} holds out one group per fold", logo)
        fold_of_group = np.empty(labels.size, dtype=int)
        fold_of_group[rng.permutation(labels.size)] = np.arange(labels.size) % k
        return fold_of_group[inverse]
    if k is None:
        raise InputError("the number of folds k is needed unless folds are groups "
                         f"({option('group')})")
    _check_k(k, n, "observations")
    fold = np.empty(n, dtype=int)
    if strata is None:
        fold[rng.permutation(n)] = np.arange(n) % k
        return fold
    start = 0
    for label in np.unique(strata):
        members = rng.permutation(np.flatnonzero(strata == label))
        fold[members] = (start + np.arange(members.size)) % k
        start += members.size
    return fold


def _check_k(k: int, n: int, what: str, route: Route | None = None) -> None:
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 2:
        raise InputError(f"k must be an integer >= 2, got {k!r}")
    if k > n:  # eight_schools at the command's default k = 10: one out per fold
        if route is None:
            route = Route(options={"k": int(n)})
            what = f"{what}; {route} leaves one out per fold"
        raise InputError(f"k = {k} folds but only {n} {what}", routes=route)
