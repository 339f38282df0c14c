"""The harness as a user installs it: a wheel in a fresh virtualenv, used by a pytest project of their own.

`pip install` of the wheel must give any pytest project the options, fixtures and markers
(through the `pytest11` entry point), without this repository on the path. A platform from
another distribution (the example plug-in, examples/harness-pdu) installed beside it is
planned, injected and reverted, and reverted by the guardian after a kill -9, with no line of
the harness changed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.support.wheels import build_wheel, fresh_venv, run, tracked_copy

ROOT = Path(__file__).parents[2]
PLUGIN = ROOT / "examples" / "harness-pdu"
STAND_IN = PLUGIN / "tests" / "rack_pdu.py"
PASSWORD = "stand-in-pdu-password"

EXPERIMENT = textwrap.dedent("""\
    import pytest
    from faults.base import FaultSpec

    @pytest.mark.faults(FaultSpec("host-crash", "host:host-a"), FaultSpec("link-partition", "link:site-a~site-b"))
    def test_my_own_experiment(inject, timeline):
        with inject(FaultSpec("host-crash", "host:host-a")) as active:
            active.sleep(1)
    """)


@dataclass(frozen=True)
class Installed:
    venv: Path
    harness_wheel: Path
    plugin_wheel: Path

    @property
    def python(self) -> str:
        return str(self.venv / "bin" / "python")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """One fresh virtualenv with the harness's wheel and the example plug-in's, as a user would install them."""
    here = tmp_path_factory.mktemp("installed")
    dist = here / "dist"
    plugin = shutil.copytree(PLUGIN, here / PLUGIN.name, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    # each is built from a copy: a build writes beside its sources, and a `build/` left by an earlier build of
    # this checkout would ship modules that have since moved
    wheels = (build_wheel(tracked_copy(ROOT, here / "resilience-harness"), dist, here), build_wheel(plugin, dist, here))
    venv = fresh_venv(here / "venv", *(str(wheel) for wheel in wheels))
    return Installed(venv, *wheels)


def test_a_wheel_installed_in_a_fresh_virtualenv_plugs_into_any_pytest_project(installed: Installed,
                                                                               tmp_path: Path) -> None:
    wheel, venv = installed.harness_wheel, installed.venv
    shipped = zipfile.ZipFile(wheel).namelist()
    assert any(name.startswith("harness/plugin.py") for name in shipped)
    for layer in ("harness_suites/s4/test_s4_application_failover.py", "harness_lab/controller.py", "harness_kernel/errors.py"):
        assert layer in shipped, f"{layer} must ship: the suites, the lab and the kernel are part of the product"
    assert not [name for name in shipped if name.startswith("tests/")], "test support must not ship"
    assert any(line.startswith("[pytest11]") for line in zipfile.ZipFile(wheel).read(
        next(n for n in shipped if n.endswith("entry_points.txt"))).decode().splitlines())


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

    listed = run([str(venv / "bin" / "python"), "-m", "harness", "examples"], cwd=project)
    assert listed.returncode == 0 and "stretched-2plus2.yaml  A vSAN stretched cluster" in listed.stdout, listed.stderr
    example = project / "prod.yaml"  # their topology, in their project, started from the installed example
    started = run([str(venv / "bin" / "python"), "-m", "harness", "examples", "stretched-2plus2.yaml"], cwd=project)
    assert started.stdout == (ROOT / "examples" / "stretched-2plus2.yaml").read_text(), started.stderr
    example.write_text(started.stdout)
    s4 = run([str(venv / "bin" / "python"), "-m", "pytest", "-p", "no:cacheprovider", "--pyargs", "harness_suites",
              "--topology", str(example), "--dry-run", "--state-dir", str(tmp_path / "state"),
              "-k", "test_s4 and planned and not unplanned"], cwd=project, timeout=120)
    assert s4.returncode == 0, s4.stdout + s4.stderr
    assert "role-move on database:sql-ag-01 via sqlserver" in s4.stdout, s4.stdout
    assert "ALTER AVAILABILITY GROUP [AG01] FAILOVER" in s4.stdout
    assert "dry-run: 1 fault(s) planned in 1 test(s)" in s4.stdout, s4.stdout
    planned = "test_failover_finishes_within_the_slo_and_loses_no_acknowledged_commit[planned]"
    assert f"test_s4_application_failover.py::{planned}]" in s4.stdout, s4.stdout
    helped = run([str(venv / "bin" / "python"), "-m", "pytest", "--help"], cwd=project)
    for option in ("--topology", "--dry-run", "--allow-destructive", "--observe-s"):
        assert option in helped.stdout, f"the plugin's {option} must appear in pytest --help"
    no_tools = tmp_path / "no-tools"
    no_tools.mkdir()
    demo = run([str(venv / "bin" / "python"), "-m", "harness", "demo", "--no-vsphere"], cwd=project, timeout=60,
               HARNESS_TOOLS=str(no_tools))
    assert demo.returncode != 0 and "a checkout of the harness's repository installs them with `make setup`" in demo.stderr, \
        demo.stdout + demo.stderr


VIEWS = textwrap.dedent("""\
    import json, sys
    from harness.clusters import cluster_parts, observers, probe
    from harness.topology_source import load_source
    topology = load_source(sys.argv[1])
    parts = cluster_parts(topology)
    for part in parts.values():
        part.preflight()
    print(json.dumps({"describe": {k: v for p in parts.values() for k, v in p.describe().items()},
                      "probe": probe(topology),
                      "sample": {name: dict(o.sample()) for name, o in observers(topology).items()}}))
    """)


@dataclass
class RackPduStandIn:
    """The example's stand-in rack PDU (examples/harness-pdu/tests/rack_pdu.py), a process of its own on 127.0.0.1."""

    process: subprocess.Popen[bytes]
    port: int


