"""The divergence warning's advice depends on the adapt_delta the draws were adapted to, and names
the --adapt-delta flag (which every NUTS-running command has); the draws remember it."""

import numpy as np

from stanlogz.cli import build_parser
from stanlogz.draws import sample
from stanlogz.draws.core import Draws, divergence_advice
from stanlogz.draws.stancsv import from_csv, write_csv
from stanlogz.errors import speaking
from tests.conftest import MODELS


def _diverging(adapt_delta):
    sampler = {"divergent__": np.zeros((2, 100))}
    sampler["divergent__"][0, :3] = 1
    u = np.random.default_rng(0).standard_normal((2, 100, 1))
    d = Draws(unconstrained=u, sampler=sampler, adapt_delta=adapt_delta)
    (w,) = [w for w in d.summary().warnings if "diverged" in w]
    return w


def test_advice_follows_the_adapt_delta_used():
    assert "from 0.8 to 0.95" in _diverging(0.8)
    assert "from 0.95 to 0.99" in _diverging(0.95)
    w = _diverging(0.99)
    assert "already 0.99" in w and "reparameterize" in w and "to 0.9" not in w
    assert "above the value used" in divergence_advice(None)
    for a in (None, 0.8, 0.95, 0.99):
        assert "settings=NutsArgs(adapt_delta=...)" in divergence_advice(a)  # the API's name
        with speaking("cli"):
            assert "--adapt-delta" in divergence_advice(a)  # the commands' flag


def test_every_nuts_command_has_the_flag():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name in ("sample", "evidence", "compare", "loo", "kfold", "lfo"):
        flags = {o for a in sub.choices[name]._actions for o in a.option_strings}
        assert "--adapt-delta" in flags, name


def test_draws_remember_adapt_delta(compiled, tmp_path):
    import json

    data = json.loads((MODELS / "tests" / "normal.json").read_text())
    m = compiled(MODELS / "tests" / "normal.stan", data)
    d = sample(m, chains=2, warmup=100, draws=50, adapt_delta=0.97, seed=1)
    assert d.adapt_delta == 0.97
    path = tmp_path / "d.csv"
    write_csv(d, path)
    assert from_csv(path, m).adapt_delta == 0.97


def test_evidence_trust_warning_follows_the_adapt_delta_used(compiled):
    # Draws labelled with divergences after adapting to 0.99: the evidence warning must not
    # recommend 0.95 (issue 25 item 8), and says what was used.
    import stanlogz

    model = compiled("normal")
    mu = 1.0 + 0.4 * np.random.default_rng(6).standard_normal((4, 300, 1))
    divergent = np.zeros((4, 300))
    divergent[0, :3] = 1
    texts = {}
    for a in (0.8, 0.99):
        draws = Draws(unconstrained=mu, constrained=mu, constrained_names=["mu"],
                      unc_names=["mu"], sampler={"divergent__": divergent}, source="array",
                      adapt_delta=a)
        r = stanlogz.evidence(model, draws=draws, seed=2)
        (texts[a],) = [w for w in r.warnings if "may be off by more than its se" in w]
    assert "it was 0.8; e.g. 0.95" in texts[0.8]
    assert "already 0.99" in texts[0.99] and "0.95" not in texts[0.99]
