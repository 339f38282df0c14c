"""An Exchange-style mail workload on fio, reported as ESRP reviewers read a Jetstress result.

Each instance is a mail database and its transaction log, two fio jobs: random 32 KiB database
reads and writes at a steady offered rate, and sequential synchronous log writes (`sync=1`, each
write durable before the next). One fio process runs every instance; its JSON report gives, per
job, the achieved IOPS and the completion latency's mean and percentiles, and its per-second logs
the series the report plots. A reviewer reads per instance and in total: achieved against target
IOPS, database read latency and log write latency (mean, 95th and 99th percentiles).

Thresholds are the user's (`--mail-db-read-ms`, `--mail-log-write-ms`): no source with a
default was found, so none is assumed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness_kernel.history.timeline import Timeline
from workloads.fio import FioJob, FioProfile, FioStopReport, FioWorkload, job_line, job_path
from workloads.fio_logs import FioSeries, load_series

PERCENTILES = (95.0, 99.0)
PERCENTILE_LIST = "percentile_list=" + ":".join(f"{p:g}" for p in PERCENTILES)  # constant: ':' is fio's list separator
DB = FioProfile("mail-db", "randrw", "32k", 60)  # database: random 32 KiB, 60 % reads
LOG = FioProfile("mail-log", "write", "4k", 0)  # log: sequential synchronous writes


@dataclass(frozen=True)
class MailInstance:
    """One database and its log, as one Jetstress instance is: a target rate for each."""

    name: str
    db_iops: int
    log_iops: int


@dataclass(frozen=True)
class MailJob:
    """Every instance's two jobs in one time-based fio run; sizes small enough for the lab's storage."""

    instances: tuple[MailInstance, ...]
    directory: Path
    runtime_s: int = 60
    db_size: str = "128m"
    log_size: str = "32m"
    ioengine: str = "psync"
    direct: bool = False
    grace_s: float = 30.0

    def __post_init__(self) -> None:
        names = [i.name for i in self.instances]
        if not names or len(set(names)) != len(names):
            raise ValueError(f"mail instances need distinct names, at least one: {names}")
        for instance in self.instances:
            job_line("instance", instance.name)
            if instance.db_iops < 1 or instance.log_iops < 1:
                raise ValueError(f"mail instance {instance.name}: target IOPS are whole numbers above 0")

    @property
    def jobs(self) -> int:
        return 2 * len(self.instances)

    def job_index(self, instance: str, part: str) -> int:
        """fio numbers jobs in file order from 1: each instance's database, then its log."""
        order = [i.name for i in self.instances].index(instance)
        return 2 * order + (1 if part == "db" else 2)

    def text(self, log_prefix: Path) -> str:
        """The job file; every value through `job_line` (fio runs `exec_prerun=`: nothing may add a line)."""
        lines = ["[global]", *(job_line(k, v) for k, v in (
            ("directory", job_path(self.directory)), ("runtime", self.runtime_s), ("time_based", 1),
            ("ioengine", self.ioengine), ("iodepth", 1), ("direct", int(self.direct)), ("log_avg_msec", 1000),
            ("log_unix_epoch", 1), ("write_iops_log", job_path(log_prefix)), ("write_lat_log", job_path(log_prefix)))),
            PERCENTILE_LIST, ""]
        for instance in self.instances:
            reads = max(1, round(instance.db_iops * DB.rwmixread / 100))
            lines += [f"[{instance.name}-db]", *(job_line(k, v) for k, v in (
                ("filename", f"{instance.name}-db.dat"), ("size", self.db_size), ("rw", DB.rw),
                ("rwmixread", DB.rwmixread), ("bs", DB.bs), ("rate_iops", f"{reads},{max(1, instance.db_iops - reads)}"))),
                "", f"[{instance.name}-log]", *(job_line(k, v) for k, v in (
                ("filename", f"{instance.name}-log.dat"), ("size", self.log_size), ("rw", LOG.rw), ("bs", LOG.bs),
                ("sync", 1), ("rate_iops", f",{instance.log_iops}"))), ""]
        return "\n".join(lines)

    def fio_job(self) -> FioJob:
        """The `FioJob` the runner needs (runtime, grace, directory); the job file is this one's."""
        return FioJob(DB, self.directory, runtime_s=self.runtime_s, grace_s=self.grace_s, numjobs=self.jobs)


