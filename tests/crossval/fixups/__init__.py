"""Tests of stanlogz/crossval/fixups/."""
