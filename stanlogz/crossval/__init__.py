"""Bayesian cross-validation of Stan programs: observations and their subsets, pointwise
log-likelihoods, PSIS-LOO with exact or unbiased fix-ups (:func:`loo`), and unbiased
leave-n_V-out cross-validation (:func:`cv`).

Sub-packages: ``observations`` (what an observation is, its pointwise log density),
``psis_loo`` (PSIS-LOO and its Monte Carlo se), ``fixups`` (high-k̂ repairs, moment matching),
``refit`` (the exact refit, K-fold, LFO, their se), ``select`` (comparison, weights) and
``checks`` (predictive checks); ``names`` holds the results' loo/ArviZ names and tables."""

from .observations.observations import Observations, find_observations
from .psis_loo.loo import LooResult, loo
from .refit.unbiased import CVResult, cv
from .select.compare import LooComparison, loo_compare

__all__ = ["CVResult", "LooComparison", "LooResult", "Observations", "cv", "find_observations",
           "loo", "loo_compare"]
