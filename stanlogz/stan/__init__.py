"""A Stan program as a Python object: its inputs (data, program files), the compiled library
behind a ctypes table, log densities and transforms (:class:`stanlogz.stan.model.StanModel`),
Stan's NUTS, and Stan's messages turned into one-line errors."""
