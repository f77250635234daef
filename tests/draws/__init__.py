"""Tests of stanlogz/draws/."""
