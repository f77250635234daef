"""Draws print as one line, and their summary as a table and a pandas DataFrame."""

from __future__ import annotations

import numpy as np

from stanlogz.draws import Draws


def _draws(k: int = 2) -> Draws:
    return Draws(unconstrained=np.random.default_rng(0).normal(size=(4, 200, k)))


def test_repr_is_one_short_line():
    r = repr(_draws(30))
    assert "\n" not in r and len(r) < 150 and "[" not in r  # no array dump
    assert r.startswith("Draws(4 chains x 200 draws, 30 unconstrained dims; x.1, ")
    assert "(30 in all)" in r


def test_summary_prints_a_table_and_gives_a_dataframe():
    s = _draws().summary()
    text = repr(s)
    assert text.splitlines()[0] == "posterior summary: 4 chains x 200 draws from array"
    assert "r_hat" in text and "x.2" in text and "<table>" in s._repr_html_()
    df = s.to_dataframe()
    assert list(df.index) == ["x.1", "x.2"]
    assert np.isclose(df.loc["x.1", "mean"], s.rows[0]["mean"]) and "ess_bulk" in df.columns
