"""Every capture in `tests/captures/` is a contract case: doctor, replayed over its payloads, reaches its rows.

A capture holds raw answers (scrubbed to the fields the harness reads, aliased), never conclusions:
the backends' parsers and probes run again over them through pyVmomi, requests and paramiko, against
loopback servers. A capture a user sends in joins this list by being dropped into the folder
(README: "Sending a capture"). A mutated answer must flip exactly the row that reads it.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.capture.session import replay

CAPTURES = Path(__file__).resolve().parents[2] / "captures"
SIMULATOR = CAPTURES / "bound-lab-simulator"


def every_capture() -> list[Path]:
    return sorted(p for p in CAPTURES.iterdir() if (p / "manifest.json").exists())


def test_the_captures_folder_holds_the_bound_labs_capture() -> None:
    assert SIMULATOR in every_capture()


@pytest.mark.parametrize("capture", every_capture(), ids=lambda p: p.name)
def test_a_capture_replayed_reaches_every_row_the_live_doctor_reached(capture: Path) -> None:
    result = replay(capture)
    assert result.differences == []
    assert result.misses == []  # every request doctor made was answered from the capture
    assert result.compared >= 100 if capture == SIMULATOR else result.compared > 0
    assert set(result.not_replayed.values()) <= set(json.loads((capture / "manifest.json").read_text())
                                                    ["not_replayed"].values()) | {
        "the cluster's database part is the embedded lab on this machine"}


def test_the_simulators_capture_says_it_is_no_evidence_about_a_vmware_product() -> None:
    manifest = json.loads((SIMULATOR / "manifest.json").read_text())
    assert manifest["schema"] == "harness-capture/1"
    assert manifest["simulator"] is True
    assert "never about a VMware product" in manifest["source"]


def test_a_capture_holds_answers_not_conclusions_and_no_secret_reference() -> None:
    lines = (SIMULATOR / "exchanges.jsonl").read_text()
    assert "RetrievePropertiesExResponse" in lines and "PowerState" in lines  # raw SOAP and Redfish bodies
    assert "<password>" not in lines or "<password>(withheld)</password>" in lines
    topology = (SIMULATOR / "topology.yaml").read_text()
    assert "HARNESS_LAB_" not in topology and "ca_file" not in topology and "host_key" not in topology


def test_a_privilege_taken_away_in_the_capture_fails_that_faults_privilege_row(tmp_path: Path) -> None:
    mutated = mutate(tmp_path, lambda e: e["transport"] == "soap" and "HasPrivilegeOnEntities" in e["request"]["body"]
                     and "Host.Config.Maintenance" in e["request"]["body"] and ">host-18<" in e["request"]["body"],
                     lambda body: body.replace("<isGranted>true</isGranted>", "<isGranted>false</isGranted>"))
    result = replay(mutated)
    flipped = result.differences  # the row that asks, and the preflight doctor no longer runs after it FAILed
    assert len(flipped) == 2, flipped
    assert flipped[0].endswith(": privileges: live PASS, replay FAIL") and flipped[1].endswith(": ready: live PASS, "
                                                                                               "replay absent")
    assert all("host-maintenance on host:" in d for d in flipped) and len({d.split(": ")[1] for d in flipped}) == 1
    row = next(r for r in result.findings.rows if r.check.endswith(": privileges") and r.status == "FAIL")
    assert "Host.Config.Maintenance" in row.seen and row.blocks == ("host-maintenance",)


def test_a_capacity_device_missing_from_the_capture_fails_the_rows_of_that_device(tmp_path: Path) -> None:
    device = first_capacity_device()
    mutated = mutate(tmp_path, lambda e: e["transport"] == "soap" and "config.vsanHostConfig" in e["request"]["body"],
                     lambda body: body.replace(f"<nonSsd><canonicalName>{device}</canonicalName></nonSsd>", ""))
    result = replay(mutated)
    assert any(f"disk-failure on disk:host-1/{device}: ready: live PASS, replay FAIL" in d for d in result.differences)
    failed = [r for r in result.findings.rows if r.status == "FAIL"]
    reasons = {r.seen.split(": ", 1)[1] for r in failed}  # every fault that checks the cluster first: one reason
    assert len(reasons) == 1, reasons
    in_vcenter, in_topology = reasons.pop().split(" in vCenter, ")
    assert "does not match topology" in in_vcenter and "host 'host-1'" in in_vcenter
    assert device not in in_vcenter and device in in_topology


def first_capacity_device() -> str:
    for line in (SIMULATOR / "exchanges.jsonl").read_text().splitlines():
        entry = json.loads(line)
        if "config.vsanHostConfig" in entry["request"].get("body", ""):
            body = entry["answers"][0]["response"]["body"]
            return body.split("<nonSsd><canonicalName>", 1)[1].split("<", 1)[0]
    raise AssertionError("the capture holds no vsanHostConfig answer")


def mutate(tmp_path: Path, which: Callable[[dict[str, Any]], bool], change: Callable[[str], str]) -> Path:
    """A copy of the simulator's capture with `change` applied to the bodies of the answers `which` selects."""
    copy = tmp_path / "capture"
    shutil.copytree(SIMULATOR, copy)
    lines, touched = [], 0
    for line in (copy / "exchanges.jsonl").read_text().splitlines():
        entry = json.loads(line)
        if which(entry):
            for answer in entry["answers"]:
                before = answer["response"]["body"]
                answer["response"]["body"] = change(before)
                touched += before != answer["response"]["body"]
        lines.append(json.dumps(entry, sort_keys=True))
    assert touched, "the mutation changed nothing: the capture no longer holds what this test changes"
    (copy / "exchanges.jsonl").write_text("\n".join(lines) + "\n")
    return copy
