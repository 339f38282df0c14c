"""Commit-gap detection: one timeline event per write outage, from commit and error times."""

from __future__ import annotations

from harness_kernel.history import EventKind
from harness_kernel.history.timeline import Timeline
from workloads.oltp.gaps import CommitGapDetector


def gaps(timeline: Timeline) -> list[dict[str, object]]:
    return [dict(e.attrs) for e in timeline.events(EventKind.COMMIT_GAP)]


def test_a_pause_longer_than_the_threshold_is_one_gap_from_last_commit_to_next():
    timeline = Timeline()
    detector = CommitGapDetector(timeline, "oltp", threshold_s=0.5)
    for t in (1.0, 1.01, 1.02):
        detector.committed(t)
    for t in (1.30, 1.8, 2.2):
        detector.failed(t)
    detector.committed(2.52)
    detector.committed(2.53)
    assert gaps(timeline) == [{"start": 1.02, "end": 2.52, "duration_s": 2.52 - 1.02, "first_error": 1.30, "errors": 3}]
    assert timeline.events(EventKind.COMMIT_GAP)[0].t == 1.02


def test_pauses_below_the_threshold_and_late_finishers_record_nothing():
    timeline = Timeline()
    detector = CommitGapDetector(timeline, "oltp", threshold_s=0.5)
    for t in (1.0, 1.4, 1.8, 1.7, 2.2):
        detector.committed(t)
    assert gaps(timeline) == []


def test_errors_before_the_last_commit_do_not_belong_to_the_next_gap():
    timeline = Timeline()
    detector = CommitGapDetector(timeline, "oltp")
    detector.committed(1.0)
    detector.failed(1.1)  # a deadlock retried while others kept committing
    detector.committed(1.2)
    detector.committed(3.0)
    assert gaps(timeline) == [{"start": 1.2, "end": 3.0, "duration_s": 3.0 - 1.2, "first_error": None, "errors": 0}]


def test_an_outage_still_open_at_stop_is_recorded_without_an_end():
    timeline = Timeline()
    detector = CommitGapDetector(timeline, "oltp")
    detector.committed(1.0)
    detector.failed(1.5)
    detector.close(4.0)
    assert gaps(timeline) == [{"start": 1.0, "end": None, "duration_s": None, "first_error": 1.5, "errors": 1}]
