"""Who ran what, with which code, against which topology: the lines a change board ties a report to.

Written into the results' environment at session end (`run.*`, `harness.commit`, `topology.*`) and
shown on the report's first page and in its PDF. Nothing here is a credential: they reach the
harness only through the environment or a keyring, never the command line or the topology file.
"""

from __future__ import annotations

import getpass
import hashlib
import shlex
import socket
import subprocess
from pathlib import Path

from harness.topology_source import is_lab

CHECKOUT = Path(__file__).resolve().parents[1]
GIT_TIMEOUT_S = 5.0


def commit(checkout: Path = CHECKOUT) -> str:
    """The checkout's commit, "+ uncommitted changes" when its tracked files differ; "" for an installed package."""
    if not (checkout / ".git").exists():
        return ""
    try:
        head = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=GIT_TIMEOUT_S, check=False)
        dirty = subprocess.run(["git", "-C", str(checkout), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    if head.returncode != 0:
        return ""
    return head.stdout.strip() + (" + uncommitted changes" if dirty.returncode == 0 and dirty.stdout.strip() else "")


def operator() -> str:
    try:
        user = getpass.getuser()
    except (OSError, KeyError):
        user = "?"
    return f"{user}@{socket.gethostname()}"


UNGUARDED = "none (--no-guardian): a crash of the run would have left its fault until `python -m harness recover`"


def run_record(*, run_id: str, topology_source: str, command: list[str], change_ticket: str | None,
               guarded: bool = True) -> dict[str, str]:
    record = {"run.id": run_id, "run.operator": operator(), "run.command": shlex.join(["pytest", *command]),
              "harness.commit": commit()}
    if not guarded:
        record["run.guardian"] = UNGUARDED
    if not is_lab(topology_source) and Path(topology_source).is_file():
        record["topology.file"] = Path(topology_source).name
        record["topology.sha256"] = hashlib.sha256(Path(topology_source).read_bytes()).hexdigest()
    if change_ticket:
        record["run.change_ticket"] = change_ticket
    return {k: v for k, v in record.items() if v}
