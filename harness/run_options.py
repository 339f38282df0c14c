"""The run's command-line options, typed and checked before anything runs.

Every harness option is read once here, when pytest configures the run: a negative user
count, `nan` in an RTT sweep, a newline in a directory fio writes its job into, a backup URL
that carries a secret, each is refused with one line naming the option, before a lab starts or
a fault is planned. The dry-run prints the options as they will be used.
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import Annotated, Any, Final, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from faults.kinds import BackupParams, IopsLimitParams, RestoreParams
from harness.options import read
from harness.phases import PhaseDurations
from harness.safety.revert import DEFAULT_REVERT_TIMEOUT_S
from harness_kernel.errors import ConfigError
from harness_kernel.text import escaped, one_line
from harness_kernel.topology.models import Topology
from harness_kernel.topology.values import FILE_PATH, WIDEST_SITE_PREFIX, shown
from workloads.fio import JOB_PATH, PROFILES

RATE = re.compile(r"[1-9][0-9]{0,6}[kM]?")
SCHEDULER = re.compile(r"tcp://[A-Za-z0-9.:\[\]-]{1,253}:[0-9]{1,5}")
MAX_RTT_MS = 10_000.0


def steps_of(text: str) -> tuple[float, ...]:
    """`0,2,4,8`: RTT steps in ms, each finite, within 0..10000, at least one."""
    steps = []
    for word in text.split(","):
        try:
            value = float(word)
        except ValueError:
            raise ValueError(f"{word.strip()!r} is not a number of milliseconds") from None
        if not math.isfinite(value) or not 0 <= value <= MAX_RTT_MS:
            raise ValueError(f"{word.strip()!r} is not within 0..{MAX_RTT_MS:g} ms")
        steps.append(value)
    return tuple(steps)


def rates_of(text: str) -> tuple[str, ...]:
    rates = tuple(r.strip() for r in text.split(",") if r.strip())
    for rate in rates:
        if rate != "none" and not RATE.fullmatch(rate):
            raise ValueError(f"{rate!r} is neither 'none' nor a rate such as 4M")
    if not rates:
        raise ValueError("give at least one rate ('none' for unthrottled)")
    return rates


def _path(text: str) -> str:
    one_line(text)
    if not FILE_PATH.fullmatch(text):
        raise ValueError("an absolute path of letters, digits and '/_.@+=:,~-'")
    return text


def io_dir_of(text: str) -> str:
    """fio reads it in its job file: `:` separates directories there and `$` expands a variable."""
    _path(text)
    if not JOB_PATH.fullmatch(text):
        raise ValueError("an absolute path without ':' (fio's job file reads it)")
    return text


def destination_of(text: str) -> str:
    BackupParams(destination=text)
    return text


POSIX_SYSTEM_ROOTS = frozenset({"etc", "usr", "bin", "sbin", "lib*", "boot", "dev", "proc", "sys", "var", "root", "run"})
"""Directories of the system itself (`lib*`: lib, lib32, lib64...): a restore's copy never goes straight in one."""
KERNEL_TREES = ("proc", "sys", "dev")
WINDOWS_DRIVE = re.compile(r"[A-Za-z]:[\\/]")
WHERE_A_RESTORE_GOES = ("a restore writes its copy into a directory of its own (PostgreSQL's on this machine, e.g. "
                        "/srv/restore; SQL Server's on its server, e.g. D:\\Restore)")


def posix_directory_problem(path: str) -> str | None:
    """What is wrong with `path` as the directory a restore writes its copy into on a POSIX machine, or None."""
    if not path.startswith("/"):
        return "is not an absolute POSIX path"
    if path.startswith("//"):
        return "starts with '//', which POSIX leaves to the system (Windows reads a share): write one '/'"
    parts = PurePosixPath(re.sub("/+", "/", path)).parts[1:]
    if ".." in parts:
        return "climbs with '..': write the directory itself"
    if not parts:
        return "is the root directory"
    if parts[0] in KERNEL_TREES:
        return f"is under /{parts[0]}: the kernel's, no disk's"
    if len(parts) == 1 and any(fnmatch.fnmatchcase(parts[0], root) for root in POSIX_SYSTEM_ROOTS):
        return f"is a system directory (/{parts[0]})"
    return None


