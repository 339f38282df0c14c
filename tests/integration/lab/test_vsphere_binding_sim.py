"""The bound lab with the real simulator (`harness-vsim` in the tools directory), through production clients only.

`python -m harness lab up --vsphere` as a user runs it; then pyVmomi (TLS verified against the
lab's CA) reads placement, a host loses power through each path (its BMC; vCenter's opted-in
shutdown), and the production SSH transport runs the disk fault script. What is asserted on the lab is what the
simulator did through its hook: the VM's node killed and started again by HA, I/O paused
without a failover, resync traffic written on the site's storage. Skipped when the simulator
is not built (make setup), failed instead with HARNESS_REQUIRE_VSIM set. Prefix `hvsb3` (or
HARNESS_TEST_VSPHERE_SIM_PREFIX).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import ssl
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from faults import registry
from faults.base import FaultSpec, FaultState
from faults.transports.ssh import SshShell, endpoint_named
from faults.transports.vcenter import session_for
from harness.clusters import ReadsReplication, cluster_for
from harness_kernel.history import EventKind
from harness_kernel.paths import tools_dir
from harness_kernel.topology.loader import load_topology, parse_topology
from harness_kernel.topology.models import LabSettings, Topology
from harness_lab.controller import CODE_ROOT, PRIMARY_STATES, Lab
from harness_lab.layout import LabLayout
from harness_lab.vsphere_binding import READONLY_USER
from harness_platforms.redfish.faults import HostPowerOff
from harness_platforms.vsphere.vsan.section import settings as vsan_settings
from tests.integration.lab.lab_support import make_state_dir
from tests.support.vsim import require

PREFIX = os.environ.get("HARNESS_TEST_VSPHERE_SIM_PREFIX", "hvsb3")
pytestmark = pytest.mark.own_lab  # its subject is a lab of its own: it runs beside the shared lab\'s specs


@dataclass(frozen=True)
class Bound:
    lab: Lab
    topology: Topology
    exports: dict[str, str]
    control: str
    sim_log: Path
    topology_file: Path

    def state(self) -> Any:
        with urllib.request.urlopen(self.control + "/state", timeout=5) as reply:
            return json.load(reply)

    def hooks(self) -> list[str]:
        return re.findall(r"hook (.+?): ok", self.sim_log.read_text())


def _harness(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness", "lab", *args], capture_output=True, text=True, timeout=240,
                          env={**os.environ, "PYTHONPATH": str(CODE_ROOT)}, check=False)


@pytest.fixture(scope="module")
def bound() -> Iterator[Bound]:
    require()
    state = make_state_dir(PREFIX)
    lab = Lab(LabLayout.from_settings(LabSettings(prefix=PREFIX, state_dir=str(state))))
    try:
        # small components: the module's specs wait for resyncs to end; resync timing is the simulator specs' subject
        done = _harness("up", "--vsphere", "--prefix", PREFIX, "--state-dir", str(state), "--model", "component_mb=128")
        assert done.returncode == 0, done.stdout + done.stderr
        found = re.search(r"^topology: (\S+)$", done.stdout, re.M)
        assert found, done.stdout
        exports = dict(re.findall(r"^export (\w+)=(\S+)$", done.stdout, re.M))
        ready = json.loads((state / "vsphere" / "vsim-ready.json").read_text())
        with pytest.MonkeyPatch.context() as patch:
            for name, value in exports.items():
                patch.setenv(name, value)
            yield Bound(lab, load_topology(found.group(1)), exports, ready["control"], state / "pids" / "vsim.log",
                        Path(found.group(1)))
    finally:
        _harness("down", "--prefix", PREFIX, "--state-dir", str(state))
        shutil.rmtree(state, ignore_errors=True)


@contextmanager
def _vcenter(bound: Bound) -> Iterator[Any]:
    """A pyVmomi session of this test's own (not the harness's), logged out at the end."""
    from pyVim.connect import Disconnect, SmartConnect

    vcenter = bound.topology.management.vcenter
    assert vcenter is not None and vcenter.tls.ca_file
    si = SmartConnect(host=vcenter.address, port=vcenter.port, user=vcenter.credential.username,
                      pwd=os.environ[str(vcenter.credential.password.env)],
                      sslContext=ssl.create_default_context(cafile=vcenter.tls.ca_file))
    try:
        yield si
    finally:
        Disconnect(si)


def _placement(bound: Bound) -> dict[str, str]:
    from pyVmomi import vim

    with _vcenter(bound) as si:
        view = si.content.viewManager.CreateContainerView(si.content.rootFolder, [vim.VirtualMachine], True)
        return {vm.name: vm.runtime.host.name for vm in view.view}


def _activity(bound: Bound) -> tuple[dict[int, str], list[str]]:
    """vCenter's record of what happened: every event (key -> type and user), every recent task's method."""
    from pyVmomi import vim

    with _vcenter(bound) as si:
        events = si.content.eventManager.QueryEvents(vim.event.EventFilterSpec())
        tasks = si.content.taskManager.recentTask
        return {int(e.key): f"{type(e).__name__} {getattr(e, 'userName', '')}" for e in events}, \
            [str(t.info.descriptionId) for t in tasks]


def _until(predicate: Any, timeout_s: float) -> float:
    started = time.monotonic()
    while not predicate():
        assert time.monotonic() - started < timeout_s, f"not within {timeout_s} s"
        time.sleep(0.1)
    return time.monotonic() - started


def _doctor(bound: Bound, topology: Path, **env: str) -> tuple[int, dict[str, Any], float]:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "harness", "doctor", "--topology", str(topology), "--json"],
                          capture_output=True, text=True, timeout=180, check=False,
                          env={**os.environ, "PYTHONPATH": str(CODE_ROOT), **env})
    assert done.stdout.startswith("{"), done.stdout + done.stderr
    return done.returncode, json.loads(done.stdout), time.monotonic() - started


def _network(bound: Bound) -> str:
    """The lab router's nft tables and qdiscs: what a fault would leave behind."""
    netns = bound.lab.layout.router_netns
    return subprocess.run(["ip", "netns", "exec", netns, "sh", "-c", "nft list ruleset; tc qdisc show"],
                          capture_output=True, text=True, timeout=30, check=True).stdout


