"""What every example topology and the lab plan today, kept so that a change of structure is shown to plan the same.

The suites' dry-run (`pytest --pyargs harness_suites --topology T --dry-run`) prints each fault's plan and touches
nothing. Its output, with what changes from one run to the next normalised (a fault instance's random id, a tc
class number, the run's duration, the checkout's path), is kept in `tests/baselines/plans/<topology>.txt`; a unit
spec compares. A change meant to alter a plan regenerates them with `python -m tests.support.plan_baselines`, and
the diff shows what changed.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BASELINES = ROOT / "tests" / "baselines" / "plans"
TOPOLOGIES = {**{p.stem: str(p.relative_to(ROOT)) for p in sorted((ROOT / "examples").glob("*.yaml"))}, "lab": "lab"}
_VARYING = (
    (re.compile(r"(?<![0-9a-f])[0-9a-f]{12}(?![0-9a-f])"), "<id>"),  # a fault instance's id, in names and paths
    # the tc class a latency fault adds
    (re.compile(r"(htb default |htb [0-9a-f]+: default |classid [0-9a-f]+:)[0-9a-f]+"), r"\1<class>"),
    (re.compile(r" in [0-9.]+s$", re.M), " in <t>s"),
)


def normalised(text: str) -> str:
    text = text.replace(str(ROOT), "<checkout>")  # where the clone is
    for pattern, replacement in _VARYING:
        text = pattern.sub(replacement, text)
    return text


def dry_run(topology: str) -> str:
    """The suites' dry-run against `topology`, as a user without credentials in the environment runs it."""
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "harness_suites",
                           "--topology", topology, "--dry-run"], capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"dry-run of {topology} exited {done.returncode}: {done.stdout[-2000:]}{done.stderr[-1000:]}")
    return normalised(done.stdout)


def main() -> int:
    BASELINES.mkdir(parents=True, exist_ok=True)
    for name, topology in TOPOLOGIES.items():
        (BASELINES / f"{name}.txt").write_text(dry_run(topology))
        print(f"{BASELINES / f'{name}.txt'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
