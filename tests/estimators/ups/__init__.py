"""Tests of stanlogz/estimators/ups/."""
