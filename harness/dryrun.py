"""`--dry-run`: every fault the collected tests would inject, planned from the topology alone.

Nothing is contacted and no test runs; the plan shows real commands and the credential paths
they would use, marks targets outside the allow-list, and lists credentials a real run lacks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import pytest
from pydantic import BaseModel

from faults import registry
from faults.assumptions import Assumes
from faults.base import FaultSpec
from faults.catalogue import installed
from harness.clusters import observers
from harness.options import render
from harness.plugin_state import plugin_state, run_switches
from harness.scenario import Sweep
from harness_kernel.errors import ConfigError
from harness_kernel.topology.models import Topology


@runtime_checkable
class Plannable(Protocol):
    """A test parameter that stands for faults resolved at run time (a suite's `ScenarioFault`)."""

    def plan_specs(self, topology: Topology) -> list[FaultSpec]: ...


def planned_specs(item: pytest.Item, topology: Topology, options: Sequence[BaseModel] = ()) -> list[FaultSpec]:
    """The faults a collected test will inject, read from its parameters and `faults` marker (a sweep at
    each step its option lists, found among the run's `options`: the core's and the suites')."""
    values: list[Any] = []
    callspec = getattr(item, "callspec", None)
    if callspec is not None:
        values.extend(callspec.params.values())
    for marker in item.iter_markers("faults"):
        values.extend(marker.args)
    specs: list[FaultSpec] = []
    for value in values:
        specs.extend(_specs_in(value, topology, options))
    return specs


def _specs_in(value: Any, topology: Topology, options: Sequence[BaseModel]) -> list[FaultSpec]:
    if isinstance(value, FaultSpec):
        return [value]
    if isinstance(value, Sweep):
        steps = next((getattr(o, value.option) for o in options if hasattr(o, value.option)), None)
        if steps is not None:
            return value.plan_steps(topology, steps)
    if isinstance(value, Plannable):
        return list(value.plan_specs(topology))
    if isinstance(value, list | tuple):
        return [spec for v in value for spec in _specs_in(v, topology, options)]
    return []


def inapplicable(item: pytest.Item, topology: Topology) -> str | None:
    """Why a test cannot run on this topology: nothing here realises a fault it needs (a VM migration on the lab)."""
    callspec = getattr(item, "callspec", None)
    values = [*(callspec.params.values() if callspec is not None else ()),
              *(arg for marker in item.iter_markers("faults") for arg in marker.args)]
    for value in values:
        if isinstance(value, Plannable) and not value.plan_specs(topology):
            return f"no '{value}' fault can be planned on topology {topology.name!r} ({topology.kind}): no platform " \
                   "here serves it on its targets, or it has no target"
    return None


def not_offered(topology: Topology) -> list[str]:
    """What the topology's platforms deliberately do not serve, each with its reason (`Platform.not_offered`)."""
    present = {topology.kind, *topology.management.platforms}
    return [f"not offered on {p.name}: {what} ({why})" for p in installed().platforms if p.name in present
            for what, why in p.not_offered]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    harness_run = plugin_state(config).run
    if harness_run is not None:
        for item in items:
            reason = inapplicable(item, harness_run.topology)
            if reason is not None:
                item.add_marker(pytest.mark.skip(reason=reason))
    if not run_switches(config).dry_run:
        return
    skip = pytest.mark.skip(reason="dry-run: planned only")
    for item in items:
        item.add_marker(skip)


def pytest_report_collectionfinish(config: pytest.Config, items: Sequence[pytest.Item]) -> list[str]:
    if not run_switches(config).dry_run:
        return []
    harness_run = plugin_state(config).run
    if harness_run is None:
        return ["dry-run: no --topology given, nothing to plan"]
    lines = [f"dry-run against topology {harness_run.topology.name!r} ({harness_run.topology_source}); nothing is contacted"]
    options = plugin_state(config).options
    if options is not None:
        lines.append("options: " + ", ".join(shown for o in (options, *plugin_state(config).more_options)
                                             for shown in render(o)))
    planned = 0
    for item in items:
        if inapplicable(item, harness_run.topology):
            continue  # skipped with its reason: its other faults would never run here either
        groups = [*([options] if options else []), *plugin_state(config).more_options]
        for spec in planned_specs(item, harness_run.topology, groups):
            lines.append(f"[{item.nodeid}]")
            try:
                supported = registry.supports(spec, harness_run.topology)
            except ConfigError as exc:
                lines.append(f"  {spec.kind} on {spec.target}: {exc}")
                continue
            if not supported:
                lines.append(f"  {spec.kind} on {spec.target}: no platform in this installation serves it on this target")
                continue
            try:
                fault = harness_run.build(spec)
                plan = fault.plan()
            except ConfigError as exc:
                lines.append(f"  {spec.kind} on {spec.target}: {exc}")
                continue
            lines.extend("  " + line for line in plan.render().split("\n"))
            if options is not None and options.repeat > 1 and item.get_closest_marker("repeated"):
                lines.append(f"    {options.repeat} trials (--repeat), each after a baseline and, bounded, a quiet cluster")
            if isinstance(fault, Assumes):
                lines.append("    assumes (probed read-only before inject; refused unless each holds): "
                             + ", ".join(a.id for a, _ in fault.assumptions()))
            not_allowed = registry.not_allowed(plan, harness_run.topology)
            if not_allowed:
                lines.append(f"  NOT ALLOWED: {not_allowed}")
            planned += 1
    lines.append(f"dry-run: {planned} fault(s) planned in {len(items)} test(s)")
    try:
        observed = ", ".join(observers(harness_run.topology)) or "nothing"
    except ConfigError as exc:
        observed = f"none usable: {exc}"
    lines.append(f"observed read-only during each experiment: {observed}")
    lines.extend(not_offered(harness_run.topology))
    missing = harness_run.missing_credentials(open_keyring=False)
    lines.append("credentials missing for a real run: " + ("; ".join(missing) if missing else "none"))
    return lines
