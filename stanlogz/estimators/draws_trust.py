"""Whether an evidence estimate's error bar can be taken at face value given its draws.

A standard error of log Z measures the estimator's Monte Carlo error *given* the posterior
draws. When the sampler flags trouble (divergences, R-hat above its bound, too few effective
draws), the draws may be biased, and log Z with them, by more than that se. This module turns
the sampler's diagnostics and the estimator's own split checks (log Z from the first and second
half of the draws, or from each chain) into one warning that says so, how far log Z moved
under that cheap check, and what to do.
"""

from __future__ import annotations

import math
from typing import Any

from ..draws import DrawsSummary
from ..draws.mode_search import chain_subset
from ..draws.summary import sampler_flags
from ..errors import Route
from .base import EvidenceResult


def sampler_trouble(summary: DrawsSummary) -> list[str]:
    """The sampler's flags that can bias the draws: any divergence, R-hat, low ESS."""
    return sampler_flags(summary.diagnostics)


def split_shift(res: EvidenceResult) -> tuple[float, str] | None:
    """How far log Z moved between parts of the draws, from the estimator's own checks: the
    first vs the second half of every chain, else the spread of per-chain estimates."""
    halves = res.diagnostics.get("half_log_z")
    if halves and len(halves) == 2 and all(math.isfinite(h) for h in halves):
        return abs(halves[1] - halves[0]), "between the first and second half of the draws"
    chains = [c for c in res.diagnostics.get("chain_log_z") or [] if math.isfinite(c)]
    if len(chains) >= 2:
        return max(chains) - min(chains), f"across the {len(chains)} chains"
    return None


def draws_trust(summary: DrawsSummary, res: EvidenceResult, adapt_delta: float | None = None
                ) -> tuple[dict[str, Any], str | None]:
    """Diagnostics (``flags``, ``split_shift``) and, when the sampler flagged trouble, a warning
    that log Z may be off beyond its se, by how much it moved under a split check, and what to
    do."""
    flags = sampler_trouble(summary)
    shift = split_shift(res)
    diag: dict[str, Any] = {"flags": flags, "split_shift": None if shift is None else shift[0]}
    if not flags:
        return diag, None
    moved = (f"; log Z moved {shift[0]:.3g} nats {shift[1]}" if shift is not None
             else "; this method has no split check of its own")
    return diag, (f"the sampler flagged the draws ({', '.join(flags)}), so log Z may be off by "
                  f"more than its se of {res.log_z_se:.3g}, which covers Monte Carlo error "
                  f"given the draws, not their bias{moved}: rerun with "
                  + _rerun_advice(adapt_delta))


def _rerun_advice(adapt_delta: float | None) -> str:
    """What to rerun with, given the ``adapt_delta`` the draws were adapted to."""
    ad, warmup = Route(options={"adapt_delta": ...}), Route(options={"warmup": ...})
    if adapt_delta is None:
        return (f"a higher {ad} than the one used (e.g. 0.95 or 0.99), longer {warmup}, "
                "or a reparameterized program")
    if adapt_delta < 0.99:
        return (f"a higher {ad} (it was {adapt_delta:g}; e.g. "
                f"{0.95 if adapt_delta < 0.95 else 0.99:g}), longer {warmup}, or a "
                "reparameterized program")
    return (f"longer {warmup} or a reparameterized program ({ad} was already "
            f"{adapt_delta:g})")


def add_draws_trust(res: EvidenceResult, d: Any, names: list[str] | None = None,
                    groups: list[Any] | None = None) -> None:
    """Say when the sampler's flags mean log Z may be off beyond its se (diagnostics and a
    warning), from the draws ``d`` (a :class:`~stanlogz.draws.Draws`), or from each mode's
    chains where ``groups`` holds more than one (their R-hat across modes says nothing about
    a log Z summed over the modes: :mod:`stanlogz.estimators.modewise`)."""
    parts = [d] if not groups or len(groups) < 2 else [chain_subset(d, g) for g in groups]
    diags = []
    for k, part in enumerate(parts):
        try:
            summary = part.summary(names)
        except Exception:  # summary needs >= 4 draws per chain; estimating needs no summary
            continue
        diag, warning = draws_trust(summary, res, getattr(d, "adapt_delta", None))
        diags.append(diag)
        if warning:
            res.warnings.append(warning if len(parts) == 1 else f"mode {k + 1}: {warning}")
    if diags:
        res.diagnostics["draws_trust"] = diags[0] if len(parts) == 1 else diags
