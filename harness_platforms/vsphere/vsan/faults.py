"""vSAN device faults: `DiskFailure` and `DiskGroupFailure` (the group's cache device).

They run the command lines of `management.vsan.disk_faults` over the host's ESXi SSH endpoint
(`sites[].hosts[].ssh`, host key pinned). Their default is VMware's vsanDiskFaultInjection script,
whose path and flags are NOT confirmed on a real host: check `python <script> -h` on one host and
override the lines in the topology if they differ. `check()` is the device as vSAN reports it
(QueryPhysicalVsanDisks on the host, `harness_platforms.vsphere.vsan.probes`): gone (unplugged) or with
non-zero health flags is in effect.
"""

from __future__ import annotations

import logging
import re
import shlex
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from faults.contract import (
    Assumption,
    AssumptionProbe,
    ConfigError,
    ControlPlaneError,
    DiskFailureParams,
    DiskGroup,
    FaultPlan,
    FaultSpec,
    FaultState,
    HarnessError,
    Host,
    Params,
    Probed,
    ProbeResult,
    Shell,
    Target,
    Topology,
    UnknownState,
    ssh_shell,
)
from harness_platforms.vsphere.assumptions import DISK_FAULT_SCRIPT, PERMANENT_CLEAR, PHYSICAL_DISK_DEVNAME, RESYNC_TYPE_UNSET
from harness_platforms.vsphere.probes import Discovery, verify
from harness_platforms.vsphere.vsan.probes import VsanCluster, VsanQuiet
from harness_platforms.vsphere.vsan.section import settings

log = logging.getLogger(__name__)

BACKEND = "vsan"
COMMAND_S = 120.0
PERMANENT_CLEAR_S = 20.0  # how long a device may take to show healthy after a permanent error's clear

# -- faults -------------------------------------------------------------------------------------
_MODES = {"permanent": "permanent", "transient": "transient", "hot-unplug": "unplug"}


def fill(command: str, device: str, seconds: int | None = None) -> str:
    """A disk fault command line with @DEVICE@ and @SECONDS@ filled in (each value shell-quoted)."""
    line = command.replace("@DEVICE@", shlex.quote(device))
    if "@SECONDS@" in line:
        if seconds is None:
            raise ConfigError(f"{command!r}: @SECONDS@ has no value for this fault")
        line = line.replace("@SECONDS@", str(int(seconds)))
    return line


def _host_path(topology: Topology, name: str) -> str:
    for si, site in enumerate(topology.sites):
        for hi, host in enumerate(site.hosts):
            if host.name == name:
                return f"sites[{si}].hosts[{hi}]"
    raise ConfigError(f"no host named {name!r} in topology {topology.name!r}")


