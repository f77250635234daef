"""Python values for JSON output (the JSON mode, ``to_dict``): NumPy scalars and arrays become
Python numbers and lists, NaN becomes null and an infinity +-1e308 (JSON has neither). Stan's
own JSON data format, which spells them "NaN" and "Infinity", is
:func:`stanlogz.stan.inputs.data_to_json`."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def json_value(obj: Any) -> Any:
    """``obj`` with every container, NumPy value and non-finite float made JSON-serializable."""
    if isinstance(obj, dict):
        return {str(k): json_value(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [json_value(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return json_value(obj.tolist())
    if isinstance(obj, np.generic):
        return json_value(obj.item())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None if math.isnan(obj) else (1e308 if obj > 0 else -1e308)
    return obj
