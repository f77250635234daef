"""Run stanlogz as a user would on a corpus of real Stan programs (posteriordb) and tabulate
what happens: answered, refused (with the route the refusal names), failed, timed out.

Run: ``python3 -m benchmarks.corpus [--only NAME ...] [--commands sample,loo,evidence]
[--limit SECONDS] [--out results.json] [--resume]``. Each command is a subprocess of the
``stanlogz`` command line with ``--json`` and the program's defaults (nothing tuned), under a
wall-clock limit. The corpus is ``../shared/corpus/posteriordb`` beside the repository (47
posteriors; ``reference.json`` where posteriordb has reference posterior means and sds).

Per command the table shows:

- ``sample``: the largest |z| of a posterior mean against posteriordb's reference mean, z =
  (mean - reference mean) / sqrt(mcse^2 + reference sd^2 / reference draws), and the quantity;
  ``|z|>4 (warned)`` when the sampler warned (divergences, R-hat, ESS), ``|z|>4 UNWARNED`` when
  not;
- ``loo``: elpd_loo ± se (Monte Carlo se), the largest Pareto k-hat and the number of fixed
  observations;
- ``evidence``: log Z ± se (gbs), with ``draws disagree`` when the same posterior's ``sample``
  row had |z| > 4;
- ``sensitivity``: run only where the program has ``lprior`` or a ``log_lik``.

A refusal (exit status 2, ``stanlogz: error: ...``) counts as ``refused`` when its JSON error
object carries a route (``routes``: typed :class:`stanlogz.errors.Route` objects, an option,
a command or a change to the program), ``refused NO ROUTE`` otherwise, and is
flagged ``RAW`` when the line looks like Stan's own error text. An internal error (exit status 1)
or a Python traceback on stderr is ``failed``/``traceback``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks._common import ROOT

#: The corpus beside the repository (the same relative place from every checkout).
CORPUS = ROOT.parent / "shared" / "corpus" / "posteriordb"
COMMANDS = ("sample", "loo", "evidence", "sensitivity")
DEFAULT_COMMANDS = ("sample", "loo", "evidence")
#: |z| above which a posterior mean disagrees with the reference.
Z_MAX = 4.0
#: Text that marks a line as Stan's (or C++'s) own error rather than stanlogz's.
RAW_PATTERNS = re.compile(r"stan::|std::|what\(\)|Exception:|Unrecoverable|Error in '|"
                          r"line \d+, column \d+|Rejecting initial value|bridgestan|RuntimeError")


def posteriors(corpus: Path = CORPUS, only: list[str] | None = None) -> list[Path]:
    """The posterior folders of the corpus (those named in ``only`` when given, in that
    order); a name matches a folder exactly or as its part after the data set's ``-``."""
    folders = sorted(p for p in corpus.iterdir() if (p / "model.stan").is_file())
    if not only:
        return folders
    out = []
    for name in only:
        hits = [p for p in folders if p.name == name or p.name.split("-", 1)[-1] == name]
        if not hits:
            raise SystemExit(f"corpus: no posterior {name!r} in {corpus}")
        out.extend(hits)
    return out


def has_pointwise_or_lprior(program: Path) -> bool:
    """Whether the program declares ``lprior`` or ``log_lik`` (what ``sensitivity`` uses)."""
    src = program.read_text()
    return re.search(r"\b(lprior|log_lik)\b", src) is not None


#: Seconds of the limit kept outside ``--time-budget``: the interpreter's start and imports
#: before the budget begins, the JSON and the exit after it.
BUDGET_MARGIN_S = 45.0
#: Routes followed in a row (a route may be refused with a route of its own: an observation
#: size, then fewer iterations).
ROUTE_DEPTH = 2


def command_line(command: str, folder: Path, seed: int, budget: float | None = None,
                 extra: list[str] | None = None) -> list[str]:
    """The ``stanlogz`` command a user would type for ``command`` on the posterior (under
    ``--time-budget budget`` seconds when given, with the options ``extra`` after it)."""
    argv = [sys.executable, "-m", "stanlogz", "--json", "--seed", str(seed)]
    if budget is not None:
        argv += ["--time-budget", f"{budget:g}"]
    argv += [command, str(folder / "model.stan")]
    if (folder / "data.json").is_file():
        argv += ["--data", str(folder / "data.json")]
    return argv + list(extra or [])


