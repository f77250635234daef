"""Coverage of default ``loo``'s Monte Carlo se on real programs: posteriordb posteriors with
an exact elpd_loo, many seeds each, z = (elpd_loo - exact) / mcse_elpd_loo.

Run (from the repository root; resumable, each run appends one JSON line)::

    python3 -m benchmarks.corpus_coverage refs                # exact references -> JSON
    python3 -m benchmarks.corpus_coverage check               # the second route on two programs
    python3 -m benchmarks.corpus_coverage run --seeds 1-20    # default loo per program and seed
    python3 -m benchmarks.corpus_coverage table               # the table of docs/benchmarks.md

References (``benchmarks/data/corpus_loo_refs.json``): every program is Gaussian given one to
three hyperparameters, so log p(y_i | y_-i) is a quadrature (:mod:`benchmarks.corpus_loo_exact`);
its error is measured by doubling the grid. ``check`` recomputes two of them by a second,
independent route: PSIS over 50 000 NUTS draws of the Stan program itself (every k̂ < 0.5)
with the log-likelihood written from the model, its Monte Carlo se alongside.

``run`` calls ``stanlogz.loo(program, data, seed=s)`` with every default (the self-check
``verify`` on "auto"), one process, programs in turn within each seed (so a stopped run has
about as many seeds per program). A run is **flagged** when its result says the error bar may
not hold, i.e. any of:

- ``na``: mcse_elpd_loo is NA (``mcse_elpd_loo_na`` gives the reason);
- ``selfcheck``: the self-check failed a point (``verification.status`` "withheld" or
  "repaired");
- ``khat``: a warning about Pareto k̂ (text ``k-hat``: values above the threshold, moment
  matching left above it) or about PSIS's bias (text ``bias``), except the note that
  observations which alone move a parameter "were refit exactly" (a fix done).

Sampler warnings (divergences, R-hat, ESS, tree depth) and "p_loo is large" are recorded
(``sampler_warned``) but are not flags. z is computed only where mcse is given; the table's rms
z is over those runs, and "unflagged |z| > 4" counts runs with no flag.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import math
import re
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._common import ROOT
from benchmarks.corpus import CORPUS
from benchmarks.corpus_loo_exact import PROGRAMS, Program

REFS = ROOT / "benchmarks" / "data" / "corpus_loo_refs.json"
RUNS = ROOT / "benchmarks" / "data" / "corpus_coverage_runs.jsonl"
FLAG_WARNING = re.compile(r"k-hat|\bbias\b", re.IGNORECASE)
#: the end of loo's note on observations that alone move a parameter when they were refit (a
#: fix done, not a doubt; its first wording named k-hat)
REFIT_DONE = "they were refit exactly"
SAMPLER_WARNING = re.compile(r"diverge|R-hat|ESS|tree depth|treedepth", re.IGNORECASE)


def sha256(path: Path) -> str:
    """The file's SHA-256 (hex)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_data(folder: str) -> dict[str, Any]:
    """The posterior's data (posteriordb's data.json)."""
    return json.loads((CORPUS / folder / "data.json").read_text())


def reference(p: Program) -> dict[str, Any]:
    """The exact elpd_loo of one program, its pointwise values and its quadrature error."""
    d = load_data(p.folder)
    t0 = time.perf_counter()
    coarse = p.exact_loo(d)
    fine = p.exact_loo(d, fine=True)
    return {"folder": p.folder, "n": int(fine.size), "elpd_loo": float(fine.sum()),
            "elpd_i": [float(v) for v in fine], "how": p.how,
            "error": float(abs(fine.sum() - coarse.sum())),
            "error_how": "|difference| between the grid and the grid with twice the nodes "
                         "(deterministic quadrature: no Monte Carlo error)",
            "seconds": round(time.perf_counter() - t0, 2),
            "model_sha256": sha256(CORPUS / p.folder / "model.stan"),
            "data_sha256": sha256(CORPUS / p.folder / "data.json")}


