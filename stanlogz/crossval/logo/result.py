"""The result of leave-one-group-out cross-validation without refits: :class:`LogoResult`, an
elpd result (:class:`~stanlogz.crossval.elpd.base.ElpdResult`) of kind ``"logo"`` whose units
are the groups."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ..elpd.base import ElpdResult
from ..names import LogoNames, group_se_notes
from ..observations.observations import Observations
from ..refit.cv_se import ElpdInterval, elpd_interval


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
class LogoResult(LogoNames, ElpdResult):
    """elpd_logo = Σ_g log p(y_g | y₋g) with its between-group se (loo's definition over
    groups, sqrt(G) sd of the group values, as loo's ``kfold`` of groups reports it), the
    calibrated interval beside it (:attr:`elpd_logo_interval`, as ``loo``'s for few
    observations) and its Monte Carlo se (NaN, loo's NA, while a group's PSIS value above the
    k̂ threshold is kept: :meth:`mcse_na_reason`), and per-group and per-observation values.

    Attributes
    ----------
    model : str
        The program's name.
    group : str
        The per-observation group array.
    elpd_logo, se, mcse_elpd_logo : float
        Σ_g log p(y_g | y₋g), its se over groups (ddof 1) and its Monte Carlo se (NaN while a
        group above the k̂ threshold keeps its PSIS value).
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

    Notes
    -----
    Read through the elpd interface its units are the groups: ``elpd`` is ``elpd_logo``,
    ``elpd_i`` and ``mcse_i`` are per group, ``p`` is NaN (no in-sample lppd of the groups is
    computed) and ``n_obs`` counts observations (``n_groups`` the groups).
    """

    kind: ClassVar[str] = "logo"
    unit: ClassVar[str] = "groups"

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
    #: The sampler's signs that the draws miss part of the posterior (mc se then NaN)
    draws_flags: list[str] = field(default_factory=list)
    #: What the time budget changed (``pass_draws``: the groups' pass on fewer draws;
    #: ``obs_values``: left out; ``refits_skipped``: the groups not refit); None otherwise
    budget_stop: dict[str, Any] | None = None

    @property
    def p_logo(self) -> float:
        """Not computed (it needs the groups' in-sample lppd); NaN."""
        return math.nan

    @property
    def mcse(self) -> float:
        """The elpd interface's name of ``mcse_elpd_logo``."""
        return float(self.mcse_elpd_logo)

    @property
    def elpd_i(self) -> np.ndarray:
        """The elpd interface's pointwise values: per group, log p(y_g | y₋g)."""
        return self.elpd_g

    @property
    def mcse_i(self) -> np.ndarray:
        """Monte Carlo se of each group's value."""
        return np.array([g.mcse for g in self.groups])

    @property
    def n_obs(self) -> int:
        """Number of observations (the groups hold them all)."""
        return int(self.observations.n)

    @property
    def n_groups(self) -> int:
        """Number of groups, the units of ``elpd_i`` and of ``se``."""
        return len(self.groups)

    @property
    def n_units(self) -> int:
        """The units of ``elpd_i`` and ``se``: the groups."""
        return len(self.groups)

    @property
    def fixed(self) -> list[GroupValue]:
        """The groups recomputed by an exact refit (k̂ too high for PSIS)."""
        return [g for g in self.groups if g.method == "refit"]

    def fixed_labels(self) -> list[int]:
        """The labels of the groups recomputed by refits."""
        return [g.label for g in self.fixed]

    def unit_values(self) -> dict[str, Any]:
        """Each group's value and Monte Carlo se, for a comparison's ``to_dict``."""
        return {"elpd_g": [float(v) for v in self.elpd_g],
                "mcse_g": [g.mcse for g in self.groups]}

    def comparison_info(self) -> dict[str, Any]:
        """The scheme and the group variable, for a comparison's ``to_dict``."""
        return {"scheme": "leave-one-group-out", "group": self.group}

    def unfixed_bad(self) -> list[int]:
        """The elpd family's name of :meth:`bad_groups` (what a comparison's ``diag_elpd``
        counts)."""
        return self.bad_groups()

    @property
    def elpd_logo_obs(self) -> float:
        """Σ_i log p(y_i | y₋g(i)), the per-observation sum beside the headline (``kfold``'s
        elpd_kfold of the same folds); NaN when the observation values were not computed."""
        return math.nan if self.elpd_obs is None else float(np.sum(self.elpd_obs))

    @property
    def elpd_g(self) -> np.ndarray:
        """Per-group values."""
        return np.array([g.elpd for g in self.groups])

    @property
    def khat(self) -> np.ndarray:
        """Per-group k̂."""
        return np.array([g.khat for g in self.groups])

    @property
    def elpd_logo_interval(self) -> ElpdInterval:
        """The calibrated interval beside ``se``: elpd_logo ± 2 c se, c the small-count
        bootstrap-t factor of the group values (the interval ``loo`` gives beside its se,
        :func:`~stanlogz.crossval.refit.cv_se.elpd_interval`; coverage at few groups:
        ``benchmarks/logo_interval.py``)."""
        return elpd_interval(self.elpd_g, self.elpd_logo)

    def bad_groups(self) -> list[int]:
        """Labels of the groups above the k̂ threshold that keep their PSIS value."""
        return [g.label for g in self.groups if g.method == "psis" and g.khat > self.threshold]

    def mcse_na_reason(self) -> str | None:
        """Why ``mcse_elpd_logo`` is NaN (loo's NA), or None when it is given."""
        if left := self.bad_groups():
            return (f"{len(left)} group(s) still have Pareto k-hat above {self.threshold:.2f}: "
                    "PSIS's error on them is not estimable from the draws (their own mc se "
                    "understates it), so the total has none")
        if self.draws_flags:
            return (f"the sampler flagged the draws ({', '.join(self.draws_flags)}): they may "
                    "miss part of the posterior (e.g. a centred hierarchy's funnel), which "
                    "biases every group alike and no Monte Carlo se given the draws covers; "
                    "reparameterize (non-centred) or sample with a higher adapt_delta and "
                    "longer warmup")
        return None if np.isfinite(self.mcse_elpd_logo) else "unreliable values (see warnings)"

    def se_notes(self) -> list[str]:
        """The calibrated interval beside the se, and when the se over groups is too small
        (fewer than 20 groups, as ``loo``'s note for observations)."""
        return group_se_notes(self.elpd_logo_interval, len(self.groups))

    def mcse_note(self) -> str:
        """The line on the Monte Carlo se of elpd_logo (NA with the reason when withheld)."""
        why = self.mcse_na_reason()
        if why is not None:
            return f"MCSE of elpd_logo is NA: {why}."
        return f"MCSE of elpd_logo is {self.mcse_elpd_logo:.3f}."

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
        iv = self.elpd_logo_interval
        return {**self.elpd_dict(), "model": self.model, "scheme": "leave-one-group-out",
                "group": self.group, "method": "integrated-psis", "elpd_logo": self.elpd_logo,
                "se": self.se,
                "elpd_logo_interval": iv.to_dict() if np.isfinite(iv.low) else None,
                "mcse_elpd_logo": (self.mcse_elpd_logo if np.isfinite(self.mcse_elpd_logo)
                                   else None),
                "mcse_elpd_logo_na": self.mcse_na_reason(), "mcse_psis": self.mcse_psis,
                "draws_flags": self.draws_flags,
                "elpd_logo_obs": None if self.elpd_obs is None else self.elpd_logo_obs,
                "logoic": -2 * self.elpd_logo, "n_groups": len(self.groups),
                "n_obs": self.observations.n, "n_samples": self.n_samples,
                "threshold": self.threshold, "pointwise": self.pointwise(),
                "observations": self.obs_pointwise(), "seconds": self.seconds,
                "budget_stop": self.budget_stop, "warnings": self.warnings}



def total_mcse(psis_part: float, refit_se: list[float], integration: list[float]) -> float:
    """Monte Carlo se of the total: the PSIS part (shared draws), the refits' se in quadrature,
    and the integration errors added linearly (they are bounds of one sign each, not random)."""
    return math.sqrt(psis_part**2 + sum(s**2 for s in refit_se)) + sum(integration)
