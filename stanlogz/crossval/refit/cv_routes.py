"""The path of unbiased leave-one-out CV for programs whose held-out program is not the same
program with one observation fewer (per-observation or linked latents, non-factorized
likelihoods): the pointwise log-likelihood ℓ_i(θ) that :func:`~stanlogz.crossval.psis_loo.loo.loo`
routes to (:func:`~stanlogz.crossval.elpd.routes.pointwise_source`: ``log_lik``, the
difference, the conditional log p(y_i | y₋ᵢ, θ), the integrated one) defines

    log π_λ(θ) = log p(θ, y) + (λ − 1) ℓ_i(θ),

whose λ = 1 end is the full posterior and whose λ = 0 end integrates to p(y₋ᵢ) (ℓ_i is the
factor of y_i in the joint density, its latents integrated or not), so the path's
log Z₁ − log Z₀ is log p(y_i | y₋ᵢ)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import InputError, Route
from ...stan.program import StanProgram
from ..elpd.routes import pointwise_source
from ..observations.observations import Observations


class PointwisePath:
    """The path above for observation ``i`` of ``source`` (a pointwise source of
    :mod:`~stanlogz.crossval.elpd.routes`); gradient-free (RWMH kernel)."""

    def __init__(self, model: StanProgram, source: Any, i: int) -> None:
        self.model, self.source, self.i = model, source, int(i)

    @property
    def dim(self) -> int:
        return int(self.model.dim)

    def _ends(self, x: np.ndarray) -> tuple[float, float]:
        x = np.asarray(x, dtype=float)
        lp = float(self.model.log_density(x))
        if not np.isfinite(lp):
            return lp, 0.0
        return lp, float(self.source.column(self.i, x[None, :])[0])

    def U(self, lam: float, x: np.ndarray) -> float:
        lp, ll = self._ends(x)
        return lp + (float(lam) - 1.0) * ll

    def dU_dlam(self, lam: float, x: np.ndarray) -> float:
        return self._ends(x)[1]

    def U_and_dU_dlam(self, lam: float, x: np.ndarray) -> tuple[float, float]:
        """``U`` and ``dU_dlam`` from one evaluation of the density and of ℓ_i."""
        lp, ll = self._ends(x)
        return lp + (float(lam) - 1.0) * ll, ll

    def grad_x(self, lam: float, x: np.ndarray) -> tuple[float, np.ndarray]:
        raise InputError(f"{self.model.name}: its leave-one-out path uses the {self.source.source}"
                         " log-likelihood, which has no gradient; use kernel='rwmh'")


def routed_source(model: StanProgram, data: dict[str, Any], obs: Observations, unc: np.ndarray,
                  n_valid: int, criterion: str, kernel: str) -> Any:
    """The pointwise source loo would use, for a program whose held-out program changes the
    parameters; a one-line :class:`InputError` where this path does not apply."""
    why = f"leaving out observations changes the parameters of {model.name}"
    if criterion != "log" or n_valid != 1:
        raise InputError(f"{why}: unbiased CV then needs n_valid = 1 and the log criterion "
                         "(the leave-one-out path of loo's pointwise log-likelihood); or "
                         f"cross-validate over groups ({Route('kfold', {'group': ...})})",
                         routes=Route("kfold", {"group": ...}))
    if kernel != "rwmh":
        raise InputError(f"{why}: its leave-one-out path uses loo's pointwise log-likelihood, "
                         f"which has no gradient; use {Route(options={'kernel': 'rwmh'})}",
                         routes=Route(options={"kernel": "rwmh"}))
    rows = np.unique(np.linspace(0, unc.shape[0] - 1, min(4, unc.shape[0])).astype(int))
    return pointwise_source(model, data, obs, "auto", unc[rows])
