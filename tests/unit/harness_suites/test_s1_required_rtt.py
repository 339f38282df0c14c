"""S1's sweep is judged against the RTT the design must carry (`slo.required_rtt_ms`); without one it characterises
the link, and a step below the throughput target is a finding, never a silent red row under a green verdict."""

from __future__ import annotations

from harness_suites.s1.required_rtt import below_target, kept_rtt_check
from harness_suites.s1.table import LatencyStep, largest_kept_rtt, s1_latency_table

SWEEP = [LatencyStep(rtt_ms=0, tps=1400.0, avg_txn_ms=5.7, p95_ms=11.0),
         LatencyStep(rtt_ms=2, tps=1200.0, avg_txn_ms=6.7, p95_ms=13.0),
         LatencyStep(rtt_ms=4, tps=735.0, avg_txn_ms=10.9, p95_ms=20.0)]


def test_without_a_required_rtt_the_sweep_characterises_and_the_slow_step_is_a_finding() -> None:
    kept = largest_kept_rtt(s1_latency_table(SWEEP, min_tps_pct=80))
    check = kept_rtt_check(kept, 0.8, None, 4)
    assert kept == 2 and check.outcome == "NOT JUDGED" and "slo.required_rtt_ms" in (check.not_judged or "")
    assert below_target(SWEEP, 0.8, None) == ["at 4 ms added RTT, TPS is 52.5 % of the baseline's (target 80 %)"]


def test_a_required_rtt_the_link_keeps_passes_and_the_steps_beyond_it_are_findings() -> None:
    check = kept_rtt_check(2.0, 0.8, 2.0, 4)
    assert check.outcome == "PASS" and check.threshold == 2.0
    assert below_target(SWEEP, 0.8, 2.0) == ["at 4 ms added RTT, TPS is 52.5 % of the baseline's (target 80 %)"]


def test_a_required_rtt_the_link_does_not_keep_fails_and_is_no_finding() -> None:
    check = kept_rtt_check(2.0, 0.8, 4.0, 4)
    assert check.outcome == "FAIL" and "required >= 4 ms" in check.render()
    assert below_target(SWEEP, 0.8, 4.0) == []


def test_a_required_rtt_beyond_the_sweep_is_not_judged_and_says_which_option_reaches_it() -> None:
    check = kept_rtt_check(4.0, 0.8, 8.0, 4)
    assert check.outcome == "NOT JUDGED" and "--rtt-steps" in (check.not_judged or "")
