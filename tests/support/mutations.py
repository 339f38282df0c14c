"""The mutation pass: flip each fact a stand-in serves, run the tests that use the stand-in, list the facts none depends on.

A fact no test depends on is one the stand-in could serve wrong without any test noticing: either
the backend does not use it (say so in its row) or a contract test is missing. Run it with
`make mutations` (every stand-in, about half an hour) or for one table:

    python -m tests.support.mutations --stand-in wsfc_model [--fact event.1135.log]

Each run sets HARNESS_STAND_IN_MUTATION=<stand-in>/<fact id> (tests/support/provenance.py; the
simulator reads the same variable) and runs pytest in a child process, bounded in time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.support.provenance import MUTATION
from tests.support.stand_in_tables import TABLES

ROOT = Path(__file__).resolve().parents[2]
RUN_TIMEOUT_S = 900
KILLED_BY = (1, 4, 10)  # the harness's exit codes for a failed test (README, "Exit codes")


@dataclass(frozen=True)
class StandIn:
    name: str
    tests: tuple[str, ...]  # what runs once per flipped fact
    not_using: str = ""  # a -k expression of the tests there that never meet this stand-in (left out: they cannot kill)

    def fact_ids(self) -> list[str]:
        if self.name == "vsim":
            from harness_lab.vsphere_binding import simulator_binary

            listed = subprocess.run([str(simulator_binary()), "-facts"], capture_output=True, text=True, check=True,
                                    timeout=30)
            return [str(row["ID"]) for row in json.loads(listed.stdout)]
        tables = {table.name: table for table in TABLES}
        return list(tables[self.name].rows)


OTHER_PLATFORMS = "nutanix or vplex or redfish"  # contract tests of stand-ins with no SQL Server or Windows in them

STAND_INS = {
    "wsfc_model": StandIn("wsfc_model", ("tests/integration/contract",), OTHER_PLATFORMS),
    "sqlserver_model": StandIn("sqlserver_model", ("tests/integration/contract",), OTHER_PLATFORMS),
    "sqlserver_backup": StandIn("sqlserver_backup", ("tests/integration/contract/test_sqlserver_backup.py",
                                                     "tests/integration/contract/test_sqlserver_restore.py")),
    "sqlserver_restore": StandIn("sqlserver_restore", ("tests/integration/contract/test_sqlserver_restore.py",)),
    "wsman": StandIn("wsman", ("tests/integration/contract",), OTHER_PLATFORMS),
    "vsim": StandIn("vsim", ("tests/integration/vsphere",)),
    "vplex": StandIn("vplex", ("tests/integration/contract/test_vplex_metro.py",)),
    "prism": StandIn("prism", ("tests/integration/contract/test_nutanix_prism.py",
                               "tests/integration/contract/test_nutanix_recover.py")),
}


@dataclass(frozen=True)
class Outcome:
    stand_in: str
    fact: str
    killed: bool  # a test failed with the fact flipped
    seconds: float
    failed: tuple[str, ...]
    exit_code: int = 0

    def verdict(self) -> str:
        if not self.killed:
            return "SURVIVED: no test depends on it"
        return f"killed by {self.failed[0] if self.failed else f'the session (pytest exit {self.exit_code})'}"


def run_once(stand_in: StandIn, fact: str, python: str = sys.executable) -> Outcome:
    """The stand-in's tests with one fact flipped; killed when any fails: a failed assertion (exit 1), or an
    error the harness counts as bad input (4) or as a broken control plane (10)."""
    env = {**os.environ, MUTATION: f"{stand_in.name}/{fact}", "HARNESS_REQUIRE_VSIM": "1"}
    started = time.monotonic()
    deselect = ["-k", f"not ({stand_in.not_using})"] if stand_in.not_using else []
    done = subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", "-rfE", "--timeout", "300",
                           *deselect, *stand_in.tests], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=RUN_TIMEOUT_S)
    if done.returncode not in (0, *KILLED_BY):
        raise RuntimeError(f"{stand_in.name}/{fact}: pytest exited {done.returncode} (not a test failure): "
                           f"{done.stdout[-1500:]}{done.stderr[-500:]}")
    failed = tuple(line.split(" ", 1)[1].split(" - ")[0] for line in done.stdout.splitlines()
                   if line.startswith(("FAILED ", "ERROR ")))
    return Outcome(stand_in.name, fact, done.returncode in KILLED_BY, time.monotonic() - started, failed, done.returncode)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.mutations", description=__doc__.splitlines()[0])
    parser.add_argument("--stand-in", choices=sorted(STAND_INS), action="append",
                        help="only this stand-in (repeatable; default: all)")
    parser.add_argument("--fact", action="append", help="only this fact id (repeatable)")
    args = parser.parse_args(argv)
    survivors = []
    for name in args.stand_in or sorted(STAND_INS):
        stand_in = STAND_INS[name]
        for fact in stand_in.fact_ids():
            if args.fact and fact not in args.fact:
                continue
            outcome = run_once(stand_in, fact)
            print(f"{name}/{fact}: {outcome.verdict()} ({outcome.seconds:.0f} s)", flush=True)
            if not outcome.killed:
                survivors.append(f"{name}/{fact}")
    print(f"facts no test depends on: {len(survivors)}" + "".join(f"\n  {s}" for s in survivors))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
