"""What the plugin's hook modules share during one pytest run: one object in one stash key."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from pydantic import BaseModel

from harness.run_options import RunOptions, RunSwitches
from harness.safety.run import HarnessRun
from harness_kernel.topology.credentials import Secret
from reports.summary import Outcome


@dataclass
class PluginState:
    run: HarnessRun | None = None  # None without --topology
    options: RunOptions | None = None  # read when pytest configures the run, before anything else
    switches: RunSwitches = field(default_factory=lambda: RunSwitches())  # read with the options
    more_options: list[BaseModel] = field(default_factory=list)  # the suites' own (harness_suites.plugin)
    outcomes: dict[str, Outcome] = field(default_factory=dict)  # node id -> the worst phase's outcome
    numbers: dict[str, dict[str, str]] = field(default_factory=dict)  # node id -> key figures for the summary
    products: dict[str, str] = field(default_factory=dict)  # product versions as discovered
    secrets: list[Secret] = field(default_factory=list)
    broken: int = 0  # tests that errored (harness or infrastructure)
    bad_input: int = 0  # tests that errored on bad input (a ConfigError: a value, a missing or rejected credential)
    failed: int = 0  # tests that failed (an SLO)
    inconclusive: dict[str, list[str]] = field(default_factory=dict)  # node id -> verdicts it could not give
    findings: dict[str, list[str]] = field(default_factory=dict)  # node id -> what no threshold judges (outages)


STATE = pytest.StashKey[PluginState]()


def plugin_state(config: pytest.Config) -> PluginState:
    return config.stash[STATE]


def run_options(config: pytest.Config) -> RunOptions:
    """The run's checked options (read when pytest configured the run)."""
    options = config.stash[STATE].options
    if options is None:
        raise RuntimeError("the harness's options are read in pytest_configure; it has not run")
    return options


def run_switches(config: pytest.Config) -> RunSwitches:
    """The run's switches and places (`--topology`, `--dry-run`, ...), typed (read when pytest configured the run)."""
    return config.stash[STATE].switches
