"""Choosing between programs: loo_compare, ProgramChoice, model weights, score comparisons."""
