"""Every example topology and the lab plan what they planned when the baseline was taken (`tests/support/
plan_baselines.py`): a change of structure shows it changed no plan, and a change meant to alter a plan regenerates
the baselines (`python -m tests.support.plan_baselines`), its diff the review's to read."""

from __future__ import annotations

import difflib

import pytest

from tests.support.plan_baselines import BASELINES, TOPOLOGIES, dry_run, normalised


@pytest.mark.parametrize("name", sorted(TOPOLOGIES))
def test_the_suites_plan_what_the_baseline_holds(name: str) -> None:
    kept = (BASELINES / f"{name}.txt").read_text()
    now = dry_run(TOPOLOGIES[name])
    assert now == kept, "".join(difflib.unified_diff(kept.splitlines(True), now.splitlines(True), "baseline", "now"))


def test_what_varies_between_two_dry_runs_is_normalised_and_nothing_else() -> None:
    assert normalised("nft delete table inet harness_67edba3d5ab9_link") == "nft delete table inet harness_<id>_link"
    assert normalised("htb 7a31: default b5d9) classid 7a31:1674 htb") == "htb 7a31: default <class>) classid " \
                                                                           "7a31:<class> htb"
    assert normalised("disk:esx-a1/naa.5000c500a1a1a101") == "disk:esx-a1/naa.5000c500a1a1a101", "a device's id stays"