@dataclass
class _DeviceFault:
    """A fault on one vSAN device, injected by the configured command over the host's ESXi SSH."""

    spec: FaultSpec
    topology: Topology
    host: Host
    device: str
    inject_line: str
    clear_line: str
    mode_field: str
    vsan: VsanCluster
    shell: Shell | None = None
    refusal: str | None = None
    evidence: dict[str, Any] = field(default_factory=dict)
    _unknown: UnknownState = field(default_factory=UnknownState, init=False, repr=False)

    @property
    def host_path(self) -> str:
        return _host_path(self.topology, self.host.name)

    # -- what the backend assumes, and the read-only checks of it -------------------------------
    def assumptions(self) -> Sequence[tuple[Assumption, AssumptionProbe]]:
        return [(DISK_FAULT_SCRIPT, self._script_takes_its_flags), (RESYNC_TYPE_UNSET, self.vsan.probe_resync_type_unset),
                (PHYSICAL_DISK_DEVNAME, self._devices_named)]

    def _devices_named(self) -> Probed:
        """Every device QueryPhysicalVsanDisks lists on the host has a devName, this fault's device among them."""
        try:
            disks = self.vsan.physical_disks(self.host.name)
        except HarnessError as exc:
            return Probed(ProbeResult.UNKNOWN, f"QueryPhysicalVsanDisks on {self.host.name} not read: {exc}")
        unnamed = sorted(uuid for uuid, disk in disks.items() if not disk.device)
        named = sorted(disk.device for disk in disks.values() if disk.device)
        if not disks or unnamed or self.device not in named:
            return Probed(ProbeResult.FAIL, f"QueryPhysicalVsanDisks on {self.host.name}: {len(disks)} devices, "
                                            f"{len(unnamed)} without devName ({', '.join(unnamed[:3]) or 'none'}); "
                                            f"{self.device} {'listed' if self.device in named else 'not listed'}")
        return Probed(ProbeResult.PASS, f"QueryPhysicalVsanDisks on {self.host.name}: devName on all {len(disks)} devices")

    def _script_takes_its_flags(self) -> Probed:
        """`python SCRIPT -h` on the host lists every flag the configured lines use (a read-only call)."""
        lines = (self.inject_line, self.clear_line)
        interpreter, script = self.inject_line.split(" ")[:2]
        flags = sorted({word for line in lines for word in line.split(" ")[2:] if word.startswith("-")})
        try:
            done = self._ssh().run(f"{interpreter} {script} -h")
        except (ControlPlaneError, ConfigError) as exc:
            return Probed(ProbeResult.UNKNOWN, f"{script} -h not run: {exc}")
        listed = done.stdout + done.stderr
        missing = [flag for flag in flags if not re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", listed)]
        if done.status != 0 or missing:
            return Probed(ProbeResult.FAIL, f"{script} -h exited {done.status}; flags not listed: "
                                            f"{' '.join(missing) or 'none'}; it said: {listed.strip()[-200:]!r}")
        return Probed(ProbeResult.PASS, f"{script} -h lists {' '.join(flags)}")

    def _ssh(self) -> Shell:
        if self.shell is None:
            if self.host.ssh is None:
                raise ConfigError(f"{self.spec.kind} on {self.spec.target}: {self.host_path}.ssh names no ESXi SSH "
                                  "endpoint; the disk fault script runs on the host")
            self.shell = ssh_shell(self.topology, self.host.ssh, command_timeout_s=COMMAND_S)  # paramiko only now
        return self.shell

    def _via(self) -> str:
        if self.shell is not None:
            return f"{self.shell.wire} {self.shell.where}"
        return f"ssh {self.host.ssh}" if self.host.ssh else f"ssh (none: {self.host_path}.ssh is not set)"

    def plan(self) -> FaultPlan:
        note = " (script path and flags unconfirmed on real hosts: management.vsan.disk_faults)"
        credentials: tuple[str, ...] = ("management.vcenter.credential",)
        if self.host.ssh:
            for index, endpoint in enumerate(self.topology.management.ssh):
                if endpoint.name == self.host.ssh:
                    credentials += tuple(f"management.ssh[{index}].{k}" for k in ("key_file", "password")
                                         if getattr(endpoint, k) is not None)
        via = f"{BACKEND} {self.vsan.session.where}, host {self.host.name} over {self._via()}"
        if self.refusal:
            return FaultPlan(self.spec, via, (f"refused: {self.refusal}",), ("nothing: not injected",), credentials)
        revert: tuple[str, ...] = (f"{self.clear_line}{note}",)
        if self.permanent:
            revert += (f"warning: {self._remedy()}",)
        return FaultPlan(self.spec, via, (f"{self.inject_line}{note}",), revert, credentials)

    @property
    def permanent(self) -> bool:
        return self.mode_field == "permanent"

    def _remedy(self) -> str:
        return (f"whether the clear restores {self.device} after a permanent error is not documented "
                f"({PERMANENT_CLEAR.id}); if vSAN still shows it failed, the revert fails and the device must be "
                f"removed from its disk group on {self.host.name} and claimed again (vSphere Client: cluster > "
                "Configure > vSAN > Disk Management)")

    def _refuse(self) -> None:
        if self.refusal:
            raise ConfigError(self.refusal)

    def preflight(self) -> None:
        """The cluster matches the topology, vSAN is quiet, the device is there, the host's shell answers."""
        self._refuse()
        shell = self._ssh()  # a missing endpoint is a configuration error, said before contacting anything
        seen = verify(self.topology, self.vsan.session)
        self._device_known(seen)
        self.evidence["vsan_health"] = VsanQuiet(self.vsan).preflight().describe()
        self.evidence["repair_timer_min"] = self.vsan.repair_timer_min()
        shell.check("true")

    def _device_known(self, seen: Discovery) -> None:
        if self.host.name in seen.hosts and seen.hosts[self.host.name].esa:
            raise ConfigError(_esa_refusal(self.spec, self.host.name))
        groups = seen.hosts[self.host.name].disk_groups if self.host.name in seen.hosts else ()
        if not any(self.device == g.cache or self.device in g.capacity for g in groups):
            raise ConfigError(f"{self.spec.kind} on {self.spec.target}: vCenter shows no vSAN device {self.device} on "
                              f"{self.host.name}")

    def _run(self, line: str, step: str) -> None:
        done = self._ssh().run(line, timeout_s=COMMAND_S)
        if done.status != 0:
            detail = (done.stderr or done.stdout).strip()[-400:]
            setting = self.mode_field if step == "inject" else "clear"
            raise ControlPlaneError(f"{self.spec.kind} on {self.spec.target}: {step} `{line}` failed on {self.host.name} "
                                    f"({done.status}): {detail}. The script's path and flags are unconfirmed on real hosts: "
                                    f"check them there and set management.vsan.disk_faults.{setting}")

    def inject(self) -> None:
        self._refuse()
        self._run(self.inject_line, "inject")

    def check(self) -> FaultState:
        try:
            disks = self.vsan.physical_disks(self.host.name)
        except HarnessError as exc:
            return self._unknown_because(str(exc))
        mine = [d for d in disks.values() if d.device == self.device]
        if not mine:
            return FaultState.IN_EFFECT  # vSAN no longer lists it: absent (unplugged) or failed out
        return FaultState.IN_EFFECT if any(d.health_flags for d in mine) else FaultState.CLEARED

    def _unknown_because(self, reason: str) -> FaultState:
        return self._unknown.because(self.spec, reason)

    def revert(self) -> None:
        """Send the clear command unless vSAN positively reports the device healthy (then there is nothing to clear)."""
        if self.refusal or self.check() is FaultState.CLEARED:
            return  # refused: never injected
        self._run(self.clear_line, "revert")
        if self.permanent:
            self._healthy_within(PERMANENT_CLEAR_S)

    def _healthy_within(self, seconds: float) -> None:
        """After a permanent error's clear: vSAN shows the device healthy, or the revert fails with the remedy."""
        deadline = time.monotonic() + seconds
        while self.check() is not FaultState.CLEARED:
            if time.monotonic() >= deadline:
                raise ControlPlaneError(f"{self.spec.kind} on {self.spec.target}: after the clear, vSAN still shows "
                                        f"{self.device} failed or absent {seconds:g} s on: {self._remedy()}")
            time.sleep(1.0)


def _esa_refusal(spec: FaultSpec, host: str) -> str:
    return (f"{spec.kind} on {spec.target}: {host} is a vSAN ESA host (a storage pool, no disk groups): disk faults "
            "are supported on OSA disk groups only, where the fault script and the device health that checks it are "
            "known to apply; nothing is injected on ESA")


def _locate(topology: Topology, host_name: str, device: str) -> tuple[Host, DiskGroup, int]:
    host = topology.host(host_name)
    for index, group in enumerate(host.disk_groups):
        if device == group.cache or device in group.capacity:
            return host, group, index
    raise ConfigError(f"{host_name}: no disk group holds {device} ({_host_path(topology, host_name)}.disk_groups)")


@dataclass
class DiskFailure(_DeviceFault):
    """One vSAN device fails: permanent error (rebuilt at once), transient error, or hot unplug (waits for the repair timer)."""

    @classmethod
    def from_spec(cls, spec: FaultSpec, params: Params, target: Target, topology: Topology) -> DiskFailure:
        assert isinstance(params, DiskFailureParams)
        host_name, device = target.parts
        host, group, index = _locate(topology, host_name, device)
        role = "cache" if device == group.cache else "capacity"
        refusal = None
        if group.cache is None:
            refusal = _esa_refusal(spec, host_name)
        elif role != params.device:  # refused at preflight and inject; the plan says why (dry-run shows it)
            refusal = (f"disk-failure on {spec.target}: params.device is {params.device!r} but {device} is the {role} "
                       f"device of disk group {index}" + (" (a cache device failure takes the whole group: use "
                                                          "disk-group-failure)" if role == "cache" else ""))
        mode = _MODES[params.mode]
        commands = settings(topology).disk_faults
        return cls(spec, topology, host, device,
                   inject_line=fill(getattr(commands, mode), device, params.transient_s),
                   clear_line=fill(commands.clear, device, params.transient_s), mode_field=mode,
                   vsan=VsanCluster(topology), refusal=refusal)


@dataclass
class DiskGroupFailure(_DeviceFault):
    """A disk group fails through its cache device (every component of the group degrades). ESA has no cache: refused."""

    group_index: int = 0

    @classmethod
    def from_spec(cls, spec: FaultSpec, params: Params, target: Target, topology: Topology) -> DiskGroupFailure:
        host_name, index_text = target.parts
        host = topology.host(host_name)
        where = f"{_host_path(topology, host_name)}.disk_groups"
        if not index_text.isdigit() or int(index_text) >= len(host.disk_groups):
            raise ConfigError(f"disk-group-failure on {spec.target}: {where} has no group {index_text}")
        group = host.disk_groups[int(index_text)]
        if group.cache is None:
            raise ConfigError(f"disk-group-failure on {spec.target}: the group has no cache device ({where}[{index_text}]"
                              ".cache): vSAN ESA has no cache tier, so there is no device whose failure takes the group; "
                              "fail a capacity device with disk-failure instead")
        commands = settings(topology).disk_faults
        return cls(spec, topology, host, group.cache, inject_line=fill(commands.permanent, group.cache),
                   clear_line=fill(commands.clear, group.cache), mode_field="permanent", vsan=VsanCluster(topology),
                   group_index=int(index_text))

    def _device_known(self, seen: Discovery) -> None:
        host = seen.hosts.get(self.host.name)
        if host is not None and (host.esa or any(g.cache is None for g in host.disk_groups)):
            raise ConfigError(f"disk-group-failure on {self.spec.target}: vCenter shows {self.host.name}'s disk groups "
                              "without a cache device (vSAN ESA): there is no device whose failure takes the group")
        super()._device_known(seen)
