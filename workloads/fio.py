"""fio as an I/O workload: local runs and client/server runs, per-second series from fio's logs.

`FioWorkload` is the local run as a `Workload` (start, stop, verify), so fio can run under a
fault like the OLTP driver; `run_local` is the same run left to finish by itself.

Client/server mode (`fio --server` on each workload machine, one `fio --client` process
driving them all) scales the load across machines. Each client gets its own job file and log
prefix, because fio suffixes returned logs with the server *address* only: two servers on one
address would overwrite each other's logs. Runs are time-based and the process is killed if
it outlives its runtime by `grace_s`. Servers are loopback-only unless a caller says otherwise.
"""


from __future__ import annotations

import contextlib
import ipaddress
import json
import mmap
import os
import re
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness_kernel import procs
from harness_kernel.history import EventKind
from harness_kernel.history.timeline import Timeline
from harness_kernel.text import escaped
from workloads.base import StopReport, Workload
from workloads.fio_logs import FioSeries, load_series

FIO = "fio"


def direct_io_supported(directory: Path) -> bool:
    """Whether files here open with O_DIRECT and take an aligned write (ext4, XFS and a datastore's disk do;
    tmpfs before Linux 6.6 and some overlays refuse). An I/O workload with direct I/O reaches the storage in
    the window it runs in, as a mail store's unbuffered I/O does, instead of leaving dirty pages that the
    kernel writes back up to 30 s later, inside the next window. The probe file is ours and removed."""
    flag = getattr(os, "O_DIRECT", 0)
    if not flag:
        return False
    directory.mkdir(parents=True, exist_ok=True)
    probe = directory / f".direct-io-probe-{os.getpid()}"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | flag, 0o600)
    except OSError:
        return False
    try:
        with mmap.mmap(-1, mmap.PAGESIZE) as block:  # page-aligned memory, as O_DIRECT requires
            os.write(fd, block)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
        probe.unlink(missing_ok=True)


def flush_files(directory: Path) -> int:
    """fsync every file directly in `directory` (an I/O workload's own): what the page cache still holds of
    them (fio's layout is written through it) reaches the storage now, between windows, not inside the next
    one. Returns the files flushed."""
    flushed = 0
    for path in sorted(directory.iterdir()) if directory.is_dir() else []:
        if not path.is_file() or path.is_symlink():
            continue
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        flushed += 1
    return flushed


def free_loopback_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (fio's server mode, test servers)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class FioProfile:
    name: str
    rw: str
    bs: str
    rwmixread: int


PROFILES = {
    "mail": FioProfile("mail", "randrw", "32k", 70),  # mail store: 70/30 read/write, 32 KiB
    "oltp": FioProfile("oltp", "randrw", "8k", 70),  # database pages: 8 KiB random
}


JOB_VALUE = re.compile(r"[A-Za-z0-9_.,%/+@=~-]{1,4096}")
"""What a job file value may hold: no space, no `$` (fio expands variables), no `:` (a list of
directories), no quote and nothing that ends or starts a line."""
JOB_PATH = re.compile(r"/[A-Za-z0-9_./+@=~,-]{0,4095}")
LOGS = ("write_iops_log", "write_bw_log", "write_lat_log")


def job_line(key: str, value: object) -> str:
    """`key=value` for a fio job file, or ValueError: a value that could be read as more is refused, not escaped
    (fio's job files have no quoting)."""
    text = str(value)
    if not JOB_VALUE.fullmatch(text):
        raise ValueError(f"fio job value for {key}: {escaped(text)!r} is not a plain word (letters, digits, "
                         "'_.,%/+@=~-')")
    return f"{key}={text}"


def job_path(path: Path) -> str:
    text = str(path)
    if not JOB_PATH.fullmatch(text):
        raise ValueError(f"fio job path {escaped(text)!r}: an absolute path of letters, digits and '/_.+@=~,-'")
    return text


@dataclass(frozen=True)
class FioJob:
    """One time-based job. `direct=False` by default: tmpfs and some overlay filesystems refuse O_DIRECT."""

    profile: FioProfile
    directory: Path
    runtime_s: int = 10
    size: str = "64m"
    numjobs: int = 1
    iodepth: int = 1
    ioengine: str = "psync"
    direct: bool = False
    grace_s: float = 30.0
    rate_iops: int | None = None  # a steady offered load (a mail store's), not the device's maximum

    def rate_values(self) -> list[str]:
        """fio caps reads and writes separately (`rate_iops=R,W`): the total is split by the profile's mix."""
        if not self.rate_iops:
            return []
        reads = round(self.rate_iops * self.profile.rwmixread / 100)
        return [f"{max(reads, 1)},{max(self.rate_iops - reads, 1)}"]


    def text(self, log_prefix: Path) -> str:
        """The job file; every value through `job_line`, so none can add a line (fio runs `exec_prerun=`)."""
        p = self.profile
        settings: list[tuple[str, object] | str] = [
            "[global]", ("directory", job_path(self.directory)), ("size", self.size), ("runtime", self.runtime_s),
            ("time_based", 1), ("ioengine", self.ioengine), ("iodepth", self.iodepth), ("direct", int(self.direct)),
            ("log_avg_msec", 1000), ("log_unix_epoch", 1), *((k, job_path(log_prefix)) for k in LOGS), "",
            f"[{p.name}]", ("rw", p.rw), ("rwmixread", p.rwmixread), ("bs", p.bs), ("numjobs", self.numjobs),
            *(("rate_iops", rate) for rate in self.rate_values()), "",
        ]
        return "\n".join(s if isinstance(s, str) else job_line(*s) for s in settings)


@dataclass
class FioResult:
    name: str
    series: FioSeries
    summary: dict[str, Any] = field(default_factory=dict)  # fio's JSON job stats for this process


def _run(args: list[str], job: FioJob, cwd: Path) -> dict[str, Any]:
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=job.runtime_s + job.grace_s, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"fio failed ({done.returncode}): {(done.stderr + done.stdout).strip()[-2000:]}")
    return _json_report(done.stdout)


