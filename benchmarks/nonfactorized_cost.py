"""Cost of non-factorized LOO at real sizes (issue 37 items 3-4): ``loo`` with its defaults on an
AR(5) series without a log_lik (stan_models/bench/ar5.stan, data simulated here), 4 chains of
1000 draws, at N = 100, 200, 500 (and 1000 with --full).

Every observation takes the Gaussian closed form (the density is quadratic in y_t: a 5-point
fit, checked at 6 fitted sds and at the far points), so the pass costs about a dozen density
evaluations of the whole series per observation and draw: O(N² S).

Columns: N; total wall seconds of ``loo`` (program load, NUTS, the conditional pass, PSIS);
the conditional pass's wall seconds; CPU seconds of the process over the call (user + system,
all threads: what the work costs, less sensitive to other jobs than wall time); the pass's
wall milliseconds per observation; routes taken; elpd_loo; and the progress line's estimate
of the pass's total time (elapsed + time left) over the actual, at its first line and over all
its lines (within [0.5, 2] is the target). The load average is printed beside the table:
timings on a shared machine are only comparable at similar load.

    PYTHONPATH=. python3 benchmarks/nonfactorized_cost.py            # N = 100, 200, 500
    PYTHONPATH=. python3 benchmarks/nonfactorized_cost.py --full     # and N = 1000
    PYTHONPATH=. python3 benchmarks/nonfactorized_cost.py --sizes 200 --draws 250
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import time
from pathlib import Path
from typing import Any

import numpy as np

from stanlogz.crossval.psis_loo.loo import loo
from stanlogz.stan.model import StanModel

PROGRAM = Path(__file__).resolve().parents[1] / "stan_models" / "bench" / "ar5.stan"
BETA = np.array([0.5, -0.2, 0.15, -0.1, 0.05])
LINE = re.compile(r"(\d+)/(\d+) observations in ([\d.]+) (s|min|h), about ([\d.]+) (s|min|h)")
UNIT = {"s": 1.0, "min": 60.0, "h": 3600.0}


def ar5_data(n: int, seed: int) -> dict[str, Any]:
    """An AR(5) series of length ``n`` (alpha 0.3, the coefficients ``BETA``, sigma 1) after a
    burn-in of 100 steps, rounded to 1e-4."""
    rng = np.random.default_rng(seed)
    y = np.zeros(n + 100)
    for t in range(5, y.size):
        y[t] = 0.3 + BETA @ y[t - 5:t][::-1] + rng.normal()
    return {"K": 5, "T": n, "y": y[100:].round(4).tolist()}


def _cpu() -> float:
    own, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def one(model: StanModel, n: int, draws: int, seed: int) -> dict[str, Any]:
    """``loo`` of the AR(5) at length ``n``, timed, with its progress lines kept."""
    data = ar5_data(n, seed)
    lines: list[tuple[float, str]] = []
    t0 = time.perf_counter()
    c0 = _cpu()
    r = loo(model.with_data(data), data, obs="T", seed=seed, chains=4, n_draws=draws // 4,
            progress=lambda s: lines.append((time.perf_counter(), s)))
    wall, cpu = time.perf_counter() - t0, _cpu() - c0
    start = next(t for t, s in lines if s.startswith("pointwise log-likelihood of"))
    ratios = []
    for t, s in lines:
        m = LINE.search(s)
        if m and s.startswith("conditional log-likelihood"):
            est = float(m[3]) * UNIT[m[4]] + float(m[5]) * UNIT[m[6]]
            ratios.append((t - start + float(m[5]) * UNIT[m[6]]) / r.pointwise_seconds
                          if est > 0 else np.nan)
    routes = "gaussian" if not any("not Gaussian" in w for w in r.warnings) else "mixed"
    return {"n": n, "wall": wall, "pass": r.pointwise_seconds, "cpu": cpu,
            "per_obs": 1e3 * r.pointwise_seconds / n, "routes": routes, "elpd": r.elpd_loo,
            "se": r.se, "eta_first": ratios[0] if ratios else np.nan,
            "eta_range": (min(ratios), max(ratios)) if ratios else (np.nan, np.nan),
            "lines": len(ratios)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=None)
    ap.add_argument("--full", action="store_true", help="add N = 1000")
    ap.add_argument("--draws", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    sizes = a.sizes or ([100, 200, 500, 1000] if a.full else [100, 200, 500])
    model = StanModel.from_file(PROGRAM, ar5_data(sizes[0], a.seed))
    print(f"AR(5), {a.draws} draws, STANLOGZ_THREADS={os.environ.get('STANLOGZ_THREADS', '')!r}, "
          f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    print(f"{'N':>5} {'total s':>8} {'pass s':>7} {'cpu s':>7} {'ms/obs':>7} {'routes':>8} "
          f"{'elpd_loo':>9} {'ETA first':>9} {'ETA range':>11} {'load':>5}")
    for n in sizes:
        s = one(model, n, a.draws, a.seed)
        lo, hi = s["eta_range"]
        print(f"{n:>5} {s['wall']:>8.1f} {s['pass']:>7.1f} {s['cpu']:>7.1f} {s['per_obs']:>7.1f} "
              f"{s['routes']:>8} {s['elpd']:>9.2f} {s['eta_first']:>9.2f} "
              f"{lo:>5.2f}-{hi:<5.2f} {os.getloadavg()[0]:>5.1f}", flush=True)


if __name__ == "__main__":
    main()
