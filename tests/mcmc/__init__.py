"""Tests of stanlogz/mcmc/."""
