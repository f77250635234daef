"""stanlogz's tests, in folders that mirror the package (conftest.py serves them all)."""