def test_doctor_passes_every_check_on_the_bound_lab_and_changes_nothing(bound: Bound) -> None:
    """First in the module: on the lab as it came up. After a disk fault vSAN resyncs for minutes, and doctor
    rightly says the disk faults are not ready then."""
    bound.lab.wait_healthy(90)
    _until(lambda: bound.state()["resync"]["objects"] == 0, 300)
    state, network, (events, tasks) = bound.state(), _network(bound), _activity(bound)
    code, report, took = _doctor(bound, bound.topology_file)
    failed = [r for r in report["rows"] if r["status"] == "FAIL"]
    counts: dict[str, int] = {}
    for row in report["rows"]:
        counts[row["where"].split(" ")[0]] = counts.get(row["where"].split(" ")[0], 0) + 1
    print(f"\ndoctor on the bound lab: {len(report['rows'])} checks in {took:.1f} s, by where: {counts}")
    assert (code, failed) == (0, []), failed
    assert bound.state() == state and _network(bound) == network, "doctor changed the lab"
    events_after, tasks_after = _activity(bound)
    user = bound.topology.management.vcenter.credential.username  # type: ignore[union-attr]
    new_events = [e for key, e in sorted(events_after.items()) if key > max(events, default=-1)]
    # doctor's own sessions, and this test's second look (its login) are all vCenter records
    assert set(new_events) <= {f"vim.event.UserLoginSessionEvent {user}", f"vim.event.UserLogoutSessionEvent {user}"}, \
        new_events
    assert tasks_after == tasks, "doctor started a vCenter task"
    calls = report["calls"]
    by_transport = {t: sum(c["count"] for c in calls if c["transport"] == t) for t in sorted({c["transport"] for c in calls})}
    print(f"doctor sent {sum(c['count'] for c in calls)} calls ({len(calls)} distinct): {by_transport}; vCenter events since: "
          f"{ {e: new_events.count(e) for e in set(new_events)} }")
    assert all(c["reads"] for c in calls) and {"soap", "https", "ssh"} <= set(by_transport), by_transport
    assert {c["operation"].split()[0] for c in calls if c["transport"] == "https"} == {"GET"}
    methods = {c["operation"] for c in calls if c["transport"] == "soap"}
    assert "HasPrivilegeOnEntities" in methods and "Logout" in methods and not methods & {
        "EnterMaintenanceMode_Task", "RelocateVM_Task", "ShutdownHost_Task", "VsanHealthRepairClusterObjectsImmediate"}
    assert rows_of(report)["sent only reads"]["status"] == "PASS"
    rows = rows_of(report)
    for host in ("esx-a1", "esx-a2", "esx-b1", "esx-b2"):
        belongs = rows[f"host-power-off on host:{host}: BMC of {host} powers host {host}"]
        assert belongs["status"] == "PASS" and f"host {host} share UUID " in belongs["seen"], belongs
    assert rows["the database VMs' data is mirrored across the sites"]["seen"].startswith(
        "pg-node-a: 2 objects, each with data in site-a and site-b")
    assert rows["vSphere HA restarts VMs after a host failure"]["status"] == "PASS"
    assert rows["vCenter's clock"]["status"] == "PASS"
    privileges = rows["host-maintenance on host:esx-a1: privileges"]
    assert privileges["status"] == "PASS" and "holds Host.Config.Maintenance on HostSystem esx-a1" in privileges["seen"]


