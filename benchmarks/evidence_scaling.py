"""gbs's cost and error bar as the dimension grows, on the non-centred hierarchical normal
(stan_models/highdim/hier_normal_nc.stan, J groups, J + 2 parameters) whose log Z is known by
quadrature over tau (stanlogz.densities.gaussian.HierarchicalNormalTarget).

    nice -n 10 python3 -m benchmarks.evidence_scaling cost [--dims 100,300,1000] [--big]
    nice -n 10 python3 -m benchmarks.evidence_scaling coverage [--dims 10,100,1000]
        [--reps 50] [--routes auto,structured]

``cost``: for each dimension, in a fresh process (so that the peak resident memory,
``resource.getrusage``, is that size's own): NUTS at default settings (4 chains, 1000 warmup,
1000 draws) and gbs at defaults on its draws; a row of NUTS seconds and gradient evaluations,
gbs seconds and density evaluations, peak memory, the proposal that ran, the error against the
exact log Z and the reported se. ``--program logit`` runs the non-Gaussian program instead:
the non-centred hierarchical logistic of binomial counts
(stan_models/highdim/hier_logit_nc.stan, log Z by a 2-D quadrature of products of 1-D ones,
stanlogz.densities.hier_logit). ``--big`` adds d = 3,002 and 10,002 (10,002: tens of minutes
of NUTS on two shared cores). ``--draws-dir`` reuses ``draws_ncJ.npz`` files (arrays ``x``,
``seconds``, ``n_grad``) written by an earlier run instead of sampling (and saves them there
when sampling).

``plot``: the cost-growth figure of the docs (seconds, peak memory, error ± 2 se against d)
from the rows a ``cost`` run saved with ``--out`` (default: the measured rows in
``benchmarks/data/evidence_scaling_cost.json``), written to ``docs/_static/evidence_scaling.png``.

``coverage``: replicates of gbs on exact, independent posterior draws (4 x 1000; the target's
own sampler, so the seconds are the estimator's alone) with a fresh data-free seed each: the
fraction whose ±2 se interval covers the exact log Z, the mean error, the RMS of error / se.
``--routes`` picks the default route ("auto": dense where the draws are enough) and the
structured route forced ("structured"). Beside the reported se's coverage, the coverage the
se would have with the two orientations taken as independent (the dense route's rule).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # shared box: one BLAS thread

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import resource  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from benchmarks.high_dim import HIGHDIM, hier_data  # noqa: E402
from stanlogz.densities.gaussian import HierarchicalNormalTarget  # noqa: E402
from stanlogz.report.output import format_table  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def exact_target(j: int) -> HierarchicalNormalTarget:
    data = hier_data(j)
    return HierarchicalNormalTarget(np.array(data["y"]), np.array(data["sigma"]))


def peak_mb() -> float:
    """Peak resident memory of this process so far, in MB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def program(name: str, j: int) -> tuple[Path, dict, float]:
    """The Stan program, its data and its exact log Z: "normal" (the hierarchical normal) or
    "logit" (the hierarchical logistic of binomial counts, log Z by nested quadrature)."""
    if name == "logit":
        from stanlogz.densities.hier_logit import HierarchicalLogitTarget, hier_logit_data

        data = hier_logit_data(j)
        truth = HierarchicalLogitTarget(data["n"], data["y"]).log_z
        return HIGHDIM / "hier_logit_nc.stan", data, truth
    return HIGHDIM / "hier_normal_nc.stan", hier_data(j), exact_target(j).log_z


