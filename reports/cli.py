"""`python -m harness report RESULTS_DIR`: the summary page (with the Allure report inside) from one run's results."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from reports.outcome import exit_code
from reports.regression import REGRESSION_EXIT_CODE, RegressionRule


def add_regression_options(parser: argparse.ArgumentParser) -> None:
    """The nightly regression verdict's options, shared by `report` and `demo`."""
    defaults = RegressionRule()
    parser.add_argument("--fail-on-regression", action="store_true",
                        help=f"exit {REGRESSION_EXIT_CODE} when a figure got worse than its recent nights "
                             "(1 stays 'an SLO was violated')")
    parser.add_argument("--regression-window", type=int, default=defaults.window, metavar="NIGHTS",
                        help=f"nights the median is taken over (default {defaults.window})")
    parser.add_argument("--regression-band-pct", type=float, default=defaults.band_pct, metavar="PCT",
                        help=f"noise band as a share of that median (default {defaults.band_pct:g})")
    parser.add_argument("--regression-band-points", type=float, default=defaults.band_points, metavar="POINTS",
                        help="noise band of a figure that is already a percentage (a drop %%, a change %%), in "
                             f"points (default {defaults.band_points:g})")
    parser.add_argument("--regression-mad", type=float, default=defaults.mad_k, metavar="K",
                        help=f"noise band as K median absolute deviations, the larger band counts (default "
                             f"{defaults.mad_k:g})")
    parser.add_argument("--regression-min-nights", type=int, default=defaults.min_history, metavar="N",
                        help=f"earlier nights a figure needs before it is judged (default {defaults.min_history})")


def regression_rule(args: argparse.Namespace) -> RegressionRule:
    return RegressionRule(window=args.regression_window, band_pct=args.regression_band_pct,
                          band_points=args.regression_band_points, mad_k=args.regression_mad,
                          min_history=args.regression_min_nights)


def add_report_parser(subparsers: Any) -> None:
    """Register `report` on the harness CLI's subparsers; the parsed args carry `func`."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "report", help="build the summary page (Allure report inside), judge the figures against the last nights",
        description="Build the self-contained summary page a change board opens (verdict, scenario tables, key "
                    "figures and their trend, environment; the full Allure report inside it) and the Allure site. "
                    "Keep --out stable across nights so both trends accumulate.")
    parser.add_argument("results_dir", type=Path, metavar="RESULTS_DIR", help="the run's --alluredir")
    parser.add_argument("--out", type=Path, default=None, help="output directory (default: RESULTS_DIR/../allure-report)")
    parser.add_argument("--history-file", type=Path, default=None,
                        help="Allure's history file carried between runs (default: OUT/history.jsonl; the figures' "
                             "history is kept beside it)")
    parser.add_argument("--name", default="Resilience report", help="report title")
    parser.add_argument("--pdf", action="store_true", help="also print the summary page to one PDF (headless Chromium)")
    parser.add_argument("--json", action="store_true", help="one JSON document on stdout (schema harness-report/1) "
                                                            "instead of the summary page's path")
    add_regression_options(parser)
    parser.set_defaults(func=run_report)


def run_report(args: argparse.Namespace) -> int:
    """Print the summary page's path on stdout (for scripts); details on stderr."""
    from reports.build import build_report  # Allure and matplotlib only for this command

    out = args.out if args.out is not None else args.results_dir.resolve().parent / "allure-report"
    report = build_report(args.results_dir, out, name=args.name, history_file=args.history_file,
                          rule=regression_rule(args), pdf=args.pdf)
    print(f"allure site: {report.allure.site_dir / 'index.html'} (serve it over http; file:// does not load it)",
          file=sys.stderr)
    print(f"history: {report.allure.history_file} ({report.allure.history_entries} runs), figures "
          f"{report.figures_history}; generated in {report.allure.seconds:.1f} s", file=sys.stderr)
    for judgement in report.regressions:
        print(f"REGRESSION {judgement.sentence()}", file=sys.stderr)
    if report.pdf_file is not None:
        print(f"pdf: {report.pdf_file}", file=sys.stderr)
    code = exit_code(report.verdict, regressed=bool(report.regressions), fail_on_regression=args.fail_on_regression)
    print(json.dumps(report.document(code), indent=1) if args.json else report.summary_file)
    return code