def route_of(routes: list[dict[str, Any]], command: str) -> tuple[str, list[str]] | None:
    """The command and options of the first route a refusal carries (the ``routes`` of its
    JSON error object, :class:`stanlogz.errors.Route`) that runs as it stands, as a user would
    follow it (``(command, extra options)``); None when none does (e.g. "add a log_lik
    generated quantity", or an option named without its value). A time budget is the runner's
    own, so a route that only raises it is not followed."""
    for route in routes:
        if not route.get("followable") or "time_budget" in route.get("options", {}):
            continue
        argv = list(route.get("argv", []))
        return (route["command"], argv[1:]) if route.get("command") else (command, argv)
    return None


def first_route(routes: list[dict[str, Any]] | None) -> str | None:
    """The first route a refusal carries, as the command line says it (a change to the
    program: its note); None when it carries none."""
    for route in routes or []:
        return route.get("cli") or route.get("note") or None
    return None


def run_command(argv: list[str], limit: float) -> dict[str, Any]:
    """Run ``argv`` under a wall-clock ``limit`` (seconds); its exit status, parsed JSON (or
    None), the tail of stderr, the seconds and whether it timed out. On time-out the process
    group it started is terminated (then killed)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in
                                                       env.get("PYTHONPATH", "").split(os.pathsep)
                                                       if p])
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=str(ROOT), start_new_session=True)
    timed_out = False
    try:
        out, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        timed_out = True
        _stop_group(proc)
        out, err = proc.communicate()
    seconds = time.perf_counter() - start
    parsed = _last_json_object(out)
    return {"rc": proc.returncode, "json": parsed, "stderr": err.splitlines()[-25:],
            "seconds": round(seconds, 1), "timed_out": timed_out}


def _last_json_object(out: str) -> dict[str, Any] | None:
    """The JSON object printed on stdout (the whole of it, else its last one-line object)."""
    try:
        value = json.loads(out)
        return value if isinstance(value, dict) else None
    except ValueError:
        pass
    for line in reversed(out.strip().splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def _stop_group(proc: subprocess.Popen) -> None:
    """Terminate the process group of ``proc`` (ours: started with a new session), then kill
    it if it has not ended within 15 s."""
    for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 15)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def classify(run: dict[str, Any]) -> dict[str, Any]:
    """``status`` (answered, refused, failed, traceback, timeout, crashed), the error line,
    the route it names and whether it is Stan's raw text."""
    err_text = "\n".join(run["stderr"])
    line = next((ln for ln in run["stderr"] if ln.startswith("stanlogz: error:")
                 or ln.startswith("stanlogz: internal error:")), "")
    out: dict[str, Any] = {"message": line.split(": ", 2)[-1] if line else "", "route": None,
                           "raw": False}
    if run["timed_out"]:
        out["status"] = "timeout"
    elif "Traceback (most recent call last)" in err_text:
        out["status"] = "traceback"
    elif run["rc"] == 0 and isinstance(run["json"], dict) and "error" not in run["json"]:
        out["status"] = "answered"
    elif run["rc"] == 2 and line.startswith("stanlogz: error:"):
        out["status"] = "refused"
        out["routes"] = list((run["json"] or {}).get("routes") or [])
        out["route"] = first_route(out["routes"])
        out["raw"] = bool(RAW_PATTERNS.search(out["message"]))
    elif run["rc"] == 1 and line.startswith("stanlogz: internal error:"):
        out["status"] = "failed"
    else:
        out["status"] = "crashed"
        out["message"] = out["message"] or (run["stderr"][-1] if run["stderr"] else "")
    return out


def flat_name(reference_name: str) -> str:
    """posteriordb's ``theta[1,2]`` as stanlogz's flat name ``theta.1.2``."""
    return reference_name.replace("[", ".").replace(",", ".").replace("]", "").replace(" ", "")


