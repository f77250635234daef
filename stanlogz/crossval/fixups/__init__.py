"""Repairing high-k̂ observations: exact and UPS fix-ups, moment matching, mixture IS."""
