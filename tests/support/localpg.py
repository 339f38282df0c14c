"""A throwaway PostgreSQL 15 cluster on 127.0.0.1, for the workloads' own tests and benchmarks.

It runs as the `postgres` OS user in a temporary directory, listens on loopback only and
uses password (SCRAM) authentication so that the drivers exercise the same login path as
against a real cluster. Processes are started directly and tracked by PID, never by name.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness_kernel.topology.credentials import Secret
from workloads.fio import free_loopback_port

PG_BIN = Path("/usr/lib/postgresql/15/bin")
OS_USER = "postgres"


@dataclass
class LocalPostgres:
    """One cluster. `start()` creates it, `destroy()` stops it and removes its directory."""

    password: Secret
    max_connections: int = 100
    extra_conf: dict[str, str] = field(default_factory=dict)
    port: int = field(default_factory=free_loopback_port)
    base_dir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="wl-pg-")))

    @property
    def data_dir(self) -> Path:
        return self.base_dir / "data"

    @property
    def host(self) -> str:
        return "127.0.0.1"

    def _run(self, *args: str, env: dict[str, str] | None = None, timeout: float = 60) -> str:
        done = subprocess.run(list(args), user=OS_USER, cwd=self.base_dir, capture_output=True, text=True,
                              env={**os.environ, **(env or {})}, timeout=timeout, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{args[0]} failed ({done.returncode}): {done.stderr.strip() or done.stdout.strip()}")
        return done.stdout

    def start(self) -> LocalPostgres:
        owner = pwd.getpwnam(OS_USER)
        os.chown(self.base_dir, owner.pw_uid, owner.pw_gid)
        pwfile = self.base_dir / "pwfile"
        pwfile.write_text(self.password.reveal() + "\n")
        os.chown(pwfile, owner.pw_uid, owner.pw_gid)
        pwfile.chmod(0o600)
        self._run(str(PG_BIN / "initdb"), "-D", str(self.data_dir), "-U", OS_USER, "--pwfile", str(pwfile),
                  "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--no-sync")
        pwfile.unlink()
        conf = {"listen_addresses": "'127.0.0.1'", "port": str(self.port),
                "unix_socket_directories": f"'{self.base_dir}'", "max_connections": str(self.max_connections),
                "shared_buffers": "'256MB'", "log_min_messages": "fatal", **self.extra_conf}
        with (self.data_dir / "postgresql.conf").open("a") as out:
            out.writelines(f"{k} = {v}\n" for k, v in conf.items())
        self.pg_ctl("start", "-w", "-l", str(self.base_dir / "server.log"))
        return self

    def pg_ctl(self, *args: str) -> None:
        self._run(str(PG_BIN / "pg_ctl"), "-D", str(self.data_dir), *args, timeout=120)

    def restart_immediate(self) -> None:
        """A crash-like restart: every backend dies at once, then the server recovers."""
        self.pg_ctl("restart", "-m", "immediate", "-w", "-l", str(self.base_dir / "server.log"))

    def psql(self, sql: str, database: str = "postgres") -> str:
        return self._run(str(PG_BIN / "psql"), "-h", str(self.base_dir), "-p", str(self.port), "-d", database,
                         "-v", "ON_ERROR_STOP=1", "-AXqt", "-c", sql)

    def create_database(self, name: str) -> None:
        self.psql(f'CREATE DATABASE "{name}"')

    def postmaster_pid(self) -> int:
        return int((self.data_dir / "postmaster.pid").read_text().splitlines()[0])

    def server_pids(self) -> list[int]:
        """The postmaster and all its children (backends, checkpointer, walwriter...)."""
        root = self.postmaster_pid()
        children = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                if int(fields[1]) == root:
                    children.append(int(entry.name))
        return [root, *children]

    def freeze(self, seconds: float) -> tuple[float, float]:
        """SIGSTOP every server process for `seconds`; returns the monotonic (stop, cont) times.

        A frozen server keeps its TCP sessions, so clients see the end of the outage at once.
        """
        pids = self.server_pids()
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        stopped = time.monotonic()
        try:
            time.sleep(max(0.0, seconds - (time.monotonic() - stopped)))
        finally:
            resumed = time.monotonic()
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)
        return stopped, resumed

    def destroy(self) -> None:
        if (self.data_dir / "postmaster.pid").exists():
            try:
                self.pg_ctl("stop", "-m", "immediate", "-w")
            except RuntimeError:
                os.kill(self.postmaster_pid(), signal.SIGKILL)
        shutil.rmtree(self.base_dir, ignore_errors=True)

    def __enter__(self) -> LocalPostgres:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.destroy()
