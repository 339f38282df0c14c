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

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from faults.kinds import BackupParams, IopsLimitParams, RestoreParams
from harness_kernel.errors import ConfigError
from harness_kernel.text import escaped, one_line
from harness_kernel.topology.models import FILE_PATH, WIDEST_SITE_PREFIX, Topology, shown
from workloads.fio import JOB_PATH, PROFILES

RATE = re.compile(r"[1-9][0-9]{0,6}[kM]?")
SCHEDULER = re.compile(r"tcp://[A-Za-z0-9.:\[\]-]{1,253}:[0-9]{1,5}")
MAX_RTT_MS = 10_000.0


def _steps(text: str) -> tuple[float, ...]:
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


def _rates(text: str) -> tuple[str, ...]:
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


def _io_dir(text: str) -> str:
    """fio reads it in its job file: `:` separates directories there and `$` expands a variable."""
    _path(text)
    if not JOB_PATH.fullmatch(text):
        raise ValueError("an absolute path without ':' (fio's job file reads it)")
    return text


def _destination(text: str) -> str:
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


def _restore_destination(text: str) -> str:
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


def _qos_disk(text: str) -> str:
    IopsLimitParams(iops_limit=1, disk=text)
    return text


def _profile(text: str) -> str:
    if text not in PROFILES:
        raise ValueError(f"not one of {', '.join(sorted(PROFILES))}")
    return text


def _plain(text: str) -> str:
    return one_line(text)


def _checked(check: Callable[[str], Any]) -> Any:
    """A validator that runs `check` on the option's text and keeps the text (the run parses it when it reads it)."""
    def keep(text: str) -> str:
        check(text)
        return text
    return AfterValidator(keep)


Finite = Annotated[float, Field(allow_inf_nan=False)]


class RunOptions(BaseModel):
    """The harness's options as the run uses them (field names are the options' without `--`)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    baseline_s: Finite = Field(ge=0, le=86_400)
    observe_s: Finite = Field(gt=0, le=86_400)
    settle_s: Finite = Field(ge=0, le=86_400)
    recover_timeout_s: Finite = Field(gt=0, le=86_400)
    revert_timeout_s: Finite = Field(gt=0, le=86_400)
    steady_window_s: int = Field(ge=1, le=3600)
    users: int = Field(ge=1, le=10_000)
    scale: int = Field(ge=1, le=1_000_000)
    accounts_per_branch: int = Field(ge=1, le=10_000_000)
    rtt_steps: Annotated[str, _checked(_steps)]
    step_s: Finite = Field(gt=0, le=86_400)
    warmup_s: Finite = Field(ge=0, le=86_400)
    load_workers: int = Field(ge=0, le=256)
    load_scheduler: Annotated[str, Field(pattern=SCHEDULER.pattern)] | None = None
    migration_rtt_steps: Annotated[str, _checked(_steps)]
    io_profile: Annotated[str, _checked(_profile)]
    io_rate_iops: int = Field(ge=0, le=10_000_000)
    io_dir: Annotated[str, _checked(_io_dir)] | None = None
    mail_instances: int = Field(default=2, ge=1, le=64)
    mail_log_iops: int = Field(default=0, ge=0, le=10_000_000)
    mail_db_read_ms: Finite | None = Field(default=None, gt=0, le=60_000)
    mail_log_write_ms: Finite | None = Field(default=None, gt=0, le=60_000)
    soak_s: Finite = Field(default=0, ge=0, le=7 * 86_400)
    backup_rates: Annotated[str, _checked(_rates)]
    backup_destination: Annotated[str, _checked(_destination)] | None = None
    backup_timeout_s: Finite = Field(gt=0, le=86_400)
    restore_destination: Annotated[str, _checked(_restore_destination)] | None = None
    qos_iops_limit: int | None = Field(default=None, ge=1, le=2_147_483_647)
    qos_disk: Annotated[str, _checked(_qos_disk)] = "Hard disk 1"
    change_ticket: Annotated[str, _checked(_plain), Field(max_length=200)] | None = None
    change_url: Annotated[str, _checked(_plain), Field(max_length=2000)] | None = None
    tables_dir: Annotated[str, _checked(_path)] | None = None
    figures_history: Annotated[str, _checked(_path)] | None = None
    widest_site_subnet: int = Field(default=WIDEST_SITE_PREFIX, ge=1, le=32)
    inconclusive: Literal["flag", "fail"] = "flag"
    repeat: int = Field(default=1, ge=1, le=100)
    accept_weaker_replication: bool = False

    @property
    def rtt_step_values(self) -> tuple[float, ...]:
        return _steps(self.rtt_steps)

    @property
    def migration_rtt_step_values(self) -> tuple[float, ...]:
        return _steps(self.migration_rtt_steps)

    @property
    def backup_rate_values(self) -> tuple[str, ...]:
        return _rates(self.backup_rates)

    def render(self) -> str:
        """One line for the dry-run: every option as the run will use it."""
        shown = self.model_dump(exclude_none=True)
        return "options: " + ", ".join(f"--{k.replace('_', '-')}={v}" for k, v in shown.items())


def read_options(getoption: Callable[[str], Any]) -> RunOptions:
    """The options from pytest (or any `--name` reader); a bad one is a `ConfigError` naming it."""
    raw = {name: getoption("--" + name.replace("_", "-")) for name in RunOptions.model_fields}
    try:
        return RunOptions.model_validate({k: v for k, v in raw.items() if v is not None})
    except ValidationError as exc:
        error = exc.errors()[0]
        option = "--" + str(error["loc"][0]).replace("_", "-") if error["loc"] else "an option"
        message = str(error["msg"]).removeprefix("Value error, ")
        raise ConfigError(f"{option}: {message}") from None
