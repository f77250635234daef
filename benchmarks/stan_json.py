"""Stan JSON writing: stanio's ``dump_stan_json`` (what :func:`stanlogz.stan.inputs.data_to_json`
uses now) against the hand-written converter it replaced (kept here as the baseline), on the
shipped example data and on a large numpy design matrix: time per call and whether the two
give the same values. Run: ``PYTHONPATH=. python3 -m benchmarks.stan_json`` (``--full`` adds a
200,000 x 20 matrix).
"""

from __future__ import annotations

import argparse
import json
import timeit
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import stanio

from stanlogz._util.tables import format_table
from stanlogz.stan.inputs import data_to_json

EXAMPLES = Path(__file__).resolve().parents[1] / "stan_models" / "examples"


def hand_written(data: Mapping[str, Any]) -> str:
    """The converter stanlogz used before stanio: a recursive walk to Python lists."""

    def conv(value: Any) -> Any:
        if isinstance(value, np.ndarray | np.generic):
            value = value.tolist()
        if isinstance(value, Mapping):
            return {str(k): conv(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [conv(v) for v in value]
        if isinstance(value, bool):
            return int(value)
        if isinstance(value, float) and not np.isfinite(value):
            return "NaN" if np.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
        return value

    return json.dumps({str(k): conv(v) for k, v in data.items()})


def _ms(fn: Any, data: Any) -> float:
    number = 3
    return 1e3 * min(timeit.repeat(lambda: fn(data), number=number, repeat=3)) / number


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="add a 200,000 x 20 matrix")
    args = parser.parse_args()
    rng = np.random.default_rng(1)
    cases: list[tuple[str, dict[str, Any]]] = []
    for name in ("normal_mean", "wells", "hier_regression"):
        d = json.loads((EXAMPLES / f"{name}.data.json").read_text())
        cases.append((f"{name} (lists)", d))
        cases.append((f"{name} (numpy)", {k: np.asarray(v) for k, v in d.items()}))
    sizes = [20_000] + ([200_000] if args.full else [])
    for n in sizes:
        cases.append((f"X {n} x 20 (numpy)", {"N": n, "K": 20, "X": rng.normal(size=(n, 20))}))
    rows = []
    for label, d in cases:
        same = json.loads(hand_written(d)) == json.loads(data_to_json(d))
        rows.append([label, _ms(hand_written, d), _ms(data_to_json, d), same])
    print(format_table(["data", "hand-written ms", "stanio ms", "same values"], rows,
                       f"Stan JSON writing (stanio {stanio.__version__}); best of 3"))


if __name__ == "__main__":
    main()
