"""Refit CV: exact held-out densities, K-fold, LFO, unbiased CV, the K-fold/LFO se."""
