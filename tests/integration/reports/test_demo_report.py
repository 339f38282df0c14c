"""The README's main job with minimal windows (lab up, S1-S7, report, lab down), and the report it hands a board.

It checks the path (every suite runs to a verdict, tables, summary page and PDF are produced,
nothing is left behind) and what a reader sees: on the summary page's first screen, without a
click, every scenario that ran with its verdict and key figures; one click into the Allure
report carried inside the same file, where the test has its title, its plot and its table. Not
the product's figures: those need the demo's real windows.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from reports.outcome import ORDER
from tests.integration.reports.report_support import LoopbackBrowser

ROOT = Path(__file__).parents[3]
PREFIX = "hlabs"
SCENARIOS = {"S1", "S2", "S3", "S4", "S5", "S6", "S7"}
pytestmark = pytest.mark.timeout(1800)  # its module fixture runs the whole smoke demo


@dataclass(frozen=True)
class DemoRun:
    out: Path
    returncode: int
    stdout: str
    stderr: str

    def line(self, prefix: str) -> Path:
        found = [line.removeprefix(prefix) for line in self.stdout.splitlines() if line.startswith(prefix)]
        assert found, f"no '{prefix}' line: {self.stdout[-3000:]}"
        return Path(found[-1])


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> DemoRun:
    tmp = tmp_path_factory.mktemp("demo")
    out = tmp / "demo"
    run = subprocess.run([sys.executable, "-m", "harness", "demo", "--smoke", "--lab", f"lab:{PREFIX}", "--out", str(out),
                          "--state-dir", str(tmp / "state")],
                         capture_output=True, text=True, cwd=ROOT, timeout=1500)
    return DemoRun(out, run.returncode, run.stdout, run.stderr)


def test_demo_runs_every_suite_to_a_verdict_and_ends_with_the_report_path(demo: DemoRun) -> None:
    assert demo.returncode in (0, 1), demo.stdout[-4000:] + demo.stderr[-4000:]
    assert "ERROR (harness or infrastructure broken)" not in demo.stdout, demo.stdout[-6000:]
    assert demo.stdout.strip().splitlines()[-1].startswith("report: ")
    report = demo.line("report: ")
    assert report.is_file() and report.stat().st_size > 100_000
    assert (demo.out / "report" / "site" / "index.html").is_file()
    assert (demo.out / "report" / "allure-report.html").is_file(), "the Allure single file also lies beside it"
    tables = {p.stem.split("-")[0] for p in (demo.out / "tables").glob("*.md")}
    assert tables == {s.lower() for s in SCENARIOS}
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert f"{PREFIX}-" not in namespaces


def test_the_pdf_for_the_change_ticket_is_printed(demo: DemoRun) -> None:
    pdf = demo.line("pdf: ").read_bytes()
    assert pdf.startswith(b"%PDF-") and len(pdf) > 20_000
    assert len(re.findall(rb"/Type\s*/Page\b", pdf)) >= 2, "the whole summary, not one clipped screen"


def test_the_pdf_names_its_evidence_archive_by_a_checksum_that_the_archive_on_disk_has(
        demo: DemoRun, tmp_path: Path) -> None:
    from pypdf import PdfReader

    from reports.evidence_archive import sha256_of, write_archive

    path = demo.line("pdf: ")
    pages = [page.extract_text() or "" for page in PdfReader(path).pages]
    text = unicodedata.normalize("NFKC", " ".join(" ".join(pages).split()))  # the PDF's "ﬀ" ligatures as "ff"
    printed = re.search(r"evidence archive evidence\.tar\.gz SHA-256 ([0-9a-f]{64})", text)
    assert printed, text[:3000]
    assert sha256_of(path.parent / "evidence.tar.gz") == printed.group(1)
    assert write_archive(demo.out / "allure-results", tmp_path / "again.tar.gz") == printed.group(1), \
        "the archive is deterministic: the results archived again give the printed checksum"
    assert all(f"page {n} of {len(pages)}" in page for n, page in enumerate(pages, start=1))
    assert (path.parent / f"{path.name}.sha256").read_text() == f"{sha256_of(path)}  {path.name}\n"
    for said in ("run ", "operator ", "harness ", "topology ", "platform ", "change ticket ", "Sign-off"):
        assert said in text, said


def test_the_first_screen_shows_every_scenario_its_verdict_and_key_figures(
        demo: DemoRun, loopback_page: LoopbackBrowser, tmp_path: Path, artifacts: list[Path]) -> None:
    page = loopback_page.page
    page.goto(demo.line("report: ").as_uri())
    height = page.viewport_size["height"]
    rows = page.locator("table.overview tbody tr")
    seen: dict[str, list[list[str]]] = {}
    for i in range(rows.count()):
        row = rows.nth(i)
        box = row.bounding_box()
        assert box is not None and box["y"] + box["height"] <= height, f"row {i} is below the first screen"
        cells = row.locator("td").all_inner_texts()
        seen.setdefault(cells[0], []).append(cells)
    assert set(seen) == SCENARIOS, seen.keys()
    for scenario, tests in seen.items():
        for _, title, verdict, figures in tests:
            assert verdict in ORDER, (scenario, title, verdict)
            assert title.startswith(f"{scenario} · "), "titled as the published tables name them, not a function name"
            assert figures.strip(), (scenario, title)
    banner = page.locator("span.banner").inner_text()
    verdicts = {cells[2] for tests in seen.values() for cells in tests}
    assert banner.startswith(f"{min(verdicts, key=ORDER.index)}: "), (banner, verdicts)  # the worst row's
    path = tmp_path / "summary-first-screen.png"
    page.screenshot(path=str(path))
    artifacts.append(path)
    assert loopback_page.blocked == []


def test_one_click_opens_the_test_in_the_allure_report_inside_the_file(
        demo: DemoRun, loopback_page: LoopbackBrowser, tmp_path: Path, artifacts: list[Path]) -> None:
    page = loopback_page.page
    page.goto(demo.line("report: ").as_uri())
    link = page.locator("table.overview a", has_text="S3 · site failure").first
    title = link.inner_text()
    with page.expect_popup() as popup_info:
        link.click()
    allure: Any = popup_info.value
    allure.get_by_text(title, exact=True).first.wait_for(timeout=15_000)
    assert allure.url.startswith(page.url.partition("#")[0] + "#"), "the same file, routed to the test"
    allure.get_by_text("TPS timeline", exact=True).first.click()
    allure.get_by_text("S3 site failure (table)", exact=True).first.click()
    allure.wait_for_function("Array.from(document.images).some(i => i.complete && i.naturalWidth >= 1000)",
                             timeout=15_000)
    deadline = time.monotonic() + 15
    while not (frames := [f for f in allure.frames if f != allure.main_frame and "scenario-table" in f.content()]) \
            and time.monotonic() < deadline:
        allure.wait_for_timeout(250)  # the attachment's frame loads after it is expanded
    assert frames and "failover (s)" in frames[0].inner_text("table.scenario-table", timeout=5_000)
    path = tmp_path / "allure-test-page.png"
    allure.screenshot(path=str(path), full_page=True)
    artifacts.append(path)
    assert loopback_page.blocked == []
