"""The run's command-line options, typed and checked before anything runs.

Every harness option is read once here, when pytest configures the run: a negative user
count, `nan` in an RTT sweep, a newline in a directory fio writes its job into, a backup URL
that carries a secret, each is refused with one line naming the option, before a lab starts or
a fault is planned. The dry-run prints the options as they will be used.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from faults.kinds import BackupParams, IopsLimitParams, RestoreParams
from harness_kernel.errors import ConfigError
from harness_kernel.text import one_line
from harness_kernel.topology.models import FILE_PATH, WIDEST_SITE_PREFIX
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


def _restore_destination(text: str) -> str:
    RestoreParams(backup="/", destination=text)
    return text


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