def test_the_replication_is_read_from_the_database_and_the_storage_policies_of_its_vms(bound: Bound) -> None:
    """The database's own mode (the lab's PostgreSQL), and under it each VM's and disk's vSAN policy as the Storage
    Policy API associates it (the simulator's two stretched-cluster policies, marked as its model)."""
    cluster = cluster_for(bound.topology)
    assert isinstance(cluster, ReadsReplication)
    state = cluster.replication()
    assert state.mode == "synchronous", state
    assert "under it, vSAN storage policies (the simulator's model): " in state.read_from
    for node in bound.topology.databases[0].nodes:
        assert (f"{node.vm} 'Stretched cluster: dual site mirroring' (hostFailuresToTolerate 1, locality None)"
                in state.read_from), state.read_from
        assert state.settings[f"storage policy {node.vm}"] == "Stretched cluster: dual site mirroring"
    assert cluster.restore_replication(state) == [], "nothing changed, nothing put back"


def test_a_capture_of_the_bound_lab_replays_to_the_same_rows_and_holds_no_name_or_secret_of_it(
        bound: Bound, tmp_path: Path) -> None:
    """Second, on the lab still quiet: `doctor --capture`, then `doctor --replay` with the lab's servers untouched."""
    capture = tmp_path / "capture"
    state, network = bound.state(), _network(bound)
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "harness", "doctor", "--topology", str(bound.topology_file), "--capture",
                           str(capture)], capture_output=True, text=True, timeout=180, check=False,
                          env={**os.environ, "PYTHONPATH": str(CODE_ROOT)})
    took_capture = time.monotonic() - started
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert bound.state() == state and _network(bound) == network, "a capture changed the lab"
    started = time.monotonic()
    replayed = subprocess.run([sys.executable, "-m", "harness", "doctor", "--replay", str(capture)], capture_output=True,
                              text=True, timeout=180, check=False, env={**os.environ, "PYTHONPATH": str(CODE_ROOT)})
    took_replay = time.monotonic() - started
    summary = re.search(r"^replay: (\d+) rows compared, (\d+) differ, (\d+) not replayed.*, (\d+) requests not in the capture",
                        replayed.stderr, re.M)
    assert summary, replayed.stderr[-3000:]
    print(f"\ncapture in {took_capture:.1f} s ({sum(f.stat().st_size for f in capture.iterdir()) // 1024} KiB), replay "
          f"in {took_replay:.1f} s: {summary.group(0)}")
    compared, differ, _, misses = (int(g) for g in summary.groups())
    assert (replayed.returncode, differ, misses) == (0, 0, 0) and compared >= 100, replayed.stderr[-3000:]
    kept = "".join(f.read_text() for f in capture.iterdir())
    secrets = [v for k, v in bound.exports.items() if "PASSWORD" in k]
    identities = [h.name for s in bound.topology.sites for h in s.hosts] + [
        str(b.system_id) for b in bound.topology.management.redfish] + ["administrator@", "dc-lab"]
    assert not [s for s in secrets + identities if s in kept], "the capture holds what it promised to alias or leave"


def rows_of(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["check"]: r for r in report["rows"]}


