"""Tests of stanlogz/bayes_factors/."""
