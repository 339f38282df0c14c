"""What a test, and a run, come to: one order that the terminal summary, the summary page's banner, its
scenario list and headings, and the report's exit code all read (README, "Exit codes").

FAIL (an SLO was violated, data was lost) > ERROR (the harness or the infrastructure broke: the
product was not judged) > INCONCLUSIVE (a figure's 95 % interval holds its threshold) > PASS with
findings (every judged threshold held, and something still needs reading: a characterising step
below its target, an outage inside a window meant to be steady, a figure worse than its recent
nights) > PASS. A run takes the worst of its tests; a run of passes with a regressed figure passes
with findings.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from reports.regression import REGRESSION_EXIT_CODE

Verdict = Literal["FAIL", "ERROR", "INCONCLUSIVE", "PASS with findings", "PASS", "SKIP"]
ORDER: tuple[Verdict, ...] = ("FAIL", "ERROR", "INCONCLUSIVE", "PASS with findings", "PASS", "SKIP")
MEANING: dict[Verdict, str] = {
    "FAIL": "an SLO was violated",
    "ERROR": "harness or infrastructure broken: the product was not judged",
    "INCONCLUSIVE": "no threshold missed, but not every one shown to hold",
    "PASS with findings": "every judged threshold held; read the findings",
    "PASS": "within every threshold",
    "SKIP": "not run",
}


def test_verdict(status: str, *, inconclusive: bool, findings: bool) -> Verdict:
    """`status` as pytest or Allure gives it: passed / failed / broken or error / skipped."""
    if status == "failed":
        return "FAIL"
    if status in ("broken", "error"):
        return "ERROR"
    if status != "passed":
        return "SKIP"
    return "INCONCLUSIVE" if inconclusive else "PASS with findings" if findings else "PASS"


def run_verdict(tests: Iterable[Verdict], *, regressed: bool = False) -> Verdict:
    worst: Verdict = min(tests, key=ORDER.index, default="SKIP")
    return "PASS with findings" if worst == "PASS" and regressed else worst


def exit_code(verdict: Verdict, *, regressed: bool, fail_on_regression: bool) -> int:
    """The night's code by the README's table: 1 when an SLO failed, whatever the history; 10 when a test broke
    (the harness or the infrastructure); 6 only when every SLO held and a figure regressed
    (`--fail-on-regression`); an INCONCLUSIVE verdict or a finding alone is 0 (`--inconclusive fail` made the
    test itself fail)."""
    if verdict == "FAIL":
        return 1
    if verdict == "ERROR":
        return 10
    return REGRESSION_EXIT_CODE if fail_on_regression and regressed else 0