def _variant(bound: Bound, tmp_path: Path, change: Any) -> Path:
    """The bound lab's topology file with one thing broken by `change(document)`."""
    document = yaml.safe_load(bound.topology_file.read_text())
    change(document)
    path = tmp_path / "topology.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def test_doctor_fails_bmcs_that_power_other_hosts_naming_both_servers_exit_10(bound: Bound, tmp_path: Path) -> None:
    """Two BMC entries swapped (addresses copied into the wrong rows): each would power off the other's server.

    The lab's BMCs are one emulator with one system each, so the swap is of the system ids; on separate
    BMCs it is the addresses. (One address given twice the loader already refuses.)"""
    def swap(document: dict[str, Any]) -> None:
        entries = {e["name"]: e for e in document["management"]["redfish"]}
        a1, a2 = entries["bmc-esx-a1"], entries["bmc-esx-a2"]
        a1["system_id"], a2["system_id"] = a2["system_id"], a1["system_id"]
    state = bound.state()
    code, report, _ = _doctor(bound, _variant(bound, tmp_path, swap))
    failed = {r["check"]: r for r in report["rows"] if r["status"] == "FAIL"}
    assert set(failed) == {f"{kind}: BMC of {h} powers host {h}" for h in ("esx-a1", "esx-a2")
                           for kind in (f"host-power-off on host:{h}", "site-power-off on site:site-a")}, failed
    assert code == 10
    row = failed["host-power-off on host:esx-a1: BMC of esx-a1 powers host esx-a1"]
    assert row["blocks"] == ["host-power-off"] and "its own BMC" in row["fix"]
    assert "powers a server with UUID " in row["seen"] and "but host esx-a1 is UUID " in row["seen"], row
    assert "another server" in row["seen"] and bound.state() == state


def test_doctor_fails_the_privilege_rows_of_a_read_only_vcenter_account_exit_10(bound: Bound, tmp_path: Path) -> None:
    def read_only(document: dict[str, Any]) -> None:
        env = next(k for k in bound.exports if k.endswith("_VCENTER_READONLY_PASSWORD"))
        document["management"]["vcenter"]["credential"] = {"username": READONLY_USER, "password": {"env": env}}
    code, report, _ = _doctor(bound, _variant(bound, tmp_path, read_only))
    failed = {r["check"]: r for r in report["rows"] if r["status"] == "FAIL"}
    assert code == 10 and all(k.endswith(": privileges") for k in failed), failed
    assert {f"host-maintenance on host:{h}: privileges" for h in ("esx-a1", "esx-a2", "esx-b1", "esx-b2")} <= set(failed)
    maintenance = failed["host-maintenance on host:esx-a1: privileges"]
    assert maintenance["blocks"] == ["host-maintenance"]
    assert f"vCenter user '{READONLY_USER}' lacks Host.Config.Maintenance on HostSystem esx-a1" in maintenance["seen"]
    assert not any(v in json.dumps(report) for v in bound.exports.values() if len(v) > 12 and "/" not in v)


def test_doctor_names_a_refused_vcenter_login_and_the_faults_it_blocks_exit_4(bound: Bound) -> None:
    vcenter = bound.topology.management.vcenter
    assert vcenter is not None and vcenter.credential.password.env
    code, report, _ = _doctor(bound, bound.topology_file, **{vcenter.credential.password.env: "not-the-password"})
    failed = [r for r in report["rows"] if r["status"] == "FAIL"]
    assert code == 4, failed
    assert failed and all(r["bad_input"] for r in failed)
    assert any("vcenter" in r["where"].lower() or "vcenter" in r["seen"].lower() for r in failed), failed
    blocked = {kind for r in failed for kind in r["blocks"]}
    assert {"host-maintenance", "vm-migrate"} <= blocked, blocked
    assert "not-the-password" not in json.dumps(report)


def _esxi_key_of_another_host(document: dict[str, Any]) -> None:
    entries = {e["name"]: e for e in document["management"]["ssh"]}
    entries["esxi-esx-a1"]["host_key"] = entries["esxi-esx-b2"]["host_key"]


def _disk_fault_script_missing(document: dict[str, Any]) -> None:
    lines = document["management"]["vsan"]["disk_faults"]
    for name, line in lines.items():
        lines[name] = line.replace("vsanDiskFaultInjection.pyc", "vsanDiskFaultInjectionAbsent.pyc")


def _bmc_down(document: dict[str, Any]) -> None:
    import socket
    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    next(e for e in document["management"]["redfish"] if e["name"] == "bmc-esx-b1")["port"] = port


