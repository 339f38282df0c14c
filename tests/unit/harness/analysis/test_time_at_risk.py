"""The time at risk is read from the cluster's probe: how long it held fewer in-sync copies than before the fault."""

from __future__ import annotations

import pytest

from harness.analysis.redundancy import CopiesPoint, promised_copies, risk_spans, time_at_risk

HEALTHY = "pg_auto_failover: node-a primary/primary, node-b secondary/secondary"
ALONE = "pg_auto_failover: node-b wait_primary/wait_primary"


def probes(*copies: int | None, every_s: float = 1.0) -> list[CopiesPoint]:
    return [CopiesPoint(i * every_s, c, HEALTHY if c == 2 else ALONE) for i, c in enumerate(copies)]


def test_the_promise_is_what_the_cluster_held_before_the_fault() -> None:
    points = probes(2, 2, 1, 1, 2)
    assert promised_copies(points, before=2.0) == 2
    assert promised_copies(points, before=0.0) is None  # never probed before the fault: nothing promised


def test_a_span_runs_from_the_first_short_probe_to_the_first_probe_with_the_copies_back() -> None:
    points = probes(2, 2, 2, 1, 1, 1, 2, 2)
    (span,) = risk_spans(points, promised=2, start=2.0, end=7.0)
    assert (span.start, span.end, span.fewest) == (3.0, 6.0, 1)
    assert span.reduced_states == ALONE and span.restored_states == HEALTHY
    assert time_at_risk([span], until=7.0) == pytest.approx(3.0)


def test_a_probe_no_primary_answered_counts_as_at_risk_and_unconfirmed() -> None:
    points = probes(2, None, None, 1, 2)
    (span,) = risk_spans(points, promised=2, start=0.5, end=4.0)
    assert (span.start, span.end, span.fewest) == (1.0, 4.0, None)


def test_a_span_still_open_at_the_end_counts_up_to_it() -> None:
    (span,) = risk_spans(probes(2, 1, 1), promised=2, start=0.0, end=2.0)
    assert span.end is None and span.restored_states == ""
    assert time_at_risk([span], until=10.0) == pytest.approx(9.0)


def test_separate_spans_add_up_and_probes_outside_the_trial_are_left_out() -> None:
    points = probes(1, 2, 1, 2, 2, 1, 1, 2, 1)
    spans = risk_spans(points, promised=2, start=1.0, end=7.0)
    assert [(s.start, s.end) for s in spans] == [(2.0, 3.0), (5.0, 7.0)]
    assert time_at_risk(spans, until=7.0) == pytest.approx(3.0)


def test_a_cluster_that_held_its_copies_has_no_span() -> None:
    assert risk_spans(probes(2, 2, 2, 3), promised=2, start=0.0, end=3.0) == []


def test_a_span_keeps_each_state_the_cluster_passed_through_once() -> None:
    points = [CopiesPoint(0.0, 2, HEALTHY), CopiesPoint(1.0, None, "node-a does not answer"),
              CopiesPoint(2.0, None, "node-a does not answer"), CopiesPoint(3.0, 1, ALONE), CopiesPoint(4.0, 1, ALONE),
              CopiesPoint(5.0, 2, HEALTHY)]
    (span,) = risk_spans(points, promised=2, start=0.5, end=5.0)
    assert span.reduced_states == "node-a does not answer" and span.passed_through == (ALONE,)
