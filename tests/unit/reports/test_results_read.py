"""The report reads whatever Allure's result format allows, not only what our own runs write."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reports.allure.results_read import read_tests


@pytest.mark.reproducer("AB-label-without-value")
def test_a_label_without_a_value_is_read_as_empty_not_a_traceback(tmp_path: Path) -> None:
    """allure-pytest writes `{"name": "package"}` with no value when pytest's rootdir is not the suites' checkout
    (`pytest --pyargs harness_suites` from another folder): Allure's own model lets a label's value be absent."""
    result = {"uuid": "u1", "name": "t", "fullName": "harness_suites.test_s4#t", "status": "passed", "start": 1,
              "stop": 2, "labels": [{"name": "package"}, {"name": "epic", "value": "S4 application failover"},
                                    {"value": "orphan"}]}
    (tmp_path / "u1-result.json").write_text(json.dumps(result))
    test, = read_tests(tmp_path)
    assert test.labels == {"package": "", "epic": "S4 application failover"}
    assert test.scenario == "S4"
