"""Fixtures for the report tests: two real sample runs, their report, a loopback-only headless Chromium."""

from __future__ import annotations

import functools
import http.server
import os
import secrets
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reports.allure.generate import generate_report
from tests.integration.reports.report_support import LoopbackBrowser, SampleRuns

collect_ignore = ["sample_suite"]

SAMPLE_SUITE = Path(__file__).parent / "sample_suite"
REPO_ROOT = Path(__file__).resolve().parents[3]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
LOOPBACK_PREFIXES = ("file:", "data:", "blob:", "http://127.0.0.1:", "about:")


def _run_sample(runs: SampleRuns, night: int) -> None:
    results = runs.workdir / f"allure-results-{night}"
    env = os.environ | {"PYTHONPATH": str(REPO_ROOT), "SAMPLE_DB_PASSWORD": runs.secret,
                        "SAMPLE_CHANGE_TICKET": "CHG0042", "SAMPLE_LOCK_S": "2", "SAMPLE_STEADY_S": "2"}
    child = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--rootdir", str(runs.workdir),
                            "--alluredir", str(results), str(runs.workdir / "test_sample_experiments.py")],
                           cwd=runs.workdir, env=env, capture_output=True, text=True, timeout=120, check=False)
    runs.results.append(results)
    runs.exit_codes.append(child.returncode)
    runs.outputs.append(child.stdout + child.stderr)
    runs.reports.append(generate_report(results, runs.workdir / "report", name="Sample resilience report"))


@pytest.fixture(scope="package")
def sample_runs(tmp_path_factory: pytest.TempPathFactory) -> SampleRuns:
    workdir = tmp_path_factory.mktemp("sample-nightly")
    for source in SAMPLE_SUITE.glob("*.py"):
        shutil.copy(source, workdir / source.name)
    runs = SampleRuns(workdir=workdir, secret="pw-" + secrets.token_urlsafe(18))
    for night in (1, 2):
        _run_sample(runs, night)
    return runs


@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed")
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def loopback_page(browser: Any) -> Iterator[LoopbackBrowser]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, service_workers="block")
    blocked: list[str] = []

    def guard(route: Any) -> None:
        url = route.request.url
        if url.startswith(LOOPBACK_PREFIXES):
            route.continue_()
        else:
            blocked.append(url)
            route.abort()

    context.route("**/*", guard)
    yield LoopbackBrowser(context.new_page(), blocked)
    context.close()


@pytest.fixture
def serve_loopback() -> Iterator[Any]:
    """Serve a directory on 127.0.0.1 (multi-file reports do not load over file://)."""
    servers: list[http.server.ThreadingHTTPServer] = []

    class QuietHandler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    def serve(directory: Path) -> str:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(directory)))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/"

    yield serve
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture
def artifacts(tmp_path: Path) -> Iterator[list[Path]]:
    """Files to keep as CI artifacts: left in the test's tmp dir and copied to $HARNESS_ARTIFACTS if set."""
    kept: list[Path] = []
    yield kept
    target = os.environ.get("HARNESS_ARTIFACTS")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        for path in kept:
            shutil.copy(path, Path(target) / path.name)
