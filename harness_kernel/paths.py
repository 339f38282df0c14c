"""Where things live on the harness machine: durable state (journal, locks) and installed tools."""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from harness_kernel.errors import ConfigError

DEFAULT_STATE_DIR = Path("/var/lib/resilience-harness")
DEBIAN_PG_BIN = Path("/usr/lib/postgresql/15/bin")  # Debian 12's PostgreSQL tools, off the PATH


def state_dir(explicit: str | Path | None = None) -> Path:
    """`--state-dir`, else `$HARNESS_STATE_DIR`, else the machine-wide default; created private (0700).

    It is checked (`private_dir`) where it is used (the journal, the locks): the journal there
    tells `recover` and the guardian what to revert, with this user's credentials, so a
    directory another user can write is refused.
    """
    chosen = Path(explicit or os.environ.get("HARNESS_STATE_DIR") or DEFAULT_STATE_DIR)
    with contextlib.suppress(OSError):  # not creatable: `private_dir` says why, where it is used
        chosen.mkdir(mode=0o700, parents=True, exist_ok=True)
    return chosen


def private_dir(path: Path) -> Path:
    """Create `path` (mode 0700) or check an existing one: a directory of this user that nobody else can write."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = path.stat()
    except OSError as exc:
        raise ConfigError(f"state directory {path}: {exc.strerror or exc}; choose another with --state-dir "
                          "or HARNESS_STATE_DIR") from None
    if not stat.S_ISDIR(info.st_mode):
        raise ConfigError(f"state directory {path}: not a directory")
    if info.st_uid != os.geteuid():
        raise ConfigError(f"state directory {path}: owned by uid {info.st_uid}, not by this user "
                          f"(uid {os.geteuid()}); its journal would direct this user's reverts")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise ConfigError(f"state directory {path}: writable by group or others (mode {stat.S_IMODE(info.st_mode):04o}); "
                          f"run `chmod go-w {path}` or choose a private directory")
    return path


def tools_dir() -> Path:
    """$HARNESS_TOOLS, else the repository's `.tools` (where `make setup` installs Toxiproxy and Allure)."""
    configured = os.environ.get("HARNESS_TOOLS")
    return Path(configured) if configured else Path(__file__).resolve().parents[1] / ".tools"
