"""Tests of stanlogz/crossval/observations/."""