class MailWorkload(FioWorkload):
    """The mail workload as a `Workload` (start, stop), read per instance at stop."""

    def __init__(self, job: MailJob, workdir: Path, timeline: Timeline, name: str = "mail") -> None:
        super().__init__(job.fio_job(), workdir, timeline, name)
        self.mail = job
        self.reports: dict[str, dict[str, Any]] = {}

    def job_file(self) -> str:
        return self.mail.text(self._path(""))

    def stop(self, timeout_s: float = 10.0) -> FioStopReport:
        report = super().stop(timeout_s)
        self.reports = {str(j.get("jobname")): j for j in self.all_jobs}
        return report

    def part_series(self, instance: str, part: str) -> FioSeries:
        """One job's per-second series (`db` or `log` of `instance`)."""
        return load_series(self._path(""), f"{self.name}.{instance}-{part}", self.timeline,
                           job_indices=(self.mail.job_index(instance, part),))

    def results(self) -> MailResults:
        return MailResults.of(self.mail.instances, self.reports)


@dataclass(frozen=True)
class Latency:
    """Completion latency in milliseconds: mean and the PERCENTILES."""

    mean_ms: float | None
    percentiles_ms: Mapping[float, float]

    @classmethod
    def of(cls, direction: Mapping[str, Any]) -> Latency:
        clat = direction.get("clat_ns") or {}
        if not direction.get("total_ios"):
            return cls(None, {})
        listed = clat.get("percentile") or {}
        return cls(float(clat.get("mean", 0.0)) / 1e6,
                   {p: float(listed[f"{p:.6f}"]) / 1e6 for p in PERCENTILES if f"{p:.6f}" in listed})


@dataclass(frozen=True)
class InstanceResult:
    name: str
    target_db_iops: float
    db_iops: float  # reads + writes achieved
    db_read: Latency
    db_write: Latency
    target_log_iops: float
    log_iops: float
    log_write: Latency

    @property
    def db_achieved(self) -> float | None:
        return self.db_iops / self.target_db_iops if self.target_db_iops else None


@dataclass(frozen=True)
class MailResults:
    instances: tuple[InstanceResult, ...]

    @classmethod
    def of(cls, instances: Sequence[MailInstance], reports: Mapping[str, Mapping[str, Any]]) -> MailResults:
        found = []
        for instance in instances:
            db, log = reports.get(f"{instance.name}-db") or {}, reports.get(f"{instance.name}-log") or {}
            read, write, log_write = db.get("read") or {}, db.get("write") or {}, log.get("write") or {}
            found.append(InstanceResult(
                instance.name, instance.db_iops, float(read.get("iops", 0.0)) + float(write.get("iops", 0.0)),
                Latency.of(read), Latency.of(write), instance.log_iops, float(log_write.get("iops", 0.0)),
                Latency.of(log_write)))
        return cls(tuple(found))

    def total(self) -> InstanceResult:
        """Every instance together: IOPS add up; latencies are IOPS-weighted means (percentiles: the worst)."""
        def weighted(pick: str, weight: str) -> Latency:
            pairs = [(getattr(r, pick), getattr(r, weight)) for r in self.instances if getattr(r, pick).mean_ms is not None]
            if not pairs or not sum(w for _, w in pairs):
                return Latency(None, {})
            mean = sum(lat.mean_ms * w for lat, w in pairs) / sum(w for _, w in pairs)
            return Latency(mean, {p: max(lat.percentiles_ms.get(p, 0.0) for lat, _ in pairs) for p in PERCENTILES})
        rows = self.instances
        return InstanceResult("all instances", sum(r.target_db_iops for r in rows), sum(r.db_iops for r in rows),
                              weighted("db_read", "db_iops"), weighted("db_write", "db_iops"),
                              sum(r.target_log_iops for r in rows), sum(r.log_iops for r in rows),
                              weighted("log_write", "log_iops"))


def even_instances(count: int, db_iops: int, log_iops: int) -> tuple[MailInstance, ...]:
    """`count` instances sharing the total target rates evenly (`mbx1`, `mbx2`, ...)."""
    if count < 1:
        raise ValueError("at least one mail instance")
    return tuple(MailInstance(f"mbx{i + 1}", max(1, db_iops // count), max(1, log_iops // count)) for i in range(count))
