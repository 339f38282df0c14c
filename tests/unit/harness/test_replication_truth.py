"""Replication as the cluster says it is: read before, during and after a fault; a run weaker than the policy is
flagged and its "0 lost" not judged a pass; a recovery puts back the settings the run changed."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import pytest

from faults.base import FaultSpec
from harness import doctor
from harness import experiment as experiment_module
from harness.analysis.replication import AFTER, BEFORE, DURING, START, ReplicationReading, weaker_than_policy
from harness.analysis.slo import SloCheck
from harness.clusters import ReplicationState
from harness.experiment import Experiment
from harness.phases import PhaseDurations
from harness.progress import Progress
from harness.safety.run import HarnessRun
from harness_kernel.errors import HarnessError
from harness_kernel.history import EventKind
from harness_kernel.history.timeline import Timeline
from harness_kernel.topology.models import Topology
from workloads.base import LedgerReport, StopReport


@dataclass
class QuorumCluster:
    """A cluster whose standby's replication-quorum decides its mode, as pg_auto_failover's does."""

    settings: dict[str, str] = field(default_factory=lambda: {"replication-quorum node-b": "true"})
    puts_back: bool = True  # False: a setting the harness may not change, or one that does not take
    answers: bool = True  # False: its preflight fails (not healthy)

    def preflight(self) -> None:
        if not self.answers:
            raise HarnessError("node-b not streaming")

    def resync(self) -> None:
        return None

    def replication(self) -> ReplicationState:
        mode = "synchronous" if self.settings["replication-quorum node-b"] == "true" else "asynchronous"
        return ReplicationState(mode, f"node-a: quorum {self.settings}", dict(self.settings))

    def restore_replication(self, before: ReplicationState) -> list[str]:
        changed = [f"{k}: {self.settings[k]} -> {v}" for k, v in before.settings.items() if self.settings[k] != v]
        if self.puts_back:
            self.settings.update(before.settings)
        return changed


def run_on(cluster: QuorumCluster, policy: str = "synchronous", *, accepted: bool = False,
           lost: int = 0) -> Experiment:
    topology = SimpleNamespace(databases=[SimpleNamespace(replication=policy)],
                               slo=SimpleNamespace(lost_commits_max=0))
    run = Experiment(harness_run=SimpleNamespace(topology=topology), cluster=cluster,  # type: ignore[arg-type]
                     timeline=Timeline(), progress=Progress(lambda _: None, quiet=True), workloads=[],
                     accept_weaker_replication=accepted)
    run.ledger = LedgerReport(acknowledged=500, acknowledged_present=500 - lost, lost_count=lost, failed=3,
                              failed_present_count=1)
    return run


def test_the_mode_is_read_into_the_history_before_during_and_after_the_fault() -> None:
    cluster = QuorumCluster()
    run = run_on(cluster)
    before = run.read_replication(BEFORE)
    run.read_replication(DURING)
    run.restore_replication(before)
    assert [(r.when, r.mode) for r in run.replication] == [(BEFORE, "synchronous"), (DURING, "synchronous"),
                                                           (AFTER, "synchronous")]
    events = run.timeline.events(EventKind.REPLICATION)
    assert [e.attrs["when"] for e in events] == [BEFORE, DURING, AFTER]
    assert "quorum" in events[0].attrs["read_from"], "what it was read from is quoted"
    assert run.weaker_replication is None
    assert run.lost_commits_check().outcome == "PASS"


def test_a_run_weaker_than_the_policy_is_flagged_and_its_zero_lost_is_not_judged_a_pass() -> None:
    cluster = QuorumCluster({"replication-quorum node-b": "false"})
    run = run_on(cluster)
    run.read_replication(BEFORE)
    assert run.weaker_replication is not None
    assert "ran asynchronous before the fault" in run.weaker_replication
    assert "the topology expects synchronous" in run.weaker_replication
    check = run.lost_commits_check()
    assert check.outcome == "NOT JUDGED" and "--accept-weaker-replication" in (check.not_judged or "")


def test_a_weaker_mode_accepted_knowingly_is_judged_and_says_so() -> None:
    run = run_on(QuorumCluster({"replication-quorum node-b": "false"}), accepted=True)
    run.read_replication(BEFORE)
    check = run.lost_commits_check()
    assert check.outcome == "PASS" and check.basis.endswith("(accepted)")


def test_a_loss_is_judged_whatever_the_mode() -> None:
    run = run_on(QuorumCluster({"replication-quorum node-b": "false"}), lost=5351)
    run.read_replication(BEFORE)
    assert run.lost_commits_check().outcome == "FAIL"


def test_a_policy_of_asynchronous_replication_is_not_flagged_by_an_asynchronous_cluster() -> None:
    run = run_on(QuorumCluster({"replication-quorum node-b": "false"}), policy="asynchronous")
    run.read_replication(BEFORE)
    assert run.weaker_replication is None and run.lost_commits_check().outcome == "PASS"


def test_an_unknown_mode_is_quoted_never_flagged() -> None:
    readings = [ReplicationReading(1.0, BEFORE, "unknown", "no answer"),
                ReplicationReading(9.0, AFTER, "asynchronous", "after the run")]
    assert weaker_than_policy("synchronous", readings) is None, "only what the fault met is judged"


def test_recovery_puts_back_a_setting_the_run_changed_and_reads_the_mode_as_before() -> None:
    cluster = QuorumCluster()
    run = run_on(cluster)
    before = run.read_replication(BEFORE)
    cluster.settings["replication-quorum node-b"] = "false"  # left so by the failover
    run.restore_replication(before)
    assert cluster.settings == {"replication-quorum node-b": "true"}
    restored = [e for e in run.timeline.events(EventKind.REPLICATION) if e.attrs.get("restored")]
    assert restored[0].attrs["restored"] == ["replication-quorum node-b: false -> true"]
    assert run.replication[-1].when == AFTER and run.replication[-1].mode == "synchronous"


def test_a_recovery_that_leaves_the_cluster_weaker_than_it_found_it_fails_naming_both(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(experiment_module, "REPLICATION_SETTLE_S", 0.2)
    cluster = QuorumCluster(puts_back=False)
    run = run_on(cluster)
    before = run.read_replication(BEFORE)
    cluster.settings["replication-quorum node-b"] = "false"
    with pytest.raises(HarnessError, match=r"replicates asynchronous, read from .* after the run, synchronous"):
        run.restore_replication(before)


def test_the_lost_commit_check_alone_keeps_its_old_meaning() -> None:
    assert SloCheck.lost_commits(0, 0).outcome == "PASS"
    assert SloCheck.lost_commits(None, 0).outcome == "NOT JUDGED"


def test_first_contact_warns_of_a_weaker_mode_and_passes_the_policys() -> None:
    weaker = doctor._replication("cluster c", QuorumCluster({"replication-quorum node-b": "false"}), "synchronous")
    assert weaker.status == "WARN" and "ran asynchronous at first contact" in weaker.seen
    assert "--accept-weaker-replication" in weaker.fix
    same = doctor._replication("cluster c", QuorumCluster(), "synchronous")
    assert same.status == "PASS" and same.seen.startswith("synchronous, read from node-a")


def test_a_cluster_running_alone_during_its_failover_is_not_a_weaker_configuration() -> None:
    readings = [ReplicationReading(0.0, START, "synchronous", "node-a: ANY 1"),
                ReplicationReading(5.0, BEFORE, "synchronous", "node-a: ANY 1"),
                ReplicationReading(20.0, DURING, "asynchronous", "node-b: wait_primary, no standby")]
    assert weaker_than_policy("synchronous", readings) is None


def test_an_experiment_started_with_a_node_down_on_purpose_reads_its_mode_as_during_the_fault() -> None:
    run = run_on(QuorumCluster({"replication-quorum node-b": "false"}))
    run.degraded_on_purpose = True  # S6's N-1: the test holds the standby down
    with run:
        pass
    assert [(r.when, r.mode) for r in run.replication] == [(DURING, "asynchronous")]
    assert run.found_replication is None and run.weaker_replication is None


@dataclass
class LedgerThatCannotBeRead:
    """A workload whose ledger cannot be read back (the database is still down after the run)."""

    name: str = "oltp"
    keeps_ledger: bool = True

    def start(self) -> None:
        return None

    def stop(self) -> StopReport:
        return StopReport(self.name, stuck=[], crashed=[])

    def verify(self) -> LedgerReport:
        raise HarnessError("ledger: connection refused")


@pytest.mark.reproducer("X-6")
def test_an_error_while_finishing_goes_with_the_tests_own_error_never_in_its_place() -> None:
    cluster = QuorumCluster()
    cluster.wait_healthy = lambda timeout_s: None  # type: ignore[attr-defined]
    run = run_on(cluster)
    run.workloads, run.ledger = [LedgerThatCannotBeRead()], None
    with pytest.raises(AssertionError, match="SLO violated: failover 41 s") as raised, run:
        raise AssertionError("SLO violated: failover 41 s")
    assert any("ledger: connection refused" in note for note in getattr(raised.value, "__notes__", []))


@pytest.mark.reproducer("X-4")
def test_a_trial_whose_recovery_fails_still_puts_back_the_replication_it_found(
        topology: Topology, topology_file: Path, state: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fault is real (a process tree frozen); the cluster's replication quorum is changed while it holds, as a
    failover can leave it; the recovery then fails: the trial's error stands and the setting is back all the same."""
    monkeypatch.setattr(experiment_module, "REPLICATION_SETTLE_S", 0.5)
    cluster = QuorumCluster()
    cluster.primary_node = lambda: "node-a"  # type: ignore[attr-defined]
    cluster.clock_offset = lambda: 0.0  # type: ignore[attr-defined]
    run = Experiment(harness_run=HarnessRun(topology=topology, topology_source=str(topology_file), state_dir=state,
                                        allow_destructive=True),
                     cluster=cluster, timeline=Timeline(),  # type: ignore[arg-type]
                     progress=Progress(lambda _: None, quiet=True), workloads=[],
                     durations=PhaseDurations(baseline_s=0.2, observe_s=0.3, recover_timeout_s=0.5))

    def weaken(seen: object) -> FaultSpec:
        cluster.settings["replication-quorum node-b"] = "false"
        cluster.answers = False  # and it will not recover in time
        return FaultSpec(kind="process-freeze", target="process:victim")

    with run, pytest.raises(HarnessError, match="cluster not healthy"):
        run._trial(weaken, None)
    assert cluster.settings == {"replication-quorum node-b": "true"}
    assert run.put_back == ["replication-quorum node-b: false -> true"]