@pytest.mark.parametrize(("broken", "row", "seen", "blocks"), [
    (_esxi_key_of_another_host, "disk-failure on disk:esx-a1/naa.5000c5000a101: ready",
     "host key does not match the pinned one (management.ssh[1].host_key)", "disk-failure"),
    # one broken thing proves the path in `make test`; the others are the same path with another row (nightly)
    pytest.param(_disk_fault_script_missing,
                 "disk-failure on disk:esx-b2/naa.5000c5000b201: assumption A-vsan-disk-fault-script",
                 "vsanDiskFaultInjectionAbsent.pyc -h exited", "disk-failure", marks=pytest.mark.nightly),
    pytest.param(_bmc_down, "host-power-off on host:esx-b1: BMC of esx-b1 allows ResetType ForceOff and On",
                 "unreachable", "host-power-off", marks=pytest.mark.nightly),
], ids=["esxi-host-key-changed", "disk-fault-script-missing", "bmc-down"])
def test_each_broken_thing_fails_its_row_naming_endpoint_and_fix_exit_10(
        bound: Bound, tmp_path: Path, broken: Any, row: str, seen: str, blocks: str) -> None:
    code, report, _ = _doctor(bound, _variant(bound, tmp_path, broken))
    found = rows_of(report)[row]
    assert (found["status"], code) == ("FAIL", 10), found
    assert seen in found["seen"] and blocks in found["blocks"] and found["fix"], found
    assert not any(v in json.dumps(report) for k, v in bound.exports.items() if "PASSWORD" in k)
    assert rows_of(report)["sent only reads"]["status"] == "PASS"


def _flat(value: Any, path: str = "") -> dict[str, Any]:
    """A document as {path: leaf}: lists of named things keyed by name, so two documents compare field by field."""
    if isinstance(value, dict):
        return {k: v for key, item in value.items() for k, v in _flat(item, f"{path}.{key}" if path else key).items()}
    if isinstance(value, list) and value and all(isinstance(i, dict) and "name" in i for i in value):
        return {k: v for item in value for k, v in _flat(item, f"{path}[{item['name']}]").items()}
    return {path: value}


# What `lab up --vsphere` writes that vCenter cannot say, and why discover's draft differs there.
EXPLAINED = {
    "name": "the lab names its topology after its prefix; the draft after the cluster",
    "lab.": "the binding to the embedded lab is the lab's own",
    "routers": "the inter-site router is not in vCenter",
    "databases": "which VMs are database nodes is not in vCenter: the draft lists the VMs as comments",
    ".bmc": "BMCs are not in vCenter", ".ssh": "ESXi SSH endpoints are not in vCenter",
    ".subnets": "site subnets are the network's, not vCenter's",
    "management.redfish": "BMCs are not in vCenter", "management.ssh": "SSH endpoints are not in vCenter",
    "management.vsan": "the disk fault command lines are the ESXi hosts', not vCenter's",
    "management.vcenter.tls.ca_file": "trust was a pinned thumbprint: the draft says to give the CA",
    "allow_list": "the draft allows nothing until a person chooses",
}


def _explains(key: str, path: str) -> bool:
    """`.bmc` explains that field of any host; `name` only the top-level name (a prefix, matched as a path)."""
    return f".{key.lstrip('.')}" in f".{path}" if key.startswith(".") else path == key or path.startswith(
        key if key.endswith(".") else f"{key}.") or path.startswith(f"{key}[")


def _fault_domain(bound: Bound, hosts: list[str], name: str) -> None:
    """Name the vSAN fault domain of `hosts` through the API (`UpdateVsan_Task` on each host's vsanSystem)."""
    from pyVim.task import WaitForTask
    from pyVmomi import vim

    with _vcenter(bound) as si:
        view = si.content.viewManager.CreateContainerView(si.content.rootFolder, [vim.HostSystem], True)
        for host in (h for h in view.view if h.name in hosts):
            spec = vim.vsan.host.ConfigInfo(faultDomainInfo=vim.vsan.host.ConfigInfo.FaultDomainInfo(name=name))
            WaitForTask(host.configManager.vsanSystem.UpdateVsan_Task(config=spec), si=si)
        view.Destroy()