def windows_directory_problem(path: str) -> str | None:
    """What is wrong with `path` as the directory a restore moves its files into on a Windows server, or None.

    Windows reads `/` as `\\`, drops a name's trailing dots and spaces (`C:\\Windows.` is `C:\\Windows`) and reads
    what follows a `:` in a name as a stream of it (`C:\\Windows::$INDEX_ALLOCATION` is `C:\\Windows`)."""
    text = path.replace("/", "\\")
    if text.startswith(("\\\\.\\", "\\\\?\\")):
        return "is a device path (\\\\.\\ or \\\\?\\), not a directory"
    if text.startswith("\\\\"):
        names = [n for n in text[2:].split("\\") if n]
        if len(names) < 2:
            return "is no share: \\\\SERVER\\SHARE\\DIRECTORY"
        root, names = "a share's root", names[2:]
    elif WINDOWS_DRIVE.match(text):
        root, names = "a drive's root", [n for n in text[3:].split("\\") if n]
    else:
        return "is not an absolute Windows path (D:\\Restore, or \\\\SERVER\\SHARE\\DIRECTORY)"
    names = [n.split(":")[0] for n in names]
    if any(set(n) <= {".", " "} and n.count(".") > 1 for n in names):
        return "climbs with '..': write the directory itself"
    names = [n.rstrip(". ") for n in names if n.rstrip(". ")]
    if not names:
        return f"is {root}"
    if root == "a drive's root" and names[0].casefold() == "windows":
        return "is under the Windows directory"
    return None


def restore_destination_of(text: str) -> str:
    """Refused here when wrong for every engine; what is wrong for one engine only waits for the topology to say
    which (`check_restore_destination`)."""
    RestoreParams(backup="/", destination=text)
    posix, windows = posix_directory_problem(text), windows_directory_problem(text)
    if posix and windows:
        looks_windows = bool(re.match(r"[A-Za-z]:", text)) or "\\" in text or text.startswith("//")
        said = windows if looks_windows else posix if text.startswith("/") else "is a relative path"
        raise ValueError(f"{shown(text)} {said}: {WHERE_A_RESTORE_GOES}")
    return text


ENGINES: Final = {"postgres": ("PostgreSQL", "on this machine, e.g. /srv/restore", posix_directory_problem),
                  "sqlserver-ag": ("SQL Server", "on its Windows server, e.g. D:\\Restore", windows_directory_problem),
                  "sqlserver-fci": ("SQL Server", "on its Windows server, e.g. D:\\Restore", windows_directory_problem)}


def check_restore_destination(destination: str | None, topology: Topology, origin: str) -> None:
    """`--restore-destination` for the engine of the database a restore copies (the topology's first, as the
    suites pick it), once the topology says which: PostgreSQL restores on this machine, SQL Server on its server."""
    if destination is None or not topology.databases:
        return
    kind = topology.databases[0].kind
    engine, where, problem_of = ENGINES[kind]
    problem = problem_of(destination)
    if problem:
        raise ConfigError(escaped(f"--restore-destination: {shown(destination)} {problem}: {engine} restores {where} "
                                  f"({origin}: databases[0].kind is {kind})"))


def qos_disk_of(text: str) -> str:
    IopsLimitParams(iops_limit=1, disk=text)
    return text


def profile_of(text: str) -> str:
    if text not in PROFILES:
        raise ValueError(f"not one of {', '.join(sorted(PROFILES))}")
    return text


def _plain(text: str) -> str:
    return one_line(text)


def checked(check: Callable[[str], Any]) -> Any:
    """A validator that runs `check` on the option's text and keeps the text (the run parses it when it reads it)."""
    def keep(text: str) -> str:
        check(text)
        return text
    return AfterValidator(keep)


Finite = Annotated[float, Field(allow_inf_nan=False)]
PHASES: Final = PhaseDurations()  # the phases' defaults are the options'


