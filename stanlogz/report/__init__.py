"""Everything a user reads: the result types, terminal output (progress, tables, JSON) and plots."""
