"""The OLTP users spread over Dask workers: one merged series the database agrees with, one ledger, a lost worker named.

Two local worker processes (`--load-workers 2`) drive a throwaway PostgreSQL. The merged
per-second commits must add up to the commits the ledgers acknowledged (exactly: both count
the same transactions) and to the database's own `xact_commit` delta within 2 %; killing a
worker's process is *load generator lost*, naming it.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator

import pytest

from harness_kernel.history.series import TransactionSeries
from harness_kernel.history.timeline import Timeline
from tests.support.oltp_local import LocalBench
from workloads.load.distributed import DistributedOltp, LoadGeneratorLost, local_cluster
from workloads.oltp import DriverConfig

pytest.importorskip("distributed")


def xact_commit(bench: LocalBench) -> int:
    return int(bench.server.psql("SELECT xact_commit FROM pg_stat_database WHERE datname = 'bench'").strip())


@pytest.fixture
def load(own_pg: LocalBench) -> Iterator[DistributedOltp]:
    workload = DistributedOltp(own_pg.dialect, own_pg.settings, Timeline(), TransactionSeries(),
                               DriverConfig(users=3, scale=own_pg.scale), local_cluster(2), generators=2, owns_cluster=True)
    yield workload
    if workload.client is not None and workload.client.status != "closed":
        workload.stop()


def test_two_workers_make_one_series_that_the_ledgers_and_the_database_agree_with(
        own_pg: LocalBench, load: DistributedOltp) -> None:
    time.sleep(1.0)  # the statistics collector has the schema's own transactions
    before = xact_commit(own_pg)
    load.start()
    time.sleep(6)
    live = sum(p.commits for p in load.series.points())
    dask_says = (str(load.client.get_worker_logs()) + str(load.client.get_scheduler_logs())
                 + str(load.client.run_on_scheduler(lambda dask_scheduler: list(dask_scheduler.tasks))))
    report = load.stop()
    time.sleep(1.0)  # pg_stat_database is updated when a backend reports (at the latest when it exits)
    server = xact_commit(own_pg) - before
    merged = sum(p.commits for p in load.series.points())
    ledger = load.verify()
    assert len({g.worker for g in load.generators}) == 2 and report.generators == 2
    assert 0 < live < merged, "seconds arrive while it runs, the rest at stop"
    assert ledger.lost_count == 0 and ledger.acknowledged == merged, (ledger.summary(), merged)
    assert abs(merged - server) <= 0.02 * server, f"merged {merged} vs xact_commit delta {server}"
    assert all(abs(d) < 0.05 for d in report.drift_s.values()), report.drift_s
    password = own_pg.settings.credentials.password
    assert password is not None and password.reveal() not in dask_says, "no credential in Dask's logs or task names"


def test_a_worker_killed_mid_run_is_a_load_generator_lost_naming_it(load: DistributedOltp) -> None:
    load.start()
    time.sleep(2)
    victim = load.generators[1].worker
    pids = load.client.run(os.getpid, workers=[victim])
    os.kill(pids[victim], signal.SIGKILL)
    deadline = time.monotonic() + 20
    while load.problem() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert (load.problem() or "").startswith(f"load generator lost: {victim} (")
    started = time.monotonic()
    report = load.stop()
    assert time.monotonic() - started < 30 and report.crashed
    with pytest.raises(LoadGeneratorLost, match=victim):
        load.verify()