class RunOptions(BaseModel):
    """The harness's options as the run uses them (field names are the options' without `--`), declared once:
    `harness.options` makes them pytest's options and reads them back through this model."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    baseline_s: Finite = Field(default=PHASES.baseline_s, ge=0, le=86_400,
                               description="steady-load baseline before each fault (s)")
    observe_s: Finite = Field(default=PHASES.observe_s, gt=0, le=86_400, description="how long each fault stays in effect (s)")
    settle_s: Finite = Field(default=PHASES.settle_s, ge=0, le=86_400,
                             description="load kept after recovery to read the new level (s)")
    recover_timeout_s: Finite = Field(default=PHASES.recover_timeout_s, gt=0, le=86_400,
                                      description="longest wait for the cluster to heal after a fault is reverted (s)")
    revert_timeout_s: Finite = Field(
        default=DEFAULT_REVERT_TIMEOUT_S, gt=0, le=86_400,
        description="longest a revert may take to prove the fault gone; the dead man's switch waits this long past "
                    "the fault's deadline, and recover as long (s)")
    steady_window_s: int = Field(default=PHASES.steady_window_s, ge=1, le=3600,
                                 description="seconds throughput must hold inside the band to count as a steady state")
    users: int = Field(default=8, ge=1, le=10_000, description="OLTP virtual users")
    scale: int = Field(default=10, ge=1, le=1_000_000, json_schema_extra={"metavar": "BRANCHES"},
                       description="OLTP data scale in branches, as pgbench -s; keep it >= --users, or commits queue "
                                   "on the few branch rows and the suite measures lock waits")
    accounts_per_branch: int = Field(default=10_000, ge=1, le=10_000_000,
                                     description="accounts per branch (pgbench has 100000; fewer keep the load and any "
                                                 "rebuild short)")
    load_workers: int = Field(default=0, ge=0, le=256,
                              description="spread the OLTP users over a local Dask cluster of N worker processes "
                                          "(default: in-process)")
    load_scheduler: Annotated[str, Field(pattern=SCHEDULER.pattern)] | None = Field(
        default=None, json_schema_extra={"metavar": "tcp://HOST:PORT"},
        description="spread the OLTP users over the Dask workers of this scheduler (your load machines; --users per "
                    "worker)")
    change_ticket: Annotated[str, checked(_plain), Field(max_length=200)] | None = Field(
        default=None, description="change ticket id to link from the report")
    change_url: Annotated[str, checked(_plain), Field(max_length=2000)] | None = Field(
        default=None, description="URL template of change tickets, with {ticket}")
    tables_dir: Annotated[str, checked(_path)] | None = Field(
        default=None, description="write the scenario tables (HTML, Markdown, JSON) here")
    figures_history: Annotated[str, checked(_path)] | None = Field(
        default=None, json_schema_extra={"metavar": "PATH"},
        description="the figures history of earlier nights (figures.jsonl beside the report): a duration measured in "
                    "one trial tonight takes its 95 % interval from its spread over the last nights")
    widest_site_subnet: int = Field(
        default=WIDEST_SITE_PREFIX, ge=1, le=32, json_schema_extra={"metavar": "PREFIX"},
        description=f"accept site subnets as wide as /PREFIX (default /{WIDEST_SITE_PREFIX}): a partition drops a "
                    "whole site subnet, so only the command line may widen it")
    inconclusive: Literal["flag", "fail"] = Field(
        default="flag", description="a figure whose 95 % interval holds its threshold: flag it in the summary (nightly runs), "
                            "or fail the test (go-live acceptance)")
    repeat: int = Field(default=1, ge=1, le=100, json_schema_extra={"metavar": "N"},
                        description="S2, S3 and S4: each fault case N times, a baseline before each (slow drift "
                                    "cancels); the tables give the median of the trials and the verdicts their 95 % "
                                    "interval across them")
    accept_weaker_replication: bool = Field(
        default=False, description="judge the lost-commit SLO even when the cluster replicates more weakly than the "
                           "topology's databases[].replication (by default a '0 lost' then is not judged: it proves "
                           "nothing)")


class RunSwitches(BaseModel):
    """The run's switches and places: declared here with the options, read where each is used (not in the dry-run's
    options line: they say what the run is, not how it measures)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    topology: str | None = Field(default=None, json_schema_extra={"metavar": "FILE|lab[:PREFIX]"},
                                 description="topology YAML of the target, or 'lab' for the embedded lab")
    dry_run: bool = Field(default=False, description="print every planned fault and touch nothing")
    allow_destructive: bool = Field(default=False, description="allow destructive faults on a topology that is not the "
                                                       "embedded lab")
    state_dir: str | None = Field(default=None, description="where the journal and locks live (default $HARNESS_STATE_DIR)")
    keep_lab: bool = Field(default=False, description="leave the embedded lab running at the end")
    no_guardian: bool = Field(default=False, description="inject without a guardian: a crash or kill -9 of the run leaves its "
                                                 "fault until `python -m harness recover` (the run record says the run "
                                                 "was unguarded)")
    workload: Literal["oltp", "observe"] = Field(
        default="oltp", description="oltp: the harness's virtual users with a commit ledger; observe: only read the database's "
                            "own commit counter while your application or HammerDB makes the load (no lost-commit "
                            "verdict)")
    quiet_progress: bool = Field(default=False, description="one line per wait instead of a live progress bar (CI)")


def read_options(getoption: Callable[[str], Any]) -> RunOptions:
    """The options from pytest (or any `--name` reader); a bad one is a `ConfigError` naming it."""
    return read(RunOptions, getoption)
