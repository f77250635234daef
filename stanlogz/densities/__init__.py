"""Densities on R^d: the :class:`~stanlogz.densities.target.Target` protocol every estimator
takes, Gaussian densities and Gaussian fits to draws (``gaussian``, ``fits``), and targets with
exact log Z for tests and benchmarks (``testing``)."""
