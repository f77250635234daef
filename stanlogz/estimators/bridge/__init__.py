"""Bridge sampling: gbs, its cross-fitted and tempered variants, the baseline estimators."""
