"""The top-level packages are named in four places that must agree: mypy's packages, import-linter's root packages,
the lint tier's ruff line and the wheel's package finder. A package missing from one is a package that tier never
checks (ruff skipped `harness_nutanix` once); this spec names it."""

from __future__ import annotations

import fnmatch
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def top_level_packages() -> set[str]:
    return {p.parent.name for p in ROOT.glob("*/__init__.py") if p.parent.name not in {"tests", "build"}}


def test_mypy_and_import_linter_name_every_top_level_package() -> None:
    packages = top_level_packages()
    assert set(PYPROJECT["tool"]["mypy"]["packages"]) == packages
    assert set(PYPROJECT["tool"]["importlinter"]["root_packages"]) == packages


def test_the_lint_tier_runs_ruff_over_every_top_level_package() -> None:
    tiers = (ROOT / "scripts" / "test-tiers").read_text()
    ruff = re.search(r"ruff check ((?:[^\n]|\\\n)+)", tiers)
    assert ruff is not None
    checked = set(ruff.group(1).replace("\\\n", " ").split())
    assert top_level_packages() <= checked, top_level_packages() - checked


def test_the_wheel_ships_every_top_level_package() -> None:
    include = PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]
    missing = {p for p in top_level_packages() if not any(fnmatch.fnmatch(p, pattern) for pattern in include)}
    assert missing == set()


def test_every_fence_is_an_allow_list_of_importers_not_a_deny_list_of_sources() -> None:
    """A deny-list names the modules that may not import a target system; a module added later is on no list and
    may. An allow-list (`protected`) names the few that may, so a new module is outside the fence by default."""
    contracts = PYPROJECT["tool"]["importlinter"]["contracts"]
    assert [c["name"] for c in contracts if c["type"] == "forbidden"] == []
    fenced = {m for c in contracts if c["type"] == "protected" for m in c["protected_modules"]}
    assert {"harness_lab", "harness_platforms", "faults.transports.vcenter", "faults.transports.winrm",
            "faults.transports.odbc", "faults.transports.redfish", "faults.transports.ssh",
            "faults.backends.router"} <= fenced
