"""The result every evidence estimator returns."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from .._util.jsonable import json_value as _jsonable


@dataclass
class EvidenceResult:
    """A log normalizing-constant estimate with its standard error, cost and diagnostics.

    ``log_z_se`` is the standard error of ``log_z`` (for bounds such as AIS, the spread of the
    bound). ``n_evals`` counts log-density (or gradient) evaluations spent by the estimator itself;
    ``n_draws`` the posterior draws it used. ``warnings`` are one-line messages that say what to do.
    """

    method: str
    log_z: float
    log_z_se: float
    n_draws: int = 0
    n_evals: int = 0
    seconds: float = 0.0
    diagnostics: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable dict: numpy scalars and arrays turned into Python values, and the
        ``diagnostics`` whose keys start with ``_`` (plot data such as the fitted flow) left out."""
        d = asdict(self)
        d["diagnostics"] = {k: v for k, v in self.diagnostics.items()
                            if not str(k).startswith("_")}
        return _jsonable(d)

    def __str__(self) -> str:
        return f"{self.method}: log Z = {self.log_z:.4f} ± {self.log_z_se:.4f}"
