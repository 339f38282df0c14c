"""The page a change board reads, read in Chromium over seeded nights: one verdict story, every modelled figure
marked, no table wider than the page at 1280 px. The expected marks come from the lab's model and the published
figure definitions, never from the page; and the checks are shown to fail when the page generator drops a mark."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import reports.tables
from harness_lab.vsphere_binding import MODEL
from reports import summary_page
from reports.outcome import ORDER
from reports.summary_page import SummaryInput, render
from tests.integration.reports.seeded_runs import SIMULATED, seeded_night

# Which published columns each parameter of the simulator's model gives a value to (the figure definitions:
# S2's resync follows the model's rate; S5's pre-copy and freeze are the model's).
MODEL_FEEDS: dict[str, set[tuple[str, str]]] = {
    "resync_rate_mb_s": {("S2", "resync (GB)"), ("S2", "resync rate (GB/min)"), ("S2", "resync ETA (s)")},
    "migration_s": {("S5", "migration (s)")},
    "stun_s": {("S5", "stun seen by clients (s)")},
}

FACTS = """() => {
  const text = el => el ? el.textContent.trim() : '';
  const width = document.documentElement.clientWidth;
  const sections = [...document.querySelectorAll('section.scenario')].map(s => {
    const table = s.querySelector('table.scenario-table');
    const heads = table ? [...table.querySelectorAll('thead th')].map(th => text(th).replace(/\\s*◆$/, '')) : [];
    const cells = table ? [...table.querySelectorAll('tbody tr')].flatMap(tr => [...tr.children].map((td, i) =>
      ({column: heads[i], text: text(td), classes: td.className}))) : [];
    const verdicts = [...s.querySelectorAll('table')].filter(t => text(t.querySelector('th')) === 'figure')
      .flatMap(t => [...t.querySelectorAll('tbody tr')].map(tr => text(tr.children[3])));
    return {title: text(s.querySelector('h2 a')) || text(s.querySelector('h2')).split(' — ')[0],
            verdict: text(s.querySelector('h2 span')).split(' (')[0], cells, verdicts};
  });
  const overview = [...document.querySelectorAll('table.overview tbody tr')].map(tr =>
    ({title: text(tr.children[1]), verdict: text(tr.children[2]).split(' (')[0]}));
  const wide = [...document.querySelectorAll('table')].filter(t => t.getBoundingClientRect().right > width + 1)
    .map(t => text(t.closest('section')?.querySelector('h2')) || text(t.querySelector('th')));
  return {banner: text(document.querySelector('.banner')).split(':')[0], sections, overview, wide,
          scroll: document.documentElement.scrollWidth > width + 1};
}"""


def expected_modelled(environment: dict[str, str]) -> set[tuple[str, str]]:
    """The columns the night's model list gives values to."""
    named = {part.split("=")[0].strip() for part in environment.get("product.modelled", "").split(",") if part}
    return set().union(*(MODEL_FEEDS[name] for name in named if name in MODEL_FEEDS))


def problems(facts: dict[str, Any], modelled: set[tuple[str, str]]) -> list[str]:
    """Everything on the page a board could misread; empty when the page tells one story."""
    found = []
    sections = {s["title"]: s for s in facts["sections"]}
    worst = min((s["verdict"] for s in facts["sections"]), key=ORDER.index, default="PASS")
    if facts["banner"] != min([worst, facts["banner"]], key=ORDER.index) or facts["banner"] not in ORDER:
        found.append(f"banner {facts['banner']!r} is milder than a test's {worst!r}")
    for row in facts["overview"]:
        if row["title"] in sections and sections[row["title"]]["verdict"] != row["verdict"]:
            found.append(f"{row['title']}: listed {row['verdict']!r}, headed {sections[row['title']]['verdict']!r}")
    for title, section in sections.items():
        scenario = title.split(" ")[0]
        if section["verdict"] == "PASS" and any("fail" in c["classes"].split() for c in section["cells"]):
            found.append(f"{title}: headed PASS with a FAIL row")
        if section["verdict"] == "PASS" and {"FAIL", "INCONCLUSIVE"} & set(section["verdicts"]):
            found.append(f"{title}: headed PASS with a verdict {section['verdicts']}")
        for cell in section["cells"]:
            marked = "modelled" in cell["classes"].split() and cell["text"].endswith(reports.tables.MODELLED_MARK)
            should = (scenario, cell["column"]) in modelled and cell["text"] != "—"
            if should and not marked:
                found.append(f"{title}: {cell['column']} {cell['text']!r} is modelled but not marked")
            if marked and not should:
                found.append(f"{title}: {cell['column']} {cell['text']!r} is marked modelled but was measured")
    if not any((s["title"].split(" ")[0], c["column"]) in modelled for s in facts["sections"] for c in s["cells"]):
        found.append("no modelled column on the page: the seeded night lost its modelled figures")
    found += [f"table wider than the page: {name}" for name in facts["wide"]]
    if facts["scroll"]:
        found.append("the page scrolls sideways")
    return found


@pytest.fixture
def board(browser: Any, tmp_path: Path) -> Iterator[Any]:
    """Open a rendered night at 1280 x 720 (only local files load) and return what the page shows."""
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(("file:", "data:", "about:"))
               else route.abort())

    def read(night: SummaryInput) -> dict[str, Any]:
        path = tmp_path / "board.html"
        path.write_text(render(night))
        page.goto(path.as_uri())
        facts: dict[str, Any] = page.evaluate(FACTS)
        return facts

    yield read
    context.close()


def test_the_seeded_night_tells_one_story_marks_every_modelled_figure_and_fits_1280_px(board: Any) -> None:
    night = seeded_night()
    facts = board(night)
    assert problems(facts, expected_modelled(SIMULATED)) == []
    assert facts["banner"] == "INCONCLUSIVE", "the S3 ratio's interval holds its threshold"
    by_title = {s["title"]: s["verdict"] for s in facts["sections"]}
    assert by_title["S1 · latency sweep on site-a~site-b"] == "PASS with findings", "a FAIL row in a passing sweep"
    assert by_title["S4 · unplanned on host-a"] == "PASS with findings", "its failover regressed tonight"


def test_the_expected_marks_follow_the_labs_model() -> None:
    assert set(MODEL_FEEDS) <= set(MODEL), "a model parameter the lab no longer has"
    assert expected_modelled(SIMULATED) == set().union(*MODEL_FEEDS.values())


def test_the_checks_fail_when_the_generator_drops_the_modelled_mark(board: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reports.tables, "modelled_cell", lambda text, classes: (text, classes))
    found = problems(board(seeded_night()), expected_modelled(SIMULATED))
    assert found and all("is modelled but not marked" in p for p in found), found
    assert len(found) == 5, "S2's three resync cells and S5's migration and stun"


def test_the_checks_fail_when_the_generator_lets_a_table_overflow(board: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(summary_page, "SUMMARY_STYLE", summary_page.SUMMARY_STYLE + "th,td{white-space:nowrap}")
    found = problems(board(seeded_night()), expected_modelled(SIMULATED))
    assert any(p.startswith("table wider than the page: S6") for p in found), found


def test_the_checks_fail_when_a_heading_disagrees_with_its_table(board: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(summary_page, "verdict_of", lambda test, regressed=(): "PASS" if test.status == "passed" else "FAIL")
    found = problems(board(seeded_night()), expected_modelled(SIMULATED))
    assert "S1 · latency sweep on site-a~site-b: headed PASS with a FAIL row" in found, found
    assert any(p.startswith("S3 · site failure on site-a: headed PASS with a verdict") for p in found), found
