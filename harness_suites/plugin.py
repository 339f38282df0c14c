"""The suites' own options: each suite's folder declares them (its `options.py`), this plug-in registers them.

Loaded through pytest's `pytest11` entry point beside the core plugin, so an installed harness
knows `--rtt-steps` wherever pytest runs. Every folder of this package with an `options.py`
whose `Options` is a `harness.options.Declaration` is found here: a suite's new option touches
that suite's folder only. The options are read and checked when pytest configures the run
(after the core, which loads the topology), a bad one refused naming it before anything runs.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from pathlib import Path
from typing import TypeVar

import pytest

from harness.options import Declaration, add_options, read
from harness.plugin_state import plugin_state
from harness_kernel.errors import ConfigError

Options = TypeVar("Options", bound=Declaration)
READ = pytest.StashKey[dict[type[Declaration], Declaration]]()


def declared() -> dict[str, type[Declaration]]:
    """Each folder's `Options`, by folder name, in name order."""
    found: dict[str, type[Declaration]] = {}
    for folder in sorted(m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)]) if m.ispkg):
        name = f"{__package__}.{folder}.options"
        if importlib.util.find_spec(name) is None:
            continue
        model = getattr(importlib.import_module(name), "Options", None)
        if not (isinstance(model, type) and issubclass(model, Declaration)):
            raise TypeError(f"{name}: its Options must be a harness.options.Declaration")
        found[folder] = model
    return found


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("harness suites", "the ready-made suites' own options")
    for model in declared().values():
        add_options(group, model)


@pytest.hookimpl(trylast=True)  # after the core's: the topology is loaded
def pytest_configure(config: pytest.Config) -> None:
    read_here: dict[type[Declaration], Declaration] = {}
    state = plugin_state(config)
    try:
        for model in declared().values():
            options = read(model, config.getoption)
            check = getattr(options, "check", None)
            if state.run is not None and callable(check):
                check(state.run.topology, state.run.topology_source)
            read_here[model] = options
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[READ] = read_here
    state.more_options = list(read_here.values())


def options_of(config: pytest.Config, model: type[Options]) -> Options:
    """A suite's options as read when the run was configured."""
    options = config.stash[READ][model]
    assert isinstance(options, model)
    return options
