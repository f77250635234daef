"""Exact values of the Bayes-factor tools on their test programs."""
