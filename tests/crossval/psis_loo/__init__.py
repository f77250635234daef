"""Tests of stanlogz/crossval/psis_loo/."""
