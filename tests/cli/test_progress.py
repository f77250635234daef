"""Progress: tqdm bars on a terminal (counted steps, NUTS iterations, a build's spinner), the
plain timed lines elsewhere (pipes, logs, captured stderr), nothing under ``--quiet``, no bars
under ``--json``, stdout never touched. Everything here is exact (counts and text)."""

from __future__ import annotations

import io
import json
import os
import pickle
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from stanlogz._util.progress import stage, steps
from stanlogz.parallel import run_parallel
from stanlogz.report.output import Reporter
from stanlogz.report.progress import TerminalProgress

ROOT = Path(__file__).resolve().parents[2]
NORMAL = ROOT / "stan_models" / "tests" / "normal.stan"
NORMAL_DATA = ROOT / "stan_models" / "tests" / "normal.json"


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_plain_callback_gets_the_counted_lines():
    lines: list[str] = []
    with steps(lines.append, 3, "refits") as bar:
        assert not bar.drawn
        bar.update("one")
        bar.update(lambda k: f"{k}/3 done")
        bar.update()  # no line: nothing printed
    assert lines == ["one", "2/3 done"] and bar.done == 3
    with steps(None, 2, "quiet") as bar:  # no callback at all
        bar.update("ignored")
    with stage(lines.append, "compiling x..."):
        pass
    assert lines[-1] == "compiling x..."


def test_terminal_draws_bars_and_keeps_lines_above_them():
    out = _Tty()
    tp = TerminalProgress(stream=out)
    assert tp.bars
    with steps(tp, 4, "held-out refits", unit="refit") as bar:
        assert bar.drawn
        tp("a message while the bar is open")
        for _ in range(4):
            bar.update("not printed: the bar counts")
    text = out.getvalue()
    assert "held-out refits" in text and "4/4" in text and "refit" in text
    assert "a message while the bar is open" in text
    assert "not printed" not in text
    assert not tp._open  # closed bars are forgotten
    s = steps(tp, 10, "iterations", unit="it")
    s.set(7)
    s.set(10)
    s.close()
    assert "10/10" in out.getvalue()


def test_spinner_shows_the_elapsed_time_and_stops():
    out = _Tty()
    tp = TerminalProgress(stream=out)
    with stage(tp, "compiling prog (cached build not found)...", "compiling prog"):
        time.sleep(0.6)  # > 2 redraws of REFRESH_S = 0.25 s
    text = out.getvalue()
    assert "compiling prog (cached build not found)..." in text  # the line, above
    assert re.search(r"compiling prog: 00:0\d", text), text
    assert not [t for t in __import__("threading").enumerate() if t.name == "stanlogz-spinner"]


def test_not_a_terminal_keeps_the_plain_timed_lines():
    out = io.StringIO()
    tp = TerminalProgress(stream=out)
    assert not tp.bars
    with steps(tp, 2, "held-out refits") as bar:
        bar.update(lambda k: f"held-out set {k}/2 done")
        bar.update(lambda k: f"held-out set {k}/2 done")
    lines = out.getvalue().splitlines()
    assert len(lines) == 2
    assert re.fullmatch(r"\[ +\d+\.\ds\] held-out set 2/2 done", lines[1]), lines


