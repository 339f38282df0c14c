"""CI tells a product defect from a broken harness: exit code, JUnit XML and the summary agree."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[3]

SUITE = textwrap.dedent("""\
    import pytest
    from harness_kernel.errors import ControlPlaneError

    @pytest.mark.scenario("S4")
    def test_slo():
        raise AssertionError("SLO violated: failover 41 s (required <= 35 s)")

    @pytest.mark.scenario("S4")
    def test_control_plane():
        raise ControlPlaneError("vCenter did not answer within 30 s")

    @pytest.mark.scenario("S4")
    def test_scenario_bug():
        {}["a key the scenario's own code forgot"]

    def test_not_a_scenario():
        raise TypeError("a plain bug in a test that is not the harness's")

    @pytest.mark.scenario("S4")
    def test_figures(key_numbers):
        key_numbers["failover (s)"] = "12.3"
        key_numbers["lost acknowledged commits"] = "0"
    """)


def run(tmp_path: Path, selection: str) -> tuple[int, str, ET.Element]:
    suite = tmp_path / "test_outcomes_suite.py"
    suite.write_text(SUITE)
    junit = tmp_path / f"junit-{selection}.xml"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "harness.plugin",
                           str(suite), "-k", selection, f"--junitxml={junit}", "--rootdir", str(tmp_path)],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    return done.returncode, done.stdout, ET.parse(junit).getroot()


def counts(junit: ET.Element) -> tuple[str | None, str | None]:
    """(failures, errors) as JUnit XML reports them."""
    suite = junit.find("testsuite")
    assert suite is not None
    return suite.get("failures"), suite.get("errors")


def test_a_broken_harness_is_an_error_with_its_own_exit_code(tmp_path):
    code, out, junit = run(tmp_path, "control_plane")
    assert code == 10
    assert counts(junit) == ("0", "1")
    assert "ERROR (harness or infrastructure broken)" in out
    assert "vCenter did not answer" in out


def test_a_violated_slo_is_a_failure(tmp_path):
    code, out, junit = run(tmp_path, "slo")
    assert code == 1
    assert counts(junit) == ("1", "0")
    assert "FAIL  (SLO violated)" in out


def test_a_run_with_both_exits_as_a_failure(tmp_path):
    code, _, junit = run(tmp_path, "slo or control_plane")
    assert code == 1
    assert counts(junit) == ("1", "1")


def test_the_key_figures_are_properties_of_their_test_case_in_junit_xml(tmp_path):
    code, _, junit = run(tmp_path, "figures")
    assert code == 0
    case = junit.find("testsuite/testcase[@name='test_figures']")
    assert case is not None
    properties = [(p.get("name"), p.get("value")) for p in case.findall("properties/property")]
    assert properties == [("harness.failover (s)", "12.3"), ("harness.lost acknowledged commits", "0")]


def test_a_scenario_that_raises_anything_but_an_slo_check_is_a_broken_harness_not_a_failure(tmp_path):
    """Exit 1 means an SLO was violated: a KeyError in a scenario's own code is the harness broken (10), an error in
    JUnit, never a failure a change board would read as the cluster's."""
    code, out, junit = run(tmp_path, "scenario_bug")
    assert code == 10, out
    assert counts(junit) == ("0", "1")
    assert "ERROR (harness or infrastructure broken)" in out


def test_a_test_outside_the_scenarios_keeps_pytest_s_meaning(tmp_path):
    code, _, junit = run(tmp_path, "not_a_scenario")
    assert code == 1
    assert counts(junit) == ("1", "0")


THEIR_PROJECT = textwrap.dedent("""\
    import pytest

    @pytest.fixture
    def database():
        raise RuntimeError("their fixture is broken")

    def test_uses_their_fixture(database):
        pass

    def test_passes():
        pass
    """)


def their_exit_code(tmp_path: Path, *plugin: str) -> tuple[int, str]:
    project = tmp_path / "their-project"
    project.mkdir(exist_ok=True)
    (project / "test_theirs.py").write_text(THEIR_PROJECT)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin, str(project),
                           "--rootdir", str(project)], capture_output=True, text=True, cwd=project, timeout=60)
    return done.returncode, done.stdout


@pytest.mark.reproducer("AB-inert")
def test_another_projects_broken_fixture_keeps_pytest_s_exit_code_with_the_plugin_installed(tmp_path):
    """Installed beside other tests, the plugin is inert for them: their errors are theirs, not a broken harness."""
    without, _ = their_exit_code(tmp_path, "-p", "no:harness.plugin", "-p", "no:harness.suites")
    with_plugin, out = their_exit_code(tmp_path, "-p", "harness.plugin")
    assert (without, with_plugin) == (1, 1), out
    assert "harness or infrastructure broken" not in out