def reference_z(summary: dict[str, Any], reference: dict[str, Any]) -> dict[str, Any]:
    """z of each posterior mean against the reference mean, with both Monte Carlo errors:
    (mean - ref) / sqrt(mcse_mean^2 + ref_sd^2 / ref_draws). The largest |z|, its quantity and
    how many quantities were compared."""
    rows = {r["name"]: r for r in summary.get("parameters", [])}
    zs: dict[str, float] = {}
    for name, ref in reference.items():
        row = rows.get(flat_name(name))
        if row is None:
            continue
        mcse = row.get("mcse_mean")
        if mcse is None or not math.isfinite(mcse):
            ess = row.get("ess_bulk") or float("nan")
            mcse = row["sd"] / math.sqrt(ess) if ess > 0 else float("nan")
        var = mcse ** 2 + ref["sd"] ** 2 / max(ref.get("draws", 10000), 1)
        zs[name] = (row["mean"] - ref["mean"]) / math.sqrt(var) if var > 0 else float("nan")
    if not zs:
        return {"compared": 0, "missing": len(reference), "max_abs_z": None, "worst": None}
    worst = max(zs, key=lambda k: abs(zs[k]) if math.isfinite(zs[k]) else math.inf)
    return {"compared": len(zs), "missing": len(reference) - len(zs),
            "max_abs_z": abs(zs[worst]), "worst": worst}


def result_text(command: str, record: dict[str, Any]) -> str:
    """The table's result column for an answered command."""
    js = record.get("json") or {}
    if command == "sample":
        ref = record.get("reference_z")
        div = (js.get("diagnostics") or {}).get("divergences", 0)
        base = f"max R-hat {_fmt((js.get('diagnostics') or {}).get('max_r_hat'), 3)}"
        base += f", {div} div" if div else ""
        if not ref:
            return base + "; no reference"
        if ref["max_abs_z"] is None:
            return base + f"; no reference quantity matched ({ref['missing']})"
        z = ref["max_abs_z"]
        flag = "" if z <= Z_MAX else (" (warned)" if js.get("warnings") else " UNWARNED")
        return base + f"; max abs z {z:.2f} ({ref['worst']}, {ref['compared']} compared){flag}"
    if command == "loo":
        khat = max((p.get("khat", float("nan")) for p in js.get("pointwise", [])),
                   default=float("nan"))
        return (f"elpd_loo {_fmt(js.get('elpd_loo'), 2)} ± {_fmt(js.get('se'), 2)} "
                f"(mc se {_fmt(js.get('mcse_elpd_loo'), 2)}); max k-hat {_fmt(khat, 2)}, "
                f"{len(js.get('fixed', []))} fixed; log-lik {js.get('log_lik_source')}")
    if command == "evidence":
        text = (f"log Z {_fmt(js.get('log_z'), 3)} ± {_fmt(js.get('log_z_se'), 3)} "
                f"({js.get('method')})")
        no_prior = sum("has no prior" in w for w in js.get("warnings", []))
        mass = sum(" has mass " in w for w in js.get("warnings", []))
        if no_prior or mass:
            text += (f"; priors: {no_prior} parameter(s) without a prior, {mass} not of mass 1 "
                     "(warned)")
        if record.get("draws_disagree"):
            text += f"; draws disagree with the reference ({record['draws_disagree']})"
        return text
    if command in ("kfold", "lfo"):
        what = f"{js.get('k')} folds" if command == "kfold" else f"{js.get('method')} method"
        return (f"elpd_{command} {_fmt(js.get(f'elpd_{command}'), 2)} ± {_fmt(js.get('se'), 2)} "
                f"(mc se {_fmt(js.get('mcse'), 2)}); {what}")
    if command == "sensitivity":
        return "answered"
    return ""


def _fmt(v: Any, digits: int) -> str:
    return "nan" if v is None or not isinstance(v, (int, float)) else f"{v:.{digits}f}"


def run_one(folder: Path, command: str, limit: float, seed: int,
            sample_record: dict[str, Any] | None = None, extra: list[str] | None = None,
            label: str | None = None) -> dict[str, Any]:
    """One command on one posterior (with the options ``extra``; recorded under ``label``,
    default the command): the record written to the results file."""
    record: dict[str, Any] = {"posterior": folder.name, "command": label or command}
    if command == "sensitivity" and not has_pointwise_or_lprior(folder / "model.stan"):
        record.update(status="n/a", seconds=0.0, message="no lprior or log_lik")
        return record
    argv = command_line(command, folder, seed, max(limit - BUDGET_MARGIN_S, 1.0), extra)
    record["argv"] = " ".join(["stanlogz"] + argv[3:])
    run = run_command(argv, limit)
    record.update(classify(run), seconds=run["seconds"], rc=run["rc"],
                  stderr_tail=run["stderr"],
                  load=round(os.getloadavg()[1], 1))  # 5-min load average at the end
    js = run["json"] if record["status"] == "answered" else None
    record["warnings"] = (js or {}).get("warnings", [])
    if js is not None:
        record["json"] = _slim(command, js)
    ref_file = folder / "reference.json"
    if command == "sample" and js is not None and ref_file.is_file():
        record["reference_z"] = reference_z(js, json.loads(ref_file.read_text()))
    if command == "evidence" and sample_record:
        z = (sample_record.get("reference_z") or {}).get("max_abs_z")
        if z is not None and z > Z_MAX:
            record["draws_disagree"] = f"sample max abs z {z:.1f}"
    record["result"] = result_text(command, record) if js is not None else ""
    record["ran"] = command
    return record


