"""The two density backends on every corpus program, and the first answer of a fresh venv.

``python3 -m benchmarks.backends corpus [--build] [--only NAME ...]`` runs every program of
``../shared/corpus/posteriordb`` through the interpreted backend (stanli) and, where the build
cache holds its compiled library (or with ``--build``, after building it), the compiled one,
and prints one row per program: whether the interpreter parses it (else its one-line
refusal), whether both backends map unconstrained points to the same parameter values (the
interpreter's newer Stan has another simplex transform), the worst relative difference of the
log density at three unconstrained points with ``propto=True`` and with every constant
(``propto=False``: the interpreter's constants-kept rewrite) and of the gradient (where the
transforms agree), the difference of the constants the two add to ``propto=True`` relative to
the density (any transform), and the seconds to the first gradient of
each backend in this process (interpreted: parse, bind data, one gradient; compiled: build
when not cached, load, bind data, one gradient).

``python3 -m benchmarks.backends first-answer --python VENV/bin/python`` times the README's
``stanlogz loo`` (wells) from a fresh process of that interpreter, ``--backend interpreted``
with the user's cache and ``--backend compiled`` with an empty ``STANLOGZ_CACHE`` that shares
nothing (the runtime and the program are built; ``compiled:warm``: the user's cache, program
built), and prints the wall and CPU seconds of each.

``python3 -m benchmarks.backends batched [--obs 200 --draws 400]`` runs the density-difference
pass of every corpus program on the interpreter twice, batched (one call per draw evaluates
many data instances: :mod:`stanlogz.stan.interpreted_pointwise`) and per call, and prints
whether the batched path served, the worst relative difference of the two and the
microseconds per value of each.

``python3 -m benchmarks.backends answers [--only NAME ...] [--commands loo,evidence] [--out
FILE.jsonl] [--limit 150]`` runs ``stanlogz loo`` and ``stanlogz evidence`` on every corpus
program with each backend (``--backend compiled`` and ``--backend interpreted``; 4 chains of
500 warmup and 500 draws, ``--seed 1``, loo's self-check off, everything else at its default)
in a fresh process under a wall-clock limit, and prints per program and command the two
answers, z = (interpreted - compiled) / hypot(error bars) (loo: the Monte Carlo se of
elpd_loo, since both estimate the same elpd_loo from different draws; evidence: log Z's se),
which backend served the interpreted run, and the seconds of each. ``--out`` keeps one JSON row
per run and ``--resume`` skips the rows it holds.

Times depend on the machine's load; the load average is printed with them.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus" / "posteriordb"
if not CORPUS.is_dir():
    CORPUS = Path("/work/shared/corpus/posteriordb")


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    """Worst relative difference (|a - b| / max(1, |b|)) where both are finite; inf where
    only one is."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if np.any(np.isfinite(a) != np.isfinite(b)):
        return float("inf")
    ok = np.isfinite(b)
    if not ok.any():
        return float("nan")
    return float(np.max(np.abs(a[ok] - b[ok]) / np.maximum(1.0, np.abs(b[ok]))))


