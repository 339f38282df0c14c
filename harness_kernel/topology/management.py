"""The management plane a topology names: vCenter and vSAN's settings, and the endpoints (Redfish, WinRM, SSH).

The keys of `management:` in a topology file; a plug-in platform's own section is validated by
its platform (`management.platforms.<name>`).
"""

from __future__ import annotations

import re
from types import MappingProxyType
from typing import Annotated, Final, Literal

from pydantic import AfterValidator, Field, JsonValue, ValidationInfo, field_validator, model_validator

from harness_kernel.topology.credentials import CredentialRef, SecretRef
from harness_kernel.topology.values import (
    Address,
    CaFile,
    Display,
    HostKey,
    Name,
    Port,
    StrictModel,
    Username,
    from_document,
    is_loopback,
    matching,
    shown,
)


class TlsPolicy(StrictModel):
    verify: bool = Field(default=True, strict=True)
    ca_file: CaFile | None = None


class VCenter(StrictModel):
    address: Address
    port: Port = 443
    credential: CredentialRef
    tls: TlsPolicy = TlsPolicy()
    datacenter: Display | None = None
    cluster: Display
    allow_host_shutdown: bool = Field(
        default=False, strict=True,
        description="let host-power-off fall back to ShutdownHost_Task on a host without a BMC: graceful "
                    "(HA may not restart its VMs) and nothing can power the host on again, so the revert "
                    "waits for someone to do it; off unless you accept that")


NEVER_BLOCKING_HEALTH_GROUPS = frozenset({"hcl", "cloudhealth"})
HealthGroupId = Annotated[str, AfterValidator(matching(re.compile(r"^com\.vmware\.vsan\.health\.test\.[a-z0-9_.]{1,64}$"),
                                                        "a vSAN health group id such as com.vmware.vsan.health.test.network"))]
VsanApiVersion = Annotated[str, AfterValidator(matching(re.compile(r"^vsan\.version\.version[0-9]+$"),
                                                         "a vSAN API version such as vsan.version.version20"))]


DISK_FAULT_SCRIPT = re.compile(r"/usr/lib/vmware/vsan/bin/[A-Za-z][A-Za-z0-9_]{0,63}\.pyc?")
"""The disk fault injection script lives in VMware's vSAN directory on the host; nothing else runs."""
DISK_FAULT_FLAGS: Final = MappingProxyType({"-p": None, "-t": None, "-u": None, "-c": None,
                                            "-r": "@SECONDS@", "-d": "@DEVICE@"})
"""The script's flags the harness uses, each with the placeholder it takes (None: none). Which flags a
host's script has is checked on the host (`-h`); a line may use these and no others."""
MODE_FLAGS: Final = MappingProxyType({"permanent": "-p", "transient": "-t", "unplug": "-u", "clear": "-c"})


class DiskFaultCommands(StrictModel):
    """The ESXi command lines of the vSAN disk fault injection script (@DEVICE@, @SECONDS@ filled in).

    Path and flags are as VMware documents them for vSAN OSA but are not confirmed on every
    release: check them on one host (`python <script> -h`) and override here if they differ.
    An override is the interpreter, the script under /usr/lib/vmware/vsan/bin and flags of the
    declared set with their placeholders: it runs as root in the ESXi shell, so it can name no
    other program, no environment prefix and no argument of its own.
    """

    permanent: str = "python /usr/lib/vmware/vsan/bin/vsanDiskFaultInjection.pyc -p -d @DEVICE@"
    transient: str = "python /usr/lib/vmware/vsan/bin/vsanDiskFaultInjection.pyc -t -r @SECONDS@ -d @DEVICE@"
    unplug: str = "python /usr/lib/vmware/vsan/bin/vsanDiskFaultInjection.pyc -u -d @DEVICE@"
    clear: str = "python /usr/lib/vmware/vsan/bin/vsanDiskFaultInjection.pyc -c -d @DEVICE@"

    @field_validator("permanent", "transient", "unplug", "clear")
    @classmethod
    def _the_script_and_its_flags(cls, command: str, info: ValidationInfo) -> str:
        words = command.split(" ")
        if len(words) < 2 or words[0] not in ("python", "python3") or not DISK_FAULT_SCRIPT.fullmatch(words[1]):
            raise ValueError(f"{shown(command)}: 'python /usr/lib/vmware/vsan/bin/SCRIPT.pyc' and its flags, nothing else")
        seen: list[str] = []
        rest = iter(words[2:])
        for flag in rest:
            if flag not in DISK_FAULT_FLAGS or flag in seen:
                raise ValueError(f"{shown(command)}: {shown(flag)} is not one of the script's flags "
                                 f"({' '.join(DISK_FAULT_FLAGS)}), once each")
            seen.append(flag)
            placeholder = DISK_FAULT_FLAGS[flag]
            if placeholder is not None and next(rest, None) != placeholder:
                raise ValueError(f"{shown(command)}: {flag} takes {placeholder}")
        mode = MODE_FLAGS[str(info.field_name)]
        if "-d" not in seen or mode not in seen or len(set(MODE_FLAGS.values()) & set(seen)) != 1:
            raise ValueError(f"{shown(command)}: the {info.field_name} line gives {mode} (and no other mode) "
                             "and -d @DEVICE@")
        return command


