"""Plain ``evidence`` under a time budget answers (issue 45): sampling stopped past its warmup
keeps the draws so far and the bridge runs on them, exit 0 with ``budget_stop`` in the JSON
and the warning; a refusal in warmup names iterations that, followed on the same machine under
the same budget, answer.

slow.stan (normal_lpdf(mu | 0, 1) reached through a loop of K additions) has log Z = 0 exactly;
with K = 1000 a chain runs thousands of iterations a second, so 200,000 draws per chain cannot
end in 4 s however quiet the machine.
"""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

import stanlogz
from stanlogz import NutsArgs, OverBudget, time_budget
from stanlogz.arviz_compat import arviz
from stanlogz.cli import build_parser, main
from tests.conftest import MODELS
from tests.helpers import past_budget_grace

pytestmark = pytest.mark.stan

SLOW = {"K": 1000}
# log Z's se is its whole error (log Z = 0 exactly, no bias beyond it on a Gaussian posterior):
# 4.5 se fails with probability 7e-6 for an honest se (fixed seed)
Z_TOL = 4.5


@pytest.fixture(autouse=True)
def _arviz_imported():
    """ArviZ and the command line's modules imported, as in a process that ran any other
    test: under a budget evidence imports ArviZ before sampling (seconds on a loaded machine,
    counted by the budget), and the command line imports its commands before the budget."""
    arviz()
    build_parser()


def test_cli_evidence_stopped_in_sampling_answers_with_the_flag(compiled, capsys, tmp_path):
    compiled("slow", data=SLOW)  # built once, in the cache
    data = tmp_path / "slow.json"
    data.write_text(json.dumps(SLOW))
    rc = main(["--json", "--quiet", "--time-budget", "4", "evidence",
               str(MODELS / "tests" / "slow.stan"), "--data", str(data),
               "--warmup", "300", "--draws", "200000", "--seed", "1"])
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert rc == 0  # the time it takes is the route test's (below)
    sampling = out["budget_stop"]["sampling"]
    kept = sampling["draws_kept"]
    assert 25 <= kept < sampling["draws_asked"] == 200_000
    assert f"the time budget ended sampling after {kept} of 200000 draws per chain" \
        in captured.err
    # 4 chains: on fewer cores the later ones start when earlier ones end, and a stop keeps
    # the chains with draws (every chain where each has a core)
    assert out["diagnostics"]["chains"] == sampling.get("chains_kept", 4) >= 1
    assert abs(out["log_z"]) <= Z_TOL * out["log_z_se"]
    # the search for modes the chains do not reach had no time: said, not skipped silently
    assert any("no room to search for modes" in w for w in out["warnings"])
    assert "modes" not in out["diagnostics"]


def test_the_route_of_a_refusal_in_warmup_answers_within_the_same_budget(compiled):
    # a warmup of 200,000 iterations per chain cannot end in 3 s; the refusal names fewer
    # iterations, which, followed under the same budget, answer (the bridge's time kept)
    model = compiled("slow", data=SLOW)
    with time_budget(3), pytest.raises(OverBudget) as info:
        stanlogz.evidence(model, settings=NutsArgs(chains=2, warmup=200_000, draws=1000),
                          seed=1)
    assert "still in warmup" in str(info.value)
    route = info.value.routes[0]  # the typed route, as the Python caller is told it
    warmup, draws = route.options["warmup"], route.options["draws"]
    start = time.perf_counter()
    with time_budget(3):
        r = stanlogz.evidence(model, settings=NutsArgs(chains=2, warmup=warmup, draws=draws),
                              seed=1)
    # the draws' summaries after the bridge check no budget (0.2 s here at load 13)
    assert time.perf_counter() - start < 3.0 + past_budget_grace(0.5)
    assert np.isfinite(r.log_z) and abs(r.log_z) <= Z_TOL * r.log_z_se
