"""Tests of stanlogz/estimators/annealing/."""
