"""Tests of stanlogz/pmmh/."""
