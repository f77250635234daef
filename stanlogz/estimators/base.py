"""The result every evidence estimator returns."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from .._util.jsonable import json_value as _jsonable
from .names import EvidenceNames


@dataclass(repr=False)
class EvidenceResult(EvidenceNames):
    """A log normalizing-constant estimate with its standard error, cost and diagnostics.

    ``log_z_se`` is the standard error of ``log_z`` (for bounds such as AIS, the spread of the
    bound; NaN when no trustworthy one exists). ``log_z_df`` is its degrees of freedom when it
    comes from few replicates (runs, chains), so intervals use Student-t quantiles; None for a
    large-sample se. ``n_evals`` counts log-density (or gradient) evaluations spent by the
    estimator itself; ``n_draws`` the posterior draws it used. ``warnings`` are one-line messages
    that say what to do.
    ``detail`` is the method's own typed result for plots and further work (:class:`FlowDetail`
    for gbs, gis and ghm; :class:`~stanlogz.estimators.ups.ups.UPSResult` for ups; None otherwise);
    it is not part of :meth:`to_dict`.

    Attributes
    ----------
    method : str
        The estimator.
    log_z, log_z_se : float
        The estimate of log Z and its standard error.
    log_z_df : float or None
        Degrees of freedom of ``log_z_se`` (None: large-sample).
    n_draws, n_evals : int
        Posterior draws used, and density or gradient evaluations spent.
    seconds : float
        Wall time.
    diagnostics : dict
        The method's own diagnostics.
    warnings : list of str
        What to do about problems found.
    budget_stop : dict or None
        What the run's time budget ended (:func:`stanlogz.time_budget`): ``"sampling"``
        (``draws_kept``, ``draws_asked``: NUTS stopped past its warmup) and ``"bridge"``
        (gbs's orientations done, layers and flow samples cut), ``"tempered"`` (gbs's tempered
        bridge did not end: log Z has no se); None when it ended nothing.

    See Also
    --------
    stanlogz.evidence : makes it; :doc:`/tutorials/evidence_bayes_factors` shows several.
    """

    method: str
    log_z: float
    log_z_se: float
    n_draws: int = 0
    n_evals: int = 0
    seconds: float = 0.0
    diagnostics: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    detail: Any = None
    log_z_df: float | None = None
    budget_stop: dict[str, Any] | None = None

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """Central interval for log Z: normal quantiles, or Student-t with ``log_z_df``."""
        from scipy import stats

        q = (stats.norm.ppf(0.5 + level / 2) if self.log_z_df is None
             else stats.t.ppf(0.5 + level / 2, self.log_z_df))
        return self.log_z - q * self.log_z_se, self.log_z + q * self.log_z_se

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable dict: numpy scalars and arrays turned into Python values; the
        ``detail`` and any ``diagnostics`` whose keys start with ``_`` left out."""
        d = asdict(replace(self, detail=None))
        del d["detail"]
        d["diagnostics"] = {k: v for k, v in self.diagnostics.items()
                            if not str(k).startswith("_")}
        return _jsonable(d)

    def __str__(self) -> str:
        df = "" if self.log_z_df is None else f" (df {self.log_z_df:.0f})"
        return f"{self.method}: log Z = {self.log_z:.4f} ± {self.log_z_se:.4f}{df}"


@dataclass(frozen=True)
class FlowDetail:
    """What a flow-based estimate (gbs, gis, ghm) leaves for its plot: the fitted flow and the
    log weights log p - log q at the posterior draws (``log_w_p``) and at the flow's own samples
    (``log_w_q``), each None where the method has none."""

    flow: Any
    log_w_p: np.ndarray | None = None
    log_w_q: np.ndarray | None = None
