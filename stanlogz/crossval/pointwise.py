"""Pointwise log-likelihood log p(y_i | θ) of a Stan program at posterior draws.

Two sources:

* ``"log_lik"``: the program's ``log_lik`` generated quantity (Stan's convention), one entry per
  observation;
* ``"difference"``: log p̃(θ; y) − log p̃(θ; y₋ᵢ), the program's full log density (every
  constant kept) with all data minus the same with observation i left out (a second data
  instance of the same library). This *is* log p(y_i | θ) when the observations are
  conditionally independent given θ and nothing but the likelihood depends on the data (no
  prior scaled by N, no data-dependent transformed data entering the prior). The cost is one
  extra density evaluation per draw and observation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import InputError
from .observations import Observations

SOURCES = ("auto", "log_lik", "difference")


def log_lik_columns(names: list[str]) -> list[int]:
    """Indices of ``log_lik.1, log_lik.2, ...`` (a vector or 1-D array GQ) in ``names``."""
    cols = {n: j for j, n in enumerate(names) if n.startswith("log_lik.")}
    out = []
    for i in range(1, len(cols) + 1):
        if f"log_lik.{i}" not in cols:
            raise InputError("log_lik must be a vector or a 1-D array with one entry per "
                             "observation")
        out.append(cols[f"log_lik.{i}"])
    return out


def has_log_lik(model: Any) -> bool:
    """Whether the program has a ``log_lik`` generated quantity."""
    return any(n == "log_lik" or n.startswith("log_lik.")
               for n in model.param_names(include_tp=True, include_gq=True))


class PointwiseLogLik:
    """``log p(y_i | θ)`` for the observations of one program and data set, at any draws."""

    def __init__(self, model: Any, data: Mapping[str, Any], obs: Observations,
                 source: str = "auto") -> None:
        if source not in SOURCES:
            raise InputError(f"log-likelihood source must be one of {', '.join(SOURCES)}, "
                             f"got {source!r}")
        if source == "auto":
            source = "log_lik" if has_log_lik(model) else "difference"
        self.model, self.data, self.obs, self.source = model, dict(data), obs, source
        self._minus: dict[int, Any] = {}
        if source == "log_lik":
            if not has_log_lik(model):
                raise InputError(f"{model.name} has no log_lik generated quantity; use the "
                                 "'difference' source")
            names = model.param_names(include_tp=True, include_gq=True)
            self._cols = log_lik_columns(names)
            if len(self._cols) != obs.n:
                raise InputError(f"log_lik has {len(self._cols)} entries but there are "
                                 f"{obs.n} observations ({obs.size_name} = {obs.n})")

    def held_out_model(self, i: int) -> Any:
        """The program with observation ``i`` left out (same library, new data)."""
        if i not in self._minus:
            m = self.model.with_data(self.obs.without(self.data, [i]))
            if m.dim != self.model.dim:
                raise InputError(
                    f"leaving out an observation changes the number of parameters of "
                    f"{self.model.name} ({self.model.dim} -> {m.dim}): per-observation "
                    "parameters need cross-validation over groups, not single observations")
            self._minus[i] = m
        return self._minus[i]

    def matrix(self, unc: np.ndarray, constrained: np.ndarray | None = None,
               names: list[str] | None = None) -> np.ndarray:
        """``(S, N)`` matrix of log p(y_i | θ_s) at unconstrained draws ``unc`` ``(S, dim)``;
        ``constrained`` draws with ``names`` that hold ``log_lik`` are used as they are."""
        unc = np.asarray(unc, dtype=float).reshape(-1, self.model.dim)
        if self.source == "log_lik":
            if constrained is not None and names is not None and any(
                    n.startswith("log_lik.") for n in names):
                cols = log_lik_columns(list(names))
                if len(cols) != self.obs.n:
                    raise InputError(f"the draws' log_lik has {len(cols)} entries but there "
                                     f"are {self.obs.n} observations")
                return np.asarray(constrained, dtype=float).reshape(unc.shape[0], -1)[:, cols]
            gq = self.model.constrain_many(unc, include_tp=True, include_gq=True, seed=1)
            return gq[:, self._cols]
        full = self.model.log_density_many(unc)
        return np.stack([full - self.held_out_model(i).log_density_many(unc)
                         for i in range(self.obs.n)], axis=1)

    def column(self, i: int, unc: np.ndarray) -> np.ndarray:
        """log p(y_i | θ) at unconstrained draws ``unc`` ``(S, dim)``."""
        unc = np.asarray(unc, dtype=float).reshape(-1, self.model.dim)
        if self.source == "log_lik":
            gq = self.model.constrain_many(unc, include_tp=True, include_gq=True, seed=1)
            return gq[:, self._cols[i]]
        return self.model.log_density_many(unc) - self.held_out_model(i).log_density_many(unc)