def one_cost(j: int, draws_dir: str | None, seed: int = 1, name: str = "normal") -> dict:
    """One row of the cost table (run in its own process)."""
    from stanlogz.draws import sample
    from stanlogz.estimators.bridge.bridge import gbs
    from stanlogz.stan.load import load_model

    path, data, truth = program(name, j)
    model = load_model(path, data)
    tag = "nc" if name == "normal" else name
    saved = Path(draws_dir) / f"draws_{tag}{j}.npz" if draws_dir else None
    if saved is not None and saved.exists():
        f = np.load(saved)
        x, nuts_s, n_grad = f["x"], float(f["seconds"]), int(f["n_grad"])
    else:
        d = sample(model, seed=seed)
        x, nuts_s, n_grad = d.unconstrained, d.seconds, d.n_gradient_evals
        if saved is not None:  # for a later run with another estimator setting
            saved.parent.mkdir(parents=True, exist_ok=True)
            np.savez(saved, x=x, seconds=nuts_s, n_grad=n_grad)
    t0 = time.perf_counter()
    r = gbs(model, x, seed=seed, n_sampling_evals=n_grad)
    return {"program": name, "dim": j + 2, "nuts_s": round(nuts_s, 1), "nuts_grad": n_grad,
            "gbs_s": round(time.perf_counter() - t0, 1), "gbs_evals": r.n_evals,
            "peak_mb": round(peak_mb()), "proposal": r.diagnostics["proposal"],
            "layers": "/".join(str(v) for v in r.diagnostics["flow_layers"]),
            "err": round(r.log_z - truth, 4), "se": round(r.log_z_se, 4),
            "err_over_se": round((r.log_z - truth) / r.log_z_se, 2),
            "half_log_z": r.diagnostics["half_swap_log_z"],
            "half_se": r.diagnostics["half_swap_se"],
            "rho": round(r.diagnostics["orientation_correlation"], 3),
            "load": round(os.getloadavg()[0], 1)}


def cost(dims: list[int], draws_dir: str | None, out: str | None = None,
         name: str = "normal") -> None:
    rows, saved = [], []
    for dim in dims:
        cmd = [sys.executable, "-m", "benchmarks.evidence_scaling", "one-cost", str(dim - 2),
               "--program", name]
        if draws_dir:
            cmd += ["--draws-dir", draws_dir]
        res = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        row = json.loads(res.strip().splitlines()[-1])
        print(f"# {row}", file=sys.stderr, flush=True)
        rows.append([row[k] for k in COLUMNS])
        saved.append(row)
    if out:
        Path(out).write_text(json.dumps(saved, indent=1) + "\n")
    print(format_table(["program", "dim", "NUTS s", "NUTS grads", "gbs s", "gbs evals", "peak MB",
                        "proposal", "layers", "err", "se", "err/se", "load"], rows))


COLUMNS = ("program", "dim", "nuts_s", "nuts_grad", "gbs_s", "gbs_evals", "peak_mb", "proposal",
           "layers", "err", "se", "err_over_se", "load")


