"""Bayesian cross-validation of Stan programs: observations and their subsets, pointwise
log-likelihoods, PSIS-LOO with exact or unbiased fix-ups (:func:`loo`), and unbiased
leave-n_V-out cross-validation (:func:`cv`).

Sub-packages, from the top floor down: ``select`` (comparison, weights), ``psis_loo`` (the LOO
workflows and their result), ``fixups`` (high-k̂ repairs, moment matching), ``checks``
(predictive checks), ``refit`` (the exact refit, K-fold, LFO, their se), ``elpd`` (the results'
interface, PSIS and its Monte Carlo se, the route to the pointwise log-likelihood),
``observations`` (what an observation is, its pointwise log density) and ``names`` (the
results' loo/ArviZ names and tables)."""

from .observations.observations import Observations, find_observations
from .psis_loo.loo import loo
from .psis_loo.result import LooResult
from .refit.unbiased import CVResult, cv
from .select.compare import LooComparison, loo_compare

__all__ = ["CVResult", "LooComparison", "LooResult", "Observations", "cv", "find_observations",
           "loo", "loo_compare"]
