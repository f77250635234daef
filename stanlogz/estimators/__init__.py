"""Evidence estimators: the result type (``base``), the registry of methods users choose by
name with one validated options class each (``registry``, ``options``), and the algorithms in
sub-packages: ``bridge`` (gbs and the baseline bridges), ``annealing`` (AIS, SMC), ``ups`` and
``reciprocal`` (unbiased 1/Z); the testbed's ``shortcuts`` stay at the root."""

from .base import EvidenceResult
from .options import MethodOptions
from .registry import METHODS, Method, get_method, lookup

__all__ = ["METHODS", "EvidenceResult", "Method", "MethodOptions", "get_method", "lookup"]
