"""The vsan platform's section, `management.vsan`: the disk fault command lines, the API version, the health gate.

Its key is the one topologies have always used (the YAML does not change); the topology keeps it as
plain JSON and this model validates it when a run reads the topology (`faults.sections.check`) and
whenever the platform's code reads it (`settings`), with errors that name `management.vsan.<field>`.
"""

from __future__ import annotations

import re
from types import MappingProxyType
from typing import Annotated, Final

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from faults.contract import Topology, matching, section, shown

KEY = "vsan"  # management.vsan


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


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


class DiskFaultCommands(_Model):
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


class VsanSettings(_Model):
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


def settings(topology: Topology) -> VsanSettings:
    """`management.vsan` of `topology`, validated (its defaults where the topology sets none)."""
    return section(topology, KEY, VsanSettings, at=KEY)
