"""PostgreSQL + pg_auto_failover in the lab: the monitor on the witness, one node per site.

Everything lives under the lab's state directory and runs as user postgres with its own
XDG directories and socket directories, so labs never share a file with each other or with
a system PostgreSQL. Settings are the tuned ones from the lab notes: failover in 5-8 s
instead of ~50 s.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from harness_kernel import procs
from harness_kernel.errors import ControlPlaneError
from harness_lab import shell
from harness_lab.layout import DATABASE, PG_PORT, LabLayout, Member
from harness_lab.netns import LabNetwork
from harness_lab.services import Services

HALF_WRITTEN = "Failed to parse configuration file"  # pg_autoctl read its file while the keeper rewrote it
CONFIG_TRIES, CONFIG_RETRY_S = 5, 0.2

PG_USER = "postgres"
NODES = ("node-a", "node-b")
MONITOR = "monitor"
HBA = ("host all all 198.18.0.0/15 trust\n"
       "host replication all 198.18.0.0/15 trust\n")
COMMON_CONF = {
    "max_wal_size": "'64MB'",
    "min_wal_size": "'32MB'",
    # A node rewound after a failover replays from the last checkpoint both nodes share; the new primary
    # must still hold that WAL (pg_auto_failover's slots start at the promotion), or the node waits forever.
    "wal_keep_size": "'512MB'",
    # A node restarted in the middle of its demotion cannot be rewound; pg_auto_failover clones it with
    # pg_basebackup, whose spread checkpoint lasts up to 0.9 x checkpoint_timeout: 27 s, not 4.5 min.
    "checkpoint_timeout": "'30s'",
    "shared_buffers": "'32MB'",
    "fsync": "on",
}
NODE_CONF = {
    "wal_sender_timeout": "'3s'",
    "wal_receiver_timeout": "'3s'",
    "wal_retrieve_retry_interval": "'1s'",
    "wal_receiver_status_interval": "'1s'",
}
MONITOR_CONF = {
    "pgautofailover.health_check_period": "1000",
    "pgautofailover.health_check_timeout": "1000",
    "pgautofailover.health_check_max_retries": "1",
    "pgautofailover.health_check_retry_delay": "500",
    "pgautofailover.node_considered_unhealthy_timeout": "2000",
    "pgautofailover.primary_demote_timeout": "3000",
}
NETWORK_PARTITION_TIMEOUT_S = 2
IO_PAUSE_SHARE = 0.6  # of the monitor's quickest detection: a late SIGCONT stays clear of a failover nobody asked for


def detection_floor_s(monitor: Mapping[str, str]) -> float:
    """The quickest the monitor can call a node's PostgreSQL unreachable: a health check that times out, then each
    retry after its delay timing out too (pg_auto_failover's health_check_timeout, _max_retries, _retry_delay, ms)."""
    timeout = float(monitor["pgautofailover.health_check_timeout"])
    retries = float(monitor["pgautofailover.health_check_max_retries"])
    delay = float(monitor["pgautofailover.health_check_retry_delay"])
    return (timeout * (retries + 1) + delay * retries) / 1000.0


def io_pause_cap_s(monitor: Mapping[str, str]) -> float:
    """The longest I/O pause the lab applies: a share of the monitor's quickest detection."""
    return round(IO_PAUSE_SHARE * detection_floor_s(monitor), 2)

KEEPER_CONF = {
    # a primary cut off from the monitor and its standby this long stops taking writes (pg_autoctl's default: 20)
    "timeout.network_partition_timeout": str(NETWORK_PARTITION_TIMEOUT_S),
    # a re-clone after a storage loss is throttled only while the fault lasts (pg_autoctl's default)
    "replication.maximum_backup_rate": "100M",
}


@dataclass(frozen=True)
class NodeState:
    name: str
    reportedstate: str
    goalstate: str
    replication_quorum: bool
    health: int


@dataclass(frozen=True)
class HaEvent:
    """One row of pgautofailover.event, its time on the server's wall clock."""

    wall: float
    node: str
    reportedstate: str
    goalstate: str
    description: str


@dataclass(frozen=True)
class PgCluster:
    layout: LabLayout
    services: Services

    # -- where things are -------------------------------------------------------------
    @property
    def root(self) -> Path:
        return self.layout.state_dir / "pg"

    def member(self, name: str) -> Member:
        return self.layout.witness if name == MONITOR else self.layout.node_member(name)

    def pgdata(self, name: str) -> Path:
        return self.root / name / "data"

    def socket_dir(self, name: str) -> Path:
        return self.root / name / "run"

    def env(self, name: str) -> dict[str, str]:
        home = self.root / name
        return {"HOME": str(home), "PGDATA": str(self.pgdata(name)),
                "PGPORT": str(PG_PORT), "XDG_CONFIG_HOME": str(home / "xdg-config"),
                "XDG_DATA_HOME": str(home / "xdg-data"), "XDG_RUNTIME_DIR": str(home / "xdg-run")}

    @property
    def monitor_uri(self) -> str:
        return f"postgres://autoctl_node@{self.layout.witness.address}:{PG_PORT}/pg_auto_failover?sslmode=disable"

    # -- building ---------------------------------------------------------------------
    def prepare_dirs(self, name: str) -> None:
        home = self.root / name
        for sub in ("run", "xdg-config", "xdg-data", "xdg-run"):
            (home / sub).mkdir(parents=True, exist_ok=True)
        shutil.chown(self.root, PG_USER, PG_USER)
        for path in [home, *home.rglob("*")]:
            shutil.chown(path, PG_USER, PG_USER)
        (home / "xdg-run").chmod(0o700)

    def _autoctl(self, name: str, *args: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
        return shell.run(["pg_autoctl", *args], netns=self.member(name).netns, user=PG_USER, env=self.env(name),
                         timeout=timeout, socket_dir=self.socket_dir(name))

    def _configure(self, name: str, settings: Mapping[str, str]) -> None:
        """Our settings in lab.conf, included last; trust for the lab's addresses only."""
        data = self.pgdata(name)
        (data / "lab.conf").write_text("".join(f"{k} = {v}\n" for k, v in settings.items()))
        conf = data / "postgresql.conf"
        text = conf.read_text()
        if "include 'lab.conf'" not in text:
            conf.write_text(text + "\ninclude 'lab.conf'\n")
        hba = data / "pg_hba.conf"
        if HBA not in hba.read_text():
            hba.write_text(hba.read_text() + HBA)
        for path in (data / "lab.conf", conf, hba):
            shutil.chown(path, PG_USER, PG_USER)

    def create_monitor(self) -> None:
        self.prepare_dirs(MONITOR)
        self._autoctl(MONITOR, "create", "monitor", "--pgdata", str(self.pgdata(MONITOR)), "--pgport", str(PG_PORT),
                      "--hostname", self.layout.witness.address, "--no-ssl", "--skip-pg-hba")
        self._configure(MONITOR, COMMON_CONF | MONITOR_CONF)

    def create_node_argv(self, name: str, max_rate: str | None = None) -> list[str]:
        argv = ["pg_autoctl", "create", "postgres", "--pgdata", str(self.pgdata(name)), "--pgport", str(PG_PORT),
                "--hostname", self.member(name).address, "--name", name, "--no-ssl", "--skip-pg-hba",
                "--monitor", self.monitor_uri, "--dbname", DATABASE]
        if max_rate:
            argv += ["--maximum-backup-rate", max_rate]
        return argv

    def create_node(self, name: str) -> None:
        self.prepare_dirs(name)
        shell.run(self.create_node_argv(name), netns=self.member(name).netns, user=PG_USER, env=self.env(name),
                  timeout=180, socket_dir=self.socket_dir(name))
        self.configure_node(name)

    def configure_node(self, name: str) -> None:
        self._configure(name, COMMON_CONF | NODE_CONF)
        self.configure_keeper(name)

    def start(self, name: str) -> int:
        """`pg_autoctl run` for a created node or the monitor; its pid is the keeper's."""
        self.clear_dead_keeper_pidfile(name)
        return self.services.start(name, ["pg_autoctl", "run", "--pgdata", str(self.pgdata(name))],
                                   netns=self.member(name).netns, user=PG_USER, env=self.env(name), cwd=self.root / name,
                                   socket_dir=self.socket_dir(name))

    def clear_dead_keeper_pidfile(self, name: str) -> None:
        """A keeper killed by another process than the lab's owner stays the owner's zombie until reaped;
        pg_autoctl takes the zombie's pid for a running keeper and refuses to start. Its own pid file
        naming a dead or zombie process is removed, nothing else."""
        for pidfile in (self.root / name / "xdg-run" / "pg_autoctl").rglob("pg_autoctl.pid"):
            keeper = procs.read_pidfile(pidfile)
            if keeper is not None and not procs.running(keeper):
                pidfile.unlink(missing_ok=True)

    def local_sql(self, name: str, query: str, *, timeout: float = 10.0) -> list[list[str]]:
        """One query over the node's own Unix socket, in its namespace: answers while a network cut isolates it."""
        done = shell.run(["psql", "-X", "-q", "-At", "-F", "\x1f", "-p", str(PG_PORT), "-d", "postgres",
                          "-v", "ON_ERROR_STOP=1", "-c", query], netns=self.member(name).netns, user=PG_USER,
                         env={**self.env(name), "PGCONNECT_TIMEOUT": "3"}, timeout=timeout,
                         socket_dir=self.socket_dir(name))
        return [line.split("\x1f") for line in done.stdout.splitlines() if line]

    def keeper_setting(self, name: str, key: str) -> str:
        """A setting of the node's keeper (`pg_autoctl config get`), read from its configuration on disk."""
        return self._autoctl(name, "config", "get", "--pgdata", str(self.pgdata(name)), key, timeout=30).stdout.strip()

    def keeper_configured(self, name: str) -> bool:
        """The node's keeper runs with the lab's settings (a rebuilt node starts from pg_autoctl's defaults)."""
        try:
            return all(self.keeper_setting(name, key) == value for key, value in KEEPER_CONF.items())
        except ControlPlaneError:
            return False

    def set_keeper_setting(self, name: str, key: str, value: str) -> None:
        """A setting of the node's keeper, applied to a running keeper too (`config set` makes it reload).

        The reload makes the keeper write its configuration file again, and a `config set` that reads it meanwhile
        finds it half written: that read is tried again (up to `CONFIG_TRIES` times, `CONFIG_RETRY_S` apart)."""
        for attempt in range(1, CONFIG_TRIES + 1):
            try:
                self._autoctl(name, "config", "set", "--pgdata", str(self.pgdata(name)), key, value, timeout=30)
                return
            except ControlPlaneError as exc:
                if attempt == CONFIG_TRIES or HALF_WRITTEN not in str(exc):
                    raise
                time.sleep(CONFIG_RETRY_S)

    def configure_keeper(self, name: str) -> None:
        """The lab's keeper settings."""
        for key, value in KEEPER_CONF.items():
            self.set_keeper_setting(name, key, value)

    def rebuild_node(self, name: str, max_rate: str) -> int:
        """Re-create a node whose data is gone: register again and copy the primary, throttled."""
        self.prepare_dirs(name)
        argv = [*self.create_node_argv(name, max_rate), "--run"]
        return self.services.start(name, argv, netns=self.member(name).netns, user=PG_USER, env=self.env(name),
                                   cwd=self.root / name, socket_dir=self.socket_dir(name))

    def wipe_node(self, name: str) -> None:
        """The node's storage is lost: data directory and keeper state both gone."""
        home = self.root / name
        for sub in ("data", "xdg-config", "xdg-data", "xdg-run"):
            shutil.rmtree(home / sub, ignore_errors=True)

    def drop_from_monitor(self, name: str) -> None:
        self.sql(f"select pgautofailover.remove_node(nodeid, true) from pgautofailover.node where nodename = '{name}'")

    def switchover(self, via: str) -> None:
        self._autoctl(via, "perform", "switchover", "--pgdata", str(self.pgdata(via)), "--wait", "60", timeout=90)

    def set_replication_quorum(self, node: str, value: bool) -> None:
        """What `pg_autoctl set node replication-quorum` calls, sent to the monitor directly (no keeper round trip)."""
        self.sql(f"select pgautofailover.set_node_replication_quorum('default', '{node}', {'true' if value else 'false'})")

    # -- reading ----------------------------------------------------------------------
    def sql(self, query: str, *, node: str = MONITOR, database: str = "pg_auto_failover",
            timeout: float = 10.0) -> list[list[str]]:
        """Run one query from the root namespace over the lab network; rows as lists of text.

        Refused when the lab's route is gone: with the lab down its addresses lead nowhere.
        """
        if not LabNetwork(self.layout).route_present():
            raise ControlPlaneError(f"lab {self.layout.prefix} is not up (no route to {self.layout.subnet})")
        address = self.member(node).address
        done = shell.run(["psql", "-X", "-q", "-At", "-F", "\x1f", "-h", address, "-p", str(PG_PORT), "-U", PG_USER,
                          "-d", database, "-v", "ON_ERROR_STOP=1", "-c", query],
                         env={"PGCONNECT_TIMEOUT": "3", "PGOPTIONS": "-c statement_timeout=8000"}, timeout=timeout)
        return [line.split("\x1f") for line in done.stdout.splitlines() if line]

    def monitor_settings(self) -> dict[str, str]:
        """The monitor's pg_auto_failover settings as it runs with them."""
        rows = self.sql("select name, setting from pg_settings where name like 'pgautofailover.%'")
        return {name: setting for name, setting in rows}

    def nodes(self) -> list[NodeState]:
        rows = self.sql("select nodename, reportedstate, goalstate, replicationquorum, health "
                        "from pgautofailover.node order by nodename")
        return [NodeState(r[0], r[1], r[2], r[3] == "t", int(r[4])) for r in rows]

    def events(self, since_wall: float) -> list[HaEvent]:
        rows = self.sql("select extract(epoch from eventtime), nodename, reportedstate, goalstate, description "
                        f"from pgautofailover.event where eventtime >= to_timestamp({since_wall:.6f}) order by eventid")
        return [HaEvent(float(r[0]), r[1], r[2], r[3], r[4]) for r in rows]

    def server_now(self) -> float:
        return float(self.sql("select extract(epoch from clock_timestamp())")[0][0])

    def basebackup_progress(self, primary: str) -> tuple[int, int] | None:
        """(bytes_total, bytes_done) of a running base backup served by `primary`, if any."""
        try:
            rows = self.sql("select backup_total, backup_streamed from pg_stat_progress_basebackup",
                            node=primary, database="postgres")
        except ControlPlaneError:
            return None
        for total, done in rows:
            if total:
                return int(total), int(done or 0)
        return None
