"""The self-check's failure line (:func:`~stanlogz.crossval.psis_loo.verify_tests.what_failed`)
where a refit has no Monte Carlo se: the sum test's z is NA, not a value "higher by z = +nan"."""

from __future__ import annotations

import math

from stanlogz.crossval.observations.checked import CheckedPoint, Verification
from stanlogz.crossval.psis_loo.verify_tests import what_failed


def _told(points):
    return ", ".join(str(p.index + 1) for p in points)


def test_a_sum_with_a_refit_without_se_is_untested_not_higher_by_nan():
    # posteriordb eight_schools_centered: the refit without observation 7 did not mix (its se
    # NA), so the checked PSIS values' sum had z NA; the line read "together higher than
    # their exact refits by z = +nan of their joint error (one-sided, > 2.45)"
    na = CheckedPoint(6, "psis", -3.9, 0.02, -4.0, math.nan, math.nan, False, khat=0.08)
    ok = CheckedPoint(7, "psis", -3.3, 0.02, -3.31, 0.03, 0.3, True, khat=0.1)
    ver = Verification("passed", [na, ok], 2.96)
    ver.sum_points, ver.sum_z, ver.sum_critical = [6, 7], math.nan, 2.45
    line = what_failed(ver, _told)
    assert "nan" not in line
    assert line.startswith("observation(s) 7 could not be checked")
    assert "sum of the PSIS values of observation(s) 7, 8 could not be tested either" in line
    ver.sum_z = 3.1  # a real failure of the sum still reads as one
    assert "together higher than their exact refits by z = +3.1" in what_failed(ver, _told)


def test_the_withheld_reason_reads_na_for_a_sum_without_se():
    # the result's reason for an NA mcse said "the sum of 7+8 (z = +nan)"
    from types import SimpleNamespace

    from stanlogz.crossval.psis_loo.result import LooResult

    na = CheckedPoint(6, "psis", -3.9, 0.02, -4.0, math.nan, math.nan, False, khat=0.08)
    ver = Verification("withheld", [na], 2.96)
    ver.sum_points, ver.sum_z, ver.sum_critical = [6, 7], math.nan, 2.45
    fake = SimpleNamespace(mcse_na_note=None, still_bad=lambda: [], verification=ver,
                           mcse_elpd_loo=math.nan)
    reason = LooResult.mcse_na_reason(fake)
    assert "the sum of 7+8 (z NA)" in reason and "nan" not in reason
