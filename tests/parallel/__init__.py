"""Tests of stanlogz/parallel/."""
