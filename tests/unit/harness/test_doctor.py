"""`harness doctor` runs every check a run makes before its first fault, at once, and says what each blocks.

Spec'd on a topology whose only platform is a plug-in (the toy PDU of tests/unit/faults), so
every row is the harness's own logic: credentials, each allowed fault's preflight, the cluster
view, platform probes; the exit code follows the README's table and no secret is printed.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from faults import registry, sections
from faults.catalogue import this_package
from faults.transports.shell import LocalShell
from harness import clusters, doctor
from harness.cli import main
from harness_kernel.topology.loader import parse_topology
from harness_kernel.topology.models import Topology
from tests.unit.faults import toy_platform
from tests.unit.faults.test_catalogue import plugin

SECTION = {"address": "192.0.2.90", "credential": {"username": "admin", "password": {"env": "TOY_PASSWORD"}},
           "outlets": {"esx-b1": 3}}


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    catalogue = this_package(plugin(toy_platform.DOCTOR))
    for module in (doctor, clusters, sections, registry):
        monkeypatch.setattr(module, "installed", lambda: catalogue)
    monkeypatch.setenv("TOY_PASSWORD", "the-toy-password")
    return monkeypatch


def topology(**section: Any) -> Topology:
    return parse_topology({
        "name": "toy-only", "allow_list": ["host:esx-b1"],
        "sites": [{"name": "site-a", "hosts": [{"name": "esx-a1", "address": "192.0.2.11"}]},
                  {"name": "site-b", "hosts": [{"name": "esx-b1", "address": "192.0.2.21"}]}],
        "management": {"platforms": {"toy": {**SECTION, **section}}}}, "toy.yaml")


def rows(findings: doctor.Findings) -> list[tuple[str, str, str]]:
    return [(r.where, r.check, r.status) for r in findings.rows]


def test_a_ready_cluster_passes_every_check_and_exits_0(toy: pytest.MonkeyPatch) -> None:
    findings = doctor.examine(topology())
    assert rows(findings) == [
        ("credentials", "management.platforms.toy.credential.password", "PASS"),
        ("toy 192.0.2.90", "outlet-cycle on host:esx-b1: ready", "PASS"),
        ("cluster", "its view builds from the topology", "WARN"),  # inject works; the suites need a view
        ("toy", "probe tests.unit.faults.toy_platform:toy_probe", "PASS"),
        ("doctor", "sent only reads", "PASS"),  # the toy sends nothing: "0 calls (none)"
    ]
    assert findings.exit_code == 0
    assert "doctor: 5 checks: 4 PASS, 1 WARN, 0 FAIL (exit 0)" in findings.render()


def test_a_missing_credential_fails_naming_the_field_and_the_faults_it_blocks_exit_4(toy: pytest.MonkeyPatch) -> None:
    toy.delenv("TOY_PASSWORD")
    findings = doctor.examine(topology())
    [credential] = [r for r in findings.rows if r.where == "credentials"]
    assert (credential.status, credential.blocks, credential.bad_input) == ("FAIL", ("outlet-cycle",), True)
    assert "management.platforms.toy.credential.password" in credential.seen
    assert findings.exit_code == 4


def test_a_refused_login_is_bad_input_and_never_printed(toy: pytest.MonkeyPatch) -> None:
    toy.setenv("TOY_PASSWORD", "refused-hunter2")
    findings = doctor.examine(topology())
    [ready] = [r for r in findings.rows if r.check.endswith("ready")]
    assert (ready.status, ready.bad_input) == ("FAIL", True) and "the login was refused" in ready.seen
    assert findings.exit_code == 4
    text = findings.render()
    assert "FAIL toy 192.0.2.90: outlet-cycle on host:esx-b1: ready: toy 192.0.2.90: the login was refused" in text
    assert "hunter2" not in text


def test_a_target_not_ready_fails_with_what_it_blocks_and_the_fix_exit_10(toy: pytest.MonkeyPatch) -> None:
    findings = doctor.examine(topology(healthy=False))
    [ready] = [r for r in findings.rows if r.check.endswith("ready")]
    assert (ready.status, ready.blocks, ready.bad_input) == ("FAIL", ("outlet-cycle",), False)
    assert findings.exit_code == 10
    text = findings.render()
    assert "blocks: outlet-cycle" in text and "fix: " in text


def test_a_probe_that_cannot_answer_fails_its_row_and_the_rest_still_run(toy: pytest.MonkeyPatch) -> None:
    failing = replace(toy_platform.DOCTOR, probes=("tests.unit.faults.toy_platform:failing_probe",))
    catalogue = this_package(plugin(failing))
    for module in (doctor, clusters, sections, registry):
        toy.setattr(module, "installed", lambda: catalogue)
    findings = doctor.examine(topology())
    assert rows(findings)[-2] == ("toy", "probe tests.unit.faults.toy_platform:failing_probe", "FAIL")
    assert "unreachable (connection refused)" in findings.rows[-2].seen
    assert findings.exit_code == 10 and len(findings.rows) == 5


def test_the_json_is_versioned_and_the_command_exits_with_its_code(toy: pytest.MonkeyPatch, tmp_path: Any,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    toy.setenv("TOY_PASSWORD", "refused-hunter2")
    document = tmp_path / "toy.yaml"
    document.write_text(json.dumps({
        "name": "toy-only", "allow_list": ["host:esx-b1"],
        "sites": [{"name": "site-a", "hosts": [{"name": "esx-a1", "address": "192.0.2.11"}]},
                  {"name": "site-b", "hosts": [{"name": "esx-b1", "address": "192.0.2.21"}]}],
        "management": {"platforms": {"toy": SECTION}}}))
    assert main(["doctor", "--topology", str(document), "--json"]) == 4
    printed = json.loads(capsys.readouterr().out)
    assert printed["schema"] == "harness-doctor/1" and printed["exit_code"] == 4
    assert {r["status"] for r in printed["rows"]} == {"PASS", "WARN", "FAIL"}
    assert "hunter2" not in json.dumps(printed)


def test_a_check_that_would_change_something_is_refused_at_the_wire_and_fails_its_row_and_doctors(
        toy: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """The promise is kept by construction: a preflight that writes (a bug) never reaches its endpoint."""
    touched = tmp_path / "touched"

    def writes(self: toy_platform.ToyOutlet) -> None:
        LocalShell().check(f"test -d {tmp_path} && touch {touched}")
    toy.setattr(toy_platform.ToyOutlet, "preflight", writes)
    findings = doctor.examine(topology())
    [ready] = [r for r in findings.rows if r.check.endswith("ready")]
    assert ready.status == "FAIL" and f"touch {touched} would change something; refused" in ready.seen
    assert not touched.exists()
    assert rows(findings)[-1] == ("doctor", "sent only reads", "FAIL") and findings.exit_code == 10
    assert "1 calls (1 shell); refused: this machine: test -d" in findings.rows[-1].seen
    assert [(c.transport, c.reads) for c in findings.calls] == [("shell", False)]
