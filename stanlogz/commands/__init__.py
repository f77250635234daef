"""Sub-commands of the ``stanlogz`` CLI (see :mod:`stanlogz.cli`)."""
