"""Pseudo-marginal MCMC for doubly-intractable posteriors (an intractable Z(theta) inside the
likelihood), with unbiased estimates of 1/Z(theta) from
:mod:`stanlogz.estimators.reciprocal.reciprocal`."""
