"""`harness examples` lists the example topologies and prints one, from an installation or the checkout."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness import examples
from harness.cli import main
from harness_kernel.errors import ConfigError
from harness_kernel.topology.loader import load_topology

ROOT = Path(__file__).resolve().parents[3]


def test_a_checkout_lists_its_examples_and_prints_each_as_it_is(capsys: pytest.CaptureFixture[str],
                                                               tmp_path: Path) -> None:
    assert main(["examples"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in listed] == sorted(p.name for p in (ROOT / "examples").glob("*.yaml"))
    assert "stretched-2plus2.yaml  A vSAN stretched cluster: two sites of two hosts each" in listed[1]
    assert main(["examples", "stretched-2plus2.yaml"]) == 0
    printed = capsys.readouterr().out
    assert printed == (ROOT / "examples" / "stretched-2plus2.yaml").read_text()
    (tmp_path / "mine.yaml").write_text(printed)
    assert load_topology(tmp_path / "mine.yaml").name == "prod-stretched-01"  # a start that loads as it is


def test_an_installation_reads_them_from_its_data_prefix(tmp_path: Path) -> None:
    shared = tmp_path / examples.SHARED
    shared.mkdir(parents=True)
    shutil.copy(ROOT / "examples" / "stretched-fci.yaml", shared)
    assert examples.names(tmp_path) == ["stretched-fci.yaml"]
    assert examples.text("stretched-fci.yaml", tmp_path).startswith("# yaml-language-server")


@pytest.mark.parametrize("name", ["nope.yaml", "../pyproject.toml", "/etc/passwd"])
def test_only_a_listed_example_is_read(name: str) -> None:
    with pytest.raises(ConfigError, match=r"examples: no example named .*; known: nutanix-ahv-esrp.yaml"):
        examples.text(name)
