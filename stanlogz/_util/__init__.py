"""Small helpers every layer may use: seeds, JSON conversion, atomic files, moved modules."""
