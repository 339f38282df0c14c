"""A PostgreSQL restore under load: a base backup copied into a new data directory and started there.

What a DBA does beside production (a test restore of last night's backup, a copy for reporting):
the backup's files are copied (at most `params.max_rate`, as pg_basebackup limits a backup:
`faults.backends.ratecopy`) into `harness-restore-<instance>` in the destination, a PostgreSQL
of their own starts on them (crash recovery replays the backup's WAL to a consistent state), a
query proves the copy opens, and it stops. The copy listens on a unix socket in its own directory
only (no TCP), and is never written over anything: a directory that exists already is refused.

The whole restore is one process tree under coreutils `timeout` (`params.timeout_s`), so it
outlives a crashed harness by that bound at most; revert (and `recover`) stop what is left of it,
found by its directory in their arguments, and remove that directory alone. As root, the copy's
PostgreSQL runs as the `postgres` user (PostgreSQL refuses to run as root).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from faults.backends.toolrun import ToolRun
from faults.base import FaultPlan, FaultSpec, FaultState, OperationProgress
from faults.kinds import Params, RestoreParams
from harness_kernel import procs
from harness_kernel.errors import ConfigError, ControlPlaneError
from harness_kernel.paths import DEBIAN_PG_BIN
from harness_kernel.topology.models import Database, Topology
from harness_kernel.topology.targets import Target

BACKEND = "pg_ctl"
STOP_GRACE_S = 10.0
RUN_AS = "postgres"  # the server's user when the harness runs as root
PORT = 5432  # of the copy's unix socket, inside its own directory: no other server shares it
DONE = "restore: the copy answered"


def pg_tool(name: str) -> str:
    return str(DEBIAN_PG_BIN / name) if (DEBIAN_PG_BIN / name).exists() else shutil.which(name) or name


def size_of(path: Path) -> int:
    """Bytes of the regular files under `path` (0 when it is gone)."""
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += (Path(root) / name).lstat().st_size
            except OSError:
                continue
    return total


@dataclass
class PgRestore:
    spec: FaultSpec
    database: Database
    source: Path
    destination: Path
    max_rate: str | None
    timeout_s: float
    _run: ToolRun = field(default_factory=ToolRun, init=False, repr=False)
    _total: int | None = field(default=None, init=False)

    @classmethod
    def from_spec(cls, spec: FaultSpec, params: Params, target: Target, topology: Topology) -> PgRestore:
        assert isinstance(params, RestoreParams)
        index, database = next((i, d) for i, d in enumerate(topology.databases) if d.name == target.name)
        source = Path(params.backup)
        if not source.is_absolute():
            raise ConfigError(f"restore: params.backup: {params.backup!r} must be an absolute directory")
        if params.destination is not None:
            destination = Path(params.destination)
            if not destination.is_absolute():
                raise ConfigError(f"restore: params.destination: {params.destination!r} must be an absolute directory")
        elif database.backup_area is not None:
            destination = Path(database.backup_area)
        else:
            raise ConfigError(f"restore: params.destination: required, or databases[{index}].backup_area (a "
                              f"directory on this machine with room for a copy of {database.name})")
        return cls(spec, database, source, destination, params.max_rate, params.timeout_s)

    # -- what it writes --------------------------------------------------------------
    @property
    def directory(self) -> Path:
        return self.destination / f"harness-restore-{self.spec.instance}"

    @property
    def data(self) -> Path:
        return self.directory / "data"

    @property
    def log_file(self) -> Path:
        return self.directory / "restore.log"

    def script(self) -> str:
        """The restore as one shell script: copy, start, prove, stop; every step in the plan as it runs."""
        q = shlex.quote
        as_server = f"setpriv --reuid={RUN_AS} --regid={RUN_AS} --init-groups " if os.geteuid() == 0 else ""
        options = (f"-c listen_addresses='' -c unix_socket_directories={self.directory} -c port={PORT} "
                   "-c archive_mode=off -c synchronous_standby_names='' -c logging_collector=off")
        steps = [
            "set -e",
            f"{q(sys.executable)} -m faults.backends.ratecopy {q(str(self.source))} {q(str(self.data))}"
            + (f" {q(self.max_rate)}" if self.max_rate else ""),
            f"rm -f {q(str(self.data / 'postmaster.pid'))} {q(str(self.data / 'standby.signal'))}",
            *([f"chown -R {RUN_AS}:{RUN_AS} {q(str(self.directory))}"] if as_server else []),
            f"chmod 0700 {q(str(self.data))}",
            f"{as_server}{q(pg_tool('pg_ctl'))} -D {q(str(self.data))} -w -t {int(self.timeout_s)} "
            f"-l {q(str(self.directory / 'postgres.log'))} -o {q(options)} start",
            f"{as_server}{q(pg_tool('psql'))} -h {q(str(self.directory))} -p {PORT} -d {q(self.database.database)} "
            "-Atc 'select pg_is_in_recovery()'",
            f"{as_server}{q(pg_tool('pg_ctl'))} -D {q(str(self.data))} -m fast -w stop",
            f"echo {q(DONE)}",
        ]
        return "\n".join(steps)

    def argv(self) -> list[str]:
        return ["timeout", "--kill-after=5", f"{self.timeout_s:g}", "sh", "-c", self.script(), str(self.directory)]

    # -- the fault contract ------------------------------------------------------------
    def plan(self) -> FaultPlan:
        return FaultPlan(self.spec, BACKEND, (
            f"copy the base backup {self.source} into {self.data} (new; never over anything), "
            + (f"at most {self.max_rate}B/s" if self.max_rate else "unthrottled"),
            f"start a PostgreSQL on it (unix socket in {self.directory} only, no TCP), let crash recovery replay the "
            f"backup's WAL, query {self.database.database} on it, stop it",
            f"bounded to {self.timeout_s:g} s as one process tree"),
            (f"stop what runs of it (found by {self.directory} in its arguments); remove {self.directory}",))

    def preflight(self) -> None:
        """What can be known before the backup exists (a run takes it first): the tools, the destination, and that
        nothing is there already; the backup itself is checked when the restore starts."""
        for tool in ("pg_ctl", "psql"):
            if not Path(pg_tool(tool)).exists():
                raise ConfigError(f"restore: {tool} is not installed on this machine (postgresql)")
        if self.directory.exists():
            raise ControlPlaneError(f"restore: {self.directory} exists already; nothing is written over")
        existing = next(p for p in (self.destination, *self.destination.parents) if p.exists())
        if not os.access(existing, os.W_OK):
            raise ConfigError(f"restore: params.destination: {self.destination} is not writable ({existing} is not)")
        if os.geteuid() == 0 and subprocess.run(["setpriv", f"--reuid={RUN_AS}", f"--regid={RUN_AS}", "--init-groups",
                                                 "test", "-x", str(existing)], capture_output=True, timeout=10,
                                                check=False).returncode != 0:  # read-only: a permission test
            raise ConfigError(f"restore: params.destination: {existing} cannot be entered by the {RUN_AS} user that "
                              "runs the copy's server")

    def inject(self) -> None:
        if not (self.source / "PG_VERSION").is_file():  # before anything is written
            raise ConfigError(f"restore: params.backup: {self.source} is not a PostgreSQL base backup (no PG_VERSION)")
        self._total = size_of(self.source)
        self.data.mkdir(parents=True)
        self._run.start(self.argv(), self.log_file, f"restore-{self.spec.instance}")

    def _pids(self) -> list[int]:
        """The restore's processes, the copy's server among them: their arguments name its directory."""
        return procs.naming(self.directory, ("timeout", "sh", Path(sys.executable).name, "setpriv", "pg_ctl",
                                             "postgres", "psql"))

    def running(self) -> bool:
        return self._run.running(self._pids)

    def check(self) -> FaultState:
        return FaultState.IN_EFFECT if self.running() or self.directory.exists() else FaultState.CLEARED

    def progress(self) -> OperationProgress:
        running = self.running()
        error = None
        if not running and (self._run.returncode != 0 or DONE not in _read(self.log_file)):
            error = f"restore exit {self._run.returncode}: {_read(self.log_file)[-600:]}"
        return OperationProgress(running=running, bytes_done=float(min(size_of(self.data), self._total or 0)),
                                 bytes_total=float(self._total) if self._total is not None else None,
                                 started_wall=self._run.started_wall,
                                 finished_wall=None if running else self._run.finished_wall, error=error,
                                 output=str(self.data))

    def revert(self) -> None:
        if (self.data / "postmaster.pid").exists():  # a copy's server still up: stopped at once, its files go anyway
            subprocess.run([pg_tool("pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "-t", "10", "stop"],
                           capture_output=True, timeout=30, check=False,
                           user=RUN_AS if os.geteuid() == 0 else None)
        self._run.stop(self._pids, STOP_GRACE_S, "restore")
        shutil.rmtree(self.directory, ignore_errors=True)
        if self.directory.exists():
            raise ControlPlaneError(f"restore: {self.directory} could not be removed")


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""
