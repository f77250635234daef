"""Running stanc3 (Stan to C++) and turning its diagnostics into one-line errors."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence
from pathlib import Path

from ..errors import StanCompileError, ToolchainError

_RULE = re.compile(r"^\s*-{5,}\s*$")
_EXCERPT = re.compile(r"^\s+(\d+:|\^)")


def condense_stanc_error(text: str) -> str:
    """One line from stanc's multi-line error: the location header plus the message.

    ``Syntax error in 'foo.stan', line 3, column 4: ";" expected after variable declaration.``
    """
    lines = [ln.rstrip() for ln in text.strip().splitlines()]
    header = ""
    body: list[str] = []
    in_excerpt = False
    for ln in lines:
        if not ln.strip():
            continue
        if _RULE.match(ln):
            in_excerpt = not in_excerpt
            continue
        if in_excerpt or _EXCERPT.match(ln):
            continue
        if not header and re.match(r"^(Syntax|Semantic) error", ln):
            header = ln
            continue
        body.append(ln.strip())
    if header:
        header = re.sub(r",?\s*parsing error:?\s*$", "", header).rstrip(":").strip()
        header = re.sub(r"(column \d+) to column \d+", r"\1", header)
        header = re.sub(r"(line \d+), column \d+ to line \d+, column \d+", r"\1", header)
    message = " ".join(body)
    if header and message:
        return f"{header}: {message}"
    return header or message or "stanc failed without a message"


def run_stanc(
    stanc: Path,
    stan_file: Path,
    out_file: Path,
    *,
    class_name: str,
    display_name: str,
    include_paths: Sequence[Path] = (),
) -> None:
    """Translate ``stan_file`` to C++ in ``out_file``; raises StanCompileError on bad programs."""
    cmd = [
        str(stanc),
        f"--o={out_file}",
        f"--name={class_name}",
        f"--filename-in-msg={display_name}",
    ]
    if include_paths:
        cmd.append("--include-paths=" + ",".join(str(p) for p in include_paths))
    cmd.append(str(stan_file))
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except OSError as exc:
        raise ToolchainError(f"cannot run stanc at {stanc}: {exc}") from exc
    except subprocess.TimeoutExpired as exc:
        raise StanCompileError(f"stanc timed out on {display_name}") from exc
    if proc.returncode != 0:
        raise StanCompileError(condense_stanc_error(proc.stderr or proc.stdout))


_NO_PRIOR = re.compile(r"The parameter (\w+) has no priors")


def parameters_without_prior(stanc: Path, code: str) -> list[str] | None:
    """Parameters stanc's pedantic mode finds without a prior (it also flags priors that depend
    on data); None when stanc cannot run or rejects the program."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="stanlogz-pedantic-") as tmp:
        src = Path(tmp) / "program.stan"
        src.write_text(code)
        try:
            proc = subprocess.run([str(stanc), "--warn-pedantic", f"--o={Path(tmp) / 'out.hpp'}",
                                   str(src)], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            return None
    if proc.returncode != 0:
        return None
    text = re.sub(r"\s+", " ", proc.stderr + proc.stdout)
    return list(dict.fromkeys(_NO_PRIOR.findall(text)))
