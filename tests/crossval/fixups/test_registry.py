"""The fix-up registry: one options class per method, validated once at ``loo()``, an unknown
option refused by one line naming the method and its options, the old keywords still working,
and the CLI's ``--fix`` choices and help read from the rows."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from stanlogz.crossval.fixups.registry import (
    FIX_LABELS,
    FIXUPS,
    AutoOptions,
    ExactOptions,
    FixOptions,
    MomentMatchOptions,
    UpsFixOptions,
    fix_help,
    fix_method,
)
from stanlogz.errors import InputError

EX = Path(__file__).resolve().parents[3] / "stan_models" / "examples"
loo_module = importlib.import_module("stanlogz.crossval.psis_loo.loo")


def test_every_row_has_its_own_options_class():
    assert list(FIXUPS) == ["auto", "mm", "exact", "ups", "none", "mis"]
    for name, m in FIXUPS.items():
        assert issubclass(m.Options, FixOptions) and m.Options.method == name
        assert isinstance(m.options(), m.Options)  # the defaults are valid
    assert {n: m.Options.names() for n, m in FIXUPS.items()} == {
        "auto": ["mm_budget"], "mm": ["mm_budget"], "exact": [], "ups": ["ups_options"],
        "none": [], "mis": []}
    assert FIX_LABELS["mm"] == "moment matching"


def test_options_keep_the_keywords_defaults_and_fill_them_in():
    assert fix_method("auto").options() == AutoOptions(mm_budget=None)
    assert fix_method("mm").options(mm_budget=3) == MomentMatchOptions(mm_budget=3.0)
    assert fix_method("mm").options({"mm_budget": 2}).mm_budget == 2.0
    # the options object wins over the loose keyword only where it sets the option
    assert fix_method("mm").options({"mm_budget": 2}, mm_budget=9).mm_budget == 2.0
    assert fix_method("ups").options(ups_options={"n_replicates": 20}).ups_options == {
        "n_replicates": 20}
    # a loose keyword of another method has no effect on this one (as before the classes)
    assert fix_method("exact").options(mm_budget=5, ups_options={"k": 2}) == ExactOptions()
    given = UpsFixOptions(ups_options={"grid": 4})
    assert fix_method("ups").options(given) is given


@pytest.mark.parametrize("name, values, match", [
    ("exact", {"mm_budget": 3}, r"^fix exact has no option 'mm_budget'; it takes: none$"),
    ("mm", {"budget": 3}, r"^fix mm has no option 'budget'; it takes: mm_budget$"),
    ("ups", {"ups_options": {"n_replicate": 3}},
     r"^ups_options of fix ups: method ups has no option 'n_replicate'; it takes: "
     r"n_replicates, kernel"),
    ("mm", {"mm_budget": -1}, r"mm_budget must be positive"),
    ("ups", {"ups_options": [1]}, r"ups_options of fix ups must be a dict"),
])
def test_a_bad_option_is_one_line_naming_the_method(name, values, match):
    with pytest.raises(InputError, match=match) as e:
        fix_method(name).options(values)
    assert "\n" not in str(e.value)


def test_options_of_another_method_or_kind_are_refused():
    with pytest.raises(InputError, match="fix exact takes ExactOptions, not AutoOptions"):
        fix_method("exact").options(AutoOptions())
    with pytest.raises(InputError, match="fix_options must be a dict or MomentMatchOptions, got "
                                         "list"):
        fix_method("mm").options([("mm_budget", 3)])


def test_loo_validates_the_options_before_sampling(monkeypatch):
    def no_sampling(*a, **k):
        raise AssertionError("sampled before the options were checked")

    monkeypatch.setattr(loo_module, "load_observed", no_sampling)
    with pytest.raises(InputError, match="fix exact has no option 'mm_budget'"):
        loo_module.loo(EX / "normal_mean.stan", EX / "normal_outlier.data.json", fix="exact",
                       fix_options={"mm_budget": 1.0})
    with pytest.raises(InputError, match="ups_options of fix ups"):
        loo_module.loo(EX / "normal_mean.stan", EX / "normal_outlier.data.json", fix="ups",
                       ups_options={"nope": 1})
    with pytest.raises(InputError, match="mm_budget must be positive"):
        loo_module.loo(EX / "normal_mean.stan", EX / "normal_outlier.data.json", mm_budget=-2)


def test_fix_options_reach_moment_matching(compiled):
    m = compiled(EX / "normal_mean.stan", EX / "normal_outlier.data.json")
    data = json.loads((EX / "normal_outlier.data.json").read_text())
    # a budget spent before the first point: nothing is matched, and the note says so
    r = loo_module.loo(m, data, fix="mm", seed=5, chains=2, warmup=300, n_draws=500,
                       fix_options=MomentMatchOptions(mm_budget=1e-9))
    assert not r.fixed
    assert any("budget of 1e-09 s ran out" in w for w in r.warnings)


def test_the_cli_reads_choices_and_help_from_the_registry():
    from stanlogz.cli import build_parser

    parser = build_parser()
    for command in ("loo", "compare"):
        sub = parser._subparsers._group_actions[0].choices[command]
        (fix,) = [a for a in sub._actions if "--fix" in a.option_strings]
        assert tuple(fix.choices) == tuple(FIXUPS)
        assert all(f"{m.name}: {m.summary}" in fix.help for m in FIXUPS.values())
    assert fix_help("x").startswith("x: auto: ")