def test_discover_drafts_what_lab_up_wrote_without_the_labs_state_and_shows_what_changed_through_the_api(
        bound: Bound, tmp_path: Path) -> None:
    """A VM moved (govc), site-b's fault domain renamed (UpdateVsan_Task), a disk group failed (the ESXi script):
    the draft shows each, and otherwise equals what `lab up --vsphere` wrote, field by field."""
    vcenter = bound.topology.management.vcenter
    assert vcenter is not None and vcenter.credential.password.env
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(CODE_ROOT), "HOME": str(tmp_path),
           vcenter.credential.password.env: os.environ[vcenter.credential.password.env]}  # nothing of the lab's state
    argv = [sys.executable, "-m", "harness", "discover", "--vcenter", vcenter.address, "--port", str(vcenter.port),
            "--user", vcenter.credential.username, "--password-env", vcenter.credential.password.env]
    refused = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path, check=False)
    found = re.search(r"--thumbprint ([0-9A-F:]{95})", refused.stderr)
    assert refused.returncode == 4 and found, refused.stderr
    govc = {"GOVC_URL": f"https://{vcenter.address}:{vcenter.port}/sdk", "GOVC_USERNAME": vcenter.credential.username,
            "GOVC_PASSWORD": env[vcenter.credential.password.env], "GOVC_TLS_CA_CERTS": str(vcenter.tls.ca_file),
            "GOVC_PERSIST_SESSION": "false", "GOVMOMI_HOME": str(tmp_path / "govmomi"), "PATH": "/usr/bin:/bin"}
    migrate = [str(tools_dir() / "bin" / "govc"), "vm.migrate", "-host"]
    host = bound.topology.host("esx-a2")
    assert host.ssh is not None and host.disk_groups[0].cache
    index, endpoint = endpoint_named(bound.topology, host.ssh)
    shell, cache = SshShell(endpoint, f"management.ssh[{index}]"), host.disk_groups[0].cache
    faults = vsan_settings(bound.topology).disk_faults
    subprocess.run([*migrate, "/dc-lab/host/stretched-01/esx-b2", "pg-node-b"], env=govc, timeout=120, check=True,
                   capture_output=True)
    try:
        _fault_domain(bound, ["esx-b1", "esx-b2"], "site-b-dr")
        shell.check(faults.unplug.replace("@DEVICE@", cache))
        done = subprocess.run([*argv, "--thumbprint", found.group(1)], capture_output=True, text=True, timeout=120,
                              env=env, cwd=tmp_path, check=False)
    finally:
        shell.check(faults.clear.replace("@DEVICE@", cache))
        shell.close()
        _fault_domain(bound, ["esx-b1", "esx-b2"], "site-b")
        subprocess.run([*migrate, "/dc-lab/host/stretched-01/esx-b1", "pg-node-b"], env=govc, timeout=120,
                       check=True, capture_output=True)
    assert done.returncode == 0, done.stderr
    assert "#   pg-node-b on esx-b2 (site-b-dr), poweredOn" in done.stdout  # the changes, as vCenter says them
    assert re.search(rf"- cache: {cache}  # unhealthy now: vSAN health flags 0x[0-9a-f]+$", done.stdout, re.M), done.stdout
    assert done.stdout.count("# unhealthy now") == 1  # that device, no other
    draft = yaml.safe_load(done.stdout)
    renamed = next(s for s in draft["sites"] if s["name"] == "site-b-dr")
    assert [h["name"] for h in renamed["hosts"]] == ["esx-b1", "esx-b2"]
    renamed["name"] = "site-b"  # the one change there; the rest of the site compares as written
    wrote, drafted = _flat(yaml.safe_load(bound.topology_file.read_text())), _flat(draft)
    differ = {p for p in wrote.keys() | drafted.keys() if wrote.get(p) != drafted.get(p)}
    unexplained = sorted(p for p in differ if not any(_explains(k, p) for k in EXPLAINED))
    print(f"\ndiscover vs lab up --vsphere: {len(wrote)} fields written, {len(differ)} differ, all explained: "
          f"{sorted({k for p in differ for k in EXPLAINED if _explains(k, p)})}")
    assert unexplained == [], {p: (wrote.get(p), drafted.get(p)) for p in unexplained}
    assert sum(1 for p in wrote if p.endswith(".disk_groups") or ".disk_groups" in p) >= 4  # compared, not skipped
    assert drafted["witness.address"] == wrote["witness.address"]
    _until(lambda: bound.state()["resync"]["objects"] == 0, 300)  # the unplugged group's delta, before the next test


