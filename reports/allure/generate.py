"""Drive the pinned Allure 3 CLI: one `generate` gives the multi-file site, the single HTML file and the trend.

Both outputs come from one generate run (two `awesome` plugin instances in one config) so
the history file gains exactly one entry per night. The tree is grouped as the scenarios are
(scenario -> fault kind -> target), and fixture noise is left out of a staged copy of the
results (`staging`). The generator embeds a Google Tag Manager script in every page; it is
stripped here, since a report opened on a change board must not call anyone.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness_kernel.errors import HarnessError
from harness_kernel.paths import tools_dir
from reports.allure.results_dir import VERDICT_CATEGORIES, categories
from reports.allure.staging import stage

SINGLE_FILE_NAME = "allure-report.html"
GROUP_BY = ["epic", "feature", "story"]  # scenario -> fault kind -> target
HISTORY_FILE_NAME = "history.jsonl"
_GENERATED = ("site", "single", "index.html", "summary.json", "test-results.json", SINGLE_FILE_NAME,
              "resilience-report.html")
_SCRIPT = re.compile(r"<script\b([^>]*)>(.*?)</script>\s*", re.IGNORECASE | re.DOTALL)
_ANALYTICS = re.compile(r"googletagmanager|google-analytics|\bgtag\(|dataLayer", re.IGNORECASE)


class AllureCliError(HarnessError):
    """The Allure CLI is missing or failed; the test results themselves are intact."""


@dataclass(frozen=True)
class ReportOutput:
    site_dir: Path
    single_file: Path
    history_file: Path
    history_entries: int
    seconds: float


ALLURE_VERSION = "3.18.0"  # the Allure 3 CLI `make setup` installs (Makefile's ALLURE_VERSION)


def allure_binary(tools: Path | None = None) -> Path:
    return (tools or tools_dir()) / "allure" / "node_modules" / ".bin" / "allure"


def allure_command(tools: Path | None = None) -> list[str]:
    """The Allure 3 CLI: the harness's own (`make setup`, or HARNESS_TOOLS), else an `allure` on PATH (an installed
    wheel has no tools of its own); missing, the error says the one command that installs it."""
    binary = allure_binary(tools)
    node = shutil.which("node")
    if binary.exists():
        if node is None:
            raise AllureCliError("node is not on PATH; the Allure 3 CLI needs Node.js")
        return [node, str(binary.resolve())]
    on_path = shutil.which("allure")
    if on_path is not None:
        return [on_path]
    raise AllureCliError(f"Allure CLI not found at {binary} nor on PATH: install it with `npm install --global "
                         f"allure@{ALLURE_VERSION}` (Node.js 20 or later), or run `make setup` in a checkout (or set "
                         "HARNESS_TOOLS)")


def allure_config(name: str, history_file: Path, rules: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Two awesome instances (site + single file), the trend's history file, our categories, no agent."""
    return {
        "name": name,
        "historyPath": str(history_file),
        "categories": list(rules),
        "plugins": {
            "site": {"import": "awesome", "options": {"reportName": name, "groupBy": GROUP_BY}},
            "single": {"import": "awesome", "options": {"reportName": name, "singleFile": True, "groupBy": GROUP_BY}},
            "agent": {"enabled": False},
        },
    }


def strip_analytics(html: str) -> str:
    """Remove every script element that loads or feeds Google Tag Manager / Analytics."""
    def keep(match: re.Match[str]) -> str:
        attrs, body = match.group(1), match.group(2)
        return "" if _ANALYTICS.search(attrs) or (len(body) < 4000 and _ANALYTICS.search(body)) else match.group(0)
    return _SCRIPT.sub(keep, html)


def strip_analytics_in(root: Path) -> list[Path]:
    """Strip every generated HTML page under `root`; return the pages that changed."""
    changed = []
    for page in root.rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        stripped = strip_analytics(html)
        if stripped != html:
            page.write_text(stripped, encoding="utf-8")
            changed.append(page)
    return changed


def _results_categories(results_dir: Path) -> list[dict[str, Any]]:
    """The categories the run wrote (the plugin's `categories.json`), else the defaults; with the verdicts' the
    staging shows (a run written before them had none)."""
    path = results_dir / "categories.json"
    found = list(json.loads(path.read_text())) if path.exists() else categories()
    names = {str(c.get("name")) for c in found}
    return found + [dict(c) for c in VERDICT_CATEGORIES if c["name"] not in names]


def history_file_of(out_dir: Path, history_file: Path | None = None) -> Path:
    """Where Allure's trend lives: `history_file`, else `out_dir/history.jsonl` (it survives regeneration)."""
    return (history_file or out_dir.resolve() / HISTORY_FILE_NAME).resolve()


def _clean(out_dir: Path) -> None:
    for name in _GENERATED:
        target = out_dir / name
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()


def _count_lines(path: Path) -> int:
    return sum(1 for line in path.read_text().splitlines() if line.strip()) if path.exists() else 0


def generate_report(results_dir: Path, out_dir: Path, *, history_file: Path | None = None,
                    name: str = "Resilience report", tools: Path | None = None, timeout_s: float = 300.0,
                    shown: Mapping[str, tuple[str, str]] | None = None) -> ReportOutput:
    """Generate `out_dir/site/` and `out_dir/allure-report.html`; append this run to the history file.

    The history file defaults to `out_dir/history.jsonl`: it survives regeneration (only what
    Allure generates is replaced), so consecutive nightly runs into the same `--out` build the trend.
    """
    if not results_dir.is_dir():
        raise AllureCliError(f"no Allure results directory at {results_dir}")
    out_dir = out_dir.resolve()
    history = history_file_of(out_dir, history_file)
    out_dir.mkdir(parents=True, exist_ok=True)
    history.parent.mkdir(parents=True, exist_ok=True)
    _clean(out_dir)
    command = allure_command(tools)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="allurerc-") as config_dir:
        config = Path(config_dir) / "allurerc.json"
        config.write_text(json.dumps(allure_config(name, history, _results_categories(results_dir))))
        staged = stage(results_dir, Path(config_dir) / "results", shown)
        run = subprocess.run([*command, "generate", "--config", str(config), "--output", str(out_dir),
                              str(staged)], cwd=config_dir, capture_output=True, text=True,
                             timeout=timeout_s, check=False, env=os.environ | {"NO_COLOR": "1"})
    if run.returncode != 0:
        raise AllureCliError(f"allure generate exited {run.returncode}: {(run.stderr or run.stdout)[-2000:]}")
    single = out_dir / SINGLE_FILE_NAME
    generated_single = out_dir / "single" / "index.html"
    if not generated_single.exists() or not (out_dir / "site" / "index.html").exists():
        raise AllureCliError(f"allure generate left no report in {out_dir}: {run.stdout[-2000:]}")
    generated_single.replace(single)
    shutil.rmtree(out_dir / "single")
    strip_analytics_in(out_dir)
    return ReportOutput(site_dir=out_dir / "site", single_file=single, history_file=history,
                        history_entries=_count_lines(history), seconds=time.monotonic() - started)