def cmd_refs(args: argparse.Namespace) -> None:
    refs = json.loads(REFS.read_text()) if REFS.is_file() else {}
    for folder in args.only or list(PROGRAMS):
        refs[folder] = {**refs.get(folder, {}), **reference(PROGRAMS[folder])}
        print(f"{folder}: elpd_loo {refs[folder]['elpd_loo']:.6f} (quadrature error "
              f"{refs[folder]['error']:.1e}, {refs[folder]['seconds']} s)", flush=True)
    REFS.write_text(json.dumps(refs, indent=1) + "\n")


def second_route(folder: str, n_draws: int = 12_500, chains: int = 4,
                 seed: int = 20261128) -> dict[str, Any]:
    """elpd_loo by PSIS over ``chains * n_draws`` NUTS draws of the Stan program, with the
    log-likelihood of each observation written from the model (a linear model's
    normal_lpdf): independent of the quadrature, and of the transcription of the prior."""
    import stanlogz
    from stanlogz.crossval.elpd.psis import psis_loo
    from stanlogz.draws import obtain_draws

    p = PROGRAMS[folder]
    d = load_data(folder)
    model = stanlogz.StanModel.from_file(CORPUS / folder / "model.stan", d)
    draws = obtain_draws(model, None, stanlogz.NutsArgs(chains=chains, draws=n_draws),
                         seed=seed)
    names = draws.constrained_names
    con = draws.constrained.reshape(-1, len(names))
    m = p.build(d)
    beta_cols = [j for j, n in enumerate(names) if not n.startswith(("sigma", "lp__"))]
    sig = next(j for j, n in enumerate(names) if n.startswith("sigma"))
    mu = con[:, beta_cols] @ m.X.T
    s = con[:, [sig]]
    ll = -0.5 * np.log(2 * np.pi) - np.log(s) - 0.5 * ((m.y[None, :] - mu) / s) ** 2
    res = psis_loo(ll.reshape(chains, n_draws, -1), 1.0, chains=chains)
    return {"route": f"PSIS over {chains} x {n_draws} NUTS draws of the program, log-likelihood "
                     "normal_lpdf written from the model", "elpd_loo": float(res.elpd_i.sum()),
            "mcse": float(res.total_mcse()), "max_khat": float(np.nanmax(res.khat))}


def schools_by_log_z(folder: str = "eight_schools-eight_schools_centered") -> dict[str, Any]:
    """Eight schools' elpd_loo as log Z(y) - log Z(y_-j) per school, each log Z by scipy's
    adaptive quadrature over tau (half-Cauchy(0, 5)) of the closed form over mu and theta
    (:mod:`benchmarks.truths.crossval.truths`): another formula and another rule."""
    from scipy import integrate

    from benchmarks.truths.crossval.truths import _schools_log_lik_tau

    d = load_data(folder)
    y, s = np.asarray(d["y"], float), np.asarray(d["sigma"], float)

    def log_z(yy: np.ndarray, ss: np.ndarray) -> float:
        ref = _schools_log_lik_tau(yy, ss, 5.0, 5.0)
        f = lambda t: (2 / (np.pi * 5 * (1 + (t / 5) ** 2))  # noqa: E731
                       * np.exp(_schools_log_lik_tau(yy, ss, t, 5.0) - ref))
        val = sum(integrate.quad(f, lo, hi, epsabs=0.0, epsrel=1e-12, limit=200)[0]
                  for lo, hi in ((0, 5), (5, 15), (15, 30), (30, 80), (80, np.inf)))
        return ref + float(np.log(val))

    full = log_z(y, s)
    total = sum(full - log_z(np.delete(y, j), np.delete(s, j)) for j in range(y.size))
    return {"route": "log Z of each subset by scipy adaptive quadrature over tau (mu, theta "
                     "in closed form)", "elpd_loo": float(total), "mcse": 0.0}


def cmd_check(args: argparse.Namespace) -> None:
    refs = json.loads(REFS.read_text())
    for folder in args.only or ["sblri-blr", "sesame_data-sesame_one_pred_a",
                                "eight_schools-eight_schools_centered"]:
        chk = schools_by_log_z(folder) if folder.startswith("eight") else second_route(folder)
        diff = chk["elpd_loo"] - refs[folder]["elpd_loo"]
        chk["z"] = diff / chk["mcse"] if chk["mcse"] else None
        chk["difference"] = diff
        refs[folder]["second_route"] = chk
        print(f"{folder}: quadrature {refs[folder]['elpd_loo']:.4f}, {chk['route']}: "
              f"{chk['elpd_loo']:.4f} (mc se {chk['mcse']:.4f}, max k-hat "
              f"{chk.get('max_khat', float('nan')):.2f}), difference {diff:+.2e}", flush=True)
    REFS.write_text(json.dumps(refs, indent=1) + "\n")