def test_host_power_off_by_bmc_kills_the_node_and_ha_restarts_it_in_its_site(bound: Bound) -> None:
    lab = bound.lab
    lab.wait_healthy(60)
    assert _placement(bound) == {"pg-node-a": "esx-a1", "pg-node-b": "esx-b1"}
    spec = FaultSpec("host-power-off", "host:esx-b1")
    resolved = registry.resolve(spec, bound.topology)
    fault = HostPowerOff.from_spec(spec, resolved.params, resolved.target, bound.topology)
    fault.preflight()
    fault.inject()
    killed = _until(lambda: not lab.node_alive("node-b"), 15)
    restarted = _until(lambda: lab.node_alive("node-b"), 30)
    print(f"\nnode-b killed {killed:.1f} s after ForceOff, restarted by HA {restarted:.1f} s later")
    assert _placement(bound)["pg-node-b"] == "esx-b2"
    assert fault.check() is FaultState.IN_EFFECT
    fault.revert()
    assert fault.check() is FaultState.CLEARED
    lab.wait_healthy(90)
    assert [h for h in bound.hooks() if h.startswith("power-")][:2] == ["power-off node-b", "power-on node-b"]


def _govc(bound: Bound, *args: str) -> Any:
    """govc (govmomi v0.52.0's CLI, a client we did not write) reading the bound lab's vCenter."""
    vcenter = bound.topology.management.vcenter
    assert vcenter is not None and vcenter.tls.ca_file
    env = {"GOVC_URL": f"https://{vcenter.address}:{vcenter.port}/sdk", "GOVC_USERNAME": vcenter.credential.username,
           "GOVC_PASSWORD": os.environ[str(vcenter.credential.password.env)],
           "GOVC_TLS_CA_CERTS": vcenter.tls.ca_file, "GOVC_PERSIST_SESSION": "false",
           "GOVMOMI_HOME": str(bound.lab.layout.state_dir / "govmomi"), "PATH": "/usr/bin:/bin"}
    command, *rest = args
    done = subprocess.run([str(tools_dir() / "bin" / "govc"), command, "-json", *rest], capture_output=True, text=True,
                          env=env, timeout=30, check=True)
    return json.loads(done.stdout)


def _govc_host_state(bound: Bound, host: str) -> str:
    found = _govc(bound, "host.info", host)
    systems = found.get("hostSystems") or found.get("HostSystems")
    return str(systems[0]["runtime"]["connectionState"])


def test_the_primarys_host_loses_power_and_the_lab_fails_over_as_vcenter_and_govc_report(bound: Bound) -> None:
    """Production path only (the cluster view, the registry's Redfish fault): the primary's host loses power.

    On the lab the node's processes are gone and pg_auto_failover promotes the other node; the
    cluster view reports that failover with vSphere HA's host failure and VM restart on one
    clock; govc sees the host not responding and the VM restarted on the other host of its site.
    """
    lab = bound.lab
    lab.wait_healthy(60)
    cluster = cluster_for(bound.topology)
    cluster.preflight()
    primary, standby = cluster.primary_node(), cluster.standby_node()
    host = cluster.host_of(primary)
    since_wall = time.time() + cluster.clock_offset() - 1.0
    fault = registry.build(FaultSpec("host-power-off", f"host:{host}"), bound.topology)
    fault.preflight()
    fault.inject()
    try:
        _until(lambda: not lab.node_pids(primary), 15)  # the node's processes are gone
        _until(lambda: standby in {n.name for n in lab.nodes() if n.reportedstate in PRIMARY_STATES}, 60)  # promoted
        assert _govc_host_state(bound, host) != "connected"
        _until(lambda: cluster.host_of(primary) != host, 30)  # vSphere HA restarted its VM ...
        moved_to = cluster.host_of(primary)
        assert bound.topology.site_of(moved_to).name == bound.topology.site_of(host).name  # ... in its own site
        vm = next(n.vm for n in bound.topology.databases[0].nodes if n.name == primary)
        assert _govc(bound, "vm.info", str(vm))["virtualMachines"][0]["runtime"]["powerState"] == "poweredOn"
        events = cluster.ha_events(since_wall, primary)
        kinds = [e.kind for e in events]
        assert {EventKind.DETECTED, EventKind.PROMOTED, EventKind.HOST_FAILED, EventKind.VM_RESTARTED} <= set(kinds)
        promoted = next(e for e in events if e.kind is EventKind.PROMOTED)
        failed = next(e for e in events if e.kind is EventKind.HOST_FAILED)
        assert promoted.attrs["node"] == standby and failed.attrs["host"] == host
        assert kinds.index(EventKind.HOST_FAILED) < kinds.index(EventKind.VM_RESTARTED)
    finally:
        fault.revert()
    assert fault.check() is FaultState.CLEARED
    cluster.wait_healthy(120)
    assert _govc_host_state(bound, host) == "connected"