@pytest.fixture
def rack_pdu(tmp_path: Path) -> Iterator[RackPduStandIn]:
    ready = tmp_path / "rack-pdu.json"
    process = subprocess.Popen([sys.executable, str(STAND_IN), "--ready-file", str(ready), "--outlets", "A1,A2,A3",
                                "--lifetime-s", "600"], env={**os.environ, "RACK_PDU_PASSWORD": PASSWORD})
    deadline = time.monotonic() + 20
    while not ready.exists():
        assert process.poll() is None and time.monotonic() < deadline, "the stand-in PDU did not come up"
        time.sleep(0.05)
    yield RackPduStandIn(process, json.loads(ready.read_text())["port"])
    process.terminate()
    process.wait(timeout=10)


def pdu_topology(directory: Path, port: int, *, with_database: bool = False) -> Path:
    """Their topology: esx-b1 has no BMC and is fed by outlet A3 of the rack PDU (the plug-in's own section)."""
    doc = yaml.safe_load((ROOT / "examples" / "stretched-2plus2.yaml").read_text())
    for site in doc["sites"]:
        for host in site["hosts"]:
            if host["name"] == "esx-b1":
                host.pop("bmc", None)
    section = {"address": "127.0.0.1", "port": port, "scheme": "http", "switch_timeout_s": 20,
               "credential": {"username": "admin", "password": {"env": "PDU_PASSWORD"}}, "outlets": {"esx-b1": "A3"}}
    if with_database:
        doc["management"]["platforms"] = {"pdu": section}
    else:  # nothing else to log in to: the run needs the PDU's password only
        doc = {"name": "rack-pdu-only", "management": {"platforms": {"pdu": section}}, "allow_list": ["host:esx-b1"],
               "sites": [{"name": "site-a", "hosts": [{"name": "esx-a1", "address": "192.0.2.11"}]},
                         {"name": "site-b", "hosts": [{"name": "esx-b1", "address": "192.0.2.21"}]}]}
    path = directory / ("pdu-stretched.yaml" if with_database else "pdu-only.yaml")
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_a_platform_from_another_package_is_planned_before_vcenter_and_shows_its_parts_and_doctor_rows(
        installed: Installed, rack_pdu: RackPduStandIn, tmp_path: Path) -> None:
    """What the contract kit leaves to the harness: where the plug-in's backend stands among the others."""
    project = tmp_path / "their-project"
    project.mkdir()
    python = installed.python

    stretched = pdu_topology(project, rack_pdu.port, with_database=True)
    s4 = run([python, "-m", "pytest", "-p", "no:cacheprovider", "--pyargs", "harness_suites", "--topology",
              str(stretched), "--dry-run", "--state-dir", str(tmp_path / "plan-state"),
              "-k", "test_s4 and unplanned"], cwd=project, timeout=120)
    assert s4.returncode == 0, s4.stdout + s4.stderr
    assert "host-power-off on host:esx-b1 via pdu" in s4.stdout, s4.stdout  # before vCenter's graceful shutdown
    assert "host-power-off on host:esx-a1 via redfish" in s4.stdout, s4.stdout  # a BMC still comes first
    assert "management.platforms.pdu.credential.password" in s4.stdout

    only = pdu_topology(project, rack_pdu.port)
    parts = run([python, "-c", VIEWS, str(only)], cwd=project, timeout=60, PDU_PASSWORD=PASSWORD)
    assert parts.returncode == 0, parts.stdout + parts.stderr
    views = json.loads(parts.stdout)
    assert views["describe"] == {"rack_pdu": "Stand-in RackPDU-8, firmware 1.0.0 (1 outlets listed)"}
    assert views["probe"] == {"pdu probe harness_pdu.view:probe": "RackPDU-8: outlets A3 On"}
    assert views["sample"] == {"pdu: harness_pdu.view:OutletPower": {"esx-b1 outlet W": 180.0}}
    checked = run([python, "-m", "harness", "doctor", "--topology", str(only), "--json"], cwd=project, timeout=60,
                  PDU_PASSWORD=PASSWORD)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    rows = {(r["where"], r["check"]): r["status"] for r in json.loads(checked.stdout)["rows"]}
    assert rows[("pdu", "host-power-off on host:esx-b1: ready")] == "PASS", rows
    assert rows[("pdu", "probe harness_pdu.view:probe")] == "PASS", rows
    assert rows[("credentials", "management.platforms.pdu.credential.password")] == "PASS", rows


