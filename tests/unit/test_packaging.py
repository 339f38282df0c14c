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
# each extra -> the module files whose imports it must bring: the shared clients its platforms use, and every module
# of the platforms whose descriptor names that extra (their folders under harness_platforms/)
CLIENTS = {"redfish": ["faults/transports/redfish.py"],
           "vsphere": ["faults/transports/vcenter.py", "faults/transports/ssh.py"],
           "router": ["faults/transports/ssh.py"], "wsfc": ["faults/transports/winrm.py"],
           "sqlserver": ["faults/transports/odbc.py"]}


def platform_files(extra: str) -> list[str]:
    from faults.catalogue import this_package

    folders = {p.cluster_part or p.backends[0].path for p in this_package().platforms if p.extra == extra
               and p.backends and p.backends[0].path.startswith("harness_platforms.")}
    roots = {ROOT.joinpath(*path.split(":")[0].split(".")[:2]) for path in folders}
    return sorted(str(f.relative_to(ROOT)) for root in roots for f in root.rglob("*.py"))


PLATFORM_FILES = {extra: CLIENTS.get(extra, []) + platform_files(extra) for extra in
                  ("redfish", "vsphere", "router", "wsfc", "sqlserver")}
DISTRIBUTION = {"pyVmomi": "pyvmomi", "pyVim": "pyvmomi", "winrm": "pywinrm", "yaml": "pyyaml"}


def test_the_cli_says_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as ended:
        main(["--version"])
    assert ended.value.code == 0 and capsys.readouterr().out.strip().endswith(version("resilience-harness"))


def third_party(path: Path) -> set[str]:
    """Top-level modules `path` imports that are neither the standard library nor the harness's own."""
    own = {"harness", "faults", "workloads", "reports", "harness_kernel", "harness_lab", "harness_suites",
           "harness_platforms"}
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
    assert PLATFORM_FILES[extra], f"[{extra}]: no module names it"
    for file in PLATFORM_FILES[extra]:
        for module in third_party(ROOT / file):
            distribution = DISTRIBUTION.get(module, module).lower()
            assert distribution in brought | core, f"[{extra}] lacks {distribution}, which {file} imports"
