"""The pointwise-source interface shared by the conditional log-likelihoods log p(y_i | y₋ᵢ, θ):
``columns``, ``chunks`` and ``matrix`` from one ``column(i, unc)``, and the parts of
:class:`~.pointwise.PointwiseLogLik`'s interface that have nothing to check here."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ...errors import InputError
from ...stan.program import StanProgram
from .observations import Observations
from .pointwise import CHUNK_BYTES, column_chunks


class ColumnsByObservation:
    """``columns`` of an object with ``column(i, unc)`` and a ``model`` with ``dim``."""

    model: StanProgram

    def column(self, i: int, unc: np.ndarray) -> np.ndarray:
        """log p(y_i | y₋ᵢ, θ) at unconstrained draws ``unc``."""
        raise NotImplementedError

    def columns(self, index: Sequence[int] | np.ndarray, unc: np.ndarray) -> np.ndarray:
        """``(S, len(index))`` log p(y_i | y₋ᵢ, θ) at unconstrained draws ``unc``."""
        idx = [int(i) for i in np.asarray(index, dtype=int).ravel()]
        unc = np.asarray(unc, dtype=float).reshape(-1, self.model.dim)
        out = np.empty((unc.shape[0], len(idx)))
        for j, i in enumerate(idx):
            out[:, j] = self.column(i, unc)
        return out


class ConditionalSourceBase(ColumnsByObservation):
    """A pointwise source of log p(y_i | y₋ᵢ, θ) (``source = "conditional"``)."""

    source = "conditional"
    obs: Observations

    def chunks(self, unc: np.ndarray, constrained: np.ndarray | None = None,
               names: list[str] | None = None, chunk_bytes: int = CHUNK_BYTES,
               index: Sequence[int] | np.ndarray | None = None
               ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """``(index, block)`` over the observations ``index`` (default all)."""
        return column_chunks(self, unc, chunk_bytes, index)

    def matrix(self, unc: np.ndarray, constrained: np.ndarray | None = None,
               names: list[str] | None = None) -> np.ndarray:
        """``(S, N)`` matrix of log p(y_i | y₋ᵢ, θ)."""
        return self.columns(np.arange(self.obs.n), unc)

    def check(self, unc: np.ndarray, ll: np.ndarray | None = None) -> None:
        """Nothing to check: the normalization holds for any program (its conditions are
        checked observation by observation, draw by draw)."""

    def compare_log_lik(self, unc: np.ndarray, n_obs: int = 5) -> str | None:
        """No generated quantity to compare."""
        return None

    def held_out_model(self, i: int) -> Any:
        """Refits go through :mod:`~stanlogz.crossval.refit.heldout`, which checks that
        deleting y_i gives the program's held-out model."""
        raise InputError(f"{self.model.name}: refits need the split check of the held-out "
                         "program")
