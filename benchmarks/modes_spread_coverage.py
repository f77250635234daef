"""Coverage of the held-out value's se where a refit's chains sit in different modes that the
value does not tell apart (:func:`stanlogz.draws.modes.modes_verdict`: no warning, the se
widened by the chains' spread beyond their own errors).

``python3 -m benchmarks.modes_spread_coverage [--runs R] [--out FILE]``

The program is ``stan_models/tests/mixture_uneven.stan``: two unit-variance normal components
with no ordering of their means, 10 observations near -3 and 10 near 3, observation 1
(y = -3.4) held out. Its posterior has two modes that swap the labels. The prior means -m and
m make their weights uneven (m = 2: 0.72 and 0.28); a mixing weight lambda away from 0.5 makes
the held-out density differ between them. The exact log p(y_1 | y_-1) is a quadrature over a
grid of the two means (step 0.02 against posterior sds of 0.3: the trapezoid rule on a smooth
density is exact to far below the Monte Carlo error; the per-mode values and weights come from
the same grid, restricted to either side of mu[1] = mu[2]).

Each run gives :func:`stanlogz.heldout_elpd`

* full-data draws drawn exactly from the grid's posterior (4 x 1,000, each mode at its
  weight): the refit is what is under test, not the full fit;
* training draws from NUTS (4 chains, 500 warmup, 1,000 draws) whose chains start in the
  modes at random, each mode at least once (the joined warm and probe chains of a refit whose
  probe found the other mode). NUTS does not cross between these modes, so the training
  draws weight them by their chains' counts (2:2 or 3:1), not 0.72:0.28.

It reports how often the value was flagged (chains disagree on it: se NA), the share of the
others within 1 and 1.96 of their se of the exact value, the same with the rule before (the
se widened by the chains' spread beyond their own errors) and with no widening, and how much
wider the se is than unwidened, per (m, lambda). The runs are independent; the coverage's own
binomial sd at 95% over R runs is sqrt(0.95 * 0.05 / R).
"""

from __future__ import annotations

import argparse
import functools
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats
from scipy.special import logsumexp

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = ROOT / "stan_models" / "tests" / "mixture_uneven.stan"
Y = np.r_[np.linspace(-3.4, -2.6, 10), np.linspace(2.6, 3.4, 10)]
STEP = 0.02
GRID = np.arange(-7.0, 7.0, STEP) + STEP / 2
#: (m, lambda): alike and even; even values with uneven weights; then values further apart
CASES = [(0.0, 0.5), (2.0, 0.5), (2.0, 0.502), (2.0, 0.505), (2.0, 0.51)]


def _log_post(y: np.ndarray, lam: float, m: float) -> np.ndarray:
    """The program's log density (constants kept) times the grid's cell area, on the grid."""
    m1, m2 = np.meshgrid(GRID, GRID, indexing="ij")
    lp = stats.norm.logpdf(m1, -m, 5) + stats.norm.logpdf(m2, m, 5)
    for v in y:
        lp = lp + np.logaddexp(np.log(lam) + stats.norm.logpdf(v, m1, 1),
                               np.log1p(-lam) + stats.norm.logpdf(v, m2, 1))
    return lp + 2 * np.log(STEP)


def exact(lam: float, m: float) -> dict[str, float]:
    """log p(y_1 | y_-1), the per-mode values (mode A: mu[1] < mu[2]) and mode A's weight
    given y_-1, by quadrature."""
    f, t = _log_post(Y, lam, m), _log_post(Y[1:], lam, m)
    m1, m2 = np.meshgrid(GRID, GRID, indexing="ij")
    a = m1 < m2
    return {"value": float(logsumexp(f) - logsumexp(t)),
            "value_a": float(logsumexp(f[a]) - logsumexp(t[a])),
            "value_b": float(logsumexp(f[~a]) - logsumexp(t[~a])),
            "weight_a": float(np.exp(logsumexp(t[a]) - logsumexp(t)))}


def grid_draws(lam: float, m: float, rng: np.random.Generator, chains: int = 4,
               n: int = 1000) -> np.ndarray:
    """Independent draws of the full-data posterior from the grid (a cell at its mass, then
    uniform within it), ``(chains, n, 2)``."""
    lp = _log_post(Y, lam, m).ravel()
    p = np.exp(lp - logsumexp(lp))
    cells = rng.choice(p.size, size=chains * n, p=p)
    i, j = np.unravel_index(cells, (GRID.size, GRID.size))
    x = np.c_[GRID[i], GRID[j]] + rng.uniform(-STEP / 2, STEP / 2, size=(chains * n, 2))
    return x.reshape(chains, n, 2)