def compare_program(folder: Path, build: bool) -> dict[str, object]:
    """One corpus program through both backends (see the module docstring)."""
    from stanlogz.stan.backend import check_points, same_transform
    from stanlogz.stan.inputs import read_data
    from stanlogz.stan.interpreted import InterpretedModel
    from stanlogz.stan.model import StanModel
    from stanlogz.toolchain import build as build_program
    from stanlogz.toolchain.interpreter import cached_library

    stan = folder / "model.stan"
    code = stan.read_text()
    data = read_data(folder / "data.json")
    row: dict[str, object] = {"program": folder.name}
    t0 = time.perf_counter()
    try:
        interp = InterpretedModel(code, data, name="model", stan_file=stan, seed=1)
        xs = check_points(interp.dim)
        interp.log_density_gradient(xs[0], propto=True)
        row["t_interp"] = time.perf_counter() - t0
        row["parses"] = "yes"
    except Exception as exc:  # noqa: BLE001 - a row names any refusal
        row["parses"] = f"no: {' '.join(str(exc).split())[:90]}"
        return row
    lib = cached_library(code, "model", [folder])
    t0 = time.perf_counter()
    if lib is None and build:
        lib = build_program(stan).lib_path
    if lib is None:
        row["compiled"] = "not cached"
        return row
    compiled = StanModel(lib, data, name="model", code=code, seed=1)
    compiled.log_density_gradient(xs[0], propto=True)
    row["t_compiled"] = time.perf_counter() - t0
    row["compiled"] = "built" if row["t_compiled"] > 2 else "cached"
    row["transform"] = "same" if same_transform(interp, compiled) else "differs"
    try:
        full_i = interp.log_density_many(xs, propto=False)
        full_c = compiled.log_density_many(xs, propto=False)
        c_i = full_i - interp.log_density_many(xs, propto=True)
        c_c = full_c - compiled.log_density_many(xs, propto=True)
        ok = np.isfinite(c_i) & np.isfinite(c_c)
        row["constant"] = (float(np.max(np.abs(c_i[ok] - c_c[ok])
                                        / np.maximum(1.0, np.abs(full_c[ok]))))
                           if ok.any() else float("nan"))
    except Exception as exc:  # noqa: BLE001
        row["constant"] = f"refused: {' '.join(str(exc).split())[:60]}"
        full_i = full_c = None
    if row["transform"] == "same":
        lp_i, g_i = interp.log_density_gradient_many(xs, propto=True)
        lp_c, g_c = compiled.log_density_gradient_many(xs, propto=True)
        row["lp_propto"] = _rel(lp_i, lp_c)
        row["grad"] = _rel(g_i, g_c)
        if full_i is not None:
            row["lp_full"] = _rel(full_i, full_c)
    return row


def _fmt(v: object) -> str:
    if isinstance(v, float):
        return f"{v:.1e}" if not (0.01 <= v < 1000) else f"{v:.2f}"
    return "-" if v is None else str(v)


def corpus(args: argparse.Namespace) -> None:
    folders = sorted(p for p in CORPUS.iterdir() if (p / "model.stan").is_file())
    if args.only:
        folders = [p for p in folders if p.name in args.only]
    cols = ("program", "parses", "compiled", "transform", "lp_propto", "lp_full", "grad",
            "constant", "t_interp", "t_compiled")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    rows = []
    for folder in folders:
        row = compare_program(folder, args.build)
        rows.append(row)
        print("| " + " | ".join(_fmt(row.get(c)) for c in cols) + " |", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1, default=str))


def batched_program(folder: Path, n_obs: int, n_draws: int) -> dict[str, object]:
    """One corpus program's density-difference columns on the interpreter, batched
    (:mod:`stanlogz.stan.interpreted_pointwise`) and per call, at ``n_draws`` draws near the
    origin for the first ``n_obs`` observations (see the module docstring)."""
    from stanlogz.crossval.observations.observations import find_observations
    from stanlogz.crossval.observations.pointwise import PointwiseLogLik
    from stanlogz.stan.inputs import read_data
    from stanlogz.stan.interpreted import InterpretedModel

    stan = folder / "model.stan"
    code = stan.read_text()
    data = read_data(folder / "data.json")
    row: dict[str, object] = {"program": folder.name}
    try:
        model = InterpretedModel(code, data, name="model", stan_file=stan, seed=1)
        obs = find_observations(data, None, None, code)
    except Exception as exc:  # noqa: BLE001 - a row names any refusal
        row["batched"] = f"no: {' '.join(str(exc).split())[:70]}"
        return row
    row["N"] = obs.n
    unc = 0.3 * np.random.default_rng(1).uniform(-1, 1, (n_draws, model.dim))
    idx = np.arange(min(n_obs, obs.n))
    out = []
    for failed in (False, True):
        pw = PointwiseLogLik(model, data, obs, "difference")
        pw._batch_failed = failed
        t0 = time.perf_counter()
        try:
            cols = pw.columns(idx, unc)
        except Exception as exc:  # noqa: BLE001
            row["batched"] = f"pass refused: {' '.join(str(exc).split())[:60]}"
            return row
        out.append((cols, time.perf_counter() - t0, not pw._batch_failed))
    (b, tb, used), (c, tc, _) = out
    row["batched"] = "yes" if used else "no (per call)"
    row["max_rel_diff"] = _rel(b, c)
    row["us_per_value_batched"] = 1e6 * tb / b.size
    row["us_per_value_per_call"] = 1e6 * tc / c.size
    return row


