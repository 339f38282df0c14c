"""A full PostgreSQL backup under load: `pg_basebackup` from the primary, optionally rate-limited.

The backup is an operation with an end, not a failure: inject starts it, the suite measures it
until it finishes, revert stops it if it still runs and removes what it wrote. Everything it
writes is named after the fault's instance (`harness-backup-<instance>` and its `.log`) inside
the destination, so a revert, or `recover` after a crash, finds exactly those and nothing else.

Bounded in time without the harness: the tool runs under coreutils `timeout` (`params.timeout_s`),
so a backup outlives a crashed harness by that bound at most. A fast checkpoint (`-c fast`)
starts it at once: the default spread checkpoint would delay the copy by minutes and measure
the checkpoint's pacing instead of the backup. WAL is streamed (`-X stream`), as a consistent
backup needs. The password, if any, reaches the tool in its environment, never its arguments.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from faults.backends.toolrun import ToolRun
from faults.base import FaultPlan, FaultSpec, FaultState, OperationProgress
from faults.kinds import BackupParams, Params
from harness_kernel import procs
from harness_kernel.errors import ConfigError, ControlPlaneError
from harness_kernel.paths import DEBIAN_PG_BIN
from harness_kernel.topology.credentials import resolve_secret
from harness_kernel.topology.models import Database, Topology
from harness_kernel.topology.targets import Target

BACKEND = "pg_basebackup"
STOP_GRACE_S = 10.0
START_TIMEOUT_S = 10.0
# pg_basebackup -P: "123456/234567 kB (52%), 0/1 tablespace" (carriage returns between updates)
PROGRESS = re.compile(r"(\d+)/(\d+) kB \(\d+%\)")


def pg_basebackup() -> str:
    return shutil.which("pg_basebackup") or str(DEBIAN_PG_BIN / "pg_basebackup")


def _lab_area_of_an_older_snapshot(topology: Topology) -> str | None:
    """A journal written before `backup_area` existed holds the lab's state directory instead: the backup went there."""
    return f"{topology.lab.state_dir}/backups" if topology.lab is not None and topology.lab.state_dir else None


def directory_for(destination: Path, instance: str) -> Path:
    """Where the backup of fault instance `instance` is written (what a restore of it reads)."""
    return destination / f"harness-backup-{instance}"


