"""The ground floor every elpd result stands on (issue 34): :class:`~.base.ElpdResult`."""