def _opted_in_without_bmc(topology: Topology, host: str) -> Topology:
    """The bound topology as for a host without a BMC, with vCenter's host shutdown opted in."""
    doc = topology.model_dump(mode="json", exclude_none=True)
    doc["lab"] = {"prefix": PREFIX}
    doc["management"]["vcenter"]["allow_host_shutdown"] = True
    for site in doc["sites"]:
        for entry in site["hosts"]:
            if entry["name"] == host:
                entry.pop("bmc")
    return parse_topology(doc, "opted-in")


def test_an_opted_in_host_shutdown_stops_the_node_and_nothing_restarts_it_until_a_person_does(bound: Bound) -> None:
    """vCenter's path for a host without a BMC, opted in: a graceful shutdown, so the node stops and vSphere HA
    restarts nothing; the revert waits until a person powers the host on (here through its BMC), and the VM
    comes back when someone starts it (here through vCenter)."""
    lab = bound.lab
    lab.wait_healthy(60)
    cluster = cluster_for(bound.topology)
    standby = cluster.standby_node()
    host = cluster.host_of(standby)
    vm = str(next(n.vm for n in bound.topology.databases[0].nodes if n.name == standby))
    topology = _opted_in_without_bmc(bound.topology, host)
    spec = FaultSpec("host-power-off", f"host:{host}")
    assert registry.resolve(spec, topology).platform == "vsphere"
    fault = registry.build(spec, topology)
    since_wall = time.time() + cluster.clock_offset() - 1.0
    fault.preflight()  # type: ignore[attr-defined]
    fault.inject()
    _until(lambda: not lab.node_pids(standby), 15)
    assert _govc_host_state(bound, host) != "connected"
    time.sleep(5.0)  # longer than the modelled HA restart delay: HA does not restart VMs of a host shut down
    assert _govc(bound, "vm.info", vm)["virtualMachines"][0]["runtime"]["powerState"] == "poweredOff"
    assert not lab.node_alive(standby)
    assert EventKind.VM_RESTARTED not in {e.kind for e in cluster.ha_events(since_wall, cluster.primary_node())}
    person = registry.build(spec, bound.topology)  # the host's BMC: its revert is "power on"
    threading.Timer(1.0, person.revert).start()
    fault.reconnect_wait_s = 60  # type: ignore[attr-defined]
    fault.revert()  # returns once the host answers again
    assert fault.check() is FaultState.CLEARED
    session = session_for(topology)
    task = session.call("powering the VM on", lambda: session.find("VirtualMachine", vm).PowerOnVM_Task())
    session.wait_task(task, f"{vm} to power on", 30)
    _until(lambda: lab.node_alive(standby), 30)
    cluster.wait_healthy(120)
    assert _govc_host_state(bound, host) == "connected"


def test_disk_group_fault_over_esxi_ssh_pauses_io_without_failover_and_resync_writes(bound: Bound) -> None:
    lab = bound.lab
    lab.wait_healthy(60)
    primary = lab.primary()
    host = bound.topology.host("esx-a1")
    assert host.ssh is not None and host.disk_groups[0].cache
    index, endpoint = endpoint_named(bound.topology, host.ssh)
    shell = SshShell(endpoint, f"management.ssh[{index}]")
    commands = vsan_settings(bound.topology).disk_faults
    cache = host.disk_groups[0].cache
    try:
        shell.check(commands.permanent.replace("@DEVICE@", cache))
        disks = {d["device"]: d["state"] for d in bound.state()["disks"] if d["host"] == "esx-a1"}
        assert disks[cache] == "permanent"
        _until(lambda: any(h.startswith("io-pause") for h in bound.hooks()), 15)
        _until(lambda: lab.io_load_running("site-a") or lab.io_load_running("site-b"), 15)
        time.sleep(5)  # past the monitor's detection time
        assert lab.primary() == primary and lab.healthy()
    finally:
        shell.check(commands.clear.replace("@DEVICE@", cache))
        shell.close()