class VsanSettings(StrictModel):
    api_version: VsanApiVersion | None = Field(
        default=None,
        description="vSAN management API version passed to /vsanHealth; unset: the newest one vCenter offers "
                    "(/sdk/vsanServiceVersions.xml) that this pyVmomi speaks. Set it only to override that")
    disk_faults: DiskFaultCommands = DiskFaultCommands()
    preflight_health_groups: tuple[HealthGroupId, ...] = Field(
        default=("com.vmware.vsan.health.test.network", "com.vmware.vsan.health.test.cluster"),
        description="health groups of the cached summary a red test of which refuses a run (objects and resync "
                    "are judged live; hardware-compatibility and online checks never block)")
    @field_validator("preflight_health_groups")
    @classmethod
    def _never_hardware_or_online(cls, groups: tuple[str, ...]) -> tuple[str, ...]:
        never = [g for g in groups if g.rsplit(".", 1)[-1] in NEVER_BLOCKING_HEALTH_GROUPS]
        if never:
            raise ValueError(f"{', '.join(never)}: hardware-compatibility and online health checks never refuse a "
                             "run (they are often red on healthy clusters)")
        return groups

    health_cache_warn_s: int = Field(
        default=6 * 3600, ge=60, le=7 * 86400, strict=True,
        description="warn when the cached health summary is older than this (seconds)")


class RedfishEndpoint(StrictModel):
    name: Name
    address: Address
    port: Port = 443
    system_id: Name | None = Field(default=None, description="discovered from /redfish/v1/Systems if absent")
    credential: CredentialRef
    tls: TlsPolicy = TlsPolicy()


class WinRmEndpoint(StrictModel):
    name: Name
    address: Address
    port: Port = 5986
    scheme: Literal["https", "http"] = Field(
        default="https", description="http only for a listener on this machine (a tunnel): the transport "
                                     "refuses plain http to any other address")
    transport: Literal["ntlm", "kerberos", "credssp", "basic"] = "ntlm"
    credential: CredentialRef
    tls: TlsPolicy = TlsPolicy()

    @model_validator(mode="after")
    def _no_readable_password(self) -> WinRmEndpoint:
        if self.scheme == "http" and self.transport == "basic" and not is_loopback(self.address):
            raise ValueError("scheme http with transport basic sends the password readable: use https, or "
                             "http only to a listener on this machine (127.0.0.1)")
        return self


class SshEndpoint(StrictModel):
    name: Name
    address: Address
    port: Port = 22
    username: Username
    key_file: SecretRef | None = Field(default=None, description="where the private key path lives")
    password: SecretRef | None = None
    host_key: HostKey | None = Field(default=None, description="'<type> <base64>' pinned host key")

    @model_validator(mode="after")
    def _a_way_to_log_in(self, info: ValidationInfo) -> SshEndpoint:
        """A file's endpoint names how to log in (the embedded lab's router is a namespace: no login)."""
        if self.key_file is None and self.password is None and from_document(info):
            raise ValueError("give key_file or password: without either the login cannot succeed")
        return self


class Management(StrictModel):
    vcenter: VCenter | None = None
    vsan: VsanSettings = VsanSettings()
    redfish: list[RedfishEndpoint] = []
    winrm: list[WinRmEndpoint] = []
    ssh: list[SshEndpoint] = []
    platforms: dict[Name, dict[str, JsonValue]] = Field(
        default_factory=dict, description="platform name -> its section, for platforms from plug-ins: each is "
                                          "validated by its platform's own model when the topology is used")

    def named(self) -> list[tuple[str, RedfishEndpoint | WinRmEndpoint | SshEndpoint]]:
        """(field path, endpoint) of every named endpoint: `management.ssh[0]`, ..."""
        found: list[tuple[str, RedfishEndpoint | WinRmEndpoint | SshEndpoint]] = []
        found += [(f"management.redfish[{i}]", e) for i, e in enumerate(self.redfish)]
        found += [(f"management.winrm[{i}]", e) for i, e in enumerate(self.winrm)]
        found += [(f"management.ssh[{i}]", e) for i, e in enumerate(self.ssh)]
        return found

    def addresses(self) -> list[tuple[str, str]]:
        """(field path, address) of every endpoint the harness reaches the cluster through."""
        found = [("management.vcenter.address", self.vcenter.address)] if self.vcenter else []
        return found + [(f"{path}.address", e.address) for path, e in self.named()]
