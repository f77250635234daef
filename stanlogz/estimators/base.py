"""The result every evidence estimator returns."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from .._util.jsonable import json_value as _jsonable


@dataclass
class EvidenceResult:
    """A log normalizing-constant estimate with its standard error, cost and diagnostics.

    ``log_z_se`` is the standard error of ``log_z`` (for bounds such as AIS, the spread of the
    bound). ``n_evals`` counts log-density (or gradient) evaluations spent by the estimator itself;
    ``n_draws`` the posterior draws it used. ``warnings`` are one-line messages that say what to do.
    ``detail`` is the method's own typed result for plots and further work (:class:`FlowDetail`
    for gbs, gis and ghm; :class:`~stanlogz.estimators.ups.UPSResult` for ups; None otherwise);
    it is not part of :meth:`to_dict`.
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

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable dict: numpy scalars and arrays turned into Python values; the
        ``detail`` and any ``diagnostics`` whose keys start with ``_`` left out."""
        d = asdict(replace(self, detail=None))
        del d["detail"]
        d["diagnostics"] = {k: v for k, v in self.diagnostics.items()
                            if not str(k).startswith("_")}
        return _jsonable(d)

    def __str__(self) -> str:
        return f"{self.method}: log Z = {self.log_z:.4f} ± {self.log_z_se:.4f}"


@dataclass(frozen=True)
class FlowDetail:
    """What a flow-based estimate (gbs, gis, ghm) leaves for its plot: the fitted flow and the
    log weights log p - log q at the posterior draws (``log_w_p``) and at the flow's own samples
    (``log_w_q``), each None where the method has none."""

    flow: Any
    log_w_p: np.ndarray | None = None
    log_w_q: np.ndarray | None = None
