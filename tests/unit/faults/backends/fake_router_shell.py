"""A recording stand-in for `SshShell`: a simulated Linux router that answers what the router backend sends.

It keeps the router's nft tables and each port's qdiscs, answers `nft`/`tc` the way the real tools
do (exit status and stderr), records every command line, and lets a test script any answer
(`answer(match, result)`) or raise (`fail_with(match, exc)`). Dead man commands (arm, disarm)
are recorded, not executed: tests that need them to run use `local_router.py`.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field

from faults.transports.shell import CommandResult

NOQUEUE = "qdisc noqueue 0: root refcnt 2 "
OPERATOR_HTB = "qdisc htb 1: root refcnt 2 r2q 10 default 0x30 direct_packets_stat 0 direct_qlen 1000"
ALL_CAPS = "000001ffffffffff"
NO_NET_ADMIN = "0000000000000000"
Match = Callable[[str], bool] | str


def _matches(match: Match, command: str) -> bool:
    return match in command if isinstance(match, str) else match(command)


def is_arm(command: str) -> bool:
    return "setsid" in command and "deadman" in command


def is_disarm(command: str) -> bool:
    return not is_arm(command) and "deadman" in command and "kill" in command


def unwrap(command: str) -> tuple[str, ...]:
    """`sh -c 'CMD; exit $?' harness-inject-ID` (an inject command with its marker) is CMD."""
    argv = shlex.split(command)
    if argv[:2] == ["sh", "-c"] and len(argv) == 4 and argv[3].startswith("harness-inject-"):
        return tuple(shlex.split(argv[2].removesuffix("; exit $?")))
    return tuple(argv)


@dataclass
class FakeSshShell:
    """The recording SshShell stand-in (see the module docstring)."""

    devices: dict[str, str] = field(default_factory=lambda: {"eth1": NOQUEUE, "eth2": NOQUEUE})
    netem: bool = True
    capeff: str = ALL_CAPS
    where: str = "fake-router (root@192.0.2.254:22)"
    wire: str = "ssh"
    sent: list[str] = field(default_factory=list)
    inputs: list[str | None] = field(default_factory=list)
    tables: set[str] = field(default_factory=set)
    children: dict[str, list[str]] = field(default_factory=dict)
    inflight: bool = False
    closed: int = 0
    _answers: list[tuple[Match, CommandResult | BaseException]] = field(default_factory=list)

    # -- scripting ---------------------------------------------------------------
    def answer(self, match: Match, result: CommandResult | BaseException) -> None:
        """From now on, answer commands matching `match` (substring or predicate) with `result` (or raise it)."""
        self._answers.insert(0, (match, result))

    def forget_answers(self) -> None:
        self._answers.clear()

    # -- what was sent -----------------------------------------------------------
    def deletes_of_a_root(self) -> list[str]:
        return [c for c in self.sent if re.search(r"\btc qdisc del\b", c) and "root" in c
                and not is_arm(c)]

    def disarms(self) -> list[str]:
        return [c for c in self.sent if is_disarm(c)]

    def arms(self) -> list[str]:
        return [c for c in self.sent if is_arm(c)]

    # -- the SshShell surface ----------------------------------------------------
    def run(self, command: str, *, input_text: str | None = None, timeout_s: float | None = None) -> CommandResult:
        self.sent.append(command)
        self.inputs.append(input_text)
        for match, result in self._answers:
            if _matches(match, command):
                if isinstance(result, BaseException):
                    raise result
                return result
        return self._router(command, input_text)

    def check(self, command: str, *, input_text: str | None = None, timeout_s: float | None = None) -> str:
        from harness_kernel.errors import ControlPlaneError

        done = self.run(command, input_text=input_text, timeout_s=timeout_s)
        if done.status != 0:
            raise ControlPlaneError(f"ssh {self.where}: `{command}` failed ({done.status}): {done.stderr.strip()}")
        return done.stdout

    def close(self) -> None:
        self.closed += 1

    # -- the simulated router ----------------------------------------------------
    def _router(self, command: str, input_text: str | None) -> CommandResult:
        ok = CommandResult(0, "", "")
        if is_arm(command) or is_disarm(command):
            return ok
        if "harness-inject-" in command and "/proc" in command:  # is an inject of this fault still running?
            return CommandResult(0, "/proc/4242/cmdline\n", "") if self.inflight else CommandResult(1, "", "")
        if "CapEff" in command:  # the preflight's probe: tools, then the login's capabilities
            return CommandResult(0, f"CapEff:\t{self.capeff}\n", "")
        argv = unwrap(command)
        if argv[:1] == ("nft",):
            return self._nft(argv, input_text)
        if argv[:1] == ("tc",):
            return self._tc(argv)
        return ok

    def _nft(self, argv: tuple[str, ...], input_text: str | None) -> CommandResult:
        if argv[1:] == ("-f", "-"):
            names = re.findall(r"^table inet (\S+) \{$", input_text or "", re.M)
            self.tables.add(names[-1])
            return CommandResult(0, "", "")
        if argv[1:3] == ("list", "tables"):
            return CommandResult(0, "".join(f"table inet {t}\n" for t in sorted(self.tables)), "")
        if argv[1:4] == ("list", "table", "inet"):
            if argv[4] in self.tables:
                return CommandResult(0, f"table inet {argv[4]} {{\n}}\n", "")
            return CommandResult(1, "", f"Error: No such file or directory\nlist table inet {argv[4]}\n")
        if argv[1:4] == ("delete", "table", "inet"):
            if argv[4] in self.tables:
                self.tables.discard(argv[4])
                return CommandResult(0, "", "")
            return CommandResult(1, "", "Error: Could not process rule: No such file or directory\n")
        return CommandResult(0, "", "")

    def _tc(self, argv: tuple[str, ...]) -> CommandResult:
        dev = argv[argv.index("dev") + 1] if "dev" in argv else ""
        if dev not in self.devices:
            return CommandResult(1, "", f'Cannot find device "{dev}"\n')
        if argv[1:3] == ("qdisc", "show"):
            root = self.devices[dev] + "\n"
            return CommandResult(0, root if "root" in argv else root + "".join(f"{c}\n" for c in self.children.get(dev, [])), "")
        if argv[1:3] == ("qdisc", "add") and "root" in argv:
            if not self.devices[dev].startswith(("qdisc noqueue 0:", "qdisc fq_codel 0:")):
                return CommandResult(2, "", "Error: Exclusivity flag on, cannot modify.\n")
            handle, default = argv[argv.index("handle") + 1], argv[argv.index("default") + 1]
            self.devices[dev] = (f"qdisc htb {handle} root refcnt 2 r2q 10 default {int(default, 16):#x} "
                                 "direct_packets_stat 0 direct_qlen 1000")
            return CommandResult(0, "", "")
        if argv[1:3] == ("qdisc", "add") and "netem" in argv:
            if not self.netem:
                return CommandResult(2, "", "Error: Specified qdisc kind is unknown.\n")
            handle, parent = argv[argv.index("handle") + 1], argv[argv.index("parent") + 1]
            self.children.setdefault(dev, []).append(f"qdisc netem {handle} parent {parent} limit 1000 delay 5ms")
            return CommandResult(0, "", "")
        if argv[1:3] == ("qdisc", "del") and "root" in argv:
            current = self.devices[dev].split()[2]
            if "handle" in argv and argv[argv.index("handle") + 1] != current:
                return CommandResult(2, "", "Error: Invalid handle.\n")
            if current == "0:":
                return CommandResult(2, "", "Error: Cannot delete qdisc with handle of zero.\n")
            self.devices[dev] = NOQUEUE
            self.children.pop(dev, None)
            return CommandResult(0, "", "")
        return CommandResult(0, "", "")
