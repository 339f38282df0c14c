"""Suites name intents; the fault kind that realises one follows the target and the topology.

The kinds stay what is journaled and injected: an intent only chooses among them.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from faults import intents
from faults.catalogue import this_package
from faults.intents import INTENTS, realise
from harness_kernel.errors import ConfigError
from tests.unit.faults import toy_platform
from tests.unit.faults.test_catalogue import TOY
from tests.unit.faults.test_registry import example, fci_example, lab, postgres_example

README = Path(__file__).resolve().parents[3] / "README.md"


def kind_of(name: str, target: str, topology: object) -> str | None:
    spec = realise(name, target, topology)  # type: ignore[arg-type]
    return spec.kind if spec else None


def test_a_hosts_power_loss_is_the_labs_crash_a_bmcs_power_off_or_the_opted_in_shutdown() -> None:
    assert kind_of("host-power-loss", "host:host-a", lab()) == "host-crash"
    assert kind_of("host-power-loss", "host:esx-a1", example(without_bmc="esx-b1")) == "host-power-off"
    assert kind_of("host-power-loss", "host:esx-b1", example(without_bmc="esx-b1")) == "host-power-off"


def test_a_role_switchover_is_the_labs_own_an_ags_t_sql_or_an_fcis_cluster_group_move() -> None:
    assert kind_of("role-switchover", "database:bench", lab()) == "role-switchover"
    assert kind_of("role-switchover", "database:sql-ag-01", example()) == "role-move"
    assert kind_of("role-switchover", "database:sql-fci-01", fci_example()) == "role-move"
    assert kind_of("role-switchover", "database:pg-01", postgres_example()) is None, "no backend moves it here"


def test_an_intent_implies_the_params_of_the_kind_that_realises_it() -> None:
    spec = realise("capacity-device-failure", "disk:esx-b2/naa.5000c500b2b2b201", example())
    assert spec is not None and (spec.kind, dict(spec.params)) == ("disk-failure", {"device": "capacity"})


def test_an_intent_nothing_realises_is_planned_as_its_most_general_kind() -> None:
    spec = intents.described("role-switchover", "database:pg-01", postgres_example())
    assert spec.kind == "role-move"


def test_an_unknown_intent_or_a_target_of_another_kind_is_an_error_naming_it() -> None:
    with pytest.raises(ConfigError, match="unknown intent 'host-melt'; known: backup, capacity-device-failure"):
        intents.intent("host-melt")
    with pytest.raises(ConfigError, match="host-power-loss: target 'site:site-a' is not a host"):
        realise("host-power-loss", "site:site-a", example())


def test_a_plugin_adds_its_kinds_after_the_trees() -> None:
    catalogue = this_package(TOY)
    assert [w.kind for w in intents.ways(INTENTS["host-power-loss"], catalogue)] == [
        "host-crash", "host-power-off", "outlet-cycle"]
    assert toy_platform.PLATFORM.realises == (("host-power-loss", "outlet-cycle"),)


def test_the_readme_lists_every_intent() -> None:
    listed = set(re.findall(r"^\| `([a-z-]+)` \|", README.read_text(), re.MULTILINE))
    assert set(INTENTS) <= listed, sorted(set(INTENTS) - listed)
