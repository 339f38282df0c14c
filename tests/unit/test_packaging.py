"""What an installed user gets: the version the CLI says, and extras that carry what their platform's code imports."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest

from harness.cli import main

ROOT = Path(__file__).resolve().parents[2]
# module files of each extra's platform -> the extra that must bring what they import
PLATFORM_FILES = {"redfish": ["faults/transports/redfish.py"],
                  "vsphere": ["faults/transports/vcenter.py", "faults/transports/ssh.py"],
                  "router": ["faults/transports/ssh.py"], "wsfc": ["faults/transports/winrm.py"]}
DISTRIBUTION = {"pyVmomi": "pyvmomi", "pyVim": "pyvmomi", "winrm": "pywinrm"}


def test_the_cli_says_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as ended:
        main(["--version"])
    assert ended.value.code == 0 and capsys.readouterr().out.strip().endswith(version("resilience-harness"))


def third_party(path: Path) -> set[str]:
    """Top-level modules `path` imports that are neither the standard library nor the harness's own."""
    own = {"harness", "faults", "workloads", "reports", "harness_kernel", "harness_lab", "harness_suites"}
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else []
        found |= {n.split(".")[0] for n in names}
    return {n for n in found - own if n not in sys.stdlib_module_names}


@pytest.mark.reproducer("AB-extras")
@pytest.mark.parametrize("extra", sorted(PLATFORM_FILES))
def test_each_extra_brings_what_its_platforms_code_imports(extra: str) -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    brought = {re.split(r"[<>=\[ ;]", requirement)[0].lower() for requirement in extras[extra]}
    core = {re.split(r"[<>=\[ ;]", r)[0].lower()
            for r in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]}
    for file in PLATFORM_FILES[extra]:
        for module in third_party(ROOT / file):
            distribution = DISTRIBUTION.get(module, module).lower()
            assert distribution in brought | core, f"[{extra}] lacks {distribution}, which {file} imports"
