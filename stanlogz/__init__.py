"""stanlogz: log evidence, Bayes factors and Bayesian cross-validation for Stan programs.

The main entry points are ``evidence(...)`` (:func:`stanlogz.api.evidence`), :func:`compare`,
:class:`StanModel` and :class:`Draws` (the last two loaded on first use).
"""

from __future__ import annotations

import importlib
from typing import Any

from .errors import (
    ArgumentTypeError,
    DataError,
    EstimationError,
    InitializationError,
    InputError,
    StanCompileError,
    StanlogzError,
    ToolchainError,
)

__version__ = "0.1.0"

# name -> module that defines it; imported on first attribute access (so that importing the
# package, and the CLI's start, where Ctrl-C must still end in one line, stays cheap)
_LAZY = {
    "ComparisonResult": "stanlogz.estimators.comparison",
    "compare": "stanlogz.api",
    "evidence": "stanlogz.api",
    "EvidenceResult": "stanlogz.estimators.base",
    "CountingTarget": "stanlogz.densities.target",
    "FunctionTarget": "stanlogz.densities.target",
    "Target": "stanlogz.densities.target",
    "Draws": "stanlogz.draws",
    "sample": "stanlogz.draws",
    "as_draws": "stanlogz.draws",
    "from_csv": "stanlogz.draws",
    "from_cmdstanpy": "stanlogz.draws",
    "StanModel": "stanlogz.stan.model",
    "NutsArgs": "stanlogz.stan.settings",
    "StanProgram": "stanlogz.stan.program",
    "obtain_draws": "stanlogz.draws",
    "ais": "stanlogz.estimators.annealing.ais",
    "reverse_ais": "stanlogz.estimators.annealing.ais",
    "run_testbed": "stanlogz.testbed",
    "ups": "stanlogz.estimators.ups.ups",
    "log_ratio": "stanlogz.estimators.ups.ups",
    "loo": "stanlogz.crossval",
    "cv": "stanlogz.crossval",
    "loo_compare": "stanlogz.crossval",
    "LooResult": "stanlogz.crossval",
    "waic": "stanlogz.crossval.psis_loo.waic",
    "mixture_loo": "stanlogz.crossval.psis_loo.mixture_loo",
    "jacobian_adjusted": "stanlogz.crossval.observations.jacobian",
    "CVResult": "stanlogz.crossval",
    "ProgramChoice": "stanlogz.crossval.select.choose",
    "kfold": "stanlogz.crossval.refit.kfold",
    "KFoldResult": "stanlogz.crossval.refit.kfold",
    "lfo": "stanlogz.crossval.refit.lfo",
    "LfoResult": "stanlogz.crossval.refit.lfo_result",
    "heldout_elpd": "stanlogz.crossval.refit.heldout",
    "heldout_many": "stanlogz.crossval.refit.heldout",
    "sensitivity": "stanlogz.bayes_factors.sensitivity",
    "SensitivityResult": "stanlogz.bayes_factors.sensitivity",
    "savage_dickey": "stanlogz.bayes_factors.savage_dickey",
    "SavageDickeyResult": "stanlogz.bayes_factors.savage_dickey",
    "calibrate": "stanlogz.bayes_factors.calibrate",
    "CalibrationResult": "stanlogz.bayes_factors.calibrate",
    "time_budget": "stanlogz._util.deadline",
    "OverBudget": "stanlogz.errors",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'stanlogz' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The public API (loaded on first use) besides the module's own names, for ``dir()`` and
    tab completion."""
    return sorted(set(__all__) | set(_LAZY) | {n for n in globals() if n.startswith("__")})


__all__ = [
    "ArgumentTypeError",
    "CVResult",
    "CalibrationResult",
    "ComparisonResult",
    "CountingTarget",
    "DataError",
    "Draws",
    "EstimationError",
    "EvidenceResult",
    "FunctionTarget",
    "InitializationError",
    "InputError",
    "KFoldResult",
    "LfoResult",
    "LooResult",
    "OverBudget",
    "NutsArgs",
    "ProgramChoice",
    "SavageDickeyResult",
    "SensitivityResult",
    "StanCompileError",
    "StanModel",
    "StanProgram",
    "StanlogzError",
    "Target",
    "ToolchainError",
    "__version__",
    "ais",
    "as_draws",
    "calibrate",
    "compare",
    "cv",
    "evidence",
    "from_cmdstanpy",
    "from_csv",
    "heldout_elpd",
    "heldout_many",
    "jacobian_adjusted",
    "kfold",
    "lfo",
    "log_ratio",
    "loo",
    "loo_compare",
    "mixture_loo",
    "obtain_draws",
    "reverse_ais",
    "run_testbed",
    "sample",
    "savage_dickey",
    "sensitivity",
    "time_budget",
    "ups",
    "waic",
]