def batched(args: argparse.Namespace) -> None:
    folders = sorted(p for p in CORPUS.iterdir() if (p / "model.stan").is_file())
    if args.only:
        folders = [p for p in folders if p.name in args.only]
    cols = ("program", "N", "batched", "max_rel_diff", "us_per_value_batched",
            "us_per_value_per_call")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; "
          f"{args.obs} observations x {args.draws} draws")
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for folder in folders:
        row = batched_program(folder, args.obs, args.draws)
        print("| " + " | ".join(_fmt(row.get(c)) for c in cols) + " |", flush=True)


COMMAND = ["loo", "stan_models/examples/wells_logistic.stan", "--data",
           "stan_models/examples/wells.data.json", "--seed", "1"]


def first_answer(args: argparse.Namespace) -> None:
    """Wall seconds of the README's loo from a fresh process, per backend."""
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("| backend | cache | verify | wall s | CPU s (user+sys) | s to first sampling line |")
    print("|---|---|---|---|---|---|")
    for spec in args.backends:
        backend, _, state = spec.partition(":")  # compiled:warm keeps the user's cache
        with tempfile.TemporaryDirectory() as empty:
            env = dict(os.environ, STANLOGZ_VERIFY=str(args.verify))
            env.pop("STANLOGZ_BACKEND", None)
            if backend == "compiled" and state != "warm":
                env["STANLOGZ_CACHE"] = empty
            t0 = time.perf_counter()
            ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            proc = subprocess.Popen([args.python, "-m", "stanlogz", *COMMAND, "--backend",
                                     backend], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, text=True)
            first = None
            assert proc.stderr is not None
            for line in proc.stderr:
                if first is None and "sampling" in line:
                    first = time.perf_counter() - t0
            proc.wait()
            wall = time.perf_counter() - t0
            ru = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = ru.ru_utime + ru.ru_stime - ru0.ru_utime - ru0.ru_stime
            cache = ("none needed" if backend != "compiled" else
                     "user's (program built)" if state == "warm" else "empty")
            print(f"| {backend} | {cache} | {args.verify} | {wall:.1f} | {cpu:.1f} | "
                  f"{_fmt(first)} |", flush=True)


ANSWER_SETTINGS = ["--seed", "1", "--chains", "4", "--warmup", "500", "--draws", "500"]


def _answer(folder: Path, command: str, backend: str, limit: float,
            extra: tuple[str, ...] = ()) -> dict[str, object]:
    """One ``stanlogz COMMAND`` run of a corpus program on ``backend`` (a fresh process); a
    refusal whose route is an ``--obs`` choice is followed once."""
    argv = [sys.executable, "-m", "stanlogz", command, str(folder / "model.stan"), "--data",
            str(folder / "data.json"), "--json", "--backend", backend, *ANSWER_SETTINGS,
            *extra]
    if command == "loo":
        argv += ["--verify", "0"]
    env = {k: v for k, v in os.environ.items() if k != "STANLOGZ_BACKEND"}
    row: dict[str, object] = {"program": folder.name, "command": command, "backend": backend}
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=limit)
    except subprocess.TimeoutExpired:
        row.update(status="time", seconds=time.perf_counter() - t0)
        return row
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    row["seconds"] = time.perf_counter() - t0
    row["cpu"] = ru.ru_utime + ru.ru_stime - ru0.ru_utime - ru0.ru_stime
    served = [ln for ln in proc.stderr.splitlines() if "backend" in ln and (
        "interpreted backend" in ln or "compiled backend" in ln or "served by" in ln)]
    row["served"] = served[:3]
    if proc.returncode != 0:
        last = [ln for ln in proc.stderr.splitlines() if ln.startswith("stanlogz: error")]
        row.update(status=f"rc {proc.returncode}",
                   error=(last or proc.stderr.splitlines()[-1:] or [""])[0][:160])
        route = re.search(r"e\.g\. (--obs) (\w+)", str(row["error"]))
        if route and not extra:
            followed = _answer(folder, command, backend, limit, route.groups())
            followed["route"] = " ".join(route.groups())
            return followed
        return row
    out = json.loads(proc.stdout)
    if command == "loo":
        kc = out.get("khat_counts") or {}
        row.update(status="ok", value=out["elpd_loo"], error_bar=out["mcse_elpd_loo"],
                   se=out["se_elpd_loo"], khat_counts=kc, fixed=len(out.get("fixed") or []),
                   source=out.get("log_lik_source"))
    else:
        row.update(status="ok", value=out["log_z"], error_bar=out["log_z_se"],
                   method=out.get("method"))
    return row


