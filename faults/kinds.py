"""Every fault kind in one table: what it targets, the parameters it takes, whether it is planned.

A spec's params are validated here once, with field paths in the error, before any backend
is built; backends receive the typed model, never the raw mapping. A *planned* kind is an
operation the platform performs on purpose (a role switchover, a migration): its revert has
nothing to undo but waiting for health, and its outage starts at inject.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from harness_kernel.errors import ConfigError
from harness_kernel.text import one_line
from harness_kernel.topology.loader import format_validation_error
from harness_kernel.topology.targets import TargetKind


class Params(BaseModel):
    """Base of every params model: unknown keys are an error, values are plain JSON (the journal stores them)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


class NoParams(Params):
    pass


ANY_QUOTE = frozenset("'\"`\u2018\u2019\u201a\u201b\u201c\u201d\u201e\u201f")

Direction = Literal["both", "forward", "reverse"]


class PartitionParams(Params):
    direction: Direction = Field(default="both", description="'forward' is the link's first site to its second")
    sync_timeout_s: float | None = Field(
        default=None, gt=0, description="lab only: drop a standby silent this long from the write quorum "
                                        "(an AG session timeout's analog)")


class IsolationParams(Params):
    direction: Direction = "both"


class LatencyParams(Params):
    rtt_ms: float = Field(ge=0, le=10_000, description="added round-trip time, split half each way")
    jitter_ms: float = Field(default=0.0, ge=0, le=10_000)
    loss_pct: float = Field(default=0.0, ge=0, le=100)
    rate_mbit: float | None = Field(default=None, gt=0, le=400_000)


class StorageLossParams(Params):
    max_rate: str = Field(default="1M", pattern=r"^[1-9][0-9]{0,6}[kM]?$",
                          description="rebuild throttle, as pg_basebackup --max-rate (32k..1024M)")


class DiskFailureParams(Params):
    device: Literal["capacity", "cache"] = "capacity"
    mode: Literal["permanent", "transient", "hot-unplug"] = "permanent"
    transient_s: int = Field(default=30, ge=1, le=3600, description="how long a transient error lasts")


class MaintenanceParams(Params):
    vsan_mode: Literal["ensureObjectAccessibility", "evacuateAllData", "noAction"] = Field(
        default="ensureObjectAccessibility", description="vSAN data evacuation while the host is in maintenance")
    timeout_s: float = Field(default=1800, gt=0, le=86_400, description="bound on entering maintenance")


class MigrationParams(Params):
    to_host: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$",
                                description="destination host; default: a host of another site")


class IopsLimitParams(Params):
    """vSAN's IOPS limit on one virtual disk of a node's VM, as a storage policy sets it (VSAN.iopsLimit: I/Os a
    second, each weighted by its size against 32 KB)."""

    iops_limit: int = Field(ge=1, le=2_147_483_647, strict=True,
                            description="the limit (VSAN.iopsLimit; 0, no limit, is not a fault)")
    disk: str = Field(default="Hard disk 1", min_length=1, max_length=80, pattern=r"^[A-Za-z0-9 ._()-]+$",
                      description="the virtual disk's label as vCenter shows it: the one holding the backup "
                                  "destination or the restore target")


class RoleMoveParams(Params):
    """Where the role goes and how. A forced AG failover (FORCE_FAILOVER_ALLOW_DATA_LOSS) can lose
    acknowledged commits, so it is never a default: the mode must say so in those words."""

    to_node: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$",
                                description="the node to move the role to; default: a synchronized node of another site")
    mode: Literal["planned", "forced-allow-data-loss"] = Field(
        default="planned", description="'forced-allow-data-loss': an AG's FORCE_FAILOVER_ALLOW_DATA_LOSS, which can "
                                       "lose acknowledged commits (only ever when asked for by this name)")


class BackupParams(Params):
    """A full backup under load. It is copy-only on SQL Server (the user's backup chain and differential
    base stay as they were); the files it writes are named after the fault's instance and removed on revert."""

    destination: str | None = Field(
        default=None, min_length=1, max_length=400,
        description="where the backup is written: a directory (PostgreSQL: on the harness machine; SQL Server: on "
                    "the server) or, for SQL Server, an https:// container URL without credentials or query "
                    "(a SAS token belongs in a SQL Server credential); default on the lab: its backup area")
    max_rate: str | None = Field(default=None, pattern=r"^[1-9][0-9]{0,6}[kM]?$",
                                 description="PostgreSQL: pg_basebackup --max-rate (32k..1024M); SQL Server's BACKUP "
                                             "has no rate limit of its own")
    timeout_s: float = Field(default=3600.0, gt=0, le=86_400, description="bound on the whole backup")

    @field_validator("destination")
    @classmethod
    def _plain_place(cls, destination: str | None) -> str | None:
        return plain_place(destination, "backup")