@functools.cache
def _models(lam: float, m: float) -> tuple[Any, Any]:
    """The program on all data and without observation 1, built once per case."""
    import stanlogz

    data = {"N": int(Y.size), "y": Y.tolist(), "lambda": lam, "m": m}
    train_data = {**data, "N": int(Y.size - 1), "y": Y[1:].tolist()}
    return (stanlogz.StanModel.from_file(str(PROGRAM), data),
            stanlogz.StanModel.from_file(str(PROGRAM), train_data))


def one_run(lam: float, m: float, seed: int, recorded: list[Any]) -> dict[str, Any]:
    import stanlogz
    from stanlogz.crossval.observations.observations import find_observations
    from stanlogz.draws.sample import sample

    rng = np.random.default_rng([seed, int(lam * 1e4), int(m * 10)])
    data = {"N": int(Y.size), "y": Y.tolist(), "lambda": lam, "m": m}
    model, train = _models(lam, m)
    while True:  # each mode at least once
        in_a = rng.random(4) < 0.5
        if 0 < in_a.sum() < 4:
            break
    inits = [{"mu": [-3.0, 3.0] if a else [3.0, -3.0]} for a in in_a]
    td = sample(train, seed=seed, init=inits, chains=4, warmup=500, draws=1000)
    stuck = bool(np.all((td.unconstrained[..., 0] < td.unconstrained[..., 1])
                        == in_a[:, None]))
    full = grid_draws(lam, m, rng)
    recorded.clear()
    r = stanlogz.heldout_elpd(model, data, find_observations(data), [0], full_draws=full,
                              train_draws=td, seed=seed)
    spread, v, se = recorded[0] if recorded else (0.0, np.zeros(0), np.zeros(0))
    flagged = any("chains disagree" in w for w in r.warnings)
    # the rule before (the chains' spread beyond their own errors) from the same values
    before = math.sqrt(max(np.var(v, ddof=1) - np.mean(se**2), 0.0)) if v.size > 1 else 0.0
    return {"m": m, "lambda": lam, "seed": seed, "in_a": int(in_a.sum()), "stuck": stuck,
            "elpd": r.elpd, "mcse": r.mcse, "spread": spread, "spread_before": before,
            "flagged": flagged, "method": r.method, "chain_values": v.tolist(),
            "chain_ses": se.tolist()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--out", type=Path, default=None, help="JSON lines, one per run")
    ap.add_argument("--cases", type=str, default=None,
                    help="m:lambda,... (default: the five of CASES)")
    args = ap.parse_args()
    from stanlogz.crossval.refit import heldout
    from stanlogz.draws.modes import chain_values

    real = heldout.modes_verdict
    recorded: list[Any] = []

    def recording(*a: Any, **k: Any) -> Any:
        out = real(*a, **k)
        recorded.append((out[1], *chain_values(k["quantity"])))
        return out

    heldout.modes_verdict = recording
    cases = CASES if args.cases is None else [
        tuple(float(x) for x in c.split(":")) for c in args.cases.split(",")]
    print("| m | lambda | weight of mode A | value A - B | runs | chains stuck | flagged "
          "(se NA) | within 1 se | within 1.96 se | within 1.96 se, the rule before | "
          "within 1.96 se, unwidened | median se / unwidened se |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for m, lam in cases:
        ex = exact(lam, m)
        rows = [one_run(lam, m, seed, recorded) for seed in range(1, args.runs + 1)]
        if args.out is not None:
            with args.out.open("a") as fh:
                for r in rows:
                    fh.write(json.dumps({**r, "exact": ex["value"]}) + "\n")
        ok = [r for r in rows if not r["flagged"] and math.isfinite(r["mcse"])]
        err = np.array([r["elpd"] - ex["value"] for r in ok])
        se = np.array([r["mcse"] for r in ok])
        raw = np.sqrt(np.maximum(se**2 - np.array([r["spread"] for r in ok]) ** 2, 1e-300))
        z, z_raw = err / se, err / raw
        z_before = err / np.hypot(raw, [r["spread_before"] for r in ok])
        ratio = se / raw

        def share(x: np.ndarray, c: float) -> str:
            return f"{np.mean(np.abs(x) <= c):.2f}" if x.size else "-"

        print(f"| {m:g} | {lam:g} | {ex['weight_a']:.3f} | {ex['value_a'] - ex['value_b']:+.4f}"
              f" | {len(rows)} | {sum(r['stuck'] for r in rows)} | "
              f"{sum(r['flagged'] for r in rows)} | {share(z, 1.0)} | {share(z, 1.96)} | "
              f"{share(z_before, 1.96)} | {share(z_raw, 1.96)} | "
              f"{np.median(ratio) if ratio.size else float('nan'):.2f} |", flush=True)
    heldout.modes_verdict = real


if __name__ == "__main__":
    main()