def answers(args: argparse.Namespace) -> None:
    folders = sorted(p for p in CORPUS.iterdir() if (p / "model.stan").is_file())
    if args.only:
        folders = [p for p in folders if p.name in args.only]
    done: dict[tuple[str, str, str], dict[str, object]] = {}
    out = Path(args.out) if args.out else None
    if out is not None and args.resume and out.is_file():
        for line in out.read_text().splitlines():
            r = json.loads(line)
            done[(str(r["program"]), str(r["command"]), str(r["backend"]))] = r
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; "
          f"{' '.join(ANSWER_SETTINGS)}; limit {args.limit:.0f} s")
    print("| program | command | compiled | interpreted | z | served | s compiled | "
          "s interpreted |")
    print("|---|---|---|---|---|---|---|---|")
    pairs = []
    for folder in folders:
        for command in args.commands.split(","):
            pair = []
            for backend in ("compiled", "interpreted"):
                key = (folder.name, command, backend)
                if key not in done:
                    if backend == "interpreted" and pair[0].get("status") == "time":
                        row: dict[str, object] = {"program": folder.name, "command": command,
                                                  "backend": backend, "status": "skipped"}
                    else:
                        row = _answer(folder, command, backend, args.limit)
                    done[key] = row
                    if out is not None:
                        with out.open("a") as fh:
                            fh.write(json.dumps(row, default=str) + "\n")
                pair.append(done[key])
            pairs.append((pair[0], pair[1]))
            print(answer_row(*pair), flush=True)
    print()
    print(answers_summary(pairs))


def _bar(r: dict[str, object]) -> float | None:
    """A run's error bar: None when withheld (NA), inf when infinite (JSON carries it as
    1e100 or more)."""
    v = r.get("error_bar")
    if v is None:
        return None
    v = float(v)  # type: ignore[arg-type]
    return float("inf") if not np.isfinite(v) or v >= 1e99 else v


def answers_summary(pairs: list[tuple[dict[str, object], dict[str, object]]]) -> str:
    """Counts of the :func:`answers` table per command: both answered (with |z| <= 3, the
    largest |z|), the same refusal, only one answered, time limits; and the summed seconds
    where both answered."""
    lines = ["| command | both answered | abs z <= 3 (of those with two finite error bars) | "
             "max abs z | an error bar NA or infinite | same refusal | one only | time limit | "
             "s compiled | s interpreted |", "|---|---|---|---|---|---|---|---|---|---|"]
    for command in sorted({str(c["command"]) for c, _ in pairs}):
        rows = [(c, i) for c, i in pairs if c["command"] == command]
        both = [(c, i) for c, i in rows if c.get("status") == i.get("status") == "ok"]
        finite = [(c, i) for c, i in both if None not in (_bar(c), _bar(i))
                  and np.isfinite(_bar(c)) and np.isfinite(_bar(i))]  # type: ignore[arg-type]
        z = [abs(float(i["value"]) - float(c["value"]))  # type: ignore[arg-type]
             / max(float(np.hypot(_bar(c), _bar(i))), 1e-300)  # type: ignore[arg-type]
             for c, i in finite]
        same = sum(c.get("status") == i.get("status") != "ok"
                   and str(c.get("error", ""))[:40] == str(i.get("error", ""))[:40]
                   for c, i in rows)
        one = sum((c.get("status") == "ok") != (i.get("status") == "ok") for c, i in rows)
        late = sum("time" in (c.get("status"), i.get("status")) for c, i in rows)
        secs = [sum(float(r["seconds"]) for r in col) for col in zip(*both, strict=True)] \
            if both else [0.0, 0.0]  # type: ignore[arg-type]
        lines.append(f"| {command} | {len(both)} | {sum(v <= 3 for v in z)} of {len(z)} | "
                     f"{max(z, default=float('nan')):.2f} | {len(both) - len(finite)} | "
                     f"{same} | {one} | {late} | "
                     f"{secs[0]:.0f} | {secs[1]:.0f} |")
    return "\n".join(lines)


