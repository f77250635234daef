"""Tests of stanlogz/estimators/."""
