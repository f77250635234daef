"""Moved to :mod:`stanlogz.testbed.bdmc`; the old path warns, and goes in the next release."""

from stanlogz._util.moved import alias

alias(__name__, "stanlogz.testbed.bdmc")