# A plug-in whose fault acts on one outlet while its author's kit reads another: the kit must fail it, at the clause
# that compares what the fault says with what the stand-in says
MISREAD = textwrap.dedent("""\
    import pytest
    from harness.contract_kit import PlatformUnderTest
    from test_contract import HOST, PASSWORD, rack_pdu, topology_of
    from test_contract import TestHarnessPdu as _Honest

    class TestReadOnAnotherOutlet(_Honest):
        @pytest.fixture
        def platform_under_test(self, rack_pdu, tmp_path):
            return PlatformUnderTest(topology=topology_of(rack_pdu, tmp_path), kind="host-power-off",
                                     target=f"host:{HOST}", platform="pdu", observe=lambda: rack_pdu.power_state("A2"),
                                     environment={"PDU_PASSWORD": PASSWORD}, secrets=(PASSWORD,), settle_s=3)
    """)


def test_the_example_plugin_keeps_the_contract_kit_run_from_a_fresh_virtualenv(installed: Installed,
                                                                              tmp_path: Path) -> None:
    """The README's command for a plug-in author: their tests, the kit from the installed harness."""
    project = shutil.copytree(PLUGIN / "tests", tmp_path / "their-plugin" / "tests")
    done = run([installed.python, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--rootdir", str(project.parent),
                str(project)], cwd=project.parent, timeout=600)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    assert re.search(r"\b6 passed\b", done.stdout), done.stdout[-3000:]

    (project / "test_misread.py").write_text(MISREAD)
    misread = run([installed.python, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--rootdir", str(project.parent),
                   str(project / "test_misread.py"), "-k", "journaled_before"], cwd=project.parent, timeout=300)
    assert misread.returncode == 1, misread.stdout[-6000:]
    assert "1 failed" in misread.stdout and "the stand-in disagrees" in misread.stdout, misread.stdout[-6000:]
