"""Tests of stanlogz/crossval/select/."""