def merge_options(before: list[str], after: list[str]) -> list[str]:
    """The options ``before`` with those of ``after`` added, an option given in both taking
    its value from ``after`` (``--warmup 150 --draws 150`` then ``--warmup 100 --draws 100``
    is ``--warmup 100 --draws 100``)."""
    def pairs(tokens: list[str]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for tok in tokens:
            if tok.startswith("--") or not out:
                out[tok] = []
            else:
                out[list(out)[-1]].append(tok)
        return out

    merged = pairs(before)
    merged.update(pairs(after))
    return [t for flag, values in merged.items() for t in [flag, *values]]


def follow_route(folder: Path, refused: dict[str, Any], limit: float, seed: int
                 ) -> dict[str, Any] | None:
    """Run the route a refusal names (None when it names no command line): the record of
    ``<command> → route``."""
    ran = refused.get("ran", refused["command"])
    route = route_of(refused.get("routes", []), ran)
    if route is None:
        return None
    command, extra = route
    if command == ran:  # options added to the command that was refused
        extra = merge_options(list(refused.get("extra", [])), extra)
    rec = run_one(folder, command, limit, seed, extra=extra,
                  label=f"{refused['command']} → route")
    rec["extra"] = extra
    rec["route_argv"] = " ".join(["stanlogz", command] + extra)
    return rec


def _slim(command: str, js: dict[str, Any]) -> dict[str, Any]:
    """The JSON kept in the results file (loo's pointwise rows reduced to their k-hats)."""
    keep = dict(js)
    if command == "loo" and isinstance(js.get("pointwise"), list):
        keep["pointwise"] = [{"khat": p.get("khat")} for p in js["pointwise"]]
    return keep


def table(records: list[dict[str, Any]]) -> str:
    """The Markdown table of the records and a line of counts per status."""
    disagree = {r["posterior"]: (r.get("reference_z") or {}).get("max_abs_z")
                for r in records if r["command"] == "sample"}
    for r in records:  # the sample run may be in another results file or after this one
        if r["status"] == "answered" and r.get("json"):  # in this version's words
            r["result"] = result_text(r.get("ran", r["command"]), r)
        z = disagree.get(r["posterior"])
        if r["command"] == "evidence" and r["status"] == "answered" and z is not None \
                and z > Z_MAX:
            r["draws_disagree"] = f"sample max abs z {z:.1f}"
            r["result"] = result_text("evidence", r)
    lines = ["| posterior | command | status | s | load | result / refusal (route) | warnings |",
             "|---|---|---|---|---|---|---|"]
    counts: dict[str, int] = {}
    route_counts: dict[str, int] = {}
    order = {c: i for i, c in enumerate(COMMANDS)}
    records = sorted(records, key=lambda r: (r["posterior"], order.get(r["command"].split()[0], 9),
                                             r["command"]))
    for r in records:
        status = r["status"]
        if status == "refused":
            r["raw"] = bool(RAW_PATTERNS.search(r.get("message", "")))
            status += "" if r.get("route") else " NO ROUTE"
            status += " RAW" if r.get("raw") else ""
        tally = route_counts if "→" in r["command"] else counts
        tally[status] = tally.get(status, 0) + 1
        body = r.get("result") or r.get("message", "")
        if r["status"] == "refused" and r.get("route"):
            body = f"{r['message']} (route: `{r['route']}`)"
        if r["status"] in ("timeout", "crashed") and r.get("stderr_tail"):
            last = re.sub(r"^\[\s*[\d.]+s\]\s*", "", r["stderr_tail"][-1])
            body = f"{body + '; ' if body and body != r['stderr_tail'][-1] else ''}last: {last}"
        if r.get("route_argv"):
            body = f"`{r['route_argv']}`: {body}"
        body = body.replace("|", "/")
        load = r.get("load")
        lines.append(f"| {r['posterior']} | {r['command']} | {status} | {r.get('seconds', 0):.0f} "
                     f"| {'' if load is None else load} | {body} "
                     f"| {len(r.get('warnings') or [])} |")
    lines.append("")
    lines.append("counts: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    if route_counts:
        lines.append("routes followed: " + ", ".join(f"{k} {v}" for k, v in
                                                     sorted(route_counts.items())))
    return "\n".join(lines)


def _data_size(folder: Path) -> int:
    data = folder / "data.json"
    return data.stat().st_size if data.is_file() else 0


def load(path: Path | None) -> list[dict[str, Any]]:
    """The records of an earlier run's results file (none when it does not exist)."""
    if path is None or not path.is_file():
        return []
    return json.loads(path.read_text()).get("runs", [])


def save(path: Path | None, records: list[dict[str, Any]]) -> None:
    """Write the results file (atomically: a long run can be stopped and resumed)."""
    if path is None:
        return
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps({"runs": records}, indent=1))
    tmp.replace(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="posteriordb folder")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="these posteriors only")
    parser.add_argument("--commands", default=",".join(DEFAULT_COMMANDS),
                        help=f"comma-separated, of {', '.join(COMMANDS)}")
    parser.add_argument("--limit", type=float, default=600.0,
                        help="wall-clock limit per command, seconds (default 600)")
    parser.add_argument("--jobs", type=int, default=1, help="commands at a time (only 1)")
    parser.add_argument("--seed", type=int, default=1, help="the --seed of every command")
    parser.add_argument("--out", type=Path, default=None, help="results file (JSON), written "
                        "after every command")
    parser.add_argument("--resume", action="store_true",
                        help="keep the --out file's records and run only what is missing")
    parser.add_argument("--smallest-first", action="store_true",
                        help="run the posteriors in order of their data file's size")
    parser.add_argument("--also", nargs="+", type=Path, default=[], metavar="FILE",
                        help="more results files whose records join the table (read only; where "
                        "two files ran the same command on a posterior, the later file's run "
                        "wins)")
    parser.add_argument("--follow-routes", action="store_true",
                        help="run the route each refusal names (recorded as '<command> → "
                        "route') where it is a command line")
    parser.add_argument("--table-only", action="store_true",
                        help="print the table of the --out file and run nothing")
    args = parser.parse_args(argv)
    if args.jobs != 1:
        parser.error("--jobs: only 1 (one command at a time) is supported")
    commands = [c.strip() for c in args.commands.split(",") if c.strip()]
    bad = [c for c in commands if c not in COMMANDS]
    if bad:
        parser.error(f"--commands: unknown {', '.join(bad)} (of {', '.join(COMMANDS)})")
    if not args.corpus.is_dir():
        print(f"corpus: no corpus at {args.corpus}", file=sys.stderr)
        return 2
    records = load(args.out) if (args.resume or args.table_only) else []
    if not args.table_only:
        done = {(r["posterior"], r["command"]) for r in records}
        folders = posteriors(args.corpus, args.only)
        if args.smallest_first:
            folders.sort(key=_data_size)
        for folder in folders:
            for command in commands:
                if (folder.name, command) in done:
                    continue
                sample_record = next((r for r in records if r["posterior"] == folder.name
                                      and r["command"] == "sample"), None)
                rec = run_one(folder, command, args.limit, args.seed, sample_record)
                records.append(rec)
                save(args.out, records)
                print(f"{folder.name} {command}: {rec['status']} in {rec.get('seconds', 0):.0f} s"
                      f" {rec.get('result') or rec.get('message', '')}", file=sys.stderr,
                      flush=True)
    for _ in range(ROUTE_DEPTH if args.follow_routes and not args.table_only else 0):
        done = {(r["posterior"], r["command"]) for r in records}
        for r in [r for r in records if r["status"] == "refused"]:
            if (r["posterior"], f"{r['command']} → route") in done:
                continue
            rec = follow_route(args.corpus / r["posterior"], r, args.limit, args.seed)
            if rec is None:
                continue
            records.append(rec)
            save(args.out, records)
            print(f"{r['posterior']} {rec['command']}: {rec['status']} in "
                  f"{rec.get('seconds', 0):.0f} s {rec.get('result') or rec.get('message', '')}",
                  file=sys.stderr, flush=True)
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    for r in records + [r for f in args.also for r in load(f)]:  # a later file's run wins
        latest.pop((r["posterior"], r["command"]), None)
        latest[(r["posterior"], r["command"])] = r
    print(table(list(latest.values())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
