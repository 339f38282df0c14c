"""Running commands on the lab machine, inside a namespace and as a user when asked.

`ip netns exec` and `setpriv` both exec the command, so a Popen's pid is the real pid of the
program: that is what the lab records and later signals.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from harness_kernel.errors import ControlPlaneError
from harness_kernel.paths import DEBIAN_PG_BIN

PG_BIN = DEBIAN_PG_BIN
BASE_PATH = f"{PG_BIN}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


PG_SOCKET_DIR = "/var/run/postgresql"


def wrap(argv: Sequence[str], netns: str | None = None, user: str | None = None,
         socket_dir: Path | None = None) -> list[str]:
    """The command line that runs `argv` in `netns` as `user`, with no intermediate process.

    `socket_dir` is bind-mounted over PostgreSQL's socket directory in the private mount
    namespace `ip netns exec` creates: each lab node then has its own sockets and lock files
    although all listen on port 5432, and nothing leaks into the host's mounts.
    """
    cmd = list(argv)
    if user is not None:
        cmd = ["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups", *cmd]
    if socket_dir is not None:
        if netns is None:
            raise ValueError("a private socket directory needs a namespace (its own mount namespace)")
        cmd = ["sh", "-c", f'mount --bind "$0" {PG_SOCKET_DIR} && exec "$@"', str(socket_dir), *cmd]
    if netns is not None:
        cmd = ["ip", "netns", "exec", netns, *cmd]
    return cmd


def environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {"PATH": BASE_PATH, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
    env.update(extra or {})
    return env


def run(argv: Sequence[str], *, netns: str | None = None, user: str | None = None,
        env: Mapping[str, str] | None = None, check: bool = True, timeout: float = 60.0,
        input_text: str | None = None, cwd: Path | None = None,
        socket_dir: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run to completion; on failure raise ControlPlaneError with the command and its stderr."""
    cmd = wrap(argv, netns, user, socket_dir)
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=timeout, env=environment(env),
                              input=input_text, cwd=cwd, check=False)
    except subprocess.TimeoutExpired as exc:
        raise ControlPlaneError(f"timed out after {timeout:.0f} s: {' '.join(cmd)}") from exc
    if check and done.returncode != 0:
        detail = (done.stderr or done.stdout).strip()[-2000:]
        raise ControlPlaneError(f"failed ({done.returncode}): {' '.join(cmd)}\n{detail}")
    return done


def spawn(argv: Sequence[str], *, netns: str | None = None, user: str | None = None,
          env: Mapping[str, str] | None = None, log: Path, cwd: Path | None = None,
          socket_dir: Path | None = None) -> subprocess.Popen[bytes]:
    """Start a long-running service in its own session, output appended to `log`."""
    with open(log, "ab") as out:
        return subprocess.Popen(wrap(argv, netns, user, socket_dir), stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=environment(env), cwd=cwd, start_new_session=True)


def require_tools(names: Sequence[str]) -> None:
    """Fail early, naming every missing program and the package that brings it."""
    missing = [n for n in names if shutil.which(n, path=BASE_PATH) is None]
    if missing:
        raise ControlPlaneError(f"missing programs: {', '.join(missing)}; run `make setup` "
                                f"(installs scripts/apt-packages.txt) or apt-get install the packages that provide them")


def require_root() -> None:
    if os.geteuid() != 0:
        raise ControlPlaneError("the embedded lab needs root (network namespaces, nft, users): run it as root or with sudo")


def wait_for(predicate: Callable[[], object], timeout_s: float, what: str, interval_s: float = 0.1) -> None:
    """Poll until `predicate()` is truthy; ControlPlaneError naming `what` after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise ControlPlaneError(f"{what} not ready within {timeout_s:.0f} s")
        time.sleep(interval_s)
