"""How close kfold's up-front time estimate (stanlogz.crossval.refit.kfold_time.refit_seconds:
the full fit's seconds times each refit's share of the data, plus HELDOUT_SHARE for the
held-out densities, and for a program whose held-out densities go term by term each held-out
observation's term, timed on 20 of them; and the observations to be refit on their own,
counted by the k̂ of their weights p(y_i | θ) at the full fit's draws, each a short warm run
and its densities) comes to the refits' actual time, on programs of several sizes, at
stanlogz's default sampler settings (4 chains x 1000 + 1000), serial refits; posteriordb
radon_county_intercept (K = 5) on both backends: the interpreted one, which a time budget
picks, samples it in a quarter second, so the held-out terms are most of a refit.

    nice -n 10 python3 -m benchmarks.kfold_time_estimate
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import stanlogz

ROOT = Path(__file__).resolve().parents[1]
CASES = [
    ("normal_mean (N = 10)", "stan_models/examples/normal_mean.stan",
     "stan_models/examples/normal_mean.data.json", 5),
    ("regression (N = 25)", "stan_models/examples/regression.stan",
     "stan_models/examples/regression.data.json", 5),
    ("roaches Poisson (N = 262)", "stan_models/tests/roaches_poisson.stan",
     "stan_models/tests/roaches.json", 10),
]
RADON = Path("/work/shared/corpus/posteriordb/radon_mn-radon_county_intercept")


def main() -> None:
    print("| program | K | rest of the run s | estimate s | refits s | actual / estimate | "
          "refit alone (counted) |")
    print("|---|---|---|---|---|---|---|")
    from stanlogz.stan.backend import load_program

    cases = [(name, stanlogz.StanModel.from_file(ROOT / program, ROOT / data), k)
             for name, program, data, k in CASES]
    if RADON.is_dir():
        for backend in ("compiled", "interpreted"):
            cases.append((f"radon_county_intercept (N = 919), {backend}",
                          load_program(RADON / "model.stan", RADON / "data.json",
                                       backend=backend, seed=1, progress=None), 5))
    for name, model, k in cases:
        marks: dict[str, float] = {}

        def progress(line: str, marks: dict[str, float] = marks, k: int = k) -> None:
            if " refits: about " in line or "no time estimate" in line:
                marks["start"] = time.perf_counter()
                counted = re.search(r"and about (\d+) observations? of heavy weights", line)
                marks["counted"] = float(counted.group(1)) if counted else 0.0
            if line.startswith(f"held-out set {k}/{k} done"):
                marks["end"] = time.perf_counter()

        r = stanlogz.kfold(model, k=k, seed=1, progress=progress)
        actual = marks["end"] - marks["start"]
        full = r.to_dict()["seconds"] - actual
        print(f"| {name} | {k} | {full:.1f} | {r.estimated_seconds:.1f} | {actual:.1f} | "
              f"{actual / r.estimated_seconds:.2f} | {len(r.point_refits)} "
              f"({int(marks['counted'])}) |", flush=True)


if __name__ == "__main__":
    main()
