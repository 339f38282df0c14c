"""Each suite declares its own options in its folder; the suites register them, the core plugin knows none of them."""

from __future__ import annotations

import pytest

from harness.options import option_of
from harness.run_options import RunOptions, RunSwitches
from harness.topology_source import load_source
from harness_kernel.errors import ConfigError
from harness_suites import plugin
from harness_suites.s7.options import Options as S7Options


def test_every_folder_with_options_declares_them_and_the_core_declares_none_of_theirs() -> None:
    declared = plugin.declared()
    assert sorted(declared) == ["s1", "s5", "s6", "s7", "steps"]
    theirs = {name for model in declared.values() for name in model.model_fields}
    assert theirs & (set(RunOptions.model_fields) | set(RunSwitches.model_fields)) == set()
    assert {"rtt_steps", "migration_rtt_steps", "soak_s", "restore_destination", "step_s"} <= theirs


def test_the_run_knows_each_suites_options_as_pytest_options(pytestconfig: pytest.Config) -> None:
    for model in plugin.declared().values():
        for name, field in model.model_fields.items():
            assert pytestconfig.getoption(option_of(name)) == field.default, name


def test_a_suites_check_that_needs_the_topology_names_its_option() -> None:
    lab = load_source("lab")  # PostgreSQL: a restore's copy goes on this machine
    with pytest.raises(ConfigError, match=r"^--restore-destination: .* is not an absolute POSIX path: PostgreSQL"):
        S7Options(restore_destination="D:\\Restore").check(lab, "lab")
    S7Options(restore_destination="/srv/restore").check(lab, "lab")
