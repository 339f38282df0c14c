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