def _shown(r: dict[str, object]) -> str:
    if r.get("status") != "ok":
        return str(r.get("status")) + (f" ({r['error']})" if r.get("error") else "")
    b = _bar(r)
    bar = "NA" if b is None else ("inf" if not np.isfinite(b) else f"{b:.3f}")
    return f"{float(r['value']):.3f} ± {bar}"  # type: ignore[arg-type]


def answer_row(c: dict[str, object], i: dict[str, object]) -> str:
    """One table row of :func:`answers` from the compiled and interpreted runs."""
    z = "-"
    if c.get("status") == "ok" and i.get("status") == "ok" and None in (_bar(c), _bar(i)):
        z = f"NA (mcse withheld; diff {float(i['value']) - float(c['value']):+.3f})"  # type: ignore[arg-type]
    elif c.get("status") == "ok" and i.get("status") == "ok" and not (
            np.isfinite(_bar(c)) and np.isfinite(_bar(i))):  # type: ignore[arg-type]
        z = f"- (an infinite se; diff {float(i['value']) - float(c['value']):+.3f})"  # type: ignore[arg-type]
    elif c.get("status") == "ok" and i.get("status") == "ok":
        bar = float(np.hypot(_bar(c), _bar(i)))  # type: ignore[arg-type]
        diff = float(i["value"]) - float(c["value"])  # type: ignore[arg-type]
        z = f"{diff / bar:+.2f}" if bar > 0 else f"diff {diff:.1e}"
    served = "interpreted" if any("interpreted backend" in s for s in i.get("served", [])) \
        else ("compiled" if i.get("served") else "-")  # type: ignore[union-attr]
    secs = [f"{float(r['seconds']):.1f}" if "seconds" in r else "-" for r in (c, i)]  # type: ignore[arg-type]
    how = f" ({c['route']})" if c.get("route") else ""
    return (f"| {c['program']}{how} | {c['command']} | {_shown(c)} | {_shown(i)} | {z} | "
            f"{served} | {secs[0]} | {secs[1]} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    c = sub.add_parser("corpus")
    c.add_argument("--build", action="store_true", help="build uncached compiled programs")
    c.add_argument("--only", nargs="*", help="corpus folder names")
    c.add_argument("--json", help="write the rows here")
    f = sub.add_parser("first-answer")
    f.add_argument("--python", default=sys.executable)
    f.add_argument("--backends", nargs="*", default=["interpreted", "compiled"])
    f.add_argument("--verify", type=int, default=0, help="loo's self-check refits")
    b = sub.add_parser("batched")
    b.add_argument("--only", nargs="*", help="corpus folder names")
    b.add_argument("--obs", type=int, default=200, help="observations per program")
    b.add_argument("--draws", type=int, default=400, help="draws")
    a = sub.add_parser("answers")
    a.add_argument("--only", nargs="*", help="corpus folder names")
    a.add_argument("--commands", default="loo,evidence")
    a.add_argument("--limit", type=float, default=150.0, help="seconds per run")
    a.add_argument("--out", help="one JSON row per run (jsonl)")
    a.add_argument("--resume", action="store_true", help="skip the runs --out holds")
    args = parser.parse_args()
    {"corpus": corpus, "first-answer": first_answer, "batched": batched,
     "answers": answers}[args.what](args)


if __name__ == "__main__":
    main()
