"""The results as the report shows them: fixture noise left out, everything else as recorded.

allure-pytest records every fixture a test used as a set-up or tear-down step (`pytestconfig`,
`windows`, `key_numbers`, ...). A reader needs the ones that did something visible: failed,
took steps, or attached evidence. The others are dropped from a staged copy of the results
(files are hard-linked where the filesystem allows, else copied: the Allure CLI skips symbolic
links); the run's own results directory is never changed. So are the tear-down stages that never ran
(`never_ran`), which Allure would show with an unknown status.
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


def stage(results: Path, staged: Path) -> Path:
    """A copy of `results` in `staged` (made here) whose containers keep only fixtures worth showing."""
    staged.mkdir(parents=True, exist_ok=True)
    for path in results.iterdir():
        if not path.is_file():
            continue
        target = staged / path.name
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
