"""The vCenter transport without a vCenter: SDK absence, TLS policy, retry bounds, secrets, updates and events."""

from __future__ import annotations

import datetime as dt
import os
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyVmomi import vim, vmodl

from faults.transports.vcenter import (
    Limits,
    VCenterSession,
    apply_updates,
    describe,
    is_transient,
    session_for,
    ssl_context,
    vc_event,
)
from harness_kernel.errors import ConfigError, ControlPlaneError, MissingCredentialError
from harness_kernel.history.events import EventKind
from harness_kernel.topology.management import TlsPolicy, VCenter
from tests.unit.harness_platforms.vsphere.test_vsphere_backend import topology

ROOT = Path(__file__).resolve().parents[4]
SECRET = "Pa55-not-to-be-seen"
FAST = Limits(connect_s=1, read_s=2, attempts=3, retry_total_s=5, backoff_s=0.01)


@pytest.fixture
def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.fixture
def session(monkeypatch: pytest.MonkeyPatch, closed_port: int) -> Iterator[VCenterSession]:
    monkeypatch.setenv("HARNESS_TEST_VC_PW", SECRET)
    vcenter = VCenter.model_validate({"address": "127.0.0.1", "port": closed_port, "cluster": "stretched-01",
                                      "credential": {"username": "harness", "password": {"env": "HARNESS_TEST_VC_PW"}}})
    yield VCenterSession(vcenter, "vsan.version.version20", FAST)


def test_the_module_imports_without_pyvmomi_and_names_the_extra_when_used() -> None:
    code = ("import sys; sys.modules['pyVmomi'] = None; sys.modules['pyVim'] = None; sys.modules['vsanapiutils'] = None\n"
            "import faults.transports.vcenter as v, harness_platforms.vsphere.faults, harness_platforms.vsphere.vsan.faults\n"
            "try:\n    v.sdk()\nexcept Exception as e:\n    print(type(e).__name__, e)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ConfigError the vsphere backend needs pyVmomi")
    assert "pip install 'resilience-harness[vsphere]'" in done.stdout


def test_the_vsan_sdk_is_the_module_bundled_with_pyvmomi() -> None:
    import vsanapiutils

    assert callable(vsanapiutils.GetVsanVcMos)


def test_tls_verification_is_on_by_default_and_honours_the_ca_file(tmp_path: Path) -> None:
    default = ssl_context(TlsPolicy(), "management.vcenter")
    assert default.verify_mode is ssl.CERT_REQUIRED and default.check_hostname
    off = ssl_context(TlsPolicy(verify=False), "management.vcenter")
    assert off.verify_mode is ssl.CERT_NONE and not off.check_hostname
    with pytest.raises(ConfigError, match=r"management.vcenter.tls.ca_file: cannot load /nonexistent/ca.pem"):
        ssl_context(TlsPolicy(ca_file="/nonexistent/ca.pem"), "management.vcenter")


def test_transient_errors_are_retried_within_the_attempt_bound(session: VCenterSession) -> None:
    calls = []

    def flaky() -> str:
        calls.append(time.monotonic())
        if len(calls) < 3:
            raise vmodl.fault.HostCommunication(msg="host unreachable")
        return "ok"
    assert session.call("reading", flaky) == "ok" and len(calls) == 3

    calls.clear()

    def broken() -> None:
        calls.append(time.monotonic())
        raise ConnectionResetError("reset by peer")
    with pytest.raises(ControlPlaneError, match=r"management.vcenter 127.0.0.1:\d+: reading failed after 3 attempts: "
                                                 "ConnectionResetError"):
        session.call("reading", broken)
    assert len(calls) == FAST.attempts


def test_retrying_stops_at_the_total_time_bound(session: VCenterSession) -> None:
    session.limits = Limits(attempts=1000, retry_total_s=0.3, backoff_s=0.05)
    started = time.monotonic()
    with pytest.raises(ControlPlaneError, match="failed after"):
        session.call("reading", lambda: (_ for _ in ()).throw(TimeoutError("slow")))
    assert time.monotonic() - started < 3


