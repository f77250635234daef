"""Counted nouns in messages: "1 divergent transition", "3 divergent transitions"."""

from __future__ import annotations


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and the noun, singular for exactly one."""
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"


def transitions(n: int) -> str:
    """``"1 divergent transition"`` / ``"n divergent transitions"``."""
    return counted(n, "divergent transition")
