"""How right is the time left that NUTS's progress lines print (issue 37 item 3: "an ETA that
is right within 2x")?

Runs stanlogz's NUTS (4 chains, 1000 warmup + 1000 draws, CmdStan's defaults) on programs of the
posteriordb corpus (``../shared/corpus/posteriordb``) with progress lines, and for every line
that carries "about T left" compares the predicted end (the line's time + T) with the actual end.
Columns: posterior; wall seconds of sampling; lines with a time left; the ratio predicted total /
actual total at the first such line, and its range over all lines (target: within [0.5, 2]).
The load average is printed beside the table: timings on a shared machine are only comparable at
similar load.

    PYTHONPATH=. python3 -m benchmarks.nuts_eta              # four corpus posteriors
    PYTHONPATH=. python3 -m benchmarks.nuts_eta --only eight_schools-eight_schools_centered
"""

from __future__ import annotations

import argparse
import os
import re
import time
from pathlib import Path

from stanlogz.stan.load import load_model

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "posteriordb"
DEFAULT = ("eight_schools-eight_schools_centered", "kidiq-kidscore_interaction",
           "radon_mn-radon_variable_intercept_slope_noncentered", "gp_pois_regr-gp_regr")
LEFT = re.compile(r"about ([\d.]+) (s|min|h) left")
UNIT = {"s": 1.0, "min": 60.0, "h": 3600.0}


def one(name: str, seed: int) -> dict[str, float | str | int]:
    """Sample posterior ``name`` with progress lines; the predicted/actual ratios."""
    folder = CORPUS / name
    model = load_model(folder / "model.stan", folder / "data.json", seed=seed)
    lines: list[tuple[float, str]] = []
    start = time.perf_counter()
    model.nuts(seed=seed, progress=lambda s: lines.append((time.perf_counter(), s)))
    end = time.perf_counter()
    ratios = []
    for t, line in lines:
        m = LEFT.search(line)
        if m:
            predicted = t - start + float(m[1]) * UNIT[m[2]]
            ratios.append(predicted / (end - start))
    return {"posterior": name, "wall": end - start, "lines": len(ratios),
            "first": ratios[0] if ratios else float("nan"),
            "lo": min(ratios, default=float("nan")), "hi": max(ratios, default=float("nan"))}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", default=list(DEFAULT), metavar="NAME")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.1f}")
    print("| posterior | sampling wall s | lines with a time left | first predicted/actual "
          "| range over lines |")
    print("|---|---|---|---|---|")
    for name in args.only:
        r = one(name, args.seed)
        print(f"| {r['posterior']} | {r['wall']:.1f} | {r['lines']} | {r['first']:.2f} "
              f"| {r['lo']:.2f}-{r['hi']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
