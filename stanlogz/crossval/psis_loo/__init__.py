"""PSIS-LOO and its Monte Carlo se, of a program or of a fit; WAIC; subsampling LOO."""
