"""Annealing from a base to the posterior: AIS and reverse AIS, adaptive-tempering SMC."""