def test_quiet_json_and_pickled_copies(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stderr", _Tty())
    assert Reporter().progress.bars  # a terminal: bars
    assert not Reporter(json_mode=True).progress.bars  # --json: lines only, no bars
    quiet = Reporter(quiet=True)
    assert not quiet.progress.bars
    quiet.progress("hidden")
    assert sys.stderr.getvalue() == ""
    quiet.warn("shown")  # warnings are never quiet
    assert sys.stderr.getvalue() == "stanlogz: warning: shown\n"
    # a copy sent to another process (a unit of work) is silent and draws nothing
    copy = pickle.loads(pickle.dumps(Reporter().progress))
    assert copy.quiet and not copy.bars
    s = pickle.loads(pickle.dumps(steps(Reporter().progress, 3, "x")))
    assert not s.drawn
    assert capsys.readouterr().out == ""  # stdout untouched throughout


@pytest.mark.parametrize("backend, workers", [("serial", 1), ("thread", 3), ("process", 2)])
def test_run_parallel_counts_finished_units_here(backend, workers):
    seen: list[int] = []
    out = run_parallel(_square, list(range(7)), 1, n_workers=workers, backend=backend,
                       on_done=lambda: seen.append(os.getpid()))
    assert out == [i * i for i in range(7)]
    assert seen == [os.getpid()] * 7


def _square(i: int, rng: np.random.Generator) -> int:
    return i * i


def test_nuts_and_kfold_draw_bars(compiled):
    import stanlogz

    model = compiled("normal")
    out = _Tty()
    tp = TerminalProgress(stream=out)
    d = stanlogz.sample(model, seed=1, chains=2, warmup=100, draws=100, progress=tp)
    text = out.getvalue()
    assert "NUTS normal" in text and "/400" in text  # 2 chains x 200 iterations
    assert "iteration" not in text  # the per-chain lines are left to plain callbacks
    # the bars change no result: the same draws, the same folds, bit for bit
    plain = stanlogz.sample(model, seed=1, chains=2, warmup=100, draws=100)
    np.testing.assert_array_equal(d.unconstrained, plain.unconstrained)
    out.seek(0)
    out.truncate()
    kw = dict(k=2, seed=2, chains=2, warmup=150, n_draws=150)
    r = stanlogz.kfold(model, progress=tp, **kw)
    text = out.getvalue()
    assert "held-out refits" in text and "2/2" in text
    assert not tp._open
    np.testing.assert_array_equal(r.elpd_i, stanlogz.kfold(model, **kw).elpd_i)


def _run_on_pty(argv: list[str]) -> tuple[int, str, str]:
    """``stanlogz argv`` with stderr on a pseudo-terminal (stdout a pipe): exit status,
    stdout, and what the terminal showed."""
    master, slave = pty.openpty()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    p = subprocess.Popen([sys.executable, "-m", "stanlogz", *argv], stdout=subprocess.PIPE,
                         stderr=slave, env=env, cwd=ROOT)
    os.close(slave)
    seen = b""
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the terminal closed: the command is done
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    stdout = p.communicate(timeout=60)[0].decode()
    return p.returncode, stdout, seen.decode(errors="replace")


def test_cli_bars_on_a_terminal_and_none_with_json(compiled):
    compiled("normal")  # built: the subprocess loads it from the cache
    base = ["sample", str(NORMAL), "--data", str(NORMAL_DATA), "--seed", "1",
            "--chains", "2", "--warmup", "100", "--draws", "100"]
    rc, stdout, terminal = _run_on_pty(base)
    assert rc == 0, terminal
    assert "NUTS normal" in terminal and "/400" in terminal  # the bar
    assert "posterior of normal" in stdout and "NUTS" not in stdout
    rc, stdout, terminal = _run_on_pty(["--json", *base])
    assert rc == 0, terminal
    assert json.loads(stdout)["model"] == "normal"  # stdout is the one JSON object
    assert "NUTS normal" not in terminal and "sampling normal" in terminal  # lines, no bar


def test_bridge_and_moment_matching_bars(compiled):
    """gbs counts its two bridges (the halves of the draws); moment matching its points: the
    normal_mean example with its last observation moved to 12 has k-hat >> 0.7 there (as in
    tests/crossval/test_crossval.py), so at least one point is matched."""
    import stanlogz

    ex = ROOT / "stan_models" / "examples"
    data = json.loads((ex / "normal_mean.data.json").read_text())
    data["y"] = data["y"][:-1] + [12.0]
    model = compiled(ex / "normal_mean.stan", data)
    d = stanlogz.sample(model, seed=4, chains=4, warmup=300, draws=500)
    out = _Tty()
    tp = TerminalProgress(stream=out)
    e = stanlogz.evidence(model, draws=d, seed=5, progress=tp)
    assert "bridge sampling" in out.getvalue() and "2/2" in out.getvalue()
    assert e.log_z == stanlogz.evidence(model, draws=d, seed=5).log_z  # unchanged by the bar
    out.seek(0)
    out.truncate()
    r = stanlogz.loo(model, draws=d, fix="mm", seed=6, progress=tp)
    n = len(r.fixed)
    assert n >= 1 and "moment matching" in out.getvalue() and f"{n}/{n}" in out.getvalue()
    assert not tp._open
