"""Tests of stanlogz/stan/."""
