"""What counts as a read at the wire, and what watching read-only does to everything else."""

from __future__ import annotations

import pytest

from faults.transports import wire
from faults.transports.shell import LocalShell


@pytest.mark.parametrize("method", [
    "RetrieveServiceContent", "RetrievePropertiesEx", "ContinueRetrievePropertiesEx", "WaitForUpdatesEx", "CurrentTime",
    "HasPrivilegeOnEntities", "FetchUserPrivilegeOnEntities", "QueryPhysicalVsanDisks", "QuerySyncingVsanObjects",
    "VsanClusterGetConfig", "VsanQueryVcClusterHealthSummary", "VSANVcGetWitnessHosts", "VsanPerfQueryPerf",
    "Login", "Logout", "CreateContainerView", "DestroyView", "CreateFilter", "DestroyPropertyFilter",
])
def test_reading_and_session_methods_are_reads(method: str) -> None:
    assert wire.soap_reads(method)


@pytest.mark.parametrize("method", [
    "EnterMaintenanceMode_Task", "ExitMaintenanceMode_Task", "ShutdownHost_Task", "RelocateVM_Task", "PowerOffVM_Task",
    "ReconnectHost_Task", "VsanClusterReconfig", "VsanHealthRepairClusterObjectsImmediate", "RemoveDisk_Task",
    "TerminateSession", "SetEntityPermissions", "CheckRelocate_Task",
])
def test_every_other_method_is_a_write(method: str) -> None:
    assert not wire.soap_reads(method)


@pytest.mark.parametrize("command", [
    "tc qdisc show dev eth0", "nft -j list ruleset", "test -x /opt/x.py && command -v python3",
    "python /usr/lib/vmware/vsan/bin/vsanDiskFaultInjection.pyc -h", "cat /proc/net/dev 2>/dev/null | head -n 3",
])
def test_reading_command_lines_are_reads(command: str) -> None:
    assert wire.command_reads(command)


@pytest.mark.parametrize("command", [
    "tc qdisc add dev eth0 root netem delay 10ms", "nft add table inet harness", "test -d /x && touch /x/y",
    "echo 1 > /proc/sys/net/ipv4/ip_forward", "python x.pyc -p -d naa.1", "rm -f /tmp/x", "",
])
def test_anything_else_is_a_write(command: str) -> None:
    assert not wire.command_reads(command)


def test_outside_a_watch_nothing_is_recorded_or_refused() -> None:
    assert wire.current() is None
    wire.sent("https", "bmc", "POST /redfish/v1/Systems/1/Actions/ComputerSystem.Reset", reads=False)


def test_watched_read_only_a_write_is_refused_before_it_is_sent(tmp_path: object) -> None:
    with wire.watching(read_only=True) as watched:
        assert LocalShell().check("test -d /") == ""
        with pytest.raises(wire.WriteRefused, match=r"this machine: touch /nonexistent/x would change something"):
            LocalShell().run("touch /nonexistent/x")
    assert [(c.operation, c.reads) for c in watched.calls] == [("test -d /", True), ("touch /nonexistent/x", False)]
    assert watched.writes() == [watched.calls[1]]


def test_session_objects_are_allowed_as_pairs_and_one_left_open_is_named() -> None:
    with wire.watching() as watched:
        watched.created("vc", "session[1]view-1", "CreateContainerView")
        watched.created("vc", "session[1]view-2", "CreateContainerView")
        watched.destroyed("vc", "session[1]view-1")
    assert watched.left_open() == ["vc session[1]view-2 (CreateContainerView)"]
