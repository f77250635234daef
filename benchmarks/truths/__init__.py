"""Exact answers (closed forms, quadrature) that tests and benchmarks check against."""
