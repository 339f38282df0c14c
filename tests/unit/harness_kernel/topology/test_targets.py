"""A target name is built from its parts by `Target.of` and taken apart by `Target.parse`, nowhere else."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness_kernel.errors import ConfigError
from harness_kernel.topology.targets import Target, TargetKind, shown

ROOT = Path(__file__).resolve().parents[4]
PRODUCT = ("harness", "faults", "reports", "harness_kernel", "harness_suites", "harness_platforms", "workloads", "harness_lab")
KINDS = "|".join(k.value for k in TargetKind)
FORMATTED = re.compile(rf"""f["'](?:{KINDS}):\{{""")


@pytest.mark.parametrize(("kind", "parts", "name"), [
    (TargetKind.HOST, ("esx-a1",), "host:esx-a1"),
    (TargetKind.LINK, ("site-a", "site-b"), "link:site-a~site-b"),
    (TargetKind.DISK_GROUP, ("esx-b1", 0), "diskgroup:esx-b1/0"),
    (TargetKind.NODE, ("pg", "node-1"), "node:pg/node-1"),
])
def test_a_target_built_from_its_parts_parses_back_to_them(kind: TargetKind, parts: tuple[object, ...],
                                                            name: str) -> None:
    built = Target.of(kind, *parts)
    assert str(built) == name and Target.parse(name) == built and built.parts == tuple(str(p) for p in parts)


def test_a_target_with_the_wrong_number_of_parts_or_an_empty_one_is_refused() -> None:
    with pytest.raises(ConfigError, match="a link target has 2 part"):
        Target.of(TargetKind.LINK, "site-a")
    with pytest.raises(ConfigError, match="a disk target is disk:A/B"):
        Target.of(TargetKind.DISK, "esx-a1", "")


def test_a_title_shows_a_targets_path_and_text_that_is_no_target_as_it_is() -> None:
    assert (shown("diskgroup:esx-b1/0"), shown("the primary's host")) == ("esx-b1/0", "the primary's host")


def test_no_product_module_formats_a_target_name_itself() -> None:
    formatted = [f"{path.relative_to(ROOT)}:{n}" for package in PRODUCT for path in (ROOT / package).rglob("*.py")
                 for n, line in enumerate(path.read_text().splitlines(), 1) if FORMATTED.search(line)]
    assert formatted == []
