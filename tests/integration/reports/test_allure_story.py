"""Allure tells the story the summary page tells: a test the report calls INCONCLUSIVE or PASS with findings is not
shown as passed in the Allure report (no 100 % ring under an amber banner), and the run's own results stay as
recorded. The real Allure CLI generates from the staged copy."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from reports.allure.generate import allure_binary, generate_report
from reports.build import shown_in_allure
from tests.integration.reports.seeded_runs import inconclusive_ratio, sweep_with_a_fail_row


def result(uuid: str, full_name: str, start: int | None) -> dict[str, object]:
    return {"uuid": uuid, "name": uuid, "fullName": full_name, "status": "passed", "stage": "finished",
            "start": start, "stop": (start or 0) + 1000, "labels": [{"name": "epic", "value": uuid}]}


@pytest.mark.reproducer("Z-allure-story")
def test_inconclusive_and_findings_are_unknown_in_allure_with_their_verdict_and_a_plain_pass_stays_passed(
        tmp_path: Path) -> None:
    if not allure_binary().exists() or shutil.which("node") is None:
        pytest.skip("the Allure CLI is not installed (make setup)")
    tests = [inconclusive_ratio(), sweep_with_a_fail_row()]
    shown = shown_in_allure(tests, [])
    assert {u: s for u, (s, _) in shown.items()} == {tests[0].uuid: "unknown", tests[1].uuid: "unknown"}
    assert shown[tests[0].uuid][1].startswith("INCONCLUSIVE: ") and shown[tests[1].uuid][1].startswith("PASS with findings")
    results = tmp_path / "results"
    results.mkdir()
    for test in tests:
        (results / f"{test.uuid}-result.json").write_text(json.dumps(result(test.uuid, test.full_name, test.start)))
    (results / "plain-result.json").write_text(json.dumps(result("plain", "harness_suites.S1#plain", 1)))
    recorded = {p.name: p.read_text() for p in results.iterdir()}

    out = generate_report(results, tmp_path / "out", shown=shown)

    generated = {d["name"]: d for d in
                 (json.loads(p.read_text()) for p in (out.site_dir / "data" / "test-results").glob("*.json"))}
    assert generated["plain"]["status"] == "passed" and not generated["plain"].get("categories")
    for test, category in zip(tests, ("INCONCLUSIVE: not every threshold shown to hold", "PASS with findings"),
                              strict=True):
        seen = generated[test.uuid]
        assert seen["status"] == "unknown" and seen["error"]["message"].startswith(shown[test.uuid][1]), seen
        assert [c["name"] for c in seen.get("categories", [])] == [category], "Allure's own category for it"
    assert {p.name: p.read_text() for p in results.iterdir()} == recorded, "the run's own results are untouched"
