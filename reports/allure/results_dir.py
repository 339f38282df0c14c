"""The results-directory files written once per session: `environment.properties` and `categories.json`.

Light on purpose (no Allure, no plotting): the plugin writes them at session end.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import harness_kernel
from harness_kernel.errors import HarnessError

SLO_VIOLATED = "SLO violated"
HARNESS_BROKEN = "Harness or infrastructure broken"
SECRET_KEY = re.compile(r"pass(word)?|secret|token|credential|api[_-]?key|private", re.IGNORECASE)


def environment_properties(topology: str, products: Mapping[str, str], extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment block: topology, product versions as discovered, harness version."""
    props = {"topology": topology, "harness.version": harness_kernel.__version__}
    props |= {f"product.{name}": version for name, version in products.items()}
    return props | dict(extra or {})


def _escape_property(text: str) -> str:
    out = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
    return out.replace("=", "\\=").replace(":", "\\:")


def write_environment(results_dir: Path, properties: Mapping[str, str]) -> Path:
    """`environment.properties`; keys that look like credentials are refused, not written."""
    secret_keys = [k for k in properties if SECRET_KEY.search(k)]
    if secret_keys:
        raise HarnessError(f"environment.properties would carry credential-like keys: {', '.join(secret_keys)}")
    results_dir.mkdir(parents=True, exist_ok=True)
    path = results_dir / "environment.properties"
    path.write_text("".join(f"{_escape_property(k)}={_escape_property(str(v))}\n" for k, v in properties.items()))
    return path


def _subclass_names(base: type[BaseException]) -> list[str]:
    names, pending = [], [base]
    while pending:
        cls = pending.pop()
        names.append(cls.__name__)
        pending.extend(cls.__subclasses__())
    return sorted(set(names))


def categories(harness_errors: type[BaseException] = HarnessError) -> list[dict[str, Any]]:
    """SLO violated (a test *failure*) vs harness or infrastructure broken (a test *error*).

    allure-pytest marks AssertionError as failed and every other exception as broken; the
    second category lists the harness's error classes (as loaded when called) so a reader sees
    why, and a third catches broken tests raised by anything else (a bug in the test itself).
    """
    classes = "|".join(re.escape(n) for n in _subclass_names(harness_errors))
    return [
        {"name": SLO_VIOLATED, "matchedStatuses": ["failed"],
         "description": "The product left the envelope the thresholds allow (AssertionError, StopConditionTripped)."},
        {"name": HARNESS_BROKEN, "matchedStatuses": ["broken"], "messageRegex": rf"[\s\S]*\b({classes})\b[\s\S]*",
         "description": "Revert failed, control plane unreachable, lab unhealthy: the product was not judged."},
        {"name": "Test code broken", "matchedStatuses": ["broken"],
         "description": "An unexpected exception in a test or the harness itself."},
        *VERDICT_CATEGORIES,
    ]


# What the report stages as `unknown` (reports.allure.staging): a test pytest passed that is not a plain PASS.
VERDICT_CATEGORIES = (
    {"name": "INCONCLUSIVE: not every threshold shown to hold", "matchedStatuses": ["unknown"],
     "messageRegex": r"INCONCLUSIVE[\s\S]*",
     "description": "No threshold missed, but a figure's 95 % interval holds its threshold: not decided."},
    {"name": "PASS with findings", "matchedStatuses": ["unknown"], "messageRegex": r"PASS with findings[\s\S]*",
     "description": "Every judged threshold held; something still needs reading (the summary page lists it)."},
)


def write_categories(results_dir: Path, rules: Sequence[Mapping[str, Any]] | None = None) -> Path:
    results_dir.mkdir(parents=True, exist_ok=True)
    path = results_dir / "categories.json"
    path.write_text(json.dumps(list(rules if rules is not None else categories()), indent=1))
    return path
