"""The result of leave-future-out cross-validation (:func:`~.lfo.lfo`): elpd_lfo, its se
(overlapping windows counted), Monte Carlo se, per-origin values and what a time budget
ended."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar

import numpy as np

from ... import arviz_compat
from ..._util.sum_se import sum_se
from ..elpd.base import ElpdResult
from ..names import LfoNames
from .cv_se import lfo_se


@dataclass(repr=False)
class LfoResult(LfoNames, ElpdResult):
    """Leave-future-out CV: ``elpd_lfo = Σ_t log p(y_{t+1:t+M} | y_{1:t})`` with its se, Monte
    Carlo se, per-origin values, k̂ and refits. Its pointwise values (``elpd_i``, ``mcse_i`` of
    the common interface) are the origins'.

    Attributes
    ----------
    model : str
        The program's name.
    method : str
        ``"psis"`` (PSIS from the last refit, refitting where k̂ is too high) or ``"exact"``
        (a refit at every origin).
    min_train, ahead : int
        The first training size and the steps predicted ahead (M).
    origins : ndarray of int
        The number of training observations t of each origin.
    elpd_t, mcse_t, khat_t : ndarray
        Per origin: ``log p(y_{t+1:t+M} | y_{1:t})``, its Monte Carlo se and k̂ (NaN where
        exact).
    refits : list of int
        The t at which NUTS ran on ``y_{1:t}``.
    n_gradient_evals : int
        The NUTS cost.
    warnings : list of str
        What to do about problems found.

    See Also
    --------
    stanlogz.lfo : makes it; :doc:`/tutorials/kfold_lfo` shows one.
    """

    kind: ClassVar[str] = "lfo"
    model: str
    method: str  # one of LFO_METHODS
    min_train: int
    ahead: int
    origins: np.ndarray  # t (number of training observations) per origin
    elpd_t: np.ndarray
    mcse_t: np.ndarray
    khat_t: np.ndarray  # NaN where the value is exact (a refit or method exact)
    refits: list[int]  # t at which NUTS ran on y_{1:t}
    k_threshold: float
    n_samples: int
    n_gradient_evals: int
    mcse_total: float | None = None  # se of the sum when the origins' errors are correlated
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)
    #: what the time budget ended (PSIS: the refits that did not fit, the origins kept on
    #: the last refit's draws above the k̂ threshold, whose mcse is NaN); None otherwise
    budget_stop: dict[str, Any] | None = None
    #: why the Monte Carlo se is NA (the mode search found a mode the first fit's chains
    #: miss: :func:`~.kfold_modes.missed_modes`); None otherwise
    mcse_na_note: str | None = None

    @property
    def elpd_i(self) -> np.ndarray:
        """Each origin's log p(y_{t+1:t+M} | y_{1:t}) (``elpd_t``)."""
        return self.elpd_t

    @property
    def mcse_i(self) -> np.ndarray:
        """Each origin's Monte Carlo se (``mcse_t``)."""
        return self.mcse_t

    @property
    def elpd_lfo(self) -> float:
        """Σ_t elpd_t."""
        return float(self.elpd_t.sum())

    @cached_property
    def se(self) -> float:
        """se of elpd_lfo as an estimate of the expected log score of the same origins'
        forecasts on new futures: overlapping M-step windows counted, small-n calibrated
        (:func:`stanlogz.crossval.refit.cv_se.lfo_se`); NaN when the origins are worth fewer than
        two independent ones."""
        return lfo_se(self.elpd_t, self.ahead)

    @property
    def se_naive(self) -> float:
        """sqrt(n var(elpd_t)) (ddof 1), the loo-style se that treats the origins as independent
        (too small for M > 1)."""
        return sum_se(self.elpd_t)

    @property
    def mcse(self) -> float:
        """Monte Carlo se of elpd_lfo (PSIS: the origins that share one refit's draws share
        their errors, and their sum's se counts that; exact: independent bridges). NaN with
        :attr:`mcse_na_note`."""
        if self.mcse_na_note:
            return math.nan
        if self.mcse_total is not None:
            return float(self.mcse_total)
        return float(math.sqrt(np.sum(self.mcse_t**2)))

    def table(self) -> list[list[Any]]:
        """Summary rows: (quantity, estimate, se, Monte Carlo se)."""
        return [[f"elpd_lfo ({self.ahead}-step-ahead)", round(self.elpd_lfo, 3),
                 round(self.se, 3), round(self.mcse, 4)]]

    def pointwise(self) -> list[dict[str, Any]]:
        """One row per forecast origin: t, the predicted observations (from 1), elpd, mc se,
        k̂ (None when exact) and whether NUTS was refit at t."""
        refit = set(self.refits)
        return [{"t": int(t), "predicts": [int(t) + 1, int(t) + self.ahead],
                 "elpd": float(e), "mcse": float(s),
                 "khat": None if not np.isfinite(k) else float(k), "refit": int(t) in refit}
                for t, e, s, k in zip(self.origins, self.elpd_t, self.mcse_t, self.khat_t,
                                      strict=True)]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable dict."""
        return {"model": self.model, "method": self.method, "min_train": self.min_train,
                "ahead": self.ahead, "elpd_lfo": self.elpd_lfo, "se": self.se,
                "se_naive": self.se_naive,
                "mcse": self.mcse, "k_threshold": self.k_threshold,
                "refits": list(self.refits), "n_refits": len(self.refits),
                "n_samples": self.n_samples, "n_gradient_evals": self.n_gradient_evals,
                "pointwise": self.pointwise(), "seconds": self.seconds,
                "budget_stop": self.budget_stop, "mcse_na_note": self.mcse_na_note,
                "warnings": self.warnings}

    def to_arviz(self) -> Any:
        """ArviZ's LFO ELPD object (``ELPDDataLFO`` in arviz-stats, ``ELPDData`` in 0.x)."""
        return arviz_compat.elpd_object(
            "lfo", elpd=self.elpd_lfo, se=self.se, p=float("nan"), n_samples=self.n_samples,
            elpd_i=self.elpd_t, warning=bool(self.warnings),
            good_k=self.k_threshold if self.method == "psis" else None,
            extra={"forecast_horizon": self.ahead, "min_observations": self.min_train,
                   "refits": np.asarray(self.refits), "n_refits": len(self.refits)})