@dataclass(frozen=True)
class FioStopReport(StopReport):
    returncode: int | None  # None: fio did not exit (listed in `stuck`)
    seconds: int  # seconds of per-second samples read from fio's logs


class FioWorkload:
    """fio on this machine as a `Workload`: a process that start() launches and stop() ends.

    The job's `runtime_s` is only an upper bound, so fio stops by itself even if the harness
    dies; stop() ends it early with SIGINT, on which fio still writes its logs and its JSON
    report. The per-second `series` and fio's job stats (`summary`) are read at stop, because
    fio writes its logs at exit. It keeps no ledger: `verify()` is None.
    """

    keeps_ledger = False

    def __init__(self, job: FioJob, workdir: Path, timeline: Timeline, name: str = "fio") -> None:
        self.job = job
        self.workdir = workdir
        self.timeline = timeline
        self.name = name
        self.series = FioSeries(name, {})
        self.summary: dict[str, Any] = {}  # the first job's stats
        self.all_jobs: list[dict[str, Any]] = []  # every job's stats, in job file order
        self._process: subprocess.Popen[bytes] | None = None

    def _path(self, suffix: str) -> Path:
        return self.workdir / f"{self.name}{suffix}"

    def start(self) -> None:
        if self._process is not None:
            raise RuntimeError(f"{self.name} has already been started")
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.job.directory.mkdir(parents=True, exist_ok=True)
        self._path(".fio").write_text(self.job_file())
        self.timeline.record(EventKind.WORKLOAD_START, self.name, workload="fio", profile=self.job.profile.name, mode="local")
        with self._path(".stderr").open("wb") as stderr:
            self._process = subprocess.Popen([FIO, "--output-format=json", f"--output={self.name}.json", f"{self.name}.fio"],
                                             cwd=self.workdir, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                             stderr=stderr)

    def job_file(self) -> str:
        return self.job.text(self._path(""))

    def wait(self, timeout_s: float) -> bool:
        """Wait for fio to end by itself (its runtime); False if it still runs after `timeout_s`."""
        if self._process is None:
            raise RuntimeError(f"{self.name} was never started")
        try:
            self._process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            return False
        return True

    def stop(self, timeout_s: float = 10.0) -> FioStopReport:
        """End fio (SIGINT, then SIGKILL after `timeout_s`) and read its series and report."""
        process = self._process
        if process is None:
            raise RuntimeError(f"{self.name} was never started")
        asked = process.poll() is None
        if asked:
            process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(2.0)
        code = process.poll()
        self.timeline.record(EventKind.WORKLOAD_STOP, self.name, workload="fio", returncode=code)
        self.series = load_series(self._path(""), self.name, self.timeline, jobs=self.job.numjobs)
        problem = None
        try:
            self.all_jobs = list(_json_report(self._path(".json").read_text()).get("jobs") or [{}])
            self.summary = self.all_jobs[0]
        except (OSError, ValueError) as exc:
            problem = f"no JSON report ({exc})"
        if code is not None and code != 0 and not asked:  # fio exits 128 when we interrupt it
            problem = f"exit status {code}"
        crashed = [] if problem is None or code is None else [f"fio pid {process.pid}: {problem}: {self._stderr_tail()}"]
        return FioStopReport(workload=self.name, stuck=[] if code is not None else [f"fio pid {process.pid}"],
                             crashed=crashed, returncode=code, seconds=self.series.seconds())

    def verify(self) -> None:
        return None

    def _stderr_tail(self) -> str:
        try:
            return self._path(".stderr").read_text(errors="replace").strip()[-2000:]
        except OSError:
            return ""


def _json_report(text: str) -> dict[str, Any]:
    """fio's JSON document; fio may print notices ("terminating on signal 2") before it."""
    result: dict[str, Any] = json.loads(text[text.index("{"):])
    return result


