"""Bayesian cross-validation of Stan programs: observations and their subsets, pointwise
log-likelihoods, PSIS-LOO with exact or unbiased fix-ups (:func:`loo`), and unbiased
leave-n_V-out cross-validation (:func:`cv`)."""

from .compare import LooComparison, loo_compare
from .loo import LooResult, loo
from .observations import Observations, find_observations
from .unbiased import CVResult, cv

__all__ = ["CVResult", "LooComparison", "LooResult", "Observations", "cv", "find_observations",
           "loo", "loo_compare"]
