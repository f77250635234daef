"""Tests of stanlogz/cli/."""