def run_local(job: FioJob, workdir: Path, timeline: Timeline, name: str = "fio") -> FioResult:
    """Run fio on this machine for the job's runtime (blocks): a `FioWorkload` left to finish."""
    workload = FioWorkload(job, workdir, timeline, name)
    workload.start()
    workload.wait(job.runtime_s + job.grace_s)
    report = workload.stop()
    if not report.clean:
        raise RuntimeError(f"fio failed: {'; '.join(report.crashed or report.stuck)}")
    return FioResult(name, workload.series, workload.summary)


ANY_PORT = 0
PORT_PICKS = 5  # a port lost to another process between its pick and fio's bind is picked again, this often


@dataclass
class FioServer:
    """`fio --server` daemon on one address and port, tracked by its pid file. The port, unless asked for, is picked
    at start and picked again if another process takes it before fio binds it (a listener there proves nothing)."""

    workdir: Path
    address: str = "127.0.0.1"
    port: int = ANY_PORT
    allow_remote: bool = False
    pid: int | None = None

    def __post_init__(self) -> None:
        if not self.allow_remote and not ipaddress.ip_address(self.address).is_loopback:
            raise ValueError(f"fio server {self.address}: only loopback addresses unless allow_remote=True")

    @property
    def spec(self) -> str:
        return f"ip:{self.address},{self.port}"

    def start(self, timeout_s: float = 5.0) -> FioServer:
        self.workdir.mkdir(parents=True, exist_ok=True)
        picked = self.port == ANY_PORT
        for _ in range(PORT_PICKS if picked else 1):
            if picked:
                self.port = free_loopback_port()
            if self._started(timeout_s):
                return self
            if not _accepts(self.address, self.port):
                break  # nobody else holds the port: fio itself failed
        in_use = " (in use: another process listens there)" if _accepts(self.address, self.port) else ""
        raise RuntimeError(f"fio server on {self.spec} did not come up within {timeout_s} s{in_use}")

    def _started(self, timeout_s: float) -> bool:
        """fio daemonized on this port, its own pid listening there; False (and nothing left) if not."""
        pidfile = self.workdir / f"fio-server-{self.port}.pid"
        subprocess.run([FIO, f"--server={self.spec}", f"--daemonize={pidfile}"], cwd=self.workdir, check=True,
                       capture_output=True, timeout=timeout_s)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if pidfile.exists() and pidfile.read_text().strip():
                self.pid = int(pidfile.read_text().strip())
                if not _alive(self.pid):
                    break  # it could not bind: whatever accepts there is another process
                if _accepts(self.address, self.port) and procs.listens_on(self.pid, self.address, self.port):
                    return True  # the listener is fio's own (its pid file is written before it binds)
            time.sleep(0.05)
        self.stop()
        return False

    def stop(self) -> None:
        if self.pid is None:
            return
        pid, self.pid = self.pid, None
        try:
            os.kill(pid, signal.SIGTERM)
            for _ in range(50):
                os.kill(pid, 0)
                time.sleep(0.05)
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def __enter__(self) -> FioServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _accepts(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=0.2):
            return True
    except OSError:
        return False


def run_clients(job: FioJob, servers: Sequence[FioServer], workdir: Path, timeline: Timeline,
                name: str = "fio") -> list[FioResult]:
    """Drive every server from one `fio --client` process; one result (and series) per server."""
    if not servers:
        raise ValueError("run_clients needs at least one server")
    workdir.mkdir(parents=True, exist_ok=True)
    args = [FIO, "--output-format=json"]
    prefixes = []
    for index, server in enumerate(servers):
        client_name = f"{name}-c{index}"
        prefix = workdir / client_name
        client_job = replace(job, directory=job.directory / client_name)
        if ipaddress.ip_address(server.address).is_loopback:
            client_job.directory.mkdir(parents=True, exist_ok=True)  # remote servers bring their own
        (workdir / f"{client_name}.fio").write_text(client_job.text(prefix))
        args += [f"--client={server.spec}", f"{client_name}.fio"]
        prefixes.append((client_name, prefix, server))
    timeline.record(EventKind.WORKLOAD_START, name, workload="fio", profile=job.profile.name, mode="client", clients=len(servers))
    try:
        output = _run(args, job, workdir)
    finally:
        timeline.record(EventKind.WORKLOAD_STOP, name, workload="fio")
    if not output.get("client_stats"):
        raise RuntimeError(f"fio clients ran no job (see {workdir})")
    stats = {s.get("port"): s for s in output.get("client_stats", []) if s.get("jobname") != "All clients"}
    return [FioResult(client_name, load_series(prefix, client_name, timeline, suffix=f".{server.address}", jobs=job.numjobs),
                      stats.get(server.port, {}))
            for client_name, prefix, server in prefixes]


if TYPE_CHECKING:  # mypy proves fio meets the protocol
    def _is_a_workload(workload: FioWorkload) -> Workload:
        return workload
