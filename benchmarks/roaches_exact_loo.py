"""Exact leave-one-out values of the real roaches Poisson regression
(stan_models/tests/roaches_poisson.stan on stan_models/tests/roaches.json: N = 262, the loo
vignette's data: y, sqrt(roach1), treatment, senior, log(exposure2) as the offset), the
reference of the ``--mcse`` benchmark (benchmarks/mcse_target_coverage.py).

elpd_i = log Z − log Z₋ᵢ by Gauss–Hermite quadrature on the whitened Laplace coordinates
(benchmarks/loo_truth.py) at several node counts; the reference is the finest, its error the
largest change from the next finer-but-one. The values are cached in
benchmarks/data/roaches_exact_loo.json.

    python3 -m benchmarks.roaches_exact_loo
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from benchmarks.loo_truth import exact_loo

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "stan_models" / "tests" / "roaches.json"
CACHE = Path(__file__).resolve().parent / "data" / "roaches_exact_loo.json"
NODES = (24, 32, 40)


def reference() -> dict:
    """``{"elpd_loo", "error", "elpd_i", "by_nodes"}``, computed once and cached."""
    if CACHE.is_file():
        return json.loads(CACHE.read_text())
    data = json.loads(DATA.read_text())
    by_nodes = {}
    for n in NODES:
        t0 = time.perf_counter()
        by_nodes[n] = exact_loo(data, nodes=n)
        print(f"{n} nodes: elpd_loo {by_nodes[n].sum():.6f} ({time.perf_counter() - t0:.0f} s)")
    best = by_nodes[NODES[-1]]
    err = max(abs(by_nodes[n].sum() - best.sum()) for n in NODES[1:-1])
    out = {"elpd_loo": float(best.sum()), "error": float(err),
           "elpd_i": [float(v) for v in best],
           "by_nodes": {str(n): float(v.sum()) for n, v in by_nodes.items()}}
    CACHE.parent.mkdir(exist_ok=True)
    CACHE.write_text(json.dumps(out))
    return out


if __name__ == "__main__":
    r = reference()
    print(f"exact elpd_loo {r['elpd_loo']:.4f} +- {r['error']:.2e} (nodes: {r['by_nodes']})")
