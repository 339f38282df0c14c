"""Where a lab keeps its state by default: somewhere user postgres can enter whatever ran before.

The harness's own state directory (journal, locks) is created private (0700) by any run; a lab
kept below it could not be brought up once a run had created it first.
"""

from __future__ import annotations

from harness_kernel.paths import DEFAULT_STATE_DIR
from harness_kernel.topology.models import LabSettings
from harness_lab.layout import LabLayout, default_state_dir


def test_a_labs_default_state_is_not_below_the_private_state_directory(monkeypatch) -> None:
    monkeypatch.delenv("HARNESS_LAB_DIR", raising=False)
    layout = LabLayout.from_settings(LabSettings(prefix="hlab"))
    assert layout.state_dir == default_state_dir("hlab")
    assert DEFAULT_STATE_DIR not in layout.state_dir.parents and layout.state_dir != DEFAULT_STATE_DIR


def test_each_prefix_has_its_own_state(monkeypatch) -> None:
    monkeypatch.delenv("HARNESS_LAB_DIR", raising=False)
    assert default_state_dir("hlab") != default_state_dir("hlabr")
