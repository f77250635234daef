"""The summary of draws users read: mean, sd, quantiles, bulk/tail ESS and R-hat per quantity,
sampler diagnostics, and warnings that say what to do."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .._util.display import Display, Section, View
from .._util.jsonable import json_value

# Thresholds of the warnings in :meth:`Draws.summary` (Vehtari et al. 2021 recommend R-hat < 1.01
# and a bulk/tail ESS of at least 100 per chain).
RHAT_MAX = 1.01
ESS_PER_CHAIN_MIN = 100


def sampler_flags(diag: dict[str, Any], divergent_share: float = 0.0) -> list[str]:
    """The sampler's signs, from a summary's ``diagnostics``, that the draws may not be from
    the posterior: divergences in more than ``divergent_share`` of the transitions (0: any),
    R-hat above ``RHAT_MAX`` (several chains), bulk/tail ESS under ``ESS_PER_CHAIN_MIN`` per
    chain. Evidence warns on them (:mod:`stanlogz.estimators.draws_trust`); leave-one-group-out
    withholds its Monte Carlo se (:mod:`stanlogz.crossval.logo.estimator`)."""
    out = []
    chains = int(diag.get("chains") or 1)
    transitions = chains * int(diag.get("draws_per_chain") or 0)
    n_div = int(diag.get("divergences") or 0)
    if n_div and n_div > divergent_share * transitions:
        out.append(f"{n_div} divergences")
    r_hat = diag.get("max_r_hat")
    if r_hat is not None and chains > 1 and r_hat > RHAT_MAX:
        out.append(f"R-hat {r_hat:.3f}")
    ess = diag.get("min_ess")
    if ess is not None and ess < ESS_PER_CHAIN_MIN * chains:
        out.append(f"ESS {ess:.0f}")
    return out


def _int_or_nan(v: float) -> int | float:
    return int(round(v)) if math.isfinite(v) else v


@dataclass(repr=False)
class DrawsSummary(Display):
    """Per-quantity posterior summary, overall sampler diagnostics and warnings that say what to do.

    ``rows`` holds one dict per constrained quantity with keys ``name, mean, sd, mcse_mean, q5,
    q50, q95, ess_bulk, ess_tail, r_hat`` (``mcse_mean``: the Monte Carlo se of the mean,
    sd / sqrt(ESS of the mean)).
    """

    rows: list[dict[str, Any]]
    diagnostics: dict[str, Any]
    warnings: list[str]

    header = ("name", "mean", "sd", "5%", "50%", "95%", "ess_bulk", "ess_tail", "r_hat")

    def table_rows(self) -> list[list[Any]]:
        """The rows as lists in the order of :attr:`header`."""
        keys = ("name", "mean", "sd", "q5", "q50", "q95")
        return [[r[k] for k in keys] + [_int_or_nan(r["ess_bulk"]), _int_or_nan(r["ess_tail"]),
                                        round(r["r_hat"], 3)] for r in self.rows]

    def to_dataframe(self) -> Any:
        """The per-quantity table as a pandas DataFrame indexed by name (as ``arviz.summary``
        gives it), with the columns ``mean, sd, mcse_mean, q5, q50, q95, ess_bulk, ess_tail,
        r_hat``.

        Examples
        --------
        >>> import numpy as np
        >>> from stanlogz.draws import Draws
        >>> x = np.random.default_rng(0).normal(size=(4, 200, 2))
        >>> df = Draws(unconstrained=x).summary().to_dataframe()
        >>> list(df.index), list(df.columns)[:3]
        (['x.1', 'x.2'], ['mean', 'sd', 'mcse_mean'])
        """
        import pandas as pd

        return pd.DataFrame(self.rows).set_index("name")

    def _display(self) -> View:
        d = self.diagnostics
        head = (f"posterior summary: {d.get('chains')} chains x {d.get('draws_per_chain')} "
                f"draws from {d.get('source')}")
        return View(head, [Section("", self.header, self.table_rows())], list(self.warnings))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable dict."""
        return json_value(
            {"parameters": self.rows, "diagnostics": self.diagnostics, "warnings": self.warnings}
        )
