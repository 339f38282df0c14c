"""Last line of defence against credentials in evidence: find and mask them in result files.

Credentials reach a run only by reference (env var or keyring key). A driver's log line or an
exception message may still echo a resolved value; results directories (Allure, JUnit, tables)
travel to CI servers and change tickets, so the plugin scrubs them with the values it resolved,
after each test and at session end. What counts as a secret's spelling is `harness_kernel.redaction`'s
rule. JSON and XML are masked per string, so that a short secret cannot break their structure.
"""

from __future__ import annotations

import io
import json
import os
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from harness_kernel.redaction import MASK, Redactor

__all__ = ["MASK", "files_containing", "scrub_file", "scrub_tree"]

_Seen = dict[Path, tuple[int, int]]


def _redactor(secrets: Iterable[str] | Redactor) -> Redactor:
    return secrets if isinstance(secrets, Redactor) else Redactor(secrets)


def _mask_json(value: Any, redactor: Redactor) -> Any:
    if isinstance(value, str):
        return redactor.mask(value)
    if isinstance(value, list):
        return [_mask_json(v, redactor) for v in value]
    if isinstance(value, dict):
        return {redactor.mask(k): _mask_json(v, redactor) for k, v in value.items()}
    return value


def _mask_xml(text: str, redactor: Redactor) -> str:
    root = ET.fromstring(text)
    for element in root.iter():
        element.text = redactor.mask(element.text) if element.text else element.text
        element.tail = redactor.mask(element.tail) if element.tail else element.tail
        element.attrib = {k: redactor.mask(v) for k, v in element.attrib.items()}
    out = io.BytesIO()
    ET.ElementTree(root).write(out, encoding="utf-8", xml_declaration=True)
    return out.getvalue().decode()


def scrub_text(text: str, suffix: str, redactor: Redactor) -> str:
    """`text` masked; JSON and XML keep their structure (a partial file is masked as plain text)."""
    try:
        if suffix == ".json":
            return json.dumps(_mask_json(json.loads(text), redactor), ensure_ascii=False)
        if suffix == ".xml":
            return _mask_xml(text, redactor)
    except (ValueError, ET.ParseError):
        pass
    return redactor.mask(text)


def scrub_file(path: Path, secrets: Iterable[str] | Redactor) -> bool:
    """Mask every spelling of every secret in one file, replaced atomically; True if it changed."""
    redactor = _redactor(secrets)
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        scrubbed = redactor.mask_bytes(data)
    else:
        scrubbed = scrub_text(text, path.suffix, redactor).encode() if redactor.found_in(text) else data
    if scrubbed == data:
        return False
    temporary = path.with_name(f".{path.name}.scrub")
    temporary.write_bytes(scrubbed)
    os.replace(temporary, path)
    return True


def _holds(path: Path, redactor: Redactor) -> bool:
    data = path.read_bytes()
    try:
        return redactor.found_in(data.decode("utf-8"))
    except UnicodeDecodeError:
        return redactor.mask_bytes(data) != data


def files_containing(root: Path, secrets: Iterable[str] | Redactor) -> list[Path]:
    """Every file under `root` that holds any spelling of any secret."""
    redactor = _redactor(secrets)
    return [p for p in sorted(root.rglob("*")) if p.is_file() and _holds(p, redactor)]


def scrub_tree(root: Path, secrets: Iterable[str] | Redactor, seen: _Seen | None = None) -> list[Path]:
    """Mask every spelling of every secret under `root`; return the files changed.

    `seen` remembers files already clean (by modification time and size) so that scrubbing
    after every test rereads only what changed.
    """
    redactor = _redactor(secrets)
    if not redactor or not root.is_dir():
        return []
    changed = []
    for path in sorted(root.rglob("*")):
        try:
            stat = path.stat()
            if not path.is_file() or (seen is not None and seen.get(path) == (stat.st_mtime_ns, stat.st_size)):
                continue
            if scrub_file(path, redactor):
                changed.append(path)
                stat = path.stat()
        except FileNotFoundError:  # replaced or removed meanwhile (Allure writes through temporary files)
            continue
        if seen is not None:
            seen[path] = (stat.st_mtime_ns, stat.st_size)
    return changed