def flags_of(d: dict[str, Any]) -> list[str]:
    """The flags of one result (``to_dict()``): na, selfcheck, khat (see the module doc)."""
    out = []
    if d.get("mcse_elpd_loo") is None:
        out.append("na")
    v = d.get("verification") or {}
    if v.get("status") in ("withheld", "repaired"):
        out.append("selfcheck")
    if any(FLAG_WARNING.search(w) and not w.endswith(REFIT_DONE) for w in d.get("warnings", [])):
        out.append("khat")
    return out


def record_flags(rec: dict[str, Any]) -> list[str]:
    """The flags of a stored run, recomputed from its fields (as :func:`flags_of`)."""
    return flags_of({"mcse_elpd_loo": rec.get("mcse"), "warnings": rec.get("warnings", []),
                     "verification": {"status": rec.get("verify")}})


def one_run(folder: str, seed: int, exact: float) -> dict[str, Any]:
    """Default ``stanlogz.loo`` on the posterior at ``seed``: the record appended to the runs."""
    import stanlogz

    t0 = time.perf_counter()
    rec: dict[str, Any] = {"folder": folder, "seed": seed, "code": code_version()}
    try:
        r = stanlogz.loo(str(CORPUS / folder / "model.stan"), str(CORPUS / folder / "data.json"),
                         seed=seed)
    except Exception as e:  # noqa: BLE001 - a refusal or failure is a row of the table too
        rec.update(status="error", error=f"{type(e).__name__}: {e}"[:400],
                   seconds=time.perf_counter() - t0)
        traceback.print_exc()
        return rec
    d = r.to_dict()
    mcse = d["mcse_elpd_loo"]
    v = d.get("verification") or {}
    rec.update(status="answered", elpd_loo=d["elpd_loo"], mcse=mcse,
               mcse_na=d["mcse_elpd_loo_na"], exact=exact,
               z=None if mcse is None else (d["elpd_loo"] - exact) / mcse,
               error=d["elpd_loo"] - exact, route=d["log_lik_source"],
               fixed=[f["method"] for f in d["fixed"]],
               max_khat=float(np.nanmax(r.khat)), verify=v.get("status"),
               verify_failed=[p["observation"] for p in v.get("points", [])
                              if not p.get("passed", True)],
               verify_share=v.get("share"), flags=flags_of(d),
               band={k: (d.get("band") or {}).get(k) for k in ("status", "n", "sampled",
                                                               "correction", "se")},
               sampler_warned=any(SAMPLER_WARNING.search(w) for w in d["warnings"]),
               warnings=d["warnings"], seconds=time.perf_counter() - t0)
    return rec


@functools.cache
def code_version() -> str:
    """The checkout's commit (short), with ``+`` when stanlogz/ has uncommitted changes, when
    this process first asked (the code it runs is the code it imported then)."""
    import subprocess

    def git(*a: str) -> str:
        return subprocess.run(["git", *a], cwd=ROOT, capture_output=True, text=True).stdout
    return git("rev-parse", "--short", "HEAD").strip() + ("+" if git("status", "--porcelain",
                                                                     "stanlogz").strip() else "")


