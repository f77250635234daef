"""Tests of stanlogz/testbed/."""