def plot(rows_file: str, path: str) -> None:
    """The cost-growth figure from saved ``cost`` rows (module docstring)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = json.loads(Path(rows_file).read_text())
    d = np.array([r["dim"] for r in rows], dtype=float)
    fig, ax = plt.subplots(1, 3, figsize=(12, 3.6))
    ax[0].loglog(d, [r["nuts_s"] for r in rows], "o-", label="NUTS")
    ax[0].loglog(d, [r["gbs_s"] for r in rows], "s-", label="gbs")
    ax[0].set(xlabel="parameters d", ylabel="seconds (2 shared cores)", title="time")
    ax[0].legend()
    ax[1].loglog(d, [r["peak_mb"] for r in rows], "o-")
    ax[1].set(xlabel="parameters d", ylabel="peak resident MB", title="memory")
    err = np.array([r["err"] for r in rows])
    se = np.array([r["se"] for r in rows])
    dense = np.array([r["proposal"] == "dense" for r in rows])
    for mask, mark, name in ((dense, "o", "dense route"), (~dense, "s", "diagonal + low rank")):
        ax[2].errorbar(d[mask], err[mask], yerr=2 * se[mask], fmt=mark, capsize=3, label=name)
    ax[2].axhline(0.0, color="grey", lw=0.8)
    ax[2].set_xscale("log")
    ax[2].set(xlabel="parameters d", ylabel="log Z error (± 2 se)", title="error vs exact")
    ax[2].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(path)


def coverage(dims: list[int], reps: int, routes: list[str], chains: int = 4,
             n: int = 1000, start: int = 0, out: str | None = None,
             kind: str = "normal") -> None:
    from benchmarks.coverage_smc_pools import make_target
    from stanlogz.estimators.bridge.bridge import gbs

    rows = []
    for dim in dims:
        t = exact_target(dim - 2)
        for route in routes:
            res = []
            for s in range(start, start + reps):
                if kind == "gauss":  # a new correlated Gaussian per replicate
                    t = make_target("gauss", dim, s)[0]
                x = t.sample(np.random.default_rng(10_000 + s), chains * n)
                t0 = time.perf_counter()
                r = gbs(t, x.reshape(chains, n, -1), seed=s, proposal=route)
                h, hs = r.diagnostics["half_swap_log_z"], r.diagnostics["half_swap_se"]
                indep = 0.5 * max(math.hypot(*hs), abs(h[0] - h[1]))  # independent halves
                res.append((r.log_z - t.log_z, r.log_z_se, time.perf_counter() - t0,
                            (r.log_z - t.log_z) / indep))
                if out:  # every replicate, so other se rules can be scored on the same runs
                    with open(out, "a") as fh:
                        fh.write(json.dumps({"target": kind, "dim": dim, "route": route, "rep": s,
                                             "truth": t.log_z, "log_z": r.log_z,
                                             "se": r.log_z_se, "half_log_z": h,
                                             "half_se": hs,
                                             "proposal": r.diagnostics["proposal"],
                                             "seconds": res[-1][2]}) + "\n")
                print(f"# d {dim} {route} rep {s}: err {res[-1][0]:+.4f} se {res[-1][1]:.4f} "
                      f"{r.diagnostics['proposal']} ({res[-1][2]:.1f} s)", file=sys.stderr,
                      flush=True)
            a = np.array(res)
            z = a[:, 0] / a[:, 1]
            rows.append([dim, route, len(a), round(float(np.mean(np.abs(z) <= 2)), 3),
                         round(float(np.mean(a[:, 0])), 4), round(float(np.mean(a[:, 1])), 4),
                         round(float(np.sqrt(np.mean(a[:, 0] ** 2))), 4),
                         round(float(np.sqrt(np.mean(z**2))), 2),
                         round(float(np.mean(np.abs(a[:, 3]) <= 2)), 3),
                         round(float(np.sqrt(np.mean(a[:, 3] ** 2))), 2),
                         round(float(a[:, 2].mean()), 1)])
    print(format_table(["dim", "route", "reps", "cover ±2se", "mean err", "mean se", "rmse",
                        "RMS err/se", "cover (indep. halves)", "RMS (indep.)", "gbs s"], rows))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("part", choices=("cost", "coverage", "one-cost", "plot"))
    ap.add_argument("j", nargs="?", type=int, help="groups (one-cost only)")
    ap.add_argument("--dims", default=None)
    ap.add_argument("--program", choices=("normal", "logit"), default="normal",
                    help="cost: the hierarchical normal or the hierarchical logistic")
    ap.add_argument("--target", choices=("normal", "gauss"), default="normal",
                    help="coverage: the hierarchical normal, or a new correlated Gaussian "
                    "N(m, 0.5 (A A'/d + I/2)) per replicate (benchmarks.coverage_smc_pools)")
    ap.add_argument("--big", action="store_true", help="cost: add d = 3,002 and 10,002")
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--routes", default="auto,structured")
    ap.add_argument("--draws-dir", default=None)
    ap.add_argument("--start", type=int, default=0, help="coverage: first replicate's number")
    ap.add_argument("--out", default=None, help="cost: save the rows (JSON) for plot; "
                    "coverage: append every replicate (JSON lines)")
    ap.add_argument("--rows", default=str(ROOT / "benchmarks/data/evidence_scaling_cost.json"),
                    help="plot: the saved cost rows")
    args = ap.parse_args()
    if args.part == "one-cost":
        print(json.dumps(one_cost(args.j, args.draws_dir, name=args.program)))
    elif args.part == "cost":
        dims = [int(v) for v in (args.dims or "102,302,1002").split(",")]
        cost(dims + ([3002, 10002] if args.big else []), args.draws_dir, args.out,
             args.program)
    elif args.part == "plot":
        plot(args.rows, str(ROOT / "docs/_static/evidence_scaling.png"))
    else:
        dims = [int(v) for v in (args.dims or "10,102,1002").split(",")]
        coverage(dims, args.reps, args.routes.split(","), start=args.start, out=args.out,
                 kind=args.target)


if __name__ == "__main__":
    main()
