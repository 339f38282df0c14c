"""`harness report` finds the Allure CLI an installed user has: the harness's own tools, else one on PATH."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from reports.allure.generate import ALLURE_VERSION, AllureCliError, allure_command

ROOT = Path(__file__).resolve().parents[3]


def test_without_the_harness_s_tools_an_allure_on_path_is_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    allure = bin_dir / "allure"
    allure.write_text("#!/bin/sh\n")
    allure.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    assert allure_command(tmp_path / "no-tools") == [str(allure)]


def test_with_neither_the_error_names_the_one_command_that_installs_it(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(AllureCliError, match=rf"npm install --global allure@{re.escape(ALLURE_VERSION)}"):
        allure_command(tmp_path / "no-tools")


def test_the_version_named_is_the_one_make_setup_installs() -> None:
    assert f"ALLURE_VERSION := {ALLURE_VERSION}\n" in (ROOT / "Makefile").read_text()
