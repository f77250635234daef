"""Power and false-alarm rate of LOO's self-check (``loo(verify="auto")``, 4 points,
:mod:`stanlogz.crossval.psis_loo.verify`), and its cost as a share of the run.

Programs, each over ``--seeds`` seeds (the data fixed, the draws new):

* ``case1`` (issue 44, case 1): stan_models/tests/selfcheck_latent.stan with
  selfcheck_latent.json (one half-normal latent per observation, sigma 0.25 known, N 15), LOO
  forced onto the ``log_lik`` conditional on the latent: PSIS values at k̂ 0.5–0.7 are several
  of their mc se too high. The check must flag it.
* ``case1-mild``: the same program with sigma 0.5 (its own data drawn here): smaller biases,
  closer to the PSIS mc se.
* ``normal_mean`` (normal_outlier data: the outlier is moment matched) and ``regression``
  (stan_models/examples): PSIS's error bars are right; a flag is a false alarm.
* ``normal_band``: normal_mean with the outlier at 8.5 instead of 12: its PSIS k̂ is in the band
  (0.5–0.8 over seeds), the value PSIS's own where k̂ is at most the threshold. Whether its
  error bar is right there is what the check tests ("before ok" says whether it was).

For the case-1 programs log p(y_i | y₋ᵢ) = log p(y_i) in closed form; for ``normal_mean`` it is
the conjugate normal predictive. "final ok" counts runs whose final elpd_loo is within 3 of its
Monte Carlo se of the truth, or whose Monte Carlo se is withheld (NA); "before ok" the same for
the answer before the check.

    python -m benchmarks.loo_verify [--seeds 20] [--programs case1,normal_mean,...] [--verify 3]
                                    [--out runs.jsonl] [--table runs.jsonl ...]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

import stanlogz

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "stan_models" / "tests"
EXAMPLES = ROOT / "stan_models" / "examples"


def latent_truth(data: dict[str, Any]) -> float:
    """Σ log p(y_i) of selfcheck_latent.stan: p(y_i) = 2 N(y_i | 0, s) Φ(y_i / (σ s)),
    s = sqrt(1 + σ²) (the observations are independent)."""
    y, sig = np.asarray(data["y"], dtype=float), float(data["sigma"])
    s = np.sqrt(1 + sig**2)
    return float(np.sum(np.log(2) + stats.norm.logpdf(y, 0, s) + stats.norm.logcdf(y / (sig * s))))


def normal_mean_truth(data: dict[str, Any]) -> float:
    """Σ log p(y_i | y₋ᵢ) of normal_mean.stan (mu ~ N(0, prior_sd), y ~ N(mu, sigma))."""
    y, sig, tau = np.asarray(data["y"], dtype=float), float(data["sigma"]), float(data["prior_sd"])
    prec = 1 / tau**2 + (y.size - 1) / sig**2
    mean = (y.sum() - y) / sig**2 / prec
    return float(np.sum(stats.norm.logpdf(y, mean, np.sqrt(sig**2 + 1 / prec))))


def mild_data() -> dict[str, Any]:
    """selfcheck_latent.stan's data with sigma 0.5 (N 15, half-normal latents)."""
    rng = np.random.default_rng(44)
    z = np.abs(rng.normal(size=15))
    y = z + 0.5 * rng.normal(size=15)
    return {"N": 15, "y": [round(float(v), 3) for v in y], "sigma": 0.5}


def programs() -> dict[str, tuple[Path, dict[str, Any], dict[str, Any], float | None]]:
    """name -> (program, data, loo keywords, true elpd_loo or None)."""
    case1 = json.loads((TESTS / "selfcheck_latent.json").read_text())
    mild = mild_data()
    nm = json.loads((EXAMPLES / "normal_outlier.data.json").read_text())
    reg = json.loads((EXAMPLES / "regression.data.json").read_text())
    band = {**nm, "y": [*nm["y"][:-1], 8.5]}
    latent = {"log_lik": "log_lik"}
    return {"case1": (TESTS / "selfcheck_latent.stan", case1, latent, latent_truth(case1)),
            "case1-mild": (TESTS / "selfcheck_latent.stan", mild, latent, latent_truth(mild)),
            "normal_mean": (EXAMPLES / "normal_mean.stan", nm, {}, normal_mean_truth(nm)),
            "regression": (EXAMPLES / "regression.stan", reg, {}, None),
            "normal_band": (EXAMPLES / "normal_mean.stan", band, {}, normal_mean_truth(band))}


