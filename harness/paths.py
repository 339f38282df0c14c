"""Where things live on the harness machine: durable state (journal, locks) and installed tools."""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_STATE_DIR = Path("/var/lib/resilience-harness")


def state_dir(explicit: str | Path | None = None) -> Path:
    """`--state-dir`, else `$HARNESS_STATE_DIR`, else the machine-wide default."""
    chosen = explicit or os.environ.get("HARNESS_STATE_DIR") or DEFAULT_STATE_DIR
    path = Path(chosen)
    path.mkdir(parents=True, exist_ok=True)
    return path


def tools_dir() -> Path:
    """$HARNESS_TOOLS, else the repository's `.tools` (where `make setup` installs Toxiproxy and Allure)."""
    configured = os.environ.get("HARNESS_TOOLS")
    return Path(configured) if configured else Path(__file__).resolve().parents[1] / ".tools"
