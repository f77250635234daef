"""Repairing high-k̂ observations: the registry of fix-ups, exact and UPS refits, moment matching,
mixture IS."""
