"""What an observation is (size variable, subsets, latents) and its pointwise log density."""
