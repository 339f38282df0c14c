"""Run what the router backend sends in a local `sh`, with stub `nft` and `tc`.

Quoting, the dead man's process handling and the guards in its undo run for real; the stubs
only log their arguments (and `tc` answers `qdisc show` from files), so nothing on this
machine's network is touched. Every process started here carries `LOCAL_ROUTER=<dir>` in its
environment, so a test ends exactly its own processes (`kill_all`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

from faults.transports.shell import CommandResult

NFT = """\
#!/bin/sh
printf 'nft %s\\n' "$*" >>"$LOCAL_ROUTER/calls"
exit 0
"""

TC = """\
#!/bin/sh
printf 'tc %s\\n' "$*" >>"$LOCAL_ROUTER/calls"
dev=; handle=; prev=
for a in "$@"; do
  [ "$prev" = dev ] && dev=$a
  [ "$prev" = handle ] && handle=$a
  prev=$a
done
state="$LOCAL_ROUTER/root.$dev"
[ -f "$state" ] || { echo "Cannot find device \\"$dev\\"" >&2; exit 1; }
case "$1 $2" in
  "qdisc show") cat "$state"; exit 0 ;;
  "qdisc del")
    current=$(cut -d' ' -f3 "$state")
    if [ -n "$handle" ] && [ "$handle" != "$current" ]; then echo "Error: Invalid handle." >&2; exit 2; fi
    echo "qdisc noqueue 0: root refcnt 2 " >"$state"; exit 0 ;;
esac
exit 0
"""


@dataclass
class LocalRouter:
    home: Path

    def __post_init__(self) -> None:
        (self.home / "bin").mkdir(parents=True, exist_ok=True)
        for name, text in (("nft", NFT), ("tc", TC)):
            path = self.home / "bin" / name
            path.write_text(textwrap.dedent(text))
            path.chmod(0o755)
        (self.home / "calls").touch()

    @property
    def env(self) -> dict[str, str]:
        return {"PATH": f"{self.home / 'bin'}:/usr/sbin:/usr/bin:/sbin:/bin", "LOCAL_ROUTER": str(self.home)}

    def sh(self, command: str, *, input_text: str | None = None, timeout_s: float = 20) -> CommandResult:
        done = subprocess.run(["sh", "-c", command], input=input_text, capture_output=True, text=True,
                              env=self.env, timeout=timeout_s, check=False)
        return CommandResult(done.returncode, done.stdout, done.stderr)

    def set_root(self, dev: str, line: str) -> None:
        (self.home / f"root.{dev}").write_text(line.rstrip("\n") + "\n")

    def root(self, dev: str) -> str:
        return (self.home / f"root.{dev}").read_text().strip()

    def calls(self) -> list[str]:
        return (self.home / "calls").read_text().splitlines()

    def wait_for_call(self, text: str, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if any(text in call for call in self.calls()):
                return True
            time.sleep(0.05)
        return any(text in call for call in self.calls())

    def processes(self) -> dict[int, list[str]]:
        """pid -> argv of every live process started through this router."""
        mark = f"LOCAL_ROUTER={self.home}".encode()
        found = {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if mark not in (entry / "environ").read_bytes().split(b"\0"):
                    continue
                argv = (entry / "cmdline").read_bytes().split(b"\0")[:-1]
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if state != "Z":
                found[int(entry.name)] = [a.decode(errors="replace") for a in argv]
        return found

    def kill_all(self) -> None:
        for pid in self.processes():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@dataclass
class StubRouterShell:
    """An SshShell stand-in whose commands run through a LocalRouter (see the module docstring)."""

    router: LocalRouter
    where: str = "local-router (stub nft and tc)"
    wire: str = "ssh"

    def run(self, command: str, *, input_text: str | None = None, timeout_s: float | None = None) -> CommandResult:
        return self.router.sh(command, input_text=input_text)

    def check(self, command: str, *, input_text: str | None = None, timeout_s: float | None = None) -> str:
        from harness_kernel.errors import ControlPlaneError

        done = self.run(command, input_text=input_text)
        if done.status != 0:
            raise ControlPlaneError(f"`{command}` failed ({done.status}): {done.stderr.strip()}")
        return done.stdout

    def close(self) -> None:
        pass
