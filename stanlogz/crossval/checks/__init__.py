"""Predictive checks from LOO weights: LOO-PIT, E_loo, point metrics, CRPS and SCRPS."""
