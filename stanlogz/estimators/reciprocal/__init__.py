"""Unbiased estimates of 1/Z and the sources of unbiased importance weights of Z."""
