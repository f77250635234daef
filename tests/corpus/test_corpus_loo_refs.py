"""The stored exact LOO references of the corpus coverage benchmark
(``benchmarks/data/corpus_loo_refs.json``, :mod:`benchmarks.corpus_coverage`) hold:

- the posterior's files are the ones the reference was computed from (SHA-256);
- the exact model each reference integrates is the Stan program's: its log joint density,
  written from the model, differs from bridgestan's (no Jacobian) by one constant at random
  points, for every program;
- one cheap recomputation (kilpisjarvi, eight schools) gives the stored pointwise values.

Deterministic: the points are drawn with a fixed seed, and the check is exact up to rounding.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from benchmarks import corpus_coverage as CC
from benchmarks.corpus_loo_exact import PROGRAMS

pytestmark = [
    pytest.mark.corpus,
    pytest.mark.stan,
    pytest.mark.skipif(not CC.CORPUS.is_dir(), reason=f"no corpus at {CC.CORPUS}"),
]

REFS = json.loads(CC.REFS.read_text())


def test_every_program_has_a_reference_of_its_files():
    assert set(REFS) == set(PROGRAMS) and len(REFS) >= 10
    for folder, ref in REFS.items():
        assert ref["model_sha256"] == CC.sha256(CC.CORPUS / folder / "model.stan"), folder
        assert ref["data_sha256"] == CC.sha256(CC.CORPUS / folder / "data.json"), folder
        assert len(ref["elpd_i"]) == ref["n"]
        assert ref["elpd_loo"] == pytest.approx(sum(ref["elpd_i"]), abs=1e-9)
        # the quadrature's own error is far below 1/5 of any mc se in the table (>= 0.04)
        assert ref["error"] < 1e-4, folder


def _named(model, theta: np.ndarray) -> dict[str, np.ndarray]:
    out: dict[str, list[float]] = {}
    for name, value in zip(model.param_names(), theta, strict=True):
        out.setdefault(name.split(".")[0].split("[")[0], []).append(float(value))
    return {k: np.array(v) for k, v in out.items()}


@pytest.mark.parametrize("folder", sorted(PROGRAMS))
def test_the_exact_model_is_the_stan_program(folder):
    import stanlogz

    data = CC.load_data(folder)
    model = stanlogz.StanModel.from_file(CC.CORPUS / folder / "model.stan", data)
    rng = np.random.default_rng(1)
    diffs = []
    for _ in range(4):
        x = rng.normal(0.0, 0.5, model.dim)
        theta = model.constrain(x)
        stan = model.log_density(x, propto=False, jacobian=False)
        diffs.append(stan - PROGRAMS[folder].joint(data, _named(model, theta)))
    # one constant (the normalizing terms the transcription drops): equal up to rounding of
    # densities of size up to 1e6 (earnings' outcome is in dollars)
    assert np.ptp(diffs) < 1e-6 * max(1.0, abs(diffs[0])), diffs


@pytest.mark.parametrize("folder", ["kilpisjarvi_mod-kilpisjarvi",
                                    "eight_schools-eight_schools_centered"])
def test_a_recomputation_gives_the_stored_values(folder):
    again = PROGRAMS[folder].exact_loo(CC.load_data(folder), fine=True)
    np.testing.assert_allclose(again, REFS[folder]["elpd_i"], rtol=0, atol=1e-9)
