"""Several load generators as one: buckets merged with their histograms, clocks aligned, gaps intersected."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from harness_kernel.history.series import TransactionSeries
from workloads.load.generator import LoadGenerator
from workloads.load.merge import GapMerger, common_gaps, measure_offset
from workloads.oltp.gaps import CommitGapDetector


def test_merged_buckets_are_what_one_series_would_have_recorded() -> None:
    together, first, second = TransactionSeries(), TransactionSeries(), TransactionSeries()
    transactions = [(10.2, 0.004, True, None), (10.7, 0.050, True, None), (11.1, 0.2, False, "deadlock"),
                    (11.3, 0.008, True, None), (12.9, 0.120, True, None)]
    for i, (t, latency, ok, error) in enumerate(transactions):
        together.record(t, latency, ok, error)
        (first if i % 2 else second).record(t, latency, ok, error)
    merged = TransactionSeries()
    merged.absorb(first.export(), first.last_commit_t)
    merged.absorb(second.export(), second.last_commit_t)
    assert merged.points() == together.points(), "percentiles from the merged histograms, not averaged"
    assert merged.last_commit_t == together.last_commit_t == 12.9


def test_export_since_a_second_sends_only_the_new_buckets() -> None:
    series = TransactionSeries()
    for t in (1.5, 2.5, 3.5):
        series.record(t, 0.01, True)
    assert sorted(series.export(since=2)) == [2, 3]


def test_the_offset_is_taken_from_the_shortest_round_trip() -> None:
    local = iter([100.0, 100.4, 200.0, 200.02]).__next__  # a slow sample, then a fast one
    remote = iter([105.1, 205.01]).__next__
    offset = measure_offset(remote, local, samples=2)
    assert offset.offset_s == pytest.approx(5.0) and offset.uncertainty_s == pytest.approx(0.01)


def test_an_outage_is_what_no_generator_could_commit_through() -> None:
    first = [(10.0, 14.0), (20.0, 20.4)]
    second = [(11.0, 15.0), (30.0, 31.0)]
    assert common_gaps([first, second], threshold_s=0.5) == [(11.0, 14.0)]
    assert common_gaps([first, [(12.0, 12.3)]], threshold_s=0.5) == [], "shorter than the threshold"
    assert common_gaps([], threshold_s=0.5) == []


def test_a_merged_outage_is_handed_out_once_every_generator_has_committed_past_its_end() -> None:
    merger = GapMerger(generators=2, threshold_s=0.5)
    merger.report(0, [(10.0, 14.0)], settled_upto=16.0)
    merger.report(1, [], settled_upto=11.0)  # in a gap since 11.0, or not yet heard of past it
    assert merger.final() == [], "the second generator may still be in its gap"
    merger.report(1, [(11.0, 15.0)], settled_upto=15.2)
    assert merger.final() == [(11.0, 14.0)], "both have committed past 14.0"
    assert merger.final() == [], "handed out once"


def test_a_generator_that_never_committed_holds_every_merged_outage_back() -> None:
    merger = GapMerger(generators=2, threshold_s=0.5)
    merger.report(0, [(1.0, 3.0)], settled_upto=9.0)
    assert merger.final() == []


def test_a_generator_hands_over_each_closed_gap_once_with_how_far_its_gaps_are_settled() -> None:
    generator = LoadGenerator()
    detector = CommitGapDetector(generator.timeline, "g", threshold_s=0.5)
    generator.driver = SimpleNamespace(gaps=detector)  # type: ignore[assignment]
    for t in (1.0, 1.2, 3.0, 3.1):
        detector.committed(t)
    first = generator.settled()
    assert first.gaps == [(1.2, 3.0)] and first.gaps_settled_upto == 3.1
    detector.committed(5.0)
    second = generator.settled()
    assert second.gaps == [(3.1, 5.0)] and second.gaps_settled_upto == 5.0
    assert generator.settled().gaps == []
