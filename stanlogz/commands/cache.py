"""``stanlogz cache``: list the build cache, bound its size, or clear it."""

from __future__ import annotations

import argparse

from ..report.output import Reporter

NAME = "cache"
HELP = ("List the cache of built programs and runtimes (size, last use), prune it to a size, "
        "or clear it.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--clear", choices=["all", "model", "base"], nargs="?", const="all",
                       default=None, help="remove every cached build (or only model libraries "
                       "or only runtimes); they are rebuilt when next needed")
    group.add_argument("--prune", metavar="GB", type=float, default=None,
                       help="remove least recently used builds until the cache holds at most "
                       "GB gigabytes (after every build stanlogz prunes to "
                       "$STANLOGZ_CACHE_MAX_GB, default 8)")


def run(args: argparse.Namespace, report: Reporter) -> int:
    from ..errors import InputError
    from ..toolchain.cache import cache_root
    from ..toolchain.cache_admin import (
        age_text,
        cache_entries,
        clear_cache,
        max_cache_bytes,
        prune_cache,
    )

    root = cache_root()
    removed = None
    if args.clear is not None:
        removed = clear_cache(root, args.clear)
    elif args.prune is not None:
        if not args.prune >= 0:
            raise InputError(f"--prune takes a size in gigabytes >= 0, not {args.prune}")
        removed = prune_cache(root, int(args.prune * 1e9))
    entries = cache_entries(root)
    total = sum(e.bytes for e in entries)
    if removed is not None:
        freed = sum(e.bytes for e in removed)
        report.text(f"removed {len(removed)} cached build(s), {freed / 1e6:.1f} MB")
    report.table(["kind", "name", "MB", "last used"],
                 [[e.kind, e.name, round(e.bytes / 1e6, 1), age_text(e.last_used) + " ago"]
                  for e in reversed(entries)],
                 title=f"build cache {root}: {len(entries)} build(s), {total / 1e6:.1f} MB "
                       f"(bound {max_cache_bytes() / 1e9:g} GB)")
    report.emit_json({"root": str(root), "total_bytes": total,
                      "max_bytes": max_cache_bytes(),
                      "entries": [{"kind": e.kind, "name": e.name, "path": str(e.path),
                                   "bytes": e.bytes, "last_used": e.last_used}
                                  for e in entries],
                      "removed": None if removed is None else [
                          {"kind": e.kind, "name": e.name, "bytes": e.bytes} for e in removed]})
    return 0
