"""Stan's C++ messages turned into one-line errors that name the variable involved."""

from __future__ import annotations

import re

from ..errors import InputError, Route


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise InputError(message)


def _data_error_message(label: str, message: str, code: str) -> str:
    text = _condense_stan(message).replace("processing stage=data initialization; ", "")
    found = re.search(r"variable(?: name)?=([A-Za-z_]\w*)", text)
    var = found.group(1) if found else _declared_at(code, text)
    where = f", variable '{var}'" if var else ""
    return f"data for {label}{where}: {text}"


def _declared_at(code: str, message: str) -> str | None:
    """The variable declared on the program line a Stan message points at, if any."""
    found = re.search(r"line (\d+)", message)
    lines = code.splitlines()
    if not found or not 0 < int(found.group(1)) <= len(lines):
        return None
    line = lines[int(found.group(1)) - 1].split("//")[0].strip()
    line = re.sub(r"<[^<>]*>|\[[^\[\]]*\]", "", line)
    decl = re.search(r"([A-Za-z_]\w*)\s*(?:=[^;]*)?;\s*$", line)
    return decl.group(1) if decl else None


def _with_variable(code: str, message: str) -> str:
    text = _condense_stan(message)
    var = _declared_at(code, text)
    return f"variable '{var}': {text}" if var else text


def _condense_stan(message: str) -> str:
    """One line from a Stan C++ exception message, without boilerplate."""
    text = _one_line(message)
    text = re.sub(r"^Exception:\s*", "", text)
    return re.sub(r"^\w+_namespace::\w+:\s*", "", text)


# Lines of Stan's sampler log that carry no information about a failure.
_STAN_LOG_NOISE = re.compile(
    r"^(Gradient evaluation took|\d+ transitions using|Adjust your expectations|Iteration:|"
    r"Elapsed Time|$)")


def stan_failure_cause(log: str) -> str:
    """One line from Stan's sampler log (entries joined by " | "): the first cause, each message
    once, timing chatter dropped."""
    seen: list[str] = []
    for entry in log.split(" | "):
        entry = re.sub(r"^chain \d+ stopped early:\s*", "", _condense_stan(entry)).strip()
        if not _STAN_LOG_NOISE.match(entry) and entry not in seen:
            seen.append(entry)
    if not seen:
        return "Stan's sampler stopped without a message"
    causes = [e for e in seen if not e.startswith("Exception")]
    context = [e.rstrip(".") for e in seen if e.startswith("Exception")]
    head = "; ".join(causes or context)
    tail = f" ({'; '.join(context)})" if causes and context else ""
    verbose = Route(options={"verbose": True}, api_text="the error's log")
    return head + tail + f" [{verbose} shows Stan's log]"
