"""Exact held-out and leave-one-out values of the cross-validation example programs."""
