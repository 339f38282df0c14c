"""The observe-only commit counter against a real PostgreSQL, checked against independent counts.

pgbench's own per-second progress is the reference for the rate; the OLTP driver (which
reconnects through a crash) is the load when the server's counters are reset under the counter.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace

import pytest

from harness_kernel.history.series import TransactionSeries
from harness_kernel.history.timeline import Timeline
from tests.support import pgbench
from tests.support.oltp_local import LocalBench
from workloads.base import Workload
from workloads.oltp import DriverConfig, OltpDriver
from workloads.pgcounter import PgCommitCounter


def mean(values: list[float]) -> float:
    return sum(values) / len(values)


def per_timeline_second(progress: list[pgbench.ProgressLine], timeline: Timeline, first: int, last: int) -> list[float]:
    """pgbench's seconds are its own; share each one's transactions among the timeline seconds it overlaps."""
    out = []
    for second in range(first, last):
        total = 0.0
        for line in progress:
            end = timeline.t_of_wall(line.wall_end)
            total += line.tps * max(0.0, min(end, second + 1) - max(end - 1, second))
        out.append(total)
    return out


@pytest.mark.nightly  # a measured agreement over a 14 s pgbench run
def test_the_counters_tps_agrees_with_pgbenchs_own_per_second_progress_within_5_percent(pg: LocalBench) -> None:
    pg.server.create_database("pgb")
    pgbench.initialise(pg.server, "pgb")
    timeline, series = Timeline(), TransactionSeries("pgcounter")
    counter = PgCommitCounter(replace(pg.settings, database="pgb"), timeline, series)
    assert isinstance(counter, Workload) and not counter.keeps_ledger
    counter.start()
    # a steady rate: the counter sees a second's commits up to a second late, so under a load
    # that swings (other tests on this machine) the window's edges would dominate the comparison
    run = pgbench.run(pg.server, "pgb", seconds=14, rate=400)
    time.sleep(1.5)  # backends publish their last counts within a second
    report = counter.stop()
    assert report.clean and report.failed_samples == 0 and report.resets == 0
    assert counter.verify() is None
    progress = run.progress

    started = timeline.t_of_wall(progress[0].wall_end) - 1
    first, last = math.ceil(started) + 2, math.floor(timeline.t_of_wall(progress[-1].wall_end)) - 1  # steady seconds
    bench = per_timeline_second(progress, timeline, first, last)
    counted = [p.tps for p in series.points(first, last)]
    print(f"\ncommon steady seconds {first}..{last - 1} of the timeline")
    print(f"pgbench per second: {[round(v) for v in bench]}")
    print(f"counter per second: {[round(v) for v in counted]}")
    print(f"mean TPS: pgbench {mean(bench):.1f}, counter {mean(counted):.1f}, "
          f"difference {100 * (mean(counted) - mean(bench)) / mean(bench):+.2f} %")
    assert len(counted) >= 8
    assert abs(mean(counted) - mean(bench)) <= 0.05 * mean(bench)
    total = sum(p.commits for p in series.points())  # every commit once: pgbench's plus its sessions' setup
    print(f"whole run: pgbench processed {run.processed}, the counter counted {total}")
    assert run.processed <= total <= run.processed + 50


def test_a_reset_of_the_servers_counters_is_counted_from_zero_not_as_negative_tps(own_pg: LocalBench) -> None:
    timeline, series, client_series = Timeline(), TransactionSeries("pgcounter"), TransactionSeries()
    counter = PgCommitCounter(own_pg.settings, timeline, series)
    # a paced load (think time), steady enough that the counter's up-to-a-second lag does not matter
    driver = OltpDriver(own_pg.dialect, own_pg.settings, timeline, client_series,
                        DriverConfig(users=2, scale=own_pg.scale, think_time_s=0.005))
    counter.start()
    driver.start()
    time.sleep(2.0)
    own_pg.server.psql("SELECT pg_stat_reset()", database=own_pg.settings.database)  # the same server, counters zeroed
    time.sleep(2.0)
    own_pg.server.restart_immediate()  # crash recovery discards the statistics; every session dies
    back = timeline.now()
    time.sleep(6.0)
    driver.stop()
    time.sleep(1.5)
    report = counter.stop()

    assert report.resets == 2 and report.failed_samples >= 1 and report.connects >= 2, report
    points = series.points()
    assert min(p.commits for p in points) >= 0
    first, last = math.ceil(back) + 2, math.floor(back) + 6  # after the clients reconnected and warmed up
    server = [p.tps for p in series.points(first, last)]
    client = [p.tps for p in client_series.points(first, last)]
    print(f"\nafter the crash, per second: client-side {client}, server counter {server}")
    server, client = mean(server), mean(client)
    assert server > 0 and abs(server - client) <= 0.1 * client
