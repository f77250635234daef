"""Tests of stanlogz/api/."""
