"""Helpers shared by the lab tests."""

from __future__ import annotations

import tempfile
from pathlib import Path


def make_state_dir(prefix: str) -> Path:
    """A fresh state directory user postgres can enter (/tmp, mode 755; pytest's tmp_path is 700)."""
    path = Path(tempfile.mkdtemp(prefix=f"{prefix}-", dir="/tmp"))
    path.chmod(0o755)
    return path
