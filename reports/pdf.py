"""The summary page printed to one PDF for the change ticket, by headless Chromium, contacting nothing.

The page is a local file with no external resource; Chromium is also told that no host name
resolves and that there is no proxy, so printing cannot reach the network even by mistake.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from harness_kernel.errors import HarnessError

PRINT_TIMEOUT_S = 120.0


class PdfError(HarnessError):
    """Chromium is missing or could not print; the HTML report is intact."""


def chromium() -> str:
    found = os.environ.get("HARNESS_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        raise PdfError("no Chromium to print the PDF with (apt install chromium, or set HARNESS_CHROMIUM)")
    return found


def print_pdf(page: Path, pdf: Path, timeout_s: float = PRINT_TIMEOUT_S) -> Path:
    with tempfile.TemporaryDirectory(prefix="harness-pdf-") as profile:
        run = subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                              "--no-proxy-server", "--host-resolver-rules=MAP * ~NOTFOUND",
                              f"--user-data-dir={profile}", "--no-pdf-header-footer", f"--print-to-pdf={pdf}",
                              page.resolve().as_uri()],
                             stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout_s, check=False)
    if run.returncode != 0 or not pdf.is_file() or pdf.stat().st_size == 0:
        raise PdfError(f"chromium could not print {page} (exit {run.returncode}): {run.stderr[-800:]}")
    return pdf
