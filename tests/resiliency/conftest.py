"""Fixtures of the ready-made suites: the cluster, its schema, and one experiment per test.

Run them unchanged against any topology: `pytest tests/resiliency --topology FILE|lab`.
"""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.clusters import Cluster
from harness.errors import ConfigError, HarnessError
from harness.experiment import Experiment, Windows
from harness.history.timeline import Timeline
from harness.progress import Progress
from harness.safety.run import HarnessSession
from reports.allure_report import ChangeTicket, ExperimentLabels, apply_labels, link_change_ticket, phase
from reports.tables import Table, to_html, to_markdown
from workloads.oltp import DriverConfig, prepare_schema
from workloads.oltp.schema import Scale


@pytest.fixture(scope="session")
def cluster(harness_session: HarnessSession, pytestconfig: pytest.Config,
            product_versions: dict[str, str]) -> Iterator[Cluster]:
    """The cluster under test. For the embedded lab: brought up here (unless already up) and down at the end."""
    topology = harness_session.topology
    if topology.kind != "lab" or topology.lab is None:
        raise ConfigError(f"topology {topology.name!r}: the {topology.kind} cluster backend is not available yet; "
                          "use --dry-run to plan, or --topology lab")
    from harness.clusters.lab import LabCluster
    from harness.lab.controller import Lab
    from harness.lab.layout import LabLayout

    lab = Lab(LabLayout.from_settings(topology.lab))
    started_here = not lab.healthy()
    if started_here:
        lab.up()
    view = LabCluster(lab, topology)
    product_versions.update(view.describe())
    yield view
    if started_here and not pytestconfig.getoption("--keep-lab"):
        lab.down()


@pytest.fixture(scope="session")
def schema(cluster: Cluster, pytestconfig: pytest.Config) -> Scale:
    """TPC-B data with at least as many branches as users (pgbench's rule): every transaction
    updates one branch row and holds its lock through the commit, so with fewer branches the
    commits, and any added commit latency, queue behind each other."""
    scale = Scale(branches=pytestconfig.getoption("--scale"), accounts_per_branch=pytestconfig.getoption("--accounts-per-branch"))
    users = pytestconfig.getoption("--users")
    if scale.branches < users:
        warnings.warn(f"--scale {scale.branches} is below --users {users}: commits will queue on branch rows", stacklevel=1)
    dialect, settings = cluster.connection()
    prepare_schema(dialect, settings, scale)
    return scale


@pytest.fixture
def windows(pytestconfig: pytest.Config) -> Windows:
    opt = pytestconfig.getoption
    return Windows(baseline_s=opt("--baseline-s"), observe_s=opt("--observe-s"), settle_s=opt("--settle-s"),
                   recover_timeout_s=opt("--recover-timeout-s"), steady_window_s=opt("--steady-window-s"))


@pytest.fixture
def progress(pytestconfig: pytest.Config) -> Progress:
    """Live progress on the real terminal (bypassing capture), or one line per wait with --quiet-progress."""
    capture = pytestconfig.pluginmanager.getplugin("capturemanager")

    def write(text: str) -> None:
        if capture is not None:
            with capture.global_and_fixture_disabled():
                sys.stderr.write(text)
                sys.stderr.flush()
        else:
            sys.stderr.write(text)

    return Progress(write, quiet=bool(pytestconfig.getoption("--quiet-progress")))


@pytest.fixture
def experiment(harness_session: HarnessSession, cluster: Cluster, schema: Scale, timeline: Timeline,
               progress: Progress, windows: Windows, pytestconfig: pytest.Config) -> Iterator[Experiment]:
    """One experiment under load on a healthy cluster; the cluster is healthy again afterwards."""
    _heal_or_rebuild(cluster, windows, before=True)
    ticket = pytestconfig.getoption("--change-ticket")
    if ticket:
        link_change_ticket(ChangeTicket(ticket, pytestconfig.getoption("--change-url") or "{ticket}"))
    config = DriverConfig(users=pytestconfig.getoption("--users"), scale=schema)
    with Experiment(harness_session, cluster, timeline, progress, windows, config, step=phase) as running:
        yield running
    _heal_or_rebuild(cluster, windows, before=False)


def _heal_or_rebuild(cluster: Cluster, windows: Windows, *, before: bool) -> None:
    """The next test starts on a healthy cluster; if the lab cannot heal, rebuild it and report the harness broken."""
    try:
        cluster.wait_healthy(windows.recover_timeout_s)
        return
    except HarnessError as exc:
        problem = str(exc)
    rebuild = getattr(getattr(cluster, "lab", None), "rebuild", None)
    if rebuild is not None:
        rebuild()
    raise HarnessError(f"cluster not healthy {'before' if before else 'after'} the experiment ({problem}); "
                       f"{'rebuilt' if rebuild else 'not rebuilt'}")


def label(scenario: str, fault_kind: str, target: str) -> None:
    apply_labels(ExperimentLabels(scenario=scenario, fault_kind=fault_kind, target=target))


def keep_table(pytestconfig: pytest.Config, table: Table, name: str) -> None:
    """Write the scenario table to --tables-dir for the demo's summary and the change board."""
    directory = pytestconfig.getoption("--tables-dir")
    if not directory:
        return
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.md").write_text(to_markdown(table))
    (out / f"{name}.html").write_text(to_html(table))
    (out / f"{name}.json").write_text(json.dumps({"title": table.title, "rows": table.rows}, default=str, indent=1))
