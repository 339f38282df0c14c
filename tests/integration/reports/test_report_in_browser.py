"""The report of real runs, opened in headless Chromium: plots decode, the table is there, the trend grows.

Two runs of a sample suite (a SQLite ledger under load, an exclusive lock as the fault; one
test passes, one violates its SLO, one finds its control plane unreachable) are reported
with the pinned Allure 3 CLI into one output directory, as two nights would be.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from reports.allure.results_dir import HARNESS_BROKEN, SLO_VIOLATED
from reports.results_scrub import files_containing
from tests.integration.reports.report_support import LoopbackBrowser, SampleRuns

PASSING, FAILING, BROKEN = "test_lock_recovers_within_slo", "test_lock_failover_too_slow", "test_control_plane_unreachable"


def _test_id(site: Path, name: str) -> str:
    """The id the report routes a test to (`#<id>`): the tree is grouped by scenario, fault kind and target,
    so a test is one route away rather than three clicks."""
    for path in (site / "data" / "test-results").glob("*.json"):
        data = json.loads(path.read_text())
        if data.get("name") == name:
            return str(data["id"])
    raise AssertionError(f"no test {name} in {site}")


def _open_test_case(page: Any, url: str, test_id: str) -> None:
    """Straight into the passing test, then expand the TPS plot and the scenario table."""
    page.goto(f"{url}#{test_id}")
    page.get_by_text(PASSING, exact=True).first.wait_for(timeout=15_000)
    page.get_by_text("TPS timeline", exact=True).first.click()
    page.get_by_text("S2 component failure matrix (table)", exact=True).first.click()
    page.wait_for_function("Array.from(document.images).some(i => i.complete && i.naturalWidth > 0)", timeout=15_000)


def _assert_evidence_shown(page: Any) -> None:
    widths = page.evaluate("Array.from(document.images).map(i => i.naturalWidth)")
    assert any(w >= 1000 for w in widths), f"no decoded plot image: {widths}"
    table_frames: list[Any] = []
    deadline = time.monotonic() + 15  # the attachment's frame loads after the plot has decoded
    while not table_frames and time.monotonic() < deadline:
        table_frames = [f for f in page.frames if f != page.main_frame and "scenario-table" in _content(f)]
        if not table_frames:
            page.wait_for_timeout(100)
    assert table_frames, "the scenario table attachment is not rendered"
    assert "ledger lock" in table_frames[0].inner_text("table.scenario-table", timeout=5_000)


def _content(frame: Any) -> str:
    """A frame's document, or nothing while it is still being replaced (navigating frames cannot be read)."""
    try:
        return str(frame.content())
    except Exception:
        return ""


def _screenshot(page: Any, tmp_path: Path, artifacts: list[Path], name: str) -> None:
    path = tmp_path / name
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 10_000
    artifacts.append(path)


def test_single_file_shows_plot_and_table(sample_runs: SampleRuns, loopback_page: LoopbackBrowser, tmp_path: Path,
                                          artifacts: list[Path]) -> None:
    single = sample_runs.report.single_file
    assert single.stat().st_size > 500_000  # the app, data and attachments inlined
    _open_test_case(loopback_page.page, single.as_uri(), _test_id(sample_runs.report.site_dir, PASSING))
    _assert_evidence_shown(loopback_page.page)
    _screenshot(loopback_page.page, tmp_path, artifacts, "report-single-file.png")
    assert loopback_page.blocked == []


def test_site_served_on_loopback_shows_plot_and_table(sample_runs: SampleRuns, loopback_page: LoopbackBrowser,
                                                      serve_loopback: Any, tmp_path: Path, artifacts: list[Path]) -> None:
    url = serve_loopback(sample_runs.report.site_dir)
    _open_test_case(loopback_page.page, url, _test_id(sample_runs.report.site_dir, PASSING))
    _assert_evidence_shown(loopback_page.page)
    _screenshot(loopback_page.page, tmp_path, artifacts, "report-site.png")
    assert loopback_page.blocked == []


def test_two_nights_make_a_two_point_trend(sample_runs: SampleRuns) -> None:
    assert [r.history_entries for r in sample_runs.reports] == [1, 2]
    charts = json.loads((sample_runs.report.site_dir / "widgets" / "charts.json").read_text())
    dynamics = [c for c in charts["general"].values() if c["type"] == "statusDynamics"]
    assert dynamics and len(dynamics[0]["data"]) == 2


def test_outcomes_land_in_their_categories(sample_runs: SampleRuns) -> None:
    assert sample_runs.exit_codes == [1, 1], "\n".join(out[-3000:] for out in sample_runs.outputs)
    tree = json.loads((sample_runs.report.site_dir / "widgets" / "categories.json").read_text())
    nodes = tree["nodes"]

    def tests_under(node_id: str) -> set[str]:
        node = nodes[node_id]
        if node["type"] == "tr":
            return {node["name"]}
        return set().union(*(tests_under(c) for c in node.get("childrenIds", [])))

    by_category = {nodes[r]["name"]: tests_under(r) for r in tree["roots"]}
    assert by_category[SLO_VIOLATED] == {FAILING}
    assert by_category[HARNESS_BROKEN] == {BROKEN}
    assert all(PASSING not in names for names in by_category.values())


def test_terminal_summary_names_verdicts(sample_runs: SampleRuns) -> None:
    out = sample_runs.outputs[-1]
    assert "resilience summary" in out
    assert "FAIL  (SLO violated)" in out and "ERROR (harness or infrastructure broken)" in out
    assert "TPS before" in out


def test_no_credential_in_results_or_report(sample_runs: SampleRuns) -> None:
    """The sample's driver logs its password; the scrub must leave no trace of it anywhere."""
    places = [*sample_runs.results, sample_runs.report.site_dir.parent]
    for place in places:
        assert files_containing(place, [sample_runs.secret]) == [], place
    logs = [p.read_text() for p in sample_runs.results[-1].glob("*-attachment.txt")]
    assert any("password=***" in text for text in logs), "the credential never reached the run; the test proves nothing"


def test_no_analytics_in_any_page(sample_runs: SampleRuns) -> None:
    pages = list(sample_runs.report.site_dir.parent.rglob("*.html"))
    assert len(pages) >= 2
    for page in pages:
        text = page.read_text()
        assert "googletagmanager" not in text and "gtag(" not in text, page


@pytest.mark.parametrize("name", ["environment.properties", "categories.json"])
def test_results_dir_files_written(sample_runs: SampleRuns, name: str) -> None:
    assert (sample_runs.results[-1] / name).stat().st_size > 0
