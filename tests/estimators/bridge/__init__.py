"""Tests of stanlogz/estimators/bridge/."""
