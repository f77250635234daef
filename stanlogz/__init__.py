"""stanlogz: log evidence, Bayes factors and Bayesian cross-validation for Stan programs."""

from .errors import (
    DataError,
    EstimationError,
    InitializationError,
    InputError,
    StanCompileError,
    StanlogzError,
    ToolchainError,
)
from .result import EvidenceResult
from .target import CountingTarget, FunctionTarget, Target

__version__ = "0.1.0"

__all__ = [
    "CountingTarget",
    "DataError",
    "EstimationError",
    "EvidenceResult",
    "FunctionTarget",
    "InitializationError",
    "InputError",
    "StanCompileError",
    "StanlogzError",
    "Target",
    "ToolchainError",
    "__version__",
]
