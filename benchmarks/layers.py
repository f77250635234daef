"""The package's layers as a table: per layer of the import contract in ``pyproject.toml``, its
modules, lines, largest module, imports to lower layers and upward imports (0 when the contract
holds); and the import cycles among all modules (none wanted).

Run: ``python3 -m benchmarks.layers`` (needs grimp, which import-linter brings).
"""

from __future__ import annotations

import tomllib

import grimp

from benchmarks._common import ROOT  # noqa: E402


def layers() -> list[list[str]]:
    """The layers of the contract, top first, each a list of sibling names."""
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    contract = cfg["contracts"][0]
    return [[p.strip() for p in layer.split("|")] for layer in contract["layers"]]


def main() -> None:
    graph = grimp.build_graph("stanlogz")
    stack = layers()
    rank = {}
    for i, layer in enumerate(stack):
        for name in layer:
            rank[f"stanlogz.{name}"] = len(stack) - i  # higher is further up

    def layer_of(module: str) -> str | None:
        parts = module.split(".")
        for k in range(len(parts), 1, -1):
            if ".".join(parts[:k]) in rank:
                return ".".join(parts[:k])
        return None

    root = ROOT / "stanlogz"
    header = ("layer", "modules", "lines", "largest", "imports down", "imports up")
    rows = []
    for layer in stack:
        names = [f"stanlogz.{n}" for n in layer]
        mods = sorted(m for m in graph.modules if layer_of(m) in names)
        sizes = {}
        for m in mods:
            rel = m.removeprefix("stanlogz.").replace(".", "/")
            path = root / rel / "__init__.py" if (root / rel).is_dir() else root / f"{rel}.py"
            sizes[m] = sum(1 for _ in path.open())
        down = up = 0
        for m in mods:
            for dep in graph.find_modules_directly_imported_by(m):
                other = layer_of(dep)
                if other is None or other in names:
                    continue
                if rank[other] < rank[layer_of(m)]:
                    down += 1
                else:
                    up += 1
        big = max(sizes, key=sizes.get)
        rows.append([" | ".join(layer), len(mods), sum(sizes.values()),
                     f"{big.removeprefix('stanlogz.')} {sizes[big]}", down, up])
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for r in [header, *rows]:
        print("  ".join(str(c).rjust(w) for c, w in zip(r, widths, strict=True)))
    cycles = sorted({tuple(sorted((a, b))) for a in graph.modules
                     for b in graph.find_modules_directly_imported_by(a)
                     if graph.chain_exists(b, a)})
    print(f"\n{len(graph.modules)} modules; import cycles: {len(cycles)} {cycles or ''}")


if __name__ == "__main__":
    main()
