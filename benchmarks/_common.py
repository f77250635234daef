"""Helpers shared by the benchmark scripts."""

from __future__ import annotations

from pathlib import Path

#: The repository root (benchmarks are run from it: ``python3 -m benchmarks.NAME``).
ROOT = Path(__file__).resolve().parents[1]
#: The Stan programs shipped with the repository.
STAN_MODELS = ROOT / "stan_models"
