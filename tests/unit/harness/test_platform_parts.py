"""What a platform from a plug-in adds to the cluster view: built when its section is present, read-only.

Its cluster part is judged with the cluster before an experiment starts and describes itself in
the report's environment; its probes answer what they saw; its observers are sampled every
second into the history, and one that cannot answer leaves a gap, not an error.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from faults.catalogue import this_package
from harness import clusters
from harness.experiment import Experiment
from harness_kernel.errors import HarnessError
from harness_kernel.history.timeline import Timeline
from harness_kernel.topology.loader import parse_topology
from harness_kernel.topology.models import Topology
from tests.unit.faults import toy_platform
from tests.unit.faults.test_catalogue import plugin
from tests.unit.faults.test_registry import EXAMPLE
from tests.unit.faults.test_sections import SECTION


@pytest.fixture(autouse=True)
def toy_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    catalogue = this_package(plugin(toy_platform.WITH_PARTS))
    monkeypatch.setattr(clusters, "installed", lambda: catalogue)


def topology(**section: Any) -> Topology:
    doc = yaml.safe_load(EXAMPLE.read_text())
    if section:
        doc["management"]["platforms"] = {"toy": section}
    return parse_topology(doc, str(EXAMPLE))


def test_parts_probes_and_observers_come_only_with_their_section() -> None:
    assert clusters.cluster_parts(topology()) == {} and clusters.observers(topology()) == {}
    assert clusters.probe(topology()) == {}
    with_toy = topology(**SECTION)
    assert [part.describe() for part in clusters.cluster_parts(with_toy).values()] == [{"toy": "ToyPDU 1.0"}]
    assert clusters.probe(with_toy) == {"toy probe tests.unit.faults.toy_platform:toy_probe": "ToyPDU answers"}
    assert list(clusters.observers(with_toy)) == ["toy: tests.unit.faults.toy_platform:ToyObserver"]


class HealthyCluster:
    def preflight(self) -> None:
        return None


def experiment(with_toy: Topology) -> Experiment:
    return Experiment(harness_run=None, cluster=HealthyCluster(), timeline=Timeline(), progress=None,  # type: ignore[arg-type]
                      workloads=[], parts=list(clusters.cluster_parts(with_toy).values()),
                      observers=clusters.observers(with_toy))


def test_a_part_that_is_not_healthy_stops_the_experiment_before_it_starts() -> None:
    with pytest.raises(HarnessError, match="toy: an outlet is off"):
        experiment(topology(**SECTION, healthy=False))._preflight()
    experiment(topology(**SECTION))._preflight()


def test_observers_are_sampled_into_the_history_and_a_failed_sample_is_a_gap() -> None:
    run = experiment(topology(**SECTION))
    for _ in range(4):
        run.sample_observers()
    [series] = run.observed.values()
    assert series.name == "toy: tests.unit.faults.toy_platform:ToyObserver: draw W"
    assert [p.value for p in series.points()] == [1.0, 2.0, 4.0]
