"""Tests of stanlogz/crossval/checks/."""
