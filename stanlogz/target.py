"""Moved to :mod:`stanlogz.densities.target`; the old path warns, and goes in the next release."""

from stanlogz._util.moved import alias

alias(__name__, "stanlogz.densities.target")
