"""Evidence estimators. Every method has the signature

``estimate(target, draws, *, seed=None, **options) -> EvidenceResult``

where ``target`` follows :class:`stanlogz.densities.target.Target` and ``draws`` are
posterior draws in unconstrained space shaped ``(chains, n, dim)``. :data:`METHODS` maps the
names users pass to ``--method`` onto those functions (imported lazily).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from ..errors import InputError
from .base import EvidenceResult

METHODS: dict[str, str] = {
    "gbs": "stanlogz.estimators.bridge:gbs",
    "gis": "stanlogz.estimators.baselines:gis",
    "ghm": "stanlogz.estimators.baselines:ghm",
    "bridge-gaussian": "stanlogz.estimators.baselines:bridge_gaussian",
    "bridge-warp3": "stanlogz.estimators.baselines:bridge_warp3",
    "laplace": "stanlogz.estimators.baselines:laplace",
    "ais": "stanlogz.estimators.ais:ais_estimate",
    "rais": "stanlogz.estimators.ais:rais_estimate",
    "ups": "stanlogz.estimators.ups:ups_estimate",
    "smc": "stanlogz.estimators.smc:smc_estimate",
}


def get_method(name: str) -> Callable[..., EvidenceResult]:
    """The estimator function registered under ``name``."""
    if name not in METHODS:
        raise InputError(f"unknown method {name!r}; choose one of {', '.join(METHODS)}")
    module, func = METHODS[name].split(":")
    return getattr(importlib.import_module(module), func)
