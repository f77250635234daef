"""Estimators scored against the truth: bidirectional Monte Carlo sandwiches of log Z on data
simulated from the model, and the testbed that runs every estimator against them."""
