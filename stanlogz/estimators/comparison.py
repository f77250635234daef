"""Comparing programs by their evidence: log Bayes factors against the best program and
posterior model probabilities with delta-method standard errors (:class:`ComparisonResult`,
made by :func:`stanlogz.compare`, which returns it as the ``evidence`` of a ``ProgramChoice``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .base import EvidenceResult, _jsonable
from .names import ComparisonNames


@dataclass(repr=False)
class ComparisonResult(ComparisonNames):
    """Evidence of several programs, log Bayes factors against the best, model probabilities.

    ``log_bf[i]`` is log Z_i - log Z_best with standard error ``log_bf_se[i]`` (estimates are
    independent, so the variances add). ``post_probs`` are posterior model probabilities
    (softmax of log Z + log prior) with delta-method standard errors ``post_probs_se``.

    Attributes
    ----------
    names : list of str
        The programs.
    results : list of EvidenceResult
        Each program's evidence.
    prior_probs : ndarray
        The prior model probabilities.
    log_bf, log_bf_se : ndarray
        log Z_i − log Z_best and its standard error.
    post_probs, post_probs_se : ndarray
        Posterior model probabilities and their standard errors.
    best : int
        Index of the program with the largest log Z.

    See Also
    --------
    stanlogz.compare : makes it (its result's ``evidence``, read through);
        :doc:`/tutorials/evidence_bayes_factors` shows one.
    """

    names: list[str]
    results: list[EvidenceResult]
    prior_probs: np.ndarray
    log_bf: np.ndarray = field(init=False)
    log_bf_se: np.ndarray = field(init=False)
    post_probs: np.ndarray = field(init=False)
    post_probs_se: np.ndarray = field(init=False)
    best: int = field(init=False)
    #: unbiased Z_i / Z_best on the natural scale (Wei & Murray 2017), when asked for; None for
    #: the best
    unbiased_bf: list[Any] | None = None
    #: warnings about the comparison as a whole (e.g. priors of unequal mass)
    warnings: list[str] = field(default_factory=list)

    header = ("model", "log_z", "se", "log_bf", "bf_se", "prior", "post_prob", "post_se")

    def __post_init__(self) -> None:
        lz = np.array([r.log_z for r in self.results], dtype=float)
        se = np.array([r.log_z_se for r in self.results], dtype=float)
        self.best = int(np.argmax(lz))
        self.log_bf = lz - lz[self.best]
        self.log_bf_se = np.sqrt(se**2 + se[self.best] ** 2)
        self.log_bf_se[self.best] = 0.0
        self.post_probs, self.post_probs_se = posterior_probs(lz, se, self.prior_probs)

    def table(self) -> list[list[Any]]:
        """One row per model in the order of :attr:`header`."""
        return [
            [n, r.log_z, r.log_z_se, float(b), float(bs), float(p), float(q), float(qs)]
            for n, r, b, bs, p, q, qs in zip(
                self.names, self.results, self.log_bf, self.log_bf_se, self.prior_probs,
                self.post_probs, self.post_probs_se, strict=True)
        ]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable dict (estimator diagnostics keys starting with ``_`` dropped)."""
        ubf = self.unbiased_bf or [None] * len(self.names)
        return _jsonable({
            "best": self.names[self.best],
            "warnings": list(self.warnings),
            "models": [
                {"name": n, "log_bf": b, "log_bf_se": bs, "prior_prob": p, "post_prob": q,
                 "post_prob_se": qs, **r.to_dict(),
                 **({} if u is None else {"unbiased_bf": u.value, "unbiased_bf_se": u.se,
                                          "unbiased_bf_fraction_positive":
                                          u.fraction_positive,
                                          "unbiased_bf_tail_k": u.tail_k})}
                for n, r, b, bs, p, q, qs, u in zip(
                    self.names, self.results, self.log_bf, self.log_bf_se, self.prior_probs,
                    self.post_probs, self.post_probs_se, ubf, strict=True)
            ],
        })

    def unbiased_table(self) -> list[list[Any]]:
        """Rows ``[model, Z/Z_best, se, log of it, its se, fraction positive, tail k-hat]`` of
        the unbiased Bayes factors (empty when they were not asked for)."""
        rows = []
        for n, u in zip(self.names, self.unbiased_bf or [], strict=False):
            if u is not None:
                rows.append([n, u.value, u.se, u.log_value, u.log_se, u.fraction_positive,
                             u.tail_k])
        return rows


def posterior_probs(log_z: np.ndarray, se: np.ndarray, prior: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Posterior model probabilities and their delta-method standard errors.

    p = softmax(log Z + log prior); dp_i/dlogZ_j = p_i (delta_ij - p_j), and the log Z
    estimates are independent, so var p_i = sum_j (p_i (delta_ij - p_j))^2 se_j^2; an unknown
    (NaN) se makes the se of every probability that depends on it NaN, never 0.
    """
    with np.errstate(divide="ignore"):
        a = np.asarray(log_z, dtype=float) + np.log(np.asarray(prior, dtype=float))
    p = np.exp(a - np.max(a))
    p /= p.sum()
    return p, probs_se(p, se)


def probs_se(p: np.ndarray, log_z_se: np.ndarray) -> np.ndarray:
    """Delta-method se of p = softmax(log Z + log prior) from independent log Z errors:
    var p_i = Σ_j (p_i (δ_ij − p_j))² se_j². A log Z whose se is unknown (NaN) makes the se
    of every probability that depends on it NaN (it is never taken as 0)."""
    p = np.asarray(p, dtype=float)
    se = np.asarray(log_z_se, dtype=float)
    jac2 = (p[:, None] * (np.eye(p.size) - p[None, :])) ** 2
    terms = np.where(jac2 > 0, jac2 * se[None, :] ** 2, 0.0)
    return np.sqrt(terms.sum(axis=1))
