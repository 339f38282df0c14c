"""The harness's wheel as a user gets it: built from what a fresh clone has, run with nothing of the repository."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(argv: list[str], cwd: Path, timeout: float = 600, **env: str) -> subprocess.CompletedProcess[str]:
    """Run as a user would: nothing of this repository on the path (nor its tools, unless `env` says so)."""
    environment = {name: value for name, value in os.environ.items() if name not in ("PYTHONPATH", "HARNESS_TOOLS")}
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False,
                          env=environment | env)


def tracked_copy(root: Path, to: Path) -> Path:
    """The files of `root` that git does not ignore (what a fresh clone has, with the work in progress), copied to `to`."""
    listed = run(["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root)
    assert listed.returncode == 0, listed.stderr
    for name in filter(None, listed.stdout.split("\0")):
        if (root / name).is_file():
            (to / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / name, to / name)
    return to


def build_wheel(source: Path, dist: Path, cwd: Path) -> Path:
    """The wheel of the project at `source`, built into `dist` (a build writes beside its sources: give a copy)."""
    built = run([sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(source)], cwd=cwd)
    assert built.returncode == 0, built.stderr
    return max(dist.glob("*.whl"), key=lambda p: p.stat().st_mtime)


def fresh_venv(at: Path, *requirements: str, timeout: float = 900) -> Path:
    """A virtualenv at `at` with `requirements` installed by pip (from the package registry, the wheel by path)."""
    assert run([sys.executable, "-m", "venv", str(at)], cwd=at.parent).returncode == 0
    for requirement in requirements:
        done = run([str(at / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", requirement],
                   cwd=at.parent, timeout=timeout)
        assert done.returncode == 0, f"pip install {requirement}: {done.stderr[-2000:]}"
    return at
