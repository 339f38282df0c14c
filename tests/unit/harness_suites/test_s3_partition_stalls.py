"""S3's partitions judge how long commits stopped while a cut held, the business's word beside the storage's: a
stop only the revert ended is never passed for being short, and without an allowance the cases characterise."""

from __future__ import annotations

from harness_suites.s3.test_s3_partitions import STALL, Stall, stall_check


def test_without_an_allowance_a_stop_is_measured_and_said_not_judged() -> None:
    check = stall_check([Stall(3.3, 19.6, until_revert=True, after_revert_s=13.7)], None)
    assert (check.name, check.measured, check.outcome) == (STALL, 19.6, "NOT JUDGED")
    assert "slo.partition_stall_max_s" in check.not_judged
    assert check.basis == "no commit from +3.3 s to the revert (20 s) and 13.7 s after it: only the revert ended it"


def test_a_stop_the_revert_ended_before_the_allowance_ran_out_is_not_a_pass() -> None:
    check = stall_check([Stall(3.3, 12.0, until_revert=True)], 20.0)
    assert check.outcome == "NOT JUDGED" and "hold it longer" in check.not_judged


def test_a_stop_longer_than_the_allowance_fails_and_a_short_one_that_ended_in_the_cut_passes() -> None:
    assert stall_check([Stall(1.0, 25.0, until_revert=True)], 20.0).outcome == "FAIL"
    short = stall_check([Stall(1.0, 4.0, until_revert=False), Stall(9.0, 2.0, until_revert=False)], 20.0)
    assert (short.measured, short.outcome) == (4.0, "PASS")
    assert stall_check([], 20.0).measured == 0.0 and stall_check([], 20.0).outcome == "PASS"
