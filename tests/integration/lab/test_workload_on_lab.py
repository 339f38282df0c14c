"""The OLTP driver and its ledger against real failovers in the lab, through the experiment the suites run.

A host crash under load is a zero-TPS gap that starts at the crash; with replication synchronous
no acknowledged commit is lost; made asynchronous (the journaled `replication-async` fault), with
the standby's WAL stream stopped before the crash, the ledger *finds* the loss, and its count
equals the test's own: the acknowledged rows that only the old primary's data holds, read from a
copy of it taken at the crash.

Deterministic by construction: only the standby's WAL receiver is stopped (its keeper and its
server answer the monitor, so it stays a healthy `secondary`, the one state pg_auto_failover
promotes from), the loss is made by a measured WAL lag (under the 16 MB that would block the
promotion), not by a sleep, the standby is asserted `secondary/secondary` just before the crash,
and the crash is held until the monitor shows the promotion, not for a fixed time.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import signal
import tempfile
import threading
import time
from pathlib import Path

import pytest

from faults.base import FaultSpec
from harness.analysis.replication import AFTER, BEFORE, START
from harness.clusters import Cluster
from harness.clusters.lab import LabCluster
from harness.experiment import Experiment
from harness.phases import PhaseDurations
from harness.progress import Progress
from harness.safety.run import HarnessRun
from harness_kernel.errors import ControlPlaneError
from harness_kernel.history import EventKind
from harness_kernel.history.series import TransactionSeries
from harness_kernel.history.timeline import Timeline
from harness_kernel.topology.models import Topology
from harness_lab import shell
from harness_lab.controller import Lab
from harness_lab.layout import DATABASE
from harness_lab.postgres import PG_USER
from reports.allure.results_read import RecordedTest
from reports.regression import RegressionRule
from reports.scenario_record import scenario_record
from reports.summary_page import SummaryInput, render
from tests.integration.lab.conftest import TEST_PREFIX
from workloads.oltp import DriverConfig, OltpDriver, prepare_schema
from workloads.oltp.schema import Scale


@pytest.mark.parametrize("replication", ["asynchronous", "synchronous"])
def test_a_host_crash_loses_exactly_what_the_old_primary_alone_held_and_recovery_puts_replication_back(
        replication: str, lab: Lab, topology: Topology, tmp_path: Path) -> None:
    """Through the experiment S4 runs: asynchronous (the standby out of the quorum, its WAL stream stopped for
    3 s before the crash) the ledger's lost count equals the acknowledged rows found only in the old primary's
    data; synchronous, none. Either way the books add up, the commits in flight at the crash are listed and not
    counted as lost, the mode is read into the history, and the recovery leaves replication as it found it."""
    cluster = LabCluster(lab, topology)
    session = HarnessRun(topology=topology, topology_source="lab:" + TEST_PREFIX, state_dir=tmp_path / "state",
                         allow_destructive=True, start_guardian=False)
    timeline, series = Timeline(), TransactionSeries()
    dialect, settings = cluster.connection()
    prepare_schema(dialect, settings, Scale(), scratch=True)
    driver = OltpDriver(dialect, settings, timeline, series, DriverConfig(users=6))
    experiment = Experiment(session, cluster, timeline, Progress(lambda _: None, quiet=True), [driver],
                            PhaseDurations(baseline_s=5, observe_s=18, settle_s=2, recover_timeout_s=150,
                                           steady_window_s=3), series=series)
    scratch = Path(tempfile.mkdtemp(prefix=f"{TEST_PREFIX}-old-primary-"))  # a PostgreSQL of its own runs there
    old_data = scratch / "data"
    crash = OldPrimaryCopy(lab, timeline, old_data)

    held = contextlib.ExitStack()
    standby_of: dict[str, str] = {}

    def weaken_then_crash(seen: Cluster) -> FaultSpec:
        primary, standby = seen.primary_node(), seen.standby_node()
        standby_of["node"] = standby
        if replication == "asynchronous":  # the primary acknowledges alone...
            held.enter_context(session.inject(timeline, FaultSpec("replication-async", f"database:{DATABASE}"),
                                              duration_s=300))
            shell.wait_for(lambda: cluster.replication().mode == "asynchronous", 30, "asynchronous", interval_s=0.5)
            receiver = wal_receiver(lab, standby)
            os.kill(receiver, signal.SIGSTOP)  # ...while its standby receives no WAL
            crash.resume_after_crash(receiver)
            waited, unsent = time.monotonic(), UnsentWal(lab, primary)
            shell.wait_for(lambda: unsent.bytes() >= LAG_BYTES, 60, f"{LAG_BYTES} bytes of WAL unsent", interval_s=0.2)
            print(f"{LAG_BYTES} bytes of WAL unsent after {time.monotonic() - waited:.1f} s")
        states = {n.name: (n.reportedstate, n.goalstate) for n in lab.nodes()}
        assert states[standby] == ("secondary", "secondary"), f"the standby can be promoted: {states}"
        crash.watch(primary)
        return FaultSpec("host-crash", f"host:{seen.host_of(primary)}")

    def promoted() -> bool:
        try:
            return lab.primary() == standby_of.get("node")
        except ControlPlaneError:
            return False

    try:
        with experiment, held:
            findings = experiment.run_failure(weaken_then_crash, observe_s=60, hold_until=promoted)
        assert crash.stop(), "the old primary's data was not copied at the crash"
        only_old_primary = ledger_ids_of_copy(old_data, scratch / "sock")
    except BaseException:
        print("monitor at the failure:", lab.nodes())
        print("its events:", "\n".join(f"{e.node} {e.reportedstate}/{e.goalstate}: {e.description}"
                                       for e in lab.pg.events(time.time() - 300)))
        raise
    finally:
        crash.stop()
        session.release()
        shutil.rmtree(scratch, ignore_errors=True)
    ledger = experiment.ledger
    assert ledger is not None and findings.primary_after != findings.primary_before
    assert ledger.acknowledged == ledger.acknowledged_present + ledger.lost_count, "the books add up"

    # the test's own count: acknowledged rows only the old primary's data holds (its copy, taken at the crash)
    in_flight = {i for user in driver.users for i in user.book.failed_ids()}
    only_old = only_old_primary - ledger_ids_on(lab, findings.primary_after)
    assert ledger.failed > 0, "commits were in flight at the crash: their outcome is unknown to the client"
    assert ledger.lost_count == len(only_old - in_flight), (ledger.summary(), len(only_old), len(in_flight))
    print(f"\n{replication}: {ledger.summary()}; rows only on the old primary {len(only_old)}, "
          f"{len(only_old & in_flight)} of them in flight at the crash")

    readings = [(r.when, r.mode) for r in experiment.replication]
    assert readings[0] == (START, "synchronous") and readings[-1] == (AFTER, "synchronous"), readings
    assert (BEFORE, replication) in readings, readings
    after, found = cluster.replication(), experiment.found_replication
    assert found is not None and after.mode == "synchronous" and after.settings == found.settings, \
        "recovery put back what it found, as read from the cluster"
    weaker = experiment.weaker_replication
    if replication == "asynchronous":
        assert ledger.lost_count > 0 and experiment.lost_commits_check().outcome == "FAIL"
        assert weaker is not None and "ran asynchronous before the fault" in weaker
        restored = [e for e in timeline.events(EventKind.REPLICATION) if e.attrs.get("restored")]
        assert restored and "false -> true" in restored[0].attrs["restored"][0]
    else:
        assert ledger.lost_count == 0 and weaker is None and experiment.lost_commits_check().outcome == "PASS"
        phases = findings.phases
        assert phases.last_commit is not None and phases.client_rto_s is not None
        assert findings.in_effect_t - 1.0 <= phases.last_commit <= findings.in_effect_t + 0.2, "the outage starts at the crash"
        assert 2.0 <= phases.client_rto_s <= 20.0
        gap = [p for p in series.points(int(phases.last_commit) + 1, int(phases.last_commit + phases.client_rto_s))
               if p.tps == 0]
        assert len(gap) >= int(phases.client_rto_s) - 1, "the per-second series shows the gap"

    page = first_screen(experiment)
    assert ("Replication weaker than the policy" in page) == (replication == "asynchronous")
    assert "before the fault (+" in page and f"): {replication}, read from node-" in page


LAG_BYTES = 256 * 1024  # acknowledged by the primary alone at the crash; far under the 16 MB that blocks a promotion


def wal_receiver(lab: Lab, standby: str) -> int:
    """The standby's WAL receiver process (one of its node's tree, never another process)."""
    rows = lab.pg.local_sql(standby, "select pid from pg_stat_wal_receiver")
    assert rows and rows[0][0], f"{standby} receives no WAL"
    pid = int(rows[0][0])
    assert pid in lab.node_pids(standby)
    return pid


def lsn(text: str) -> int:
    high, _, low = text.partition("/")
    return (int(high, 16) << 32) + int(low, 16)


class UnsentWal:
    """WAL the primary wrote past the last it was seen sending: its standby cannot have it (what the network still
    buffers reaches the standby once its receiver runs again). The sender gives up on a silent receiver after
    wal_sender_timeout, so the last position it was seen sending is kept."""

    def __init__(self, lab: Lab, primary: str) -> None:
        self.lab, self.primary = lab, primary
        self.sent: int | None = None

    def bytes(self) -> int:
        current, sent = self.lab.pg.sql("select pg_current_wal_lsn(), (select max(sent_lsn) from pg_stat_replication)",
                                        node=self.primary, database="postgres")[0]
        if sent:
            self.sent = lsn(sent)
        return lsn(current) - self.sent if self.sent is not None else 0


class OldPrimaryCopy:
    """At the crash: the standby's WAL receiver let go again (the failover needs it) and the old primary's data
    copied before its host comes back and pg_auto_failover rewinds it."""

    def __init__(self, lab: Lab, timeline: Timeline, into: Path) -> None:
        self.lab, self.timeline, self.into = lab, timeline, into
        self.resume: int | None = None
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    def resume_after_crash(self, receiver: int) -> None:
        self.resume = receiver

    def crashed(self) -> bool:
        """The host crash is in effect (not another fault the test holds, such as replication-async)."""
        return any(e.attrs.get("fault") == "host-crash" for e in self.timeline.events(EventKind.IN_EFFECT))

    def watch(self, primary: str) -> None:
        self._thread = threading.Thread(target=self._at_crash, args=(primary,), daemon=True)
        self._thread.start()

    def _at_crash(self, primary: str) -> None:
        deadline = time.monotonic() + 60
        while not self.crashed() and time.monotonic() < deadline:
            time.sleep(0.05)
        if self.resume is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.resume, signal.SIGCONT)
        shutil.copytree(self.lab.pg.pgdata(primary), self.into, symlinks=True)
        (self.into / "postmaster.pid").unlink(missing_ok=True)
        self._done.set()

    def stop(self) -> bool:
        """True once the old primary's data was copied; the standby runs again either way."""
        if self._thread is not None:
            self._thread.join(timeout=60)
        if self.resume is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.resume, signal.SIGCONT)
        return self._done.is_set()


