"""The harness as a user installs it: a wheel in a fresh virtualenv, used by a pytest project of their own.

`pip install` of the wheel must give any pytest project the options, fixtures and markers
(through the `pytest11` entry point), without this repository on the path.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

ROOT = Path(__file__).parents[2]

EXPERIMENT = textwrap.dedent("""\
    import pytest
    from faults.base import FaultSpec

    @pytest.mark.faults(FaultSpec("host-crash", "host:host-a"), FaultSpec("link-partition", "link:site-a~site-b"))
    def test_my_own_experiment(inject, timeline):
        with inject(FaultSpec("host-crash", "host:host-a")) as active:
            active.sleep(1)
    """)


def run(argv: list[str], cwd: Path, timeout: float = 600, **env: str) -> subprocess.CompletedProcess[str]:
    """Run as a user would: nothing of this repository on the path (nor its tools, unless `env` says so)."""
    environment = {name: value for name, value in os.environ.items() if name not in ("PYTHONPATH", "HARNESS_TOOLS")}
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False,
                          env=environment | env)


def test_a_wheel_installed_in_a_fresh_virtualenv_plugs_into_any_pytest_project(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    built = run([sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(ROOT)], cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    wheel = next(dist.glob("resilience_harness-*.whl"))
    shipped = zipfile.ZipFile(wheel).namelist()
    assert any(name.startswith("harness/plugin.py") for name in shipped)
    for layer in ("harness_suites/test_s4_application_failover.py", "harness_lab/controller.py", "harness_kernel/errors.py"):
        assert layer in shipped, f"{layer} must ship: the suites, the lab and the kernel are part of the product"
    assert not [name for name in shipped if name.startswith("tests/")], "test support must not ship"
    assert any(line.startswith("[pytest11]") for line in zipfile.ZipFile(wheel).read(
        next(n for n in shipped if n.endswith("entry_points.txt"))).decode().splitlines())

    venv = tmp_path / "venv"
    assert run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path).returncode == 0
    installed = run([str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", str(wheel)], cwd=tmp_path)
    assert installed.returncode == 0, installed.stderr

    project = tmp_path / "their-project"
    project.mkdir()
    (project / "test_experiment.py").write_text(EXPERIMENT)
    dry = run([str(venv / "bin" / "python"), "-m", "pytest", "-p", "no:cacheprovider", "--topology", "lab", "--dry-run",
               "--state-dir", str(tmp_path / "state"), str(project)], cwd=project, timeout=120)
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert "host-crash on host:host-a via lab" in dry.stdout
    assert "link-partition on link:site-a~site-b via router router over local namespace hlab-r" in dry.stdout
    assert "dry-run: 2 fault(s) planned in 1 test(s)" in dry.stdout
    assert "PytestUnknownMarkWarning" not in dry.stdout, "the plugin registers its markers"
    imported = run([str(venv / "bin" / "python"), "-c", "import harness.plugin; print(harness.plugin.__file__)"],
                   cwd=project)
    assert str(venv) in imported.stdout, "the plugin must come from the wheel, not from the repository"

    example = project / "prod.yaml"  # their topology, in their project
    example.write_text((ROOT / "examples" / "stretched-2plus2.yaml").read_text())
    s4 = run([str(venv / "bin" / "python"), "-m", "pytest", "-p", "no:cacheprovider", "--pyargs", "harness_suites",
              "--topology", str(example), "--dry-run", "--state-dir", str(tmp_path / "state"),
              "-k", "test_s4 and planned and not unplanned"], cwd=project, timeout=120)
    assert s4.returncode == 0, s4.stdout + s4.stderr
    assert "role-move on database:sql-ag-01 via sqlserver" in s4.stdout, s4.stdout
    assert "ALTER AVAILABILITY GROUP [AG01] FAILOVER" in s4.stdout
    assert "dry-run: 1 fault(s) planned in 1 test(s)" in s4.stdout, s4.stdout
    planned = "test_failover_finishes_within_the_slo_and_loses_no_acknowledged_commit[planned]"
    assert f"harness_suites/test_s4_application_failover.py::{planned}]" in s4.stdout, s4.stdout
    helped = run([str(venv / "bin" / "python"), "-m", "pytest", "--help"], cwd=project)
    for option in ("--topology", "--dry-run", "--allow-destructive", "--observe-s"):
        assert option in helped.stdout, f"the plugin's {option} must appear in pytest --help"
    no_tools = tmp_path / "no-tools"
    no_tools.mkdir()
    demo = run([str(venv / "bin" / "python"), "-m", "harness", "demo", "--no-vsphere"], cwd=project, timeout=60,
               HARNESS_TOOLS=str(no_tools))
    assert demo.returncode != 0 and "a checkout of the harness's repository installs them with `make setup`" in demo.stderr, \
        demo.stdout + demo.stderr
