"""The embedded lab as one object: bring it up, observe it, break pieces of it, take it down.

`Lab(LabLayout.from_settings(topology.lab))`. Every resource is named from the layout's
prefix and found again through the layout and the state directory (pid files), never by a
process name, so `down()` removes exactly this lab and nothing of another.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import pwd
import shutil
import signal
import stat
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness_kernel import procs
from harness_kernel.errors import ControlPlaneError
from harness_kernel.history.server import measure_offset
from harness_lab import ioload, netns, shell
from harness_lab.firewall import RouterFirewall
from harness_lab.latency import NETEM, TOXIPROXY, InterSiteLatency, kernel_has_netem
from harness_lab.layout import DATABASE, PG_PORT, LabLayout
from harness_lab.postgres import (
    KEEPER_CONF,
    MONITOR,
    MONITOR_CONF,
    NODES,
    PG_USER,
    HaEvent,
    NodeState,
    PgCluster,
    io_pause_cap_s,
)
from harness_lab.services import Services
from harness_lab.sshd import RouterSshd
from harness_lab.watchdog import QuorumWatchdog

# pg_stat_replication.sync_state of a standby that commits wait for ("quorum" under `ANY 1 (...)`, pg_auto_failover's)
SYNCHRONOUS_STATES = ("sync", "quorum")
TOOLS = ("ip", "nft", "tc", "ss", "setpriv", "pg_autoctl", "psql", "ssh-keygen", "sshd", "pg_basebackup")
PRIMARY_STATES = ("primary", "wait_primary", "single")
MARKER = "lab.json"
# The monitor declares a node unhealthy after ~4 s here (1 s health checks, 1 s timeout, one retry
# after 0.5 s, node_considered_unhealthy_timeout 2 s): a longer I/O pause would become a failover.
IO_PAUSE_MAX_S = io_pause_cap_s(MONITOR_CONF)  # with the lab's own monitor settings: 1.5 s of a 2.5 s detection
FENCE_MARGIN_S = 10.0  # a cut-off primary's keeper demotes within this much after its partition timeout
PG_AUTOCTL_PARTITION_DEFAULT_S = 20.0  # pg_autoctl's network_partition_timeout when its configuration cannot be read
IO_LOAD_MAX_S = 3600.0
IO_LOAD_MAX_MB_S = 500.0
SITE_NODES = {"site-a": "node-a", "site-b": "node-b"}
CODE_ROOT = Path(__file__).resolve().parents[2]  # what helper processes put on PYTHONPATH: this very code


@dataclass(frozen=True)
class LabStatus:
    prefix: str
    subnet: str
    namespaces: list[str]
    processes: dict[str, bool]
    nodes: list[NodeState] = field(default_factory=list)
    primary: str | None = None
    sync_state: str | None = None
    latency_mechanism: str | None = None
    error: str | None = None

    @property
    def up(self) -> bool:
        return bool(self.namespaces) and all(self.processes.values()) and self.error is None


@dataclass(frozen=True)
class ResyncProgress:
    bytes_total: int
    bytes_done: int


class Lab:
    """One embedded lab. Methods talk to the real namespaces and processes; nothing is cached but the layout."""

    def __init__(self, layout: LabLayout) -> None:
        self.layout = layout
        self.services = Services(layout.state_dir / "pids")
        self.network = netns.LabNetwork(layout)
        self.firewall = RouterFirewall(layout)
        self.pg = PgCluster(layout, self.services)
        self.sshd = RouterSshd(layout, self.services)

    # -- identity ---------------------------------------------------------------------
    @property
    def marker(self) -> Path:
        return self.layout.state_dir / MARKER

    @property
    def latency_mechanism(self) -> str | None:
        try:
            return str(json.loads(self.marker.read_text())["latency_mechanism"])
        except (FileNotFoundError, KeyError, ValueError):
            return None

    def latency(self) -> InterSiteLatency:
        mechanism = self.latency_mechanism
        if mechanism is None:
            raise ControlPlaneError(f"lab {self.layout.prefix!r} is not up (no {self.marker})")
        return InterSiteLatency(self.layout, self.services, mechanism)

    @property
    def ssh_key_file(self) -> Path:
        return self.sshd.client_key_file

    @property
    def ssh_host_key(self) -> str:
        return self.sshd.host_key

    def odbc_connection_string(self, timeout_ms: int = 2000, *, database: str = DATABASE,
                               members: tuple[str, ...] = ("node-a", "node-b"), read_write: bool = True) -> str:
        """psqlODBC, failover-aware: both nodes, read-write target, short TCP timeouts (lab notes)."""
        hosts = [self.pg.member(m).address for m in members]
        target = "target_session_attrs=read-write " if read_write else ""
        return ("Driver={PostgreSQL Unicode};Database=" + database + ";Uid=postgres;Pwd=;LoginTimeout=2;"
                "Protocol=7.4-1;UseServerSidePrepare=0;"
                f"Pqopt={{host={','.join(hosts)} port={','.join(str(PG_PORT) for _ in hosts)} {target}"
                f"tcp_user_timeout={timeout_ms} keepalives_idle=1 keepalives_interval=1 keepalives_count=2}}")

    # -- lifecycle --------------------------------------------------------------------
    def preflight(self) -> None:
        """Everything up() needs, with a message that says how to fix what is missing."""
        shell.require_root()
        shell.require_tools(TOOLS)
        if not Path(shell.PG_BIN / "postgres").exists():
            raise ControlPlaneError("PostgreSQL 15 is not installed: apt-get install postgresql-15 postgresql-15-auto-failover")
        try:
            pwd.getpwnam(PG_USER)
        except KeyError as exc:
            raise ControlPlaneError("no 'postgres' user: apt-get install postgresql-15") from exc
        for parent in self.layout.state_dir.resolve().parents:
            if parent.exists() and not os.stat(parent).st_mode & stat.S_IXOTH:
                raise ControlPlaneError(f"state directory {self.layout.state_dir}: user postgres cannot enter {parent} "
                                        f"(chmod o+x {parent} or choose another --state-dir)")

    def up(self, timeout_s: float = 90.0) -> float:
        """Build the lab (or confirm the running one); returns the seconds it took. Idempotent."""
        started = time.monotonic()
        self.preflight()
        if self._complete():
            self.wait_healthy(timeout_s)
            return time.monotonic() - started
        if self.network.leftovers() or self.layout.state_dir.exists():
            self.down()
        self.network.check_free()
        self.layout.state_dir.mkdir(parents=True, exist_ok=True)
        self.layout.state_dir.chmod(0o755)
        try:
            self._build(timeout_s)
        except Exception as exc:
            with contextlib.suppress(Exception):
                exc.add_note(self._log_tails())
            raise
        return time.monotonic() - started

    def _build(self, timeout_s: float) -> None:
        self.network.create()
        mechanism = NETEM if kernel_has_netem(self.layout.router_netns) else TOXIPROXY
        self.marker.write_text(json.dumps({"prefix": self.layout.prefix, "subnet": str(self.layout.subnet),
                                           "latency_mechanism": mechanism}))
        InterSiteLatency(self.layout, self.services, mechanism).start()
        self.sshd.start()
        self.pg.create_monitor()
        self.pg.start(MONITOR)
        shell.wait_for(self._monitor_ready, 30, "pg_auto_failover monitor")
        for node in NODES:
            self.pg.create_node(node)
            self.pg.start(node)
            if node == NODES[0]:
                shell.wait_for(lambda: self._reported(NODES[0]) in PRIMARY_STATES, 30, f"{NODES[0]} as primary")
        self.wait_healthy(timeout_s)

    def _log_tails(self) -> str:
        """The last lines of every service log: what a failed up() shows (the next up() cleans the rest)."""
        logs = sorted(self.services.directory.glob("*.log"))
        return "\n".join(f"--- {p}\n" + "\n".join(p.read_text(errors="replace").splitlines()[-10:]) for p in logs)

    def _monitor_ready(self) -> bool:
        try:
            self.pg.sql("select 1")
        except ControlPlaneError:
            return False
        return True

    def _reported(self, node: str) -> str | None:
        try:
            return next((n.reportedstate for n in self.pg.nodes() if n.name == node), None)
        except ControlPlaneError:
            return None

    def _complete(self) -> bool:
        if self.latency_mechanism is None or len(self.network.present()) != len(self.layout.namespaces):
            return False
        return all(self.services.alive(name) for name in self._service_names())

    def _service_names(self) -> list[str]:
        names = [MONITOR, *NODES, "sshd"]
        if self.latency_mechanism == TOXIPROXY:
            names.append("toxiproxy")
        return names

    def down(self) -> None:
        """Remove this lab's processes, nft tables, namespaces, veths, route and state. Idempotent."""
        for name in self.services.names():
            self.services.kill(name, grace_s=2.0 if name in (*NODES, MONITOR) else 0.0)
        for ns in self.layout.namespaces:
            for pid in netns.pids_in(ns):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        if self.layout.router_netns in self.network.present():
            self.firewall.delete_all()
        self.network.destroy()
        if self.marker.exists() or (self.layout.state_dir / "pids").exists():
            shutil.rmtree(self.layout.state_dir, ignore_errors=True)

    def rebuild(self) -> float:
        self.down()
        return self.up()

    # -- observation ------------------------------------------------------------------
    def status(self) -> LabStatus:
        present = self.network.present()
        processes = {name: self.services.alive(name) for name in self._service_names()} if present else {}
        status = LabStatus(prefix=self.layout.prefix, subnet=str(self.layout.subnet), namespaces=present,
                           processes=processes, latency_mechanism=self.latency_mechanism)
        if not present:
            return status
        try:
            nodes = self.pg.nodes()
            primary = next((n.name for n in nodes if n.reportedstate in PRIMARY_STATES), None)
            sync = None
            if primary:
                sync = ",".join(sync_state for _, _, sync_state in self.replication(primary)) or "none"
        except ControlPlaneError as exc:
            return dataclasses.replace(status, error=str(exc).splitlines()[-1])
        return dataclasses.replace(status, nodes=nodes, primary=primary, sync_state=sync)

    def nodes(self) -> list[NodeState]:
        return self.pg.nodes()

    def replication(self, primary: str) -> list[tuple[str, str, str]]:
        """The primary's own view of its standbys: (application_name, state, sync_state) from pg_stat_replication."""
        rows = self.pg.sql("select application_name, state, sync_state from pg_stat_replication order by 1",
                           node=primary, database="postgres", timeout=5)
        return [(r[0], r[1], r[2]) for r in rows]

    def replication_settings(self, primary: str) -> tuple[str, str]:
        """The primary's `synchronous_standby_names` and `synchronous_commit`, as it runs with them now."""
        rows = self.pg.sql("select current_setting('synchronous_standby_names'), current_setting('synchronous_commit')",
                           node=primary, database="postgres", timeout=5)
        return rows[0][0], rows[0][1]

    def healthy(self) -> bool:
        """Both nodes settled, one primary and one secondary, and the primary streaming to its standby: the
        monitor's states alone are not enough (after a link partition it keeps them while the standby's
        connection waits out TCP's backoff, and the primary's commits wait with it)."""
        try:
            nodes = self.pg.nodes()
        except ControlPlaneError:
            return False
        if {(n.reportedstate, n.goalstate) for n in nodes} != {("primary", "primary"), ("secondary", "secondary")}:
            return False
        primary = next(n.name for n in nodes if n.reportedstate == "primary")
        try:
            return any(state == "streaming" for _, state, _ in self.replication(primary))
        except ControlPlaneError:
            return False

    def drift(self) -> list[str]:
        """What differs, on a healthy lab, from the lab `up` made: a spec that starts here asserts none. Apart from
        `healthy()` because it asks every keeper (a child process each), too slow for a wait's every poll."""
        try:
            primary = self.primary()
            modes = {name: sync_state for name, _, sync_state in self.replication(primary)}
        except ControlPlaneError as exc:
            return [f"replication unreadable: {exc}"]
        found = [] if modes and all(m in SYNCHRONOUS_STATES for m in modes.values()) else [
            f"replication is not synchronous ({primary}'s pg_stat_replication: {modes or 'no standby'})"]
        found += [f"{node}'s keeper runs without the lab's settings ({', '.join(KEEPER_CONF)})"
                  for node in NODES if not self.keeper_configured(node)]
        return found

    def put_back(self) -> None:
        """What `drift()` checks, as `up` made it: every node in the write quorum, every keeper with the lab's
        settings. Idempotent."""
        self.restore_quorum()
        for node in NODES:
            if not self.keeper_configured(node):
                self.configure_keeper(node)

    def wait_healthy(self, timeout_s: float = 60.0) -> None:
        shell.wait_for(self.healthy, timeout_s, f"lab {self.layout.prefix}: one primary + one synchronous secondary",
                       interval_s=0.25)

    def primary(self) -> str:
        for node in self.pg.nodes():
            if node.reportedstate in PRIMARY_STATES and node.goalstate in PRIMARY_STATES:
                return node.name
        raise ControlPlaneError(f"lab {self.layout.prefix}: no primary right now")

    def roles(self) -> dict[str, str | None]:
        """Each node's own view, asked directly (works when the monitor is out of reach): primary / standby / None."""
        found: dict[str, str | None] = {}
        for node in NODES:
            try:
                rows = self.pg.sql("select pg_is_in_recovery()", node=node, database="postgres", timeout=5)
                found[node] = "standby" if rows[0][0] == "t" else "primary"
            except ControlPlaneError:
                found[node] = None
        return found

    def ha_events(self, since_wall: float) -> list[HaEvent]:
        """The monitor's event log from `since_wall` (server clock): 'failure detected', 'promoted'..."""
        return self.pg.events(since_wall)

    def clock_offset(self, samples: int = 5) -> float:
        """Server clock minus this machine's `time.time()`, from the tightest of a few round trips."""
        return measure_offset(self.pg.server_now, time.time, samples)

    def resync_progress(self) -> ResyncProgress | None:
        """Bytes of a running rebuild (base backup served by the primary), or None when none runs."""
        try:
            primary = self.primary()
        except ControlPlaneError:
            return None
        found = self.pg.basebackup_progress(primary)
        return ResyncProgress(*found) if found else None

    # -- node control (used by the lab's faults) --------------------------------------
    def node_pids(self, node: str) -> list[int]:
        return self.services.tree(node)

    def node_root(self, node: str) -> int | None:
        """The root of the node's process tree (its pg_autoctl), or None when it is not running."""
        return self.services.pid(node)

    def node_alive(self, node: str) -> bool:
        return self.services.alive(node)

    def kill_node(self, node: str) -> None:
        self.services.kill(node)

    def start_node(self, node: str) -> None:
        """Restart a node's keeper (it restarts its PostgreSQL and rejoins). Idempotent."""
        if not self.services.alive(node):
            self.pg.start(node)

    def signal_node(self, node: str, signum: signal.Signals) -> int:
        pid = self.services.pid(node)
        return procs.signal_tree(pid, signum) if pid is not None else 0

    def freeze_node(self, node: str) -> bool:
        """SIGSTOP a node's whole tree, again for a backend forked during a pass; True once all of it is stopped."""
        pid = self.services.pid(node)
        return pid is not None and procs.freeze_tree(pid)

    def node_stopped_fraction(self, node: str) -> float | None:
        pid = self.services.pid(node)
        return procs.stopped_fraction(pid) if pid is not None else None

    # -- the lab's faults' other controls ---------------------------------------------------
    def present(self) -> bool:
        """The lab's network exists (a lab that is down has nothing left broken)."""
        return bool(self.network.present())

    def fence_timeout_s(self, node: str) -> float:
        """How long the lab waits for a thawed, still cut-off node to be known stale or primary: its keeper's own
        network_partition_timeout (read from its configuration), plus a margin for the monitor's decision."""
        try:
            return float(self.pg.keeper_setting(node, "timeout.network_partition_timeout")) + FENCE_MARGIN_S
        except (ControlPlaneError, ValueError):
            return PG_AUTOCTL_PARTITION_DEFAULT_S + FENCE_MARGIN_S

    def node_fenced(self, node: str) -> bool:
        """The node takes no write: its PostgreSQL is not running, or runs in recovery (asked over its own Unix
        socket, which a network cut does not reach). One running that does not answer is not proven fenced."""
        if not any(_comm(pid) == "postgres" for pid in self.node_pids(node)):
            return True
        try:
            return self.pg.local_sql(node, "select pg_is_in_recovery()", timeout=5) == [["t"]]
        except ControlPlaneError:
            return False

    def fence_if_replaced(self, node: str) -> str:
        """A node thawed while still cut off takes no write once this returns: if the monitor promoted another node
        meanwhile, the node is fenced (its whole tree killed, as a platform powers off an isolated host: its keeper
        would restart a PostgreSQL stopped alone), bounded by `fence_timeout_s`; a node still the primary (no
        failover happened) is left as it is. pg_auto_failover 2.0 does not fence such a node itself: a primary that
        loses its monitor and its standby at once never counts as partitioned (its last contact with a standby is
        only recorded while one is connected), and takes writes until the monitor demotes it. What was done."""
        timeout_s = self.fence_timeout_s(node)
        deadline = time.monotonic() + timeout_s
        while not self.node_fenced(node):
            try:
                primary: str | None = self.primary()
            except ControlPlaneError:
                primary = None  # the monitor has not decided yet
            if primary == node:
                return f"{node} is still the primary: nothing to fence"
            if primary is not None:
                self.kill_node(node)
                return f"{node} fenced: {primary} was promoted while it hung (the lab's fence, modelled)"
            if time.monotonic() > deadline:
                raise ControlPlaneError(f"lab {self.layout.prefix}: the monitor named no primary {timeout_s:.0f} s "
                                        f"after {node}'s thaw; it stays cut off")
            time.sleep(0.2)
        return f"{node} takes no write"

    def keeper_configured(self, node: str) -> bool:
        return self.pg.keeper_configured(node)

    def configure_keeper(self, node: str) -> None:
        self.pg.configure_keeper(node)

    def switchover(self, from_node: str) -> None:
        self.pg.switchover(from_node)

    def quorum_watchdog(self, timeout_s: float) -> QuorumWatchdog:
        return QuorumWatchdog(self, timeout_s)

    def restore_quorum(self) -> None:
        """Every node back in the write quorum once the standby streams again (after a watchdog). Idempotent."""
        QuorumWatchdog(self, 0.0).stop_and_restore()

    def lose_storage(self, node: str) -> None:
        """A replica's storage is gone: its processes killed, its data and keeper state deleted, the monitor told."""
        self.kill_node(node)
        self.pg.drop_from_monitor(node)
        self.pg.wipe_node(node)

    def rebuild_storage(self, node: str, max_rate: str) -> None:
        """Re-create a lost replica from the primary, the base backup throttled to `max_rate`/s."""
        self.pg.rebuild_node(node, max_rate)

    def has_data(self, node: str) -> bool:
        """The node has a data directory and the monitor knows it (it can simply be restarted)."""
        return (self.pg.pgdata(node) / "PG_VERSION").exists() and any(n.name == node for n in self.nodes())

    # -- what a simulated platform does to the guests (the vSphere simulator's hook) ---------
    def power_on_node(self, node: str, reap_timeout_s: float = 10.0) -> None:
        """Start a node whose VM was powered on, once its killed processes are gone from the process table.

        A keeper killed by another process (the hook of a power-off) stays a zombie until init
        reaps it; pg_autoctl takes a zombie's pid in its pid file for a running keeper and refuses
        to start, so a power-on right after a power-off waits for that (bounded) first.
        """
        pid = self.services.pid(node)
        if pid is not None and procs.state(pid) not in ("Z", "X"):
            return  # running: nothing to do
        deadline = time.monotonic() + reap_timeout_s
        while pid is not None and (procs.PROC / str(pid)).exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        self.start_node(node)

    def io_pause_cap_s(self) -> float:
        """The I/O pause cap from the monitor's settings as it runs (the lab's own when it cannot say)."""
        try:
            return io_pause_cap_s({**MONITOR_CONF, **self.pg.monitor_settings()})
        except (ControlPlaneError, ValueError):
            return IO_PAUSE_MAX_S

    def io_pause(self, node: str, seconds: float) -> float:
        """Stall the node's I/O for `seconds`, capped under the monitor's detection (`io_pause_cap_s`); returns the
        pause applied.

        This kernel has no blkio controller, so the node's postgres processes are stopped
        (SIGSTOP) and continued; the keeper keeps running. The cap keeps the stall under the
        monitor's quickest detection with margin, so the HA manager does not fail over: a vSAN disk-group
        failure pauses I/O, it does not kill the guest. A detached `kill -CONT` a second after the
        pause ends resumes them even if this process dies mid-pause.
        """
        pause = max(0.0, min(float(seconds), self.io_pause_cap_s()))
        pids = [p for p in self.node_pids(node) if _comm(p) == "postgres"]
        if not pids:
            raise ControlPlaneError(f"lab {self.layout.prefix}: {node} has no running postgres to pause")
        joined = " ".join(str(p) for p in pids)
        subprocess.Popen(["sh", "-c", f"sleep {pause + 1:.1f}; kill -CONT {joined} 2>/dev/null"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
        try:
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGSTOP)
            time.sleep(pause)
        finally:
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)
        return pause

    def storage_dir(self, site: str) -> Path:
        """A site's storage: the directory of its node's data (PGDATA is inside it)."""
        try:
            return self.pg.root / SITE_NODES[site]
        except KeyError:
            raise ControlPlaneError(f"lab {self.layout.prefix}: no site {site!r} (known: {', '.join(SITE_NODES)})") from None

    def io_load(self, site: str, mb_per_s: float, seconds: float) -> None:
        """Write at `mb_per_s` on `site`'s storage for `seconds` in the background (a resync's traffic).

        It replaces a load already running on that site; a rate or duration of 0 only stops it. The
        writer stops by itself, removes its file, and is a lab service (`down()` ends it too).
        """
        name = f"io-load-{site}"
        directory = self.storage_dir(site)
        self.services.kill(name, grace_s=2.0)  # SIGTERM first: the writer removes its file
        self.services.forget(name)
        for leftover in directory.glob(f"{ioload.FILE_PREFIX}.*"):  # of a writer that could not clean up (SIGKILL)
            leftover.unlink(missing_ok=True)
        if mb_per_s <= 0 or seconds <= 0:
            return
        rate, duration = min(float(mb_per_s), IO_LOAD_MAX_MB_S), min(float(seconds), IO_LOAD_MAX_S)
        self.services.start(name, [sys.executable, "-m", "harness_lab.ioload", str(directory), f"{rate:g}", f"{duration:g}"],
                            env={"PYTHONPATH": str(CODE_ROOT)})

    def io_load_running(self, site: str) -> bool:
        return self.services.alive(f"io-load-{site}")


def _comm(pid: int) -> str | None:
    try:
        return (procs.PROC / str(pid) / "comm").read_text().strip()
    except (FileNotFoundError, ProcessLookupError):
        return None
