"""Results-directory files, the terminal summary, secret scrubbing and the analytics strip."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness_kernel.errors import ControlPlaneError, HarnessError, RevertFailedError
from harness_kernel.paths import tools_dir
from reports.allure.generate import strip_analytics
from reports.allure.results_dir import HARNESS_BROKEN, SLO_VIOLATED, categories, environment_properties, write_environment
from reports.results_scrub import files_containing, scrub_tree
from reports.summary import Outcome, format_summary


def test_categories_split_slo_from_harness() -> None:
    slo, broken, _, inconclusive, findings = categories()
    assert (inconclusive["matchedStatuses"], findings["matchedStatuses"]) == (["unknown"], ["unknown"])
    assert (slo["name"], slo["matchedStatuses"]) == (SLO_VIOLATED, ["failed"])
    assert broken["name"] == HARNESS_BROKEN
    pattern = re.compile(broken["messageRegex"])
    for exc in (RevertFailedError("x"), ControlPlaneError("y"), HarnessError("z")):
        assert pattern.fullmatch(f"harness_kernel.errors.{type(exc).__name__}: {exc}")
    assert not pattern.fullmatch("TypeError: unsupported operand")


def test_environment_refuses_credential_keys(tmp_path: Path) -> None:
    props = environment_properties("lab", {"postgresql": "15.8"}, {"vcenter.url": "https://127.0.0.1:8989/sdk"})
    text = write_environment(tmp_path, props).read_text()
    assert "product.postgresql=15.8" in text and "vcenter.url=https\\://127.0.0.1\\:8989/sdk" in text
    with pytest.raises(HarnessError, match=r"vcenter\.password"):
        write_environment(tmp_path, {"vcenter.password": "x"})


def test_scrub_covers_json_and_url_spellings(tmp_path: Path) -> None:
    secret = 'pa"ss word/1'
    (tmp_path / "a.json").write_text(json.dumps({"msg": f"login {secret}"}))
    (tmp_path / "b.txt").write_text("dsn=postgres://u:pa%22ss%20word%2F1@127.0.0.1/db")
    (tmp_path / "c.txt").write_text("nothing here")
    assert {p.name for p in scrub_tree(tmp_path, [secret])} == {"a.json", "b.txt"}
    assert files_containing(tmp_path, [secret]) == []


def test_summary_tells_failure_from_error() -> None:
    text = format_summary([
        Outcome("test_host_power_off", "S2", "failed", {"TPS before": "1568", "TPS after": "1100"}, "AssertionError: drop"),
        Outcome("test_site", "S3", "error", reason="ControlPlaneError: vCenter unreachable"),
        Outcome("test_sweep", "S1", "passed", {"recommended RTT": "4 ms"}),
    ], report="out/resilience-report.html")
    assert "FAIL  (SLO violated)" in text and "ERROR (harness or infrastructure broken)" in text
    assert text.index("S1") < text.index("S2") < text.index("S3")
    assert "1 passed, 1 failed, 1 error" in text and "TPS before 1568" in text


def test_strip_analytics_keeps_the_app() -> None:
    html = ('<head><script src="app.js"></script></head><body><div id="app"></div>'
            '<script async src="https://www.googletagmanager.com/gtag/js?id=G-1"></script>\n'
            "<script>window.dataLayer = window.dataLayer || []; function gtag(){dataLayer.push(arguments);}</script>"
            "<script>window.allure = {};</script></body>")
    out = strip_analytics(html)
    assert "googletagmanager" not in out and "gtag" not in out
    assert '<script src="app.js"></script>' in out and "window.allure" in out


def test_tools_dir_follows_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HARNESS_TOOLS", str(tmp_path))
    assert tools_dir() == tmp_path
    monkeypatch.delenv("HARNESS_TOOLS")
    assert tools_dir().name == ".tools"
