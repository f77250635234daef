"""The offline toolchain: stanc diagnostics, compiler lookup, the build cache (hits, atomicity,
locking across processes) and the optional BridgeStan backend."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from stanlogz.errors import StanCompileError, ToolchainError
from stanlogz.stan.model import StanModel
from stanlogz.toolchain import (
    build,
    build_count,
    cache_root,
    condense_stanc_error,
    find_toolchain,
    sanitize_name,
)

ROOT = Path(__file__).resolve().parents[2]
NORMAL = ROOT / "stan_models" / "tests" / "normal.stan"


def _cache_entries(root: Path) -> dict[str, list[str]]:
    return {sub: sorted(p.name for p in (root / sub).iterdir())
            for sub in ("models", "base", "tmp")}


def test_toolchain_found_offline():
    tc = find_toolchain()
    assert tc.stanc.is_file() and "v2.35" in tc.stanc_version
    assert (tc.include_dir / "stan" / "version.hpp").is_file()
    assert any(tc.lib_dir.glob("libtbb.so*"))
    assert tc.fingerprint() == find_toolchain().fingerprint()


def test_syntax_error_is_one_line_with_location(isolated_cache):
    code = "parameters {\n  real mu\n}\nmodel { mu ~ normal(0, 1); }\n"
    with pytest.raises(StanCompileError) as info:
        build(code, name="bad_syntax")
    msg = str(info.value)
    assert "\n" not in msg
    assert msg.startswith("Syntax error in 'bad_syntax.stan', line 3, column 0: ")
    assert '";" expected after variable declaration' in msg
    assert _cache_entries(isolated_cache)["models"] == []
    assert _cache_entries(isolated_cache)["tmp"] == []


def test_semantic_error_from_file_names_file_and_line(isolated_cache, tmp_path):
    path = tmp_path / "foo.stan"
    path.write_text("parameters {\n  real mu;\n}\nmodel {\n  nu ~ normal(0, 1);\n}\n")
    with pytest.raises(StanCompileError, match=r"^Semantic error in 'foo.stan', line 5, "
                       r"column 2: Identifier 'nu' not in scope\. Did you mean 'mu'\?$"):
        StanModel.from_file(path)


def test_condense_keeps_message_after_excerpt():
    text = textwrap.dedent("""\
        Syntax error in 'x.stan', line 4, column 25 to column 26, parsing error:
           -------------------------------------------------
             4:  model { mu ~ normal(0,1) }
                                          ^
           -------------------------------------------------

        Ill-formed "~"-statement. Expect either ";" or a truncation.
        """)
    assert condense_stanc_error(text) == (
        "Syntax error in 'x.stan', line 4, column 25: Ill-formed \"~\"-statement. "
        "Expect either \";\" or a truncation.")


def test_missing_compiler(monkeypatch, tmp_path):
    monkeypatch.setenv("STANLOGZ_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("CXX", str(tmp_path / "no-such-g++"))
    with pytest.raises(ToolchainError, match="^no C\\+\\+ compiler found: .*install g\\+\\+"):
        build("parameters { real x; } model { x ~ std_normal(); }", name="nocxx")
    monkeypatch.delenv("CXX")
    monkeypatch.setenv("PATH", str(tmp_path))  # no g++/clang++/c++ on PATH
    with pytest.raises(ToolchainError, match="^no C\\+\\+ compiler found"):
        build("parameters { real x; } model { x ~ std_normal(); }", name="nocxx")


def test_failed_build_leaves_nothing_in_cache(monkeypatch, tmp_path):
    fake = tmp_path / "fake-g++"
    fake.write_text('#!/bin/sh\n'
                    'if [ "$1" = "--version" ]; then echo "g++ (fake) 1.0"; exit 0; fi\n'
                    'echo "fake.cpp:1: error: this compiler always fails" >&2\nexit 1\n')
    fake.chmod(0o755)
    monkeypatch.setenv("STANLOGZ_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("CXX", str(fake))
    with pytest.raises(StanCompileError, match="C\\+\\+ .* failed: .*always fails"):
        build("parameters { real x; } model { x ~ std_normal(); }", name="failing")
    root = cache_root()
    assert _cache_entries(root) == {"models": [], "base": [], "tmp": []}


def test_second_load_is_a_cache_hit(compiled):
    model = compiled("normal")
    mtime = model.lib_path.stat().st_mtime_ns
    before = build_count()
    again = build(NORMAL)
    assert not again.built and again.lib_path == model.lib_path
    assert build_count() == before
    assert model.lib_path.stat().st_mtime_ns == mtime
    # Cache loads are cheap: hashing plus a few stats (the compiler version is memoized).
    assert again.seconds < 0.5


def test_key_depends_on_program_text(isolated_cache):
    from stanlogz.toolchain.build import program_key

    tc = find_toolchain()
    a = program_key(tc, "model {}", [], "stanlogz")
    assert a == program_key(tc, "model {}", [], "stanlogz")
    assert a != program_key(tc, "model { }", [], "stanlogz")
    # include paths matter only to a program that includes files (else a fresh clone elsewhere
    # would rebuild every program)
    assert a == program_key(tc, "model {}", [Path("/x")], "stanlogz")
    inc = '#include "x.stan"\nmodel {}'
    assert program_key(tc, inc, [], "stanlogz") != program_key(tc, inc, [Path("/x")], "stanlogz")
    assert sanitize_name("8-schools.v2") == "m_8_schools_v2"


_BUILD_SCRIPT = """
import sys
from stanlogz.toolchain import build
r = build(sys.argv[1], progress=lambda m: print("PROGRESS", m, flush=True))
print("BUILT", r.built, r.lib_path, flush=True)
"""


def test_concurrent_processes_build_once(isolated_cache, tmp_path):
    from stanlogz.toolchain.build import program_key

    program = tmp_path / "tiny.stan"
    program.write_text("parameters { real<lower=0> s; }\nmodel { s ~ exponential(2); }\n")
    # An incomplete entry (as if published by hand or damaged) must be replaced, not trusted.
    key = program_key(find_toolchain(), program.read_text(), [tmp_path.resolve()], "stanlogz")
    leftover = isolated_cache / "models" / f"tiny-{key}"
    leftover.mkdir()
    (leftover / "junk.o").write_text("")
    env = {**os.environ, "STANLOGZ_CACHE": str(isolated_cache.parent)}

    # A builder killed mid-compile (SIGKILL: no cleanup runs) publishes nothing and, because
    # the kernel drops its flock, does not block later builders.
    killed = subprocess.Popen([sys.executable, "-c", _BUILD_SCRIPT, str(program)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    deadline = time.monotonic() + 120
    while not list((isolated_cache / "tmp").glob("*/tiny.cpp")):  # stanc done, C++ started
        assert killed.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    os.killpg(killed.pid, signal.SIGKILL)  # the builder and its compiler, nothing else
    killed.wait()
    assert sorted(p.name for p in leftover.iterdir()) == ["junk.o"]
    stale = _cache_entries(isolated_cache)["tmp"]
    assert len(stale) == 1

    procs = [subprocess.Popen([sys.executable, "-c", _BUILD_SCRIPT, str(program)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-500:] for o in outs]
    built = sorted(line.split()[1] for out, _ in outs for line in out.splitlines()
                   if line.startswith("BUILT"))
    assert built == ["False", "True"]
    progress = [line for out, _ in outs for line in out.splitlines()
                if line.startswith("PROGRESS")]
    assert progress == ["PROGRESS compiling tiny (cached build not found)..."]
    entries = _cache_entries(isolated_cache)
    assert entries["tmp"] == stale  # only the killed builder's staging dir (swept after 6 h)
    assert entries["models"] == [leftover.name] and not (leftover / "junk.o").exists()
    lib = leftover / "libtiny.so"
    model = StanModel(lib)
    # s = exp(x) = 1 at x = 0: log(2) - 2 * s plus the log-Jacobian x = 0.
    assert model.dim == 1 and model.log_density([0.0]) == pytest.approx(math.log(2) - 2)


def test_bridgestan_backend_needs_checkout(isolated_cache, monkeypatch):
    monkeypatch.delenv("BRIDGESTAN", raising=False)
    with pytest.raises(ToolchainError, match="BRIDGESTAN"):
        build("parameters { real x; } model { x ~ std_normal(); }", name="bs",
              backend="bridgestan")
    assert _cache_entries(isolated_cache)["models"] == []


def test_unusable_cache_dir(monkeypatch, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("STANLOGZ_CACHE", str(blocker / "cache"))
    with pytest.raises(ToolchainError, match="cannot create the build cache .*STANLOGZ_CACHE"):
        cache_root()

