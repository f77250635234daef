"""Tests of stanlogz/crossval/refit/."""
