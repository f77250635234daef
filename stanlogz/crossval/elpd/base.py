"""One interface for the results that estimate an expected log predictive density (PSIS-LOO,
WAIC, K-fold, LFO, unbiased CV): the same names for the same things, whatever the method.

Subclasses are dataclasses holding the method's own fields under loo's names; this base reads
them through one set of names: ``kind``, ``elpd`` (the sum over observations), ``se`` (loo's
between-observation se of that sum), ``mcse`` (the Monte Carlo se of the sum), ``elpd_i``,
``mcse_i``, ``p``, ``pareto_k``, ``n_obs``, ``n_samples`` and ``warnings`` (``unit`` says what
``elpd_i`` runs over: observations, or groups for leave-one-group-out), and
:meth:`ElpdResult.elpd_dict` is their one serialization, which the LOO, WAIC and CV
``to_dict`` start from (K-fold and LFO keep their own keys). An LFO result's pointwise values
are its forecast origins'; unbiased CV's objective is a mean per split, kept under its own
names (``estimate``, ``estimate_mcse``) beside the sum's.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np


def _number(x: Any) -> float | None:
    """A JSON number: None for NaN or infinity."""
    x = float(x)
    return x if np.isfinite(x) else None


class ElpdResult:
    """The common read interface of an elpd estimate (module docstring). A subclass sets
    ``kind``; its own fields for ``elpd`` and ``p`` carry loo's names of that kind,
    ``elpd_KIND`` and ``p_KIND`` (``elpd_loo``, ``p_waic``, ``elpd_logo``, ...)."""

    kind: ClassVar[str] = "elpd"
    #: what ``elpd_i`` and ``se`` run over: observations (forecast origins for LFO, groups
    #: for leave-one-group-out, kind ``"logo"``)
    unit: ClassVar[str] = "observations"

    @property
    def elpd(self) -> float:
        """The estimate of the expected log predictive density (Σ_i elpd_i)."""
        return float(getattr(self, self.elpd_name))

    @property
    def p(self) -> float:
        """The effective number of parameters (p_loo, p_waic)."""
        return float(getattr(self, self.p_name))

    @property
    def n_obs(self) -> int:
        """Number of observations."""
        return int(np.asarray(self.elpd_i).size)

    @property
    def elpd_name(self) -> str:
        """loo's name of this kind's ``elpd`` (``elpd_loo``, ``elpd_logo``, ...)."""
        return f"elpd_{self.kind}"

    @property
    def p_name(self) -> str:
        """loo's name of this kind's ``p`` (``p_loo``, ``p_logo``, ...)."""
        return f"p_{self.kind}"

    @property
    def n_units(self) -> int:
        """How many units ``elpd`` sums over (observations; groups for leave-one-group-out),
        the N of loo's se sqrt(N var(elpd_i)); more than ``elpd_i`` holds when subsampled."""
        return self.n_obs

    def fixed_labels(self) -> list[int]:
        """The units whose values were recomputed (numbered from 1), as a comparison lists
        them; none where the method recomputes nothing."""
        return [int(f.index) + 1 for f in getattr(self, "fixed", [])]

    def unit_values(self) -> dict[str, Any]:
        """Per-unit values a comparison's ``to_dict`` carries beside the common entries (none
        by default: N observations are the result's own ``to_dict``'s)."""
        return {}

    def comparison_info(self) -> dict[str, Any]:
        """What a comparison's ``to_dict`` says of the scheme beside its kind (none by
        default)."""
        return {}

    def pointwise_mcse(self) -> np.ndarray:
        """Monte Carlo se of each elpd_i (NaN where the method gives none)."""
        values = getattr(self, "mcse_i", None)
        n = np.asarray(self.elpd_i).size
        return np.full(n, np.nan) if values is None else np.asarray(values, dtype=float)

    def elpd_dict(self) -> dict[str, Any]:
        """The common entries of every elpd result's ``to_dict`` (None for NaN)."""
        return {"kind": self.kind, "elpd": _number(self.elpd), "se": _number(self.se),
                "mcse": _number(self.mcse), "p": _number(self.p),
                "n_obs": int(self.n_obs),
                "n_samples": int(self.n_samples)}
