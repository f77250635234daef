"""Tests of stanlogz/estimators/reciprocal/."""