@dataclass
class PgBaseBackup:
    spec: FaultSpec
    database: Database
    field_path: str  # "databases[0]", for errors about its settings
    destination: Path
    max_rate: str | None
    timeout_s: float
    _run: ToolRun = field(default_factory=ToolRun, init=False, repr=False)

    @classmethod
    def from_spec(cls, spec: FaultSpec, params: Params, target: Target, topology: Topology) -> PgBaseBackup:
        assert isinstance(params, BackupParams)
        index, database = next((i, d) for i, d in enumerate(topology.databases) if d.name == target.name)
        if params.destination is not None:
            destination = Path(params.destination)
            if not destination.is_absolute():
                raise ConfigError(f"backup: params.destination: {params.destination!r} must be an absolute directory")
        else:
            area = database.backup_area or _lab_area_of_an_older_snapshot(topology)
            if area is None:
                raise ConfigError(f"backup: params.destination: required, or databases[{index}].backup_area (a "
                                  f"directory on this machine with room for a full copy of {database.name})")
            destination = Path(area)
        return cls(spec, database, f"databases[{index}]", destination, params.max_rate, params.timeout_s)

    # -- what it writes --------------------------------------------------------------
    @property
    def planned_output(self) -> str:
        return str(self.directory)

    @property
    def directory(self) -> Path:
        return directory_for(self.destination, self.spec.instance)

    @property
    def log_file(self) -> Path:
        return self.destination / f"harness-backup-{self.spec.instance}.log"

    def conninfo(self) -> str:
        hosts = self.database.endpoint
        user = self.database.credential.username if self.database.credential else "postgres"
        return (f"host={hosts} port={self.database.port} user={user} target_session_attrs=read-write "
                f"connect_timeout=5 application_name=resilience-harness-backup")

    def argv(self) -> list[str]:
        rate = [f"--max-rate={self.max_rate}"] if self.max_rate else []
        return ["timeout", "--kill-after=5", f"{self.timeout_s:g}", pg_basebackup(), "-d", self.conninfo(),
                "-D", str(self.directory), "-X", "stream", "-c", "fast", "-P", "-v", *rate]

    def _environment(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        if self.database.credential is not None:
            env["PGPASSWORD"] = resolve_secret(self.database.credential.password,
                                               f"{self.field_path}.credential.password").reveal()
        return env

    # -- the fault contract ------------------------------------------------------------
    def plan(self) -> FaultPlan:
        rate = f", at most {self.max_rate}B/s" if self.max_rate else ", unthrottled"
        credentials = (f"{self.database.name} credential (environment)",) if self.database.credential else ()
        return FaultPlan(self.spec, BACKEND, (
            f"pg_basebackup of {self.database.name} from its primary ({self.database.endpoint}) into "
            f"{self.directory}{rate}, fast checkpoint, WAL streamed, bounded to {self.timeout_s:g} s",),
            (f"stop that pg_basebackup if it still runs; remove {self.directory} and {self.log_file}",), credentials)

    def preflight(self) -> None:
        if not Path(pg_basebackup()).exists() and shutil.which("pg_basebackup") is None:
            raise ConfigError("backup: pg_basebackup is not installed on this machine (postgresql-client)")
        if self.directory.exists():
            raise ControlPlaneError(f"backup: {self.directory} exists already; nothing is written over")
        existing = next(p for p in (self.destination, *self.destination.parents) if p.exists())  # read-only:
        if not os.access(existing, os.W_OK):  # the inject creates the destination, a preflight never writes
            raise ConfigError(f"backup: params.destination: {self.destination} is not writable ({existing} is not)")

    def inject(self) -> None:
        self.destination.mkdir(parents=True, exist_ok=True)
        self._run.start(self.argv(), self.log_file, f"backup-{self.spec.instance}", self._environment())
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self.directory.exists() and self._run.running(self._pids) and time.monotonic() < deadline:
            time.sleep(0.05)

    def _pids(self) -> list[int]:
        """Our tool's processes: those whose arguments name our directory, whoever started them (recover)."""
        return procs.naming(self.directory, ("pg_basebackup", "timeout"))

    def running(self) -> bool:
        return self._run.running(self._pids)

    def check(self) -> FaultState:
        return FaultState.IN_EFFECT if self.running() or self.directory.exists() or self.log_file.exists() \
            else FaultState.CLEARED

    def progress(self) -> OperationProgress:
        running = self.running()
        done_kb, total_kb = _last_progress(self.log_file)
        error = None
        if not running and self._run.returncode not in (None, 0):
            error = f"pg_basebackup exit {self._run.returncode}: {_tail(self.log_file)}"
        return OperationProgress(running=running, bytes_done=done_kb * 1024 if done_kb is not None else None,
                                 bytes_total=total_kb * 1024 if total_kb is not None else None,
                                 started_wall=self._run.started_wall,
                                 finished_wall=None if running else self._run.finished_wall,
                                 error=error, output=str(self.directory))

    def revert(self) -> None:
        self._run.stop(self._pids, STOP_GRACE_S, "backup: pg_basebackup")
        shutil.rmtree(self.directory, ignore_errors=True)
        self.log_file.unlink(missing_ok=True)
        if self.directory.exists():
            raise ControlPlaneError(f"backup: {self.directory} could not be removed")


def _last_progress(log: Path) -> tuple[int | None, int | None]:
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return None, None
    found = PROGRESS.findall(text)
    return (int(found[-1][0]), int(found[-1][1])) if found else (None, None)


def _tail(log: Path) -> str:
    try:
        lines = [line for line in re.split(r"[\r\n]+", log.read_text(errors="replace")) if line.strip()]
    except OSError:
        return "(no log)"
    return " / ".join(lines[-3:])[-600:]
