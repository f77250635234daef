"""Helpers shared by the benchmark scripts."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

#: The repository root (benchmarks are run from it: ``python3 -m benchmarks.NAME``).
ROOT = Path(__file__).resolve().parents[1]
#: The Stan programs shipped with the repository.
STAN_MODELS = ROOT / "stan_models"


def z_cells(z: Sequence[float]) -> str:
    """Markdown cells of a coverage row from z-scores (error / claimed se): mean, rms, max
    |z|, and the shares of |z| above 2 and above 3."""
    import numpy as np

    a = np.asarray(z, dtype=float)
    return (f"{a.mean():+.2f} | {np.sqrt(np.mean(a**2)):.2f} | {np.abs(a).max():.2f} | "
            f"{np.mean(np.abs(a) > 2):.3f} | {np.mean(np.abs(a) > 3):.3f}")


def seeded_cases(doc: str, cases: Sequence[Any], columns: str,
                 **more: Any) -> tuple[argparse.Namespace, list[Any]]:
    """A coverage benchmark's command line (``--seeds``, ``--cases``, ``--out`` and ``more``:
    option name to default) and its chosen cases; prints the table's header (``columns``,
    ``|``-separated)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--cases", default=",".join(map(str, range(len(cases)))),
                    help="which cases, by index (default all)")
    ap.add_argument("--out", type=Path, default=None, help="JSON lines, one per run")
    for name, default in more.items():
        ap.add_argument(f"--{name}", default=default)
    args = ap.parse_args()
    print(f"| {columns} |")
    print("|" + "---|" * len(columns.split("|")))
    chosen = {int(i) for i in args.cases.split(",")}
    return args, [c for i, c in enumerate(cases) if i in chosen]