def _seeds(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def read_runs(path: Path = RUNS) -> list[dict[str, Any]]:
    """The runs recorded so far (one JSON object a line)."""
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def cmd_run(args: argparse.Namespace) -> None:
    import stanlogz.crossval.psis_loo.loo  # noqa: F401 - imported with the commit recorded

    code_version()
    refs = json.loads(REFS.read_text())
    done = {(r["folder"], r["seed"]) for r in read_runs(args.out)}
    folders = args.only or list(PROGRAMS)
    for seed in _seeds(args.seeds):
        for folder in folders:
            if (folder, seed) in done:
                continue
            rec = one_run(folder, seed, refs[folder]["elpd_loo"])
            with args.out.open("a") as fh:
                fh.write(json.dumps(rec) + "\n")
            z = rec.get("z")
            print(f"{folder} seed {seed}: {rec['status']} "
                  f"z {'NA' if z is None else f'{z:+.2f}'} flags {rec.get('flags')} "
                  f"{rec['seconds']:.0f} s", flush=True)


def table_rows(runs: list[dict[str, Any]], refs: dict[str, Any]) -> list[dict[str, Any]]:
    """One summary per program, then the total (``folder`` "all")."""
    out = []
    groups = {f: [r for r in runs if r["folder"] == f] for f in refs}
    groups["all"] = runs
    for folder, rs in groups.items():
        if not rs:
            continue
        ok = [r for r in rs if r["status"] == "answered"]
        z = np.array([r["z"] for r in ok if r.get("z") is not None])
        routes = sorted({r["route"] + ("+" + "/".join(sorted(set(r["fixed"]))) if r["fixed"]
                                       else "") for r in ok})
        big = [r for r in ok if r.get("z") is not None and abs(r["z"]) > 4]
        out.append({"folder": folder, "n": refs[folder]["n"] if folder in refs else None,
                    "runs": len(rs), "errors": len(rs) - len(ok), "route": ", ".join(routes),
                    "mean_z": float(z.mean()) if z.size else math.nan,
                    "rms_z": float(np.sqrt(np.mean(z ** 2))) if z.size else math.nan,
                    "max_abs_z": float(np.abs(z).max()) if z.size else math.nan,
                    "na": sum(r["mcse"] is None for r in ok),
                    "flagged": sum(bool(record_flags(r)) for r in ok) / max(len(ok), 1),
                    "unflagged_over_4": sum(not record_flags(r) for r in big),
                    "sampler_warned": sum(r["sampler_warned"] for r in ok) / max(len(ok), 1),
                    "mean_s": float(np.mean([r["seconds"] for r in rs]))})
    return out


def cmd_table(args: argparse.Namespace) -> None:
    refs = json.loads(REFS.read_text())
    runs = read_runs(args.out)
    rows = table_rows(runs, refs)
    if not rows:
        raise SystemExit(f"corpus_coverage: no runs in {args.out}")
    seeds = [{r["seed"] for r in runs if r["folder"] == f} for f in refs]
    every = sorted(set.intersection(*seeds)) if all(seeds) else []
    total = rows[-1]
    print(f"{len(runs)} runs (seeds {every[0] if every else '-'}-{every[-1] if every else '-'} "
          f"for every program; code {sorted({r.get('code', '?') for r in runs})}): rms z "
          f"{total['rms_z']:.2f} over the {sum(r.get('z') is not None for r in runs)} runs "
          f"with an mc se, mean z {total['mean_z']:+.2f}, largest |z| {total['max_abs_z']:.2f}, "
          f"{total['unflagged_over_4']} unflagged |z| > 4\n")
    print("| posterior | N | runs | route (fix-ups) | mean z | rms z | max abs z | mcse NA | "
          "flagged | unflagged abs z > 4 | sampler warned | mean s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        errors = f" ({r['errors']} errors)" if r["errors"] else ""
        print(f"| {r['folder']} | {r['n'] or ''} | {r['runs']}{errors} | {r['route']} | "
              f"{r['mean_z']:+.2f} | {r['rms_z']:.2f} | {r['max_abs_z']:.2f} | {r['na']} | "
              f"{r['flagged']:.2f} | {r['unflagged_over_4']} | {r['sampler_warned']:.2f} | "
              f"{r['mean_s']:.0f} |")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("refs", "check", "run", "table"):
        p = sub.add_parser(name)
        p.add_argument("--only", nargs="*", help="posterior folders (default: all)")
        p.add_argument("--out", type=Path, default=RUNS, help="the runs' JSONL")
        if name == "run":
            p.add_argument("--seeds", default="1-20", help="e.g. 1-20")
    args = ap.parse_args(argv)
    {"refs": cmd_refs, "check": cmd_check, "run": cmd_run, "table": cmd_table}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
