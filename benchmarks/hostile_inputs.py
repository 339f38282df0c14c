"""What hostile sizes cost: topology load time by subnet count, `harness plan` with a long secret, the masker.

Each figure is the median of a few runs, printed with the machine's load average (a shared 2-core
box inflates them). Reference in the same run: the shipped example topology's load time, so the
subnet figures read as multiples of an ordinary file. Contacts nothing; writes only to a temporary
directory. Ends with `load_ratio_4096=<load at the subnet limit / load of the example>`.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import string
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import yaml

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT))

from harness_kernel.errors import ConfigError  # noqa: E402
from harness_kernel.redaction import Redactor  # noqa: E402
from harness_kernel.topology.loader import load_topology  # noqa: E402
from harness_kernel.topology.models import MAX_SITE_SUBNETS  # noqa: E402

EXAMPLE = ROOT / "examples" / "stretched-2plus2.yaml"


def median_s(action: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def with_subnets(directory: Path, count: int) -> Path:
    """The example with `count` /32 subnets on site-b (the review's shape), none covering an endpoint: addresses of
    198.18.0.0/15, the benchmarking range (the file is only loaded, never contacted)."""
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["sites"][1]["subnets"] = ["192.0.2.64/26"] + [f"198.{18 + i // 65536}.{i // 256 % 256}.{i % 256}/32"
                                                      for i in range(count - 1)]
    path = directory / f"subnets-{count}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def load_or_refusal(path: Path) -> str:
    try:
        load_topology(path)
        return "accepted"
    except ConfigError as exc:
        return "refused: " + str(exc).split(": ", 2)[-1][:80]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        reference = median_s(lambda: load_topology(EXAMPLE), args.runs)
        print(f"example topology: {reference * 1000:.1f} ms")
        per_count = {}
        for count in (1000, 2000, MAX_SITE_SUBNETS, 30_000):
            path = with_subnets(directory, count)
            seconds = median_s(lambda p=path: load_or_refusal(p), args.runs)  # type: ignore[misc]
            per_count[count] = seconds
            print(f"{count:>6} subnets ({path.stat().st_size // 1024} KiB): {seconds:.3f} s, {load_or_refusal(path)}")
        print(f"per 1000 subnets: 1k {per_count[1000]:.3f} s, 2k {per_count[2000] / 2:.3f} s, "
              f"{MAX_SITE_SUBNETS} {per_count[MAX_SITE_SUBNETS] / (MAX_SITE_SUBNETS / 1000):.3f} s")

        secret = "".join(random.Random(7).choice(string.ascii_letters + string.digits + "!#%&*+-=") for _ in range(10_000))
        env = {**os.environ, "HARNESS_VC_PASSWORD": secret, "HARNESS_SQL_PASSWORD": secret, "PYTHONDONTWRITEBYTECODE": "1"}
        plan = [sys.executable, "-m", "harness", "plan", "--topology", str(EXAMPLE), "--fault", "host-power-off@host:esx-a1",
                "--state-dir", str(directory / "state")]
        seconds = median_s(lambda: subprocess.run(plan, env=env, cwd=ROOT, capture_output=True, timeout=120, check=True),
                           args.runs)
        print(f"harness plan with a 10,000-character secret: {seconds:.2f} s (process start included)")

        rng = random.Random(11)
        secrets = ["".join(rng.choice(string.ascii_letters + string.digits + "!#%&*+-=") for _ in range(4000))
                   for _ in range(100)]
        start = time.perf_counter()
        masker = Redactor(secrets, ["harness", "root", "EXAMPLE\\harness"])
        built = time.perf_counter() - start
        output = "".join(rng.choice(string.printable) for _ in range(10_000 - 4200)) + secrets[5] + secrets[9][:100] + "..."
        masked = median_s(lambda: masker.mask(output), args.runs)
        assert secrets[5] not in masker.mask(output)
        print(f"masker, 100 secrets of 4,000 characters: built in {built:.2f} s, 10 kB of output masked in "
              f"{masked * 1000:.1f} ms")
    print(f"load_ratio_{MAX_SITE_SUBNETS}={per_count[MAX_SITE_SUBNETS] / reference:.0f}")


if __name__ == "__main__":
    main()
