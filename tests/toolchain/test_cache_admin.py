"""The build cache: a key that does not depend on where the toolchain is installed, a size
bound (least recently used builds go first) and ``stanlogz cache`` to list, prune and clear."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path

import pytest

from stanlogz.cli import main
from stanlogz.toolchain import find_toolchain
from stanlogz.toolchain.cache_admin import cache_entries, clear_cache, prune_cache
from stanlogz.toolchain.locate import VERSION_HEADERS, content_manifest


def _copy_toolchain_tree(tc, dest: Path) -> tuple[Path, Path]:
    """A second 'install' of the same toolchain elsewhere: the version headers copied, the
    library folder copied (names and sizes are what the key reads)."""
    inc, lib = dest / "site-packages" / "httpstan" / "include", dest / "httpstan" / "lib"
    for rel in VERSION_HEADERS:
        (inc / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(tc.include_dir / rel, inc / rel)
    lib.mkdir(parents=True)
    for p in tc.lib_dir.iterdir():
        if p.is_file():
            (lib / p.name).write_bytes(b"\0" * p.stat().st_size)
    return inc, lib


def test_fingerprint_does_not_depend_on_the_install_path(tmp_path: Path) -> None:
    tc = find_toolchain()
    inc, lib = _copy_toolchain_tree(tc, tmp_path / "venv2")
    moved = dataclasses.replace(tc, include_dir=inc, lib_dir=lib)
    assert moved.fingerprint() == tc.fingerprint()
    # ... but it does depend on what is installed: another Stan Math version changes the key
    (inc / "stan/math/version.hpp").write_text("#define STAN_MATH_MAJOR 99\n")
    content_manifest.cache_clear()
    assert dataclasses.replace(tc, include_dir=inc, lib_dir=lib).fingerprint() != tc.fingerprint()
    (lib / "libtbb.so.2").write_bytes(b"\0")  # a different library too
    content_manifest.cache_clear()
    assert content_manifest(inc, lib) != content_manifest(tc.include_dir, tc.lib_dir)


def _fake_cache(root: Path, entries: list[tuple[str, str, int, float]]) -> None:
    for sub in ("models", "base", "locks", "tmp"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    for kind, name, size, mtime in entries:
        d = root / ("models" if kind == "model" else "base") / name
        d.mkdir()
        (d / "lib.so").write_bytes(b"\0" * size)
        os.utime(d, (mtime, mtime))


def test_prune_removes_least_recently_used_first(tmp_path: Path) -> None:
    _fake_cache(tmp_path, [("model", "a-k1", 1000, 100.0), ("model", "b-k2", 2000, 300.0),
                           ("base", "fp-pch", 5000, 50.0), ("model", "c-k3", 1500, 200.0)])
    assert [e.name for e in cache_entries(tmp_path)] == ["fp-pch", "a-k1", "c-k3", "b-k2"]
    assert sum(e.bytes for e in cache_entries(tmp_path)) == 9500
    # 9500 bytes, bound 7000, the base kept (the runtime in use): a-k1 then c-k3 go
    removed = prune_cache(tmp_path, 7000, keep=(tmp_path / "base" / "fp-pch",))
    assert [e.name for e in removed] == ["a-k1", "c-k3"]
    assert sorted(e.name for e in cache_entries(tmp_path)) == ["b-k2", "fp-pch"]
    assert prune_cache(tmp_path, 10_000) == []  # under the bound: nothing goes
    assert [e.name for e in clear_cache(tmp_path, "model")] == ["b-k2"]
    assert [e.name for e in cache_entries(tmp_path)] == ["fp-pch"]


def test_cache_command_lists_prunes_and_clears(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("STANLOGZ_CACHE", str(tmp_path))
    root = tmp_path / "v1"
    _fake_cache(root, [("model", "a-k1", 1000, 100.0), ("model", "b-k2", 3000, 300.0)])
    assert main(["cache", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["total_bytes"] == 4000 and [e["name"] for e in out["entries"]] == ["a-k1", "b-k2"]
    assert main(["cache", "--prune", "0.000003", "--json"]) == 0  # 3000 bytes
    out = json.loads(capsys.readouterr().out)
    assert [e["name"] for e in out["removed"]] == ["a-k1"] and out["total_bytes"] == 3000
    assert main(["cache", "--clear"]) == 0
    text = capsys.readouterr().out
    assert "removed 1 cached build(s)" in text and "0 build(s)" in text
    assert not any((root / "models").iterdir())
    assert main(["cache", "--prune", "-1"]) == 2  # bad input: one line, exit 2
    assert "--prune" in capsys.readouterr().err


def test_bad_cache_bound_is_one_line(monkeypatch, tmp_path: Path, capsys) -> None:
    monkeypatch.setenv("STANLOGZ_CACHE", str(tmp_path))
    monkeypatch.setenv("STANLOGZ_CACHE_MAX_GB", "lots")
    assert main(["cache"]) == 2
    assert "STANLOGZ_CACHE_MAX_GB" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["all", "model", "base"])
def test_clear_kinds(tmp_path: Path, kind: str) -> None:
    _fake_cache(tmp_path, [("model", "a-k1", 10, 1.0), ("base", "fp", 10, 2.0)])
    left = {e.kind for e in cache_entries(tmp_path)} - {e.kind for e in
                                                        clear_cache(tmp_path, kind)}
    assert left == ({"model", "base"} - ({"model", "base"} if kind == "all" else {kind}))


def test_program_key_does_not_depend_on_the_program_folder(tmp_path: Path) -> None:
    from stanlogz.toolchain.build import program_key

    tc = find_toolchain()
    code = "parameters { real x; } model { x ~ normal(0, 1); }"
    a, b = tmp_path / "clone1" / "stan_models", tmp_path / "clone2" / "stan_models"
    assert program_key(tc, code, [a], "stanlogz") == program_key(tc, code, [b], "stanlogz")
    assert program_key(tc, code, [a], "stanlogz") != program_key(tc, code + " ", [a], "stanlogz")
    # with #include lines the folders decide what is included, so they are part of the key
    inc = '#include "prior.stan"\n' + code
    assert program_key(tc, inc, [a], "stanlogz") != program_key(tc, inc, [b], "stanlogz")
