"""The server commit counter's arithmetic: deltas only within one life of one server's statistics.

Samples are built by hand (the values a real server gave in the integration test: a crash
recovery zeroes xact_commit and leaves the database's stats_reset NULL, but sets
pg_stat_bgwriter.stats_reset after the postmaster's start).
"""

from __future__ import annotations

import pytest

from harness_kernel.errors import ConfigError
from harness_kernel.history.series import TransactionSeries
from harness_kernel.history.timeline import Timeline
from harness_kernel.topology.credentials import Secret
from workloads.oltp import ConnectionSettings, Credentials, Endpoint
from workloads.pgcounter import CounterSample, PgCommitCounter, commits_between, spread

A, B = "198.18.0.1:5432", "198.18.0.9:5432"
SETTINGS = ConnectionSettings((Endpoint("198.18.0.1", 5432), Endpoint("198.18.0.9", 5432)), "bench",
                              Credentials("postgres", Secret("pw")))


def sample(t: float, commits: int, server: str = A, started: str = "s1", reset: str | None = None,
           discarded: bool = False) -> CounterSample:
    return CounterSample(t, commits, server, started, reset, discarded)


def test_commits_are_the_counters_delta_on_the_same_server():
    assert commits_between(sample(1.0, 1000), sample(2.0, 1450)) == 450
    assert commits_between(None, sample(2.0, 1450)) is None  # the first sample is a baseline


def test_a_counter_that_went_down_was_reset_and_counts_from_zero_not_negative():
    assert commits_between(sample(1.0, 90_000), sample(2.0, 120)) == 120  # crash recovery, pg_stat_reset()


def test_a_crash_restart_counts_from_zero_even_when_the_new_counter_already_passed_the_old_one():
    before = sample(1.0, 100)
    after_crash = sample(4.0, 700, started="s2", discarded=True)
    assert commits_between(before, after_crash) == 700
    after_clean_restart = sample(4.0, 700, started="s2", discarded=False)  # statistics kept across a clean restart
    assert commits_between(before, after_clean_restart) == 600


def test_pg_stat_reset_counts_from_zero():
    assert commits_between(sample(1.0, 100), sample(2.0, 150, reset="2026-11-23 18:00:00+00")) == 150


def test_another_servers_counter_is_a_new_baseline_not_a_delta():
    assert commits_between(sample(1.0, 100_000, server=A), sample(6.0, 3_000, server=B)) is None


def test_commits_between_samples_further_apart_are_shared_over_the_seconds_they_span():
    assert spread(3.01, 4.01, 450) == [(3, 450)]
    assert spread(3.01, 6.02, 10) == [(3, 4), (4, 3), (5, 3)]
    assert spread(3.2, 3.7, 5) == [(3, 5)]


def counter() -> tuple[PgCommitCounter, TransactionSeries]:
    series = TransactionSeries("pgcounter")
    return PgCommitCounter(SETTINGS, Timeline(), series), series


def test_the_series_gets_per_second_tps_without_latencies_through_a_reset_and_a_failover():
    c, series = counter()
    for s in (sample(10.001, 5000), sample(11.002, 5400), sample(12.001, 5810),
              sample(15.002, 300, started="s2", discarded=True),  # crash: 3 s unreachable, 300 since restart
              sample(16.001, 700, started="s2"),
              sample(18.003, 40, server=B),  # failover: baseline on the new primary
              sample(19.001, 460, server=B)):
        c._take(s)
    assert [(p.t, p.commits) for p in series.points()] == [
        (10, 400), (11, 410), (12, 0), (13, 0), (14, 300), (15, 400), (16, 0), (17, 0), (18, 420)]
    assert all(p.p50_ms is None for p in series.points())  # a counter knows no latencies
    assert (c.samples, c.baselines, c.resets) == (7, 2, 1)
    gap = c.timeline.events(source="pgcounter")[0].attrs  # the crash: no commit seen from 12.001 to 15.002
    assert (gap["start"], gap["end"]) == (12.001, 15.002)


def test_the_counter_never_samples_inside_the_database_it_counts():
    with pytest.raises(ConfigError, match="another database"):
        PgCommitCounter(SETTINGS, Timeline(), TransactionSeries(), monitor_database="bench")
    c, _ = counter()
    assert c.settings.database == "postgres" and c.database == "bench"
    assert not c.keeps_ledger and c.verify() is None
