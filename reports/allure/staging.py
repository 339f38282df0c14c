"""The results as the report shows them: fixture noise left out, everything else as recorded.

allure-pytest records every fixture a test used as a set-up or tear-down step (`pytestconfig`,
`windows`, `key_numbers`, ...). A reader needs the ones that did something visible: failed,
took steps, or attached evidence. The others are dropped from a staged copy of the results
(files are hard-linked where the filesystem allows, else copied: the Allure CLI skips symbolic
links); the run's own results directory is never changed. So are the tear-down stages that never ran
(`never_ran`), which Allure would show with an unknown status.

A test the report calls INCONCLUSIVE or PASS with findings passed as far as pytest knows; the staged copy shows
it as Allure's `unknown` with the verdict as its message (`shown`), so Allure's ring and categories tell the
story the summary page tells, never 100 % passed under an amber banner.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

NOISE_FREE_STATUSES = ("passed",)


def never_ran(fixture: Mapping[str, Any]) -> bool:
    """A stage with neither a status nor an end: from pytest 9.1 every fixture carries a finalizer of pytest's own,
    which allure-pytest wraps but pytest never calls through the wrapper, so it is written as "<fixture>::<lambda>"
    of unknown status (allure-framework/allure-python#918). Nothing ran: nothing to show."""
    return fixture.get("status") is None and fixture.get("stop") is None and not fixture.get("steps")


def worth_showing(fixture: Mapping[str, Any]) -> bool:
    if never_ran(fixture):
        return False
    return (fixture.get("status") not in NOISE_FREE_STATUSES or bool(fixture.get("steps"))
            or bool(fixture.get("attachments")))


def without_noise(container: dict[str, Any]) -> dict[str, Any]:
    return {**container, "befores": [f for f in container.get("befores", []) if worth_showing(f)],
            "afters": [f for f in container.get("afters", []) if worth_showing(f)]}


def shown_as(result: dict[str, Any], status: str, message: str) -> dict[str, Any]:
    """The result with Allure status `status`, `message` first in its status details (what it said kept after)."""
    details = dict(result.get("statusDetails") or {})
    said = str(details.get("message") or "")
    details["message"] = f"{message}\n{said}" if said else message
    return {**result, "status": status, "statusDetails": details}


def stage(results: Path, staged: Path, shown: Mapping[str, tuple[str, str]] | None = None) -> Path:
    """A copy of `results` in `staged` (made here) whose containers keep only fixtures worth showing, and whose
    results named in `shown` (uuid -> Allure status, message) carry that status."""
    staged.mkdir(parents=True, exist_ok=True)
    shown = shown or {}
    for path in results.iterdir():
        if not path.is_file():
            continue
        target = staged / path.name
        uuid = path.name.removesuffix("-result.json")
        if path.name.endswith("-result.json") and uuid in shown:
            try:
                target.write_text(json.dumps(shown_as(json.loads(path.read_text()), *shown[uuid])))
                continue
            except ValueError:
                pass  # not ours to judge: shown as recorded
        if path.name.endswith("-container.json"):
            try:
                target.write_text(json.dumps(without_noise(json.loads(path.read_text()))))
                continue
            except ValueError:
                pass  # not ours to judge: shown as recorded
        try:
            os.link(path, target)
        except OSError:
            shutil.copy2(path, target)
    return staged
