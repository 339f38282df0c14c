"""`python -m harness report RESULTS_DIR`: the HTML report from one run's Allure results."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def add_report_parser(subparsers: Any) -> None:
    """Register `report` on the harness CLI's subparsers; the parsed args carry `func`."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "report", help="generate the HTML report (site + single file) from Allure results",
        description="Generate the multi-file site and one self-contained HTML file with the pinned Allure CLI. "
                    "Keep --out (or --history-file) stable across nights so the trend accumulates.")
    parser.add_argument("results_dir", type=Path, metavar="RESULTS_DIR", help="the run's --alluredir")
    parser.add_argument("--out", type=Path, default=None, help="output directory (default: RESULTS_DIR/../allure-report)")
    parser.add_argument("--history-file", type=Path, default=None,
                        help="history file carried between runs (default: OUT/history.jsonl)")
    parser.add_argument("--name", default="Resilience report", help="report title")
    parser.set_defaults(func=run_report)


def run_report(args: argparse.Namespace) -> int:
    """Print the single file's path on stdout (for scripts); details on stderr."""
    from reports.allure.generate import generate_report  # Allure and matplotlib only for this command
    out = args.out if args.out is not None else args.results_dir.resolve().parent / "allure-report"
    result = generate_report(args.results_dir, out, history_file=args.history_file, name=args.name)
    size_kib = result.single_file.stat().st_size / 1024
    print(f"report site: {result.site_dir / 'index.html'} (serve it over http; file:// does not load it)", file=sys.stderr)
    print(f"history: {result.history_file} ({result.history_entries} runs); generated in {result.seconds:.1f} s, "
          f"single file {size_kib:,.0f} KiB", file=sys.stderr)
    print(result.single_file)
    return 0
