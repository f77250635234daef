"""Tests of stanlogz/crossval/."""
