"""Where a machine keeps the harness's durable state (journal, locks)."""

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
