"""Last line of defence against credentials in evidence: find and blank them in results and reports.

Credentials reach a run only by reference (env var or keyring key). A driver's log line or an
exception message may still echo a resolved value; results directories travel to CI servers
and change tickets, so the plugin scrubs them with the values it resolved before they leave.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import quote, quote_plus

MASK = "***"
_MIN_SECRET_LEN = 4  # shorter values would blank ordinary text


def _forms(secret: str) -> set[bytes]:
    """The spellings a value takes on its way into files: raw, JSON-escaped, URL-encoded."""
    forms = {secret, json.dumps(secret)[1:-1], quote(secret, safe=""), quote_plus(secret)}
    return {f.encode() for f in forms if len(f) >= _MIN_SECRET_LEN}


def _needles(secrets: Iterable[str]) -> list[bytes]:
    found: set[bytes] = set()
    for secret in secrets:
        if len(secret) >= _MIN_SECRET_LEN:
            found |= _forms(secret)
    return sorted(found, key=len, reverse=True)


def _files_with(root: Path, needles: list[bytes]) -> list[Path]:
    return [p for p in sorted(root.rglob("*")) if p.is_file() and any(n in p.read_bytes() for n in needles)]


def files_containing(root: Path, secrets: Iterable[str]) -> list[Path]:
    """Every file under `root` that holds any spelling of any secret."""
    return _files_with(root, _needles(secrets))


def scrub_tree(root: Path, secrets: Iterable[str]) -> list[Path]:
    """Replace every spelling of every secret under `root` with a mask; return the files changed."""
    needles = _needles(secrets)
    changed = []
    for path in _files_with(root, needles):
        data = path.read_bytes()
        for needle in needles:
            data = data.replace(needle, MASK.encode())
        path.write_bytes(data)
        changed.append(path)
    return changed
