"""One named k̂ threshold set (issue 43): the package's code compares k̂ with
``stanlogz._util.gpd.KHAT_BAD`` (0.7) and ``KHAT_HEAVY`` (0.5), never with a bare 0.7 or 0.5
literal, and binds no other name to them."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import stanlogz
from stanlogz._util.gpd import KHAT_BAD, KHAT_HEAVY

PACKAGE = Path(stanlogz.__file__).resolve().parent
#: a line about k̂: a name such as k, khat, tail_k, k_threshold, good_k, KHAT_..., ..._K
K_LINE = re.compile(r"\bk\b|khat|KHAT|_k\b|\bk_|_K\b|\bK_|_K_|good_k|threshold")
#: arviz_compat sits beside _util (the layers contract), so its ArviZ default stays a number
ALLOWED = {("arviz_compat.py", "good_k: float = 0.7")}


def _threshold_literals() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        src = path.read_text()
        lines = src.splitlines()
        for tok in tokenize.generate_tokens(io.StringIO(src).readline):
            if tok.type != tokenize.NUMBER or tok.string not in ("0.7", "0.5"):
                continue
            line = lines[tok.start[0] - 1]
            code = line.split("#")[0]
            near = line[max(tok.start[1] - 3, 0):tok.end[1] + 3]
            if "*" in near or "quantile" in code or not K_LINE.search(code):
                continue  # arithmetic (0.5 * x), quantile levels, not a k̂ threshold
            if any(path.name == f and text in line for f, text in ALLOWED):
                continue
            if path.relative_to(PACKAGE).as_posix() == "_util/gpd.py":
                continue
            found.append(f"{path.relative_to(PACKAGE.parent)}:{tok.start[0]}: {line.strip()}")
    return found


def test_no_bare_khat_threshold_outside_gpd() -> None:
    assert _threshold_literals() == []


def test_the_two_thresholds() -> None:
    assert (KHAT_BAD, KHAT_HEAVY) == (0.7, 0.5)
    # loo's draw-count threshold is capped at KHAT_BAD (reached from 2,200 draws on)
    from stanlogz.crossval.elpd.psis import k_threshold

    assert k_threshold(4000) == KHAT_BAD and k_threshold(1000) == 1 - 1 / 3
