"""The repository as a whole: layout rules, documentation pages, shipped examples."""
