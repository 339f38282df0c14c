"""One night's report, start to end: the Allure report, tonight's figures judged against the last nights,
the summary page the board opens (with the Allure report inside it), and optionally its PDF.

The figures history (`figures.jsonl`) lives beside Allure's history in the output directory,
so running every night into the same `OUT` grows both trends. A run reported twice is kept
once (a night is named by its first test's start).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from reports.allure.generate import ReportOutput, generate_report, history_file_of
from reports.allure.results_read import RecordedTest, read_environment, read_tests, report_ids
from reports.evidence_archive import ARCHIVE_NAME, sha256_of, write_archive
from reports.outcome import MEANING, Verdict
from reports.regression import (
    FIGURES_HISTORY,
    Judgement,
    RegressionRule,
    append_night,
    judge,
    night_of,
    read_history,
)
from reports.summary_page import SummaryInput, overall, regressed_keys, render, verdict_of

SUMMARY_FILE_NAME = "resilience-report.html"
PDF_FILE_NAME = "resilience-report.pdf"
REPORT_SCHEMA = "harness-report/1"


@dataclass(frozen=True)
class Report:
    summary_file: Path  # what the board opens
    allure: ReportOutput
    pdf_file: Path | None
    tests: list[RecordedTest]
    judgements: list[Judgement]
    figures_history: Path
    evidence: Path  # the results as a deterministic archive, its SHA-256 printed on the page and in the PDF
    evidence_sha256: str

    @property
    def regressions(self) -> list[Judgement]:
        return [j for j in self.judgements if j.regressed]

    @property
    def verdict(self) -> Verdict:
        return overall(self.tests, self.judgements)

    def document(self, exit_code: int) -> dict[str, object]:
        """What `report --json` prints (schema harness-report/1): the run's verdict and exit code, each test's
        verdict, the regressions, and where the page, the PDF, the Allure site and the evidence archive are."""
        regressed = regressed_keys(self.judgements)
        return {"schema": REPORT_SCHEMA, "exit_code": exit_code, "verdict": self.verdict,
                "summary_file": str(self.summary_file), "pdf_file": str(self.pdf_file) if self.pdf_file else None,
                "allure_site": str(self.allure.site_dir / "index.html"), "evidence": str(self.evidence),
                "evidence_sha256": self.evidence_sha256,
                "tests": [{"title": t.title, "full_name": t.full_name, "status": t.status,
                           "verdict": verdict_of(t, regressed)} for t in self.tests],
                "regressions": [j.sentence() for j in self.regressions]}


def build_report(results: Path, out: Path, *, name: str = "Resilience report", history_file: Path | None = None,
                 rule: RegressionRule | None = None, pdf: bool = False) -> Report:
    rule = rule or RegressionRule()
    tests = read_tests(results)
    figures = [f for t in tests if t.record is not None and t.status != "broken" for f in t.record.figures]
    history_path = history_file_of(out, history_file).parent / FIGURES_HISTORY
    history = read_history(history_path)
    verdicts = [(t.record.case, v) for t in tests if t.record is not None and t.status != "broken"
                for v in t.record.verdicts]
    tonight = night_of(figures, run=_run_name(tests), verdicts=verdicts)
    earlier = [n for n in history if n.run != tonight.run]
    judgements = judge(tonight.figures, tonight.better, earlier, rule, tonight.spread, tonight.scales)
    if tonight.figures and (not history or history[-1].run != tonight.run):
        history_path.parent.mkdir(parents=True, exist_ok=True)
        append_night(history_path, tonight)
    allure = generate_report(results, out, history_file=history_file, name=name,
                             shown=shown_in_allure(tests, judgements))
    evidence = out.resolve() / ARCHIVE_NAME
    digest = write_archive(results, evidence)
    summary = out.resolve() / SUMMARY_FILE_NAME
    summary.write_text(render(SummaryInput(
        name=name, generated_at=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), tests=tests,
        environment=read_environment(results), judgements=judgements, history=earlier, rule=rule,
        report_ids=report_ids(allure.site_dir, tests), allure_html=allure.single_file.read_text(encoding="utf-8"),
        evidence=(ARCHIVE_NAME, digest))),
        encoding="utf-8")
    pdf_file = None
    if pdf:
        from reports.pdf import print_pdf

        pdf_file = print_pdf(summary, out.resolve() / PDF_FILE_NAME)
        pdf_file.with_name(pdf_file.name + ".sha256").write_text(f"{sha256_of(pdf_file)}  {pdf_file.name}\n")
    return Report(summary, allure, pdf_file, tests, judgements, history_path, evidence, digest)


def shown_in_allure(tests: list[RecordedTest], judgements: list[Judgement]) -> dict[str, tuple[str, str]]:
    """Each test pytest passed whose verdict is not a plain PASS, as Allure should show it: `unknown`, the verdict
    and what it means first in its message (the categories `VERDICT_CATEGORIES` match on it)."""
    regressed = regressed_keys(judgements)
    shown = {}
    for test in tests:
        verdict = verdict_of(test, regressed)
        if verdict in ("INCONCLUSIVE", "PASS with findings"):
            shown[test.uuid] = ("unknown", f"{verdict}: {MEANING[verdict]} (the summary page says why)")
    return shown


def _run_name(tests: list[RecordedTest]) -> str:
    starts = [t.start for t in tests if t.start]
    return str(min(starts)) if starts else ""