def ledger_ids_of_copy(data: Path, sockets: Path) -> set[int]:
    """Crash recovery of the copy in a PostgreSQL of its own (unix socket only), then every ledger id it holds."""
    sockets.mkdir()
    for path in [data.parent, data, *data.rglob("*"), sockets]:
        shutil.chown(path, PG_USER, PG_USER)
    data.parent.chmod(0o700)
    data.chmod(0o700)
    binary = "/usr/lib/postgresql/15/bin"
    start = [f"{binary}/pg_ctl", "-D", str(data), "-w", "-t", "60", "-l", str(sockets / "log"), "-o",
             f"-c listen_addresses='' -c unix_socket_directories={sockets} -c port=5499 -c archive_mode=off "
             "-c synchronous_standby_names='' -c logging_collector=off", "start"]
    shell.run(start, user=PG_USER, timeout=90)
    try:
        out = shell.run(["psql", "-h", str(sockets), "-p", "5499", "-d", DATABASE, "-Atc", "select id from ledger"],
                        user=PG_USER, timeout=60).stdout
    finally:
        shell.run([f"{binary}/pg_ctl", "-D", str(data), "-m", "immediate", "stop"], user=PG_USER, timeout=60,
                  check=False)
    return {int(line) for line in out.split()}


def ledger_ids_on(lab: Lab, node: str) -> set[int]:
    return {int(row[0]) for row in lab.pg.sql("select id from ledger", node=node, database=DATABASE, timeout=60)}


def first_screen(experiment: Experiment) -> str:
    """The summary page of this one experiment, as `ScenarioReport.record` keeps it."""
    record = scenario_record("S4", "S4 · unplanned on host-a", fault_kind="host-crash", target="host:host-a",
                             mechanism="host-crash via lab", table=None, numbers={},
                             ledger=dataclasses.asdict(experiment.ledger) if experiment.ledger else None,
                             replication=[r.describe() for r in experiment.replication],
                             weaker_replication=experiment.weaker_replication or "")
    test = RecordedTest(uuid="u", title=record.title, full_name="s4", status="passed", start=0, labels={},
                        message="", record=record)
    return render(SummaryInput(name="lab", generated_at="now", tests=[test], environment={}, judgements=[],
                               history=[], rule=RegressionRule(), report_ids={}, allure_html=None))

