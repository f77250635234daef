"""``with_client`` documents its ``client`` keyword where the docstring lists parameters."""

from __future__ import annotations

from stanlogz.parallel import with_client


def test_client_joins_numpydoc_parameters():
    @with_client
    def f(x: int) -> int:
        """Do.

        Parameters
        ----------
        x : int
            A number.

        Returns
        -------
        int
            The number.
        """
        return x

    doc = f.__doc__
    assert doc.index("x : int") < doc.index("client : dask.distributed.Client") < doc.index(
        "Returns")
    assert "optional\n" in doc and "results.\n\n        Returns" in doc


def test_client_is_appended_to_prose():
    @with_client
    def g() -> None:
        """Do it."""

    assert g.__doc__.startswith("Do it.\n\n") and "``client``" in g.__doc__
