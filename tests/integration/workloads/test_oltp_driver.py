"""The OLTP driver against a real PostgreSQL: load, reconnect through a real outage, prove the ledger."""

from __future__ import annotations

import time

from harness_kernel.history import EventKind
from harness_kernel.history.series import TransactionSeries
from harness_kernel.history.timeline import Timeline
from tests.support.oltp_local import LocalBench
from workloads.oltp import TPCE_LIKE, DriverConfig, OltpDriver


def driver(bench: LocalBench, timeline: Timeline, series: TransactionSeries, **config: object) -> OltpDriver:
    return OltpDriver(bench.dialect, bench.settings, timeline, series,
                      DriverConfig(scale=bench.scale, **config))  # type: ignore[arg-type]


def test_users_commit_transactions_into_the_per_second_series_and_stop_within_a_second(pg, timeline, series):
    d = driver(pg, timeline, series, users=4)
    d.start()
    time.sleep(2.5)
    asked = time.monotonic()
    report = d.stop(timeout_s=2.0)
    assert time.monotonic() - asked < 1.0
    assert report.stuck == [] and report.crashed == [] and report.connects == 4
    points = series.points()
    assert sum(p.commits for p in points) > 100
    busy = [p for p in points if p.commits]
    assert all(p.p50_ms is not None and p.p50_ms <= p.p95_ms <= p.p99_ms for p in busy)  # type: ignore[operator]
    assert [e.kind for e in timeline.events(source="oltp")] == ["workload-start", "workload-stop"]
    ledger = d.verify()
    assert ledger.ok and ledger.lost_count == 0
    assert ledger.acknowledged == ledger.acknowledged_present == sum(p.commits for p in points)


def test_the_read_heavy_mix_writes_about_one_transaction_in_ten(pg, timeline, series):
    d = driver(pg, timeline, series, users=4, mix=TPCE_LIKE)
    d.start()
    time.sleep(2.0)
    d.stop()
    commits = sum(p.commits for p in series.points())
    writes = d.verify().acknowledged
    assert 0.05 < writes / commits < 0.15


def test_users_reconnect_after_a_crash_restart_and_the_outage_is_one_commit_gap(own_pg, timeline, series):
    # a small cluster recovers from a crash in a few hundred ms: detect gaps above 0.1 s
    d = driver(own_pg, timeline, series, users=4, gap_threshold_s=0.1)
    d.start()
    time.sleep(1.5)
    crash = timeline.now()
    own_pg.server.restart_immediate()  # every session dies; the server recovers and comes back
    back = timeline.now()
    time.sleep(2.0)
    report = d.stop()
    assert report.connects > 4  # everyone reconnected
    gaps = timeline.events(EventKind.COMMIT_GAP)
    assert len(gaps) == 1
    gap = gaps[0].attrs
    # the gap opens at the last commit before the outage: at most one commit interval (well under
    # the 0.1 s threshold) before pg_ctl was asked, or while it was still killing; the first commit
    # after the outage lands once the server accepts connections again (around when pg_ctl returns)
    assert crash - 0.1 <= gap["start"] < gap["first_error"] < gap["end"] <= back + 1.5
    assert gap["first_error"] >= crash
    assert gap["errors"] >= 4
    errors = {cls for p in series.points() for cls in p.error_classes}
    assert errors == {"connection-lost"}
    assert series.points()[-2].commits > 0  # committing again after the outage
    ledger = d.verify()
    assert ledger.lost_count == 0, ledger.summary()  # synchronous_commit=on survives a crash


def test_the_ledger_finds_acknowledged_rows_deleted_behind_its_back(pg, timeline, series):
    d = driver(pg, timeline, series, users=2)
    d.start()
    time.sleep(1.0)
    d.stop()
    victims = [first for book in (u.book for u in d.users) for first, _ in list(book.acked_id_ranges())[:1]]
    pg.server.psql(f"DELETE FROM ledger WHERE id IN ({', '.join(map(str, victims))})", database=pg.settings.database)
    ledger = d.verify()
    assert not ledger.ok
    assert ledger.lost_count == len(victims) == 2
    assert sorted(ledger.lost) == sorted(victims)
    assert sorted(client for client, _, _, missing in ledger.short_ranges if missing == 1) == \
        sorted(u.book.user_id for u in d.users), "each client's range with its missing id, to count again"
    assert ledger.acknowledged_present == ledger.acknowledged - ledger.lost_count, "the books add up"


def test_the_ledger_finds_commits_lost_in_a_crash_with_asynchronous_commit(own_pg, timeline, series):
    server = own_pg.server
    # acknowledged before durable: the commit record waits in WAL buffers for the WAL writer
    server.psql("ALTER SYSTEM SET synchronous_commit = off")
    server.psql("ALTER SYSTEM SET wal_writer_delay = '10s'")
    server.psql("SELECT pg_reload_conf()")
    d = driver(own_pg, timeline, series, users=4)
    d.start()
    time.sleep(1.5)
    d.stop()
    server.restart_immediate()  # postgres processes die before the WAL writer wakes up
    ledger = d.verify()
    assert not ledger.ok, ledger.summary()
    assert 0 < ledger.lost_count < ledger.acknowledged
    assert ledger.lost[0] >> 40 >= d.users[0].user_id
