"""Unbiased path sampling: the estimator, its coupled-chain replicates, its tuning."""
