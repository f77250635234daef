"""Bayes factors you can defend: power-scaling sensitivity of log Z and elpd_loo
(:mod:`.sensitivity`), Savage–Dickey density ratios (:mod:`.savage_dickey`) and calibration by
simulation (:mod:`.calibrate`)."""
