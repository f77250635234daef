"""The result of leave-one-group-out cross-validation without refits: :class:`LogoResult`."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..observations.observations import Observations


@dataclass
class GroupValue:
    """One group's log p(y_g | y₋g): estimate, Monte Carlo se (PSIS and integration), k̂ of the
    PSIS weights over the hyperparameter draws, how it was obtained."""

    label: int
    rows: np.ndarray
    elpd: float
    mcse: float
    khat: float
    method: str  # "psis" (integrated latents) or "refit" (exact refit, k̂ too high)
    #: "gauss-hermite" (adaptive, two rule sizes) or "laplace" (confirmed by Gauss–Hermite)
    integration: str
    integration_error: float  # bound on the integration error of elpd
    psis_elpd: float
    laplace_gap: float  # max over draws of |Gauss–Hermite − Laplace| of log p(y_g | φ)

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly (observations numbered from 1)."""
        return {"group": self.label, "n_obs": int(self.rows.size), "elpd": self.elpd,
                "mcse": self.mcse, "khat": self.khat, "method": self.method,
                "integration": self.integration,
                "integration_error": self.integration_error, "psis_elpd": self.psis_elpd,
                "laplace_gap": self.laplace_gap}


@dataclass(repr=False)
class LogoResult:
    """elpd_logo = Σ_g log p(y_g | y₋g) with its between-group se (loo's definition over
    groups, sqrt(G) sd of the group values, as loo's ``kfold`` of groups reports it) and its
    Monte Carlo se, and per-group and per-observation values.

    Attributes
    ----------
    model : str
        The program's name.
    group : str
        The per-observation group array.
    elpd_logo, se, mcse_elpd_logo : float
        Σ_g log p(y_g | y₋g), its se over groups and its Monte Carlo se.
    groups : list of GroupValue
        Per group: its value, k̂ and how it was computed.
    elpd_obs : ndarray or None
        log p(y_i | y₋g(i)) per observation.
    threshold : float
        The k̂ above which a group's PSIS value is not trusted.
    warnings : list of str
        What to do about problems found.

    See Also
    --------
    stanlogz.loo : with ``group=``, makes it (see :doc:`/guide/logo`).
    """

    model: str
    group: str
    elpd_logo: float
    se: float
    mcse_elpd_logo: float
    groups: list[GroupValue]
    elpd_obs: np.ndarray | None  # log p(y_i | y₋g(i)) per observation, or None
    observations: Observations
    n_samples: int
    threshold: float
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)
    #: Monte Carlo se of the PSIS part from the draws' summed influence (groups share draws)
    mcse_psis: float = 0.0
    #: Monte Carlo se of each observation-level value (NaN in refit groups), or None
    mcse_obs: np.ndarray | None = None

    @property
    def elpd_g(self) -> np.ndarray:
        """Per-group values."""
        return np.array([g.elpd for g in self.groups])

    @property
    def khat(self) -> np.ndarray:
        """Per-group k̂."""
        return np.array([g.khat for g in self.groups])

    def table(self) -> list[list[Any]]:
        """Summary rows: quantity, estimate, se, Monte Carlo se."""
        return [["elpd_logo", round(self.elpd_logo, 3), round(self.se, 3),
                 round(self.mcse_elpd_logo, 4)],
                ["logoic", round(-2 * self.elpd_logo, 3), round(2 * self.se, 3),
                 round(2 * self.mcse_elpd_logo, 4)]]

    def group_rows(self) -> list[list[Any]]:
        """One row per group."""
        return [[g.label, g.rows.size, round(g.elpd, 4), round(g.mcse, 4), round(g.khat, 2),
                 g.method, f"{g.integration_error:.1e}"] for g in self.groups]

    def pointwise(self) -> list[dict[str, Any]]:
        """One dict per group."""
        return [g.to_dict() for g in self.groups]

    def obs_pointwise(self) -> list[dict[str, Any]] | None:
        """One dict per observation: number (from 1), group label, log p(y_i | y₋g(i))."""
        if self.elpd_obs is None:
            return None
        of = np.empty(self.observations.n, dtype=int)
        for g in self.groups:
            of[g.rows] = g.label
        se = (np.full(self.observations.n, np.nan) if self.mcse_obs is None
              else self.mcse_obs)
        return [{"observation": i + 1, "group": int(of[i]), "elpd": float(self.elpd_obs[i]),
                 "mcse": None if np.isnan(se[i]) else float(se[i])}
                for i in range(self.observations.n)]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable dict."""
        return {"model": self.model, "scheme": "leave-one-group-out", "group": self.group,
                "method": "integrated-psis", "elpd_logo": self.elpd_logo, "se": self.se,
                "mcse_elpd_logo": self.mcse_elpd_logo, "mcse_psis": self.mcse_psis,
                "logoic": -2 * self.elpd_logo, "n_groups": len(self.groups),
                "n_obs": self.observations.n, "n_samples": self.n_samples,
                "threshold": self.threshold, "pointwise": self.pointwise(),
                "observations": self.obs_pointwise(), "seconds": self.seconds,
                "warnings": self.warnings}

    def __repr__(self) -> str:
        return (f"LogoResult({self.model}: elpd_logo {self.elpd_logo:.3f} (se {self.se:.3f}, "
                f"mc se {self.mcse_elpd_logo:.3f}) over {len(self.groups)} groups of "
                f"{self.group})")


def total_mcse(psis_part: float, refit_se: list[float], integration: list[float]) -> float:
    """Monte Carlo se of the total: the PSIS part (shared draws), the refits' se in quadrature,
    and the integration errors added linearly (they are bounds of one sign each, not random)."""
    return math.sqrt(psis_part**2 + sum(s**2 for s in refit_se)) + sum(integration)