def test_other_errors_fail_at_once(session: VCenterSession) -> None:
    calls = []

    def refused() -> None:
        calls.append(1)
        raise vim.fault.InvalidState(msg="host is in maintenance")
    with pytest.raises(ControlPlaneError, match=r"reading failed: InvalidState: host is in maintenance"):
        session.call("reading", refused)
    assert calls == [1]


@pytest.mark.parametrize(("error", "transient"), [
    (ConnectionRefusedError(), True), (TimeoutError(), True), (vmodl.fault.HostCommunication(), True),
    (vim.fault.NotAuthenticated(), True), (ssl.SSLCertVerificationError("bad"), False),
    (vim.fault.InvalidLogin(), False), (vim.fault.InvalidState(), False), (ValueError(), False)])
def test_what_counts_as_transient(error: BaseException, transient: bool) -> None:
    assert is_transient(error) is transient


def test_an_unreachable_vcenter_is_named_and_the_password_never_shown(session: VCenterSession) -> None:
    with pytest.raises(ControlPlaneError) as caught:
        session.si()
    text = str(caught.value)
    assert text.startswith(f"management.vcenter 127.0.0.1:{session.vcenter.port}: connect failed after 3 attempts")
    assert SECRET not in text and SECRET not in repr(caught.value.__cause__)


def test_a_missing_credential_names_its_field(session: VCenterSession, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HARNESS_TEST_VC_PW")
    with pytest.raises(MissingCredentialError, match=r"management.vcenter.credential.password: "
                                                     r"the environment variable named at "
                                                     r"management\.vcenter\.credential\.password\.env is not set"):
        session.si()


def test_property_updates_are_folded_assign_and_remove() -> None:
    pc = vmodl.query.PropertyCollector
    update = pc.UpdateSet(version="2", filterSet=[pc.FilterUpdate(objectSet=[pc.ObjectUpdate(
        kind="modify", obj=vim.HostSystem("host-11"),
        changeSet=[pc.Change(name="runtime.connectionState", op="assign", val="notResponding"),
                   pc.Change(name="runtime.inMaintenanceMode", op="remove"),
                   pc.Change(name="unwatched", op="assign", val=1)])])])
    values = {"runtime.connectionState": "connected", "runtime.inMaintenanceMode": True}
    apply_updates(values, update)
    assert values == {"runtime.connectionState": "notResponding", "runtime.inMaintenanceMode": None}


def test_events_carry_their_type_the_server_clock_and_what_they_name() -> None:
    when = dt.datetime(2026, 11, 23, 21, 0, 5, 250000, tzinfo=dt.UTC)
    failed = vim.event.DasHostFailedEvent(createdTime=when, fullFormattedMessage="A possible host failure",
                                          failedHost=vim.event.HostEventArgument(name="esx-a1"))
    restarted = vim.event.EventEx(createdTime=when + dt.timedelta(seconds=4), eventTypeId="com.vmware.vc.ha.VmRestartedByHAEvent",
                                  fullFormattedMessage="vSphere HA restarted pg-node-a",
                                  vm=vim.event.VmEventArgument(name="pg-node-a"),
                                  host=vim.event.HostEventArgument(name="esx-a2"))
    first, second = vc_event(failed), vc_event(restarted)
    assert (first.type_id, first.wall, first.host) == ("DasHostFailedEvent", when.timestamp(), "esx-a1")
    assert (second.type_id, second.vm, second.host) == ("com.vmware.vc.ha.VmRestartedByHAEvent", "pg-node-a", "esx-a2")
    server = second.to_server_event(EventKind.PROMOTED, "vsphere-ha")
    assert server.wall == when.timestamp() + 4 and server.attrs == {"event": "com.vmware.vc.ha.VmRestartedByHAEvent",
                                                                    "host": "esx-a2", "vm": "pg-node-a"}


def test_a_fault_is_described_by_its_wire_name_and_message() -> None:
    assert describe(vim.fault.InvalidState(msg="busy")) == "InvalidState: busy"
    assert describe(None) == "no reason given"


def test_one_session_per_endpoint() -> None:
    topo = topology()
    assert session_for(topo) is session_for(topo)
    other = topology(port=8443)
    assert session_for(other) is not session_for(topo)
    with pytest.raises(ConfigError, match=r"vSphere faults need management\.vcenter"):
        session_for(topo.model_copy(update={"management": topo.management.model_copy(update={"vcenter": None})}))