def one(program: Path, data: dict[str, Any], kw: dict[str, Any], truth: float | None,
        seed: int, verify: Any = "auto") -> dict[str, Any]:
    """One run of loo(verify=...): its status, the final and before errors, the cost share."""
    t0 = time.perf_counter()
    r = stanlogz.loo(str(program), data, seed=seed, verify=verify, **kw)
    v = r.verification
    out = {"seed": seed, "seconds": time.perf_counter() - t0,
           "status": "off" if v is None else v.status,
           "share": float("nan") if v is None else v.share,
           "repair_share": float("nan") if v is None else v.repair_seconds / r.seconds,
           "z": [] if v is None else [round(p.z, 2) for p in v.points],
           "khat": [] if v is None else [round(p.khat, 2) for p in v.points],
           "elpd": r.elpd_loo, "mcse": r.mcse_elpd_loo,
           "before": r.elpd_loo if v is None else v.elpd_before}
    if truth is not None:
        m = r.mcse_elpd_loo
        out["final_ok"] = bool(not np.isfinite(m) or abs(r.elpd_loo - truth) <= 3 * m)
        out["error"] = r.elpd_loo - truth
        out["before_error"] = out["before"] - truth
        out["before_ok"] = bool(not np.isfinite(m) or abs(out["before"] - truth) <= 3 * m)
    return out


def summary(name: str, runs: list[dict[str, Any]]) -> tuple[Any, ...]:
    """One row of the table: runs, share flagged, share skipped, final ok, mean error before
    and after, median check share, median repair share."""
    has_truth = "final_ok" in runs[0]
    flagged = np.mean([r["status"] in ("repaired", "withheld") for r in runs])
    skipped = np.mean([r["status"] in ("skipped", "off") for r in runs])
    ok = f"{np.mean([r['final_ok'] for r in runs]):.2f}" if has_truth else "-"
    check = np.nanmedian([r["share"] - r.get("repair_share", 0.0) for r in runs
                          if "repair_share" in r or r["status"] == "passed"] or [np.nan])
    repair = [r["repair_share"] for r in runs
              if r["status"] in ("repaired", "withheld") and "repair_share" in r]
    err = (f"{np.mean([r['before_error'] for r in runs]):+.2f} -> "
           f"{np.mean([r['error'] for r in runs]):+.2f}" if has_truth else "-")
    return (name, len(runs), flagged, skipped, ok, err, check,
            f"{np.nanmedian(repair):.2f}" if repair else "-")


def print_table(rows: list[tuple[Any, ...]]) -> None:
    """The power / false-alarm / cost table."""
    print(f"{'program':12s} {'runs':>4s} {'flagged':>8s} {'skipped':>8s} {'final ok':>9s} "
          f"{'mean error before -> after':>27s} {'check share':>11s} {'repair share':>12s}")
    for name, n, fl, sk, ok, err, check, repair in rows:
        print(f"{name:12s} {n:4d} {fl:8.2f} {sk:8.2f} {ok:>9s} {err:>27s} {check:11.2f} "
              f"{repair:>12s}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--first-seed", type=int, default=1)
    ap.add_argument("--programs", default="case1,case1-mild,normal_mean,normal_band,regression")
    ap.add_argument("--verify", default="auto", help="loo's verify (default auto: 4 points)")
    ap.add_argument("--out", default=None, help="write every run as JSON lines here")
    ap.add_argument("--table", nargs="+", default=None, metavar="FILE",
                    help="print the table of runs saved by --out (no new runs)")
    args = ap.parse_args(argv)
    if args.table:
        saved: dict[str, list[dict[str, Any]]] = {}
        for path in args.table:
            for line in Path(path).read_text().splitlines():
                r = json.loads(line)
                saved.setdefault(r.pop("program"), []).append(r)
        print_table([summary(name, runs) for name, runs in saved.items()])
        return
    table = programs()
    rows = []
    for name in args.programs.split(","):
        program, data, kw, truth = table[name]
        runs = []
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            runs.append(one(program, data, kw, truth, seed, args.verify))
            print(name, json.dumps(runs[-1]), flush=True)
            if args.out:
                with open(args.out, "a") as f:
                    f.write(json.dumps({"program": name, **runs[-1]}) + "\n")
        rows.append(summary(name, runs))
    print()
    print_table(rows)


if __name__ == "__main__":
    main()
