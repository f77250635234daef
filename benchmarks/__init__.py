"""stanlogz's benchmarks: scripts that print tables (coverage of the error bars, cost, scaling).

Run each from the repository root as a module, e.g. ``python3 -m benchmarks.coverage --help``;
shared helpers are in :mod:`benchmarks._common`.
"""