def plain_place(place: str | None, what: str) -> str | None:
    """A backup's place goes into T-SQL, a PowerShell script, the plan and the journal: no quote of any kind, no
    unprintable character, and no secret (a URL's user information or query string is one)."""
    if place is None:
        return None
    one_line(place)
    quotes = sorted(set(place) & ANY_QUOTE)
    if quotes:
        raise ValueError(f"quotes are refused in a {what} place: " + ", ".join(f"U+{ord(q):04X}" for q in quotes))
    if "://" in place:
        url = urlsplit(place)
        if url.scheme != "https" or not url.hostname:
            raise ValueError("a backup URL is https://ACCOUNT.blob.core.windows.net/CONTAINER")
        if "@" in url.netloc or url.query or url.fragment or "?" in place or "#" in place:
            raise ValueError("a backup URL names the container only: user information, a query string (SAS "
                             "token) or a fragment would be printed and journaled; refused")
    return place


class RestoreParams(Params):
    """A copy of the database restored beside it under load, from a backup (the DBA's test restore, or a copy for
    reporting): written under a name of the fault's instance, never over anything that exists; revert stops the
    restore and removes only that copy."""

    backup: str = Field(min_length=1, max_length=400,
                        description="the backup to restore: PostgreSQL: a base backup's directory on this machine; "
                                    "SQL Server: a backup file on the server, or its https:// URL")
    destination: str | None = Field(
        default=None, min_length=1, max_length=400,
        description="PostgreSQL: the directory the copy is restored into, on the harness machine (default: the "
                    "database's backup_area); SQL Server: the directory on the server its files are moved to")
    max_rate: str | None = Field(default=None, pattern=r"^[1-9][0-9]{0,6}[kM]?$",
                                 description="PostgreSQL: the copy's rate, as pg_basebackup --max-rate (32k..1024M); "
                                             "SQL Server's RESTORE has none (refused)")
    timeout_s: float = Field(default=3600.0, gt=0, le=86_400, description="bound on the whole restore")

    @field_validator("backup", "destination")
    @classmethod
    def _plain_place(cls, place: str | None) -> str | None:
        return plain_place(place, "restore")


@dataclass(frozen=True)
class FaultKind:
    name: str
    target: TargetKind
    params: type[Params]
    planned: bool
    summary: str

    def parse_params(self, raw: Mapping[str, Any]) -> Params:
        if not isinstance(raw, Mapping):
            raise ConfigError(f"{self.name}: params: expected a mapping, got {type(raw).__name__}")
        try:
            return self.params.model_validate(dict(raw))
        except ValidationError as exc:
            raise ConfigError(f"{self.name}: {format_validation_error(exc, root='params')}") from None


KINDS: dict[str, FaultKind] = {k.name: k for k in (
    FaultKind("host-crash", TargetKind.HOST, NoParams, False, "the host's database node dies at once"),
    FaultKind("host-hang", TargetKind.HOST, NoParams, False, "the host stops answering but keeps its state"),
    FaultKind("host-power-off", TargetKind.HOST, NoParams, False, "the host loses power (BMC), then is powered on"),
    FaultKind("site-failure", TargetKind.SITE, NoParams, False, "the site's nodes die and its links are cut"),
    FaultKind("site-power-off", TargetKind.SITE, NoParams, False, "every host of the site loses power"),
    FaultKind("site-isolation", TargetKind.SITE, IsolationParams, False, "the site is cut off from all others"),
    FaultKind("witness-isolation", TargetKind.WITNESS, IsolationParams, False, "the witness is cut off"),
    FaultKind("link-partition", TargetKind.LINK, PartitionParams, False, "an inter-site link drops traffic"),
    FaultKind("latency", TargetKind.LINK, LatencyParams, False, "an inter-site link gets added RTT"),
    FaultKind("role-switchover", TargetKind.DATABASE, NoParams, True, "planned move of the primary role"),
    FaultKind("role-move", TargetKind.DATABASE, RoleMoveParams, True, "planned move of the AG / FCI role"),
    FaultKind("storage-loss", TargetKind.NODE, StorageLossParams, False, "a replica's storage is lost and rebuilt"),
    FaultKind("replication-async", TargetKind.DATABASE, NoParams, False,
              "the standby leaves the write quorum: the primary acknowledges commits alone"),
    FaultKind("disk-failure", TargetKind.DISK, DiskFailureParams, False, "one vSAN device fails"),
    FaultKind("disk-group-failure", TargetKind.DISK_GROUP, NoParams, False, "a vSAN disk group's cache device fails"),
    FaultKind("host-maintenance", TargetKind.HOST, MaintenanceParams, True,
              "the host enters maintenance mode (vSAN evacuation as asked), then leaves it"),
    FaultKind("vm-migrate", TargetKind.NODE, MigrationParams, True,
              "the node's VM moves to another host by vMotion, then back"),
    FaultKind("disk-iops-limit", TargetKind.NODE, IopsLimitParams, True,
              "a vSAN IOPS limit on a virtual disk of the node's VM (a storage policy), then its own policy back"),
    FaultKind("backup", TargetKind.DATABASE, BackupParams, False,
              "a full backup of the database runs under load; revert stops it and removes its files"),
    FaultKind("restore", TargetKind.DATABASE, RestoreParams, False,
              "a copy of the database is restored beside it under load; revert stops it and removes the copy"),
    FaultKind("process-freeze", TargetKind.PROCESS, NoParams, False, "a local process tree is frozen (SIGSTOP)"),
)}


def fault_kind(name: str) -> FaultKind:
    try:
        return KINDS[name]
    except KeyError:
        raise ConfigError(f"unknown fault kind {name!r}; known: {', '.join(sorted(KINDS))}") from None
