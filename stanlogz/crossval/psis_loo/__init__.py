"""The LOO workflows and their result: PSIS-LOO of a program (with its fix-ups) or of a fit,
mixture LOO, WAIC, subsampling LOO."""
