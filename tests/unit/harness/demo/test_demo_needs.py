"""`python -m harness demo` says what it needs before it starts anything, from a checkout or an installed package."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[4]


def test_without_the_lab_tools_the_demo_names_each_missing_one_and_starts_nothing(tmp_path: Path) -> None:
    empty_tools = tmp_path / "tools"
    empty_tools.mkdir()
    run = subprocess.run([sys.executable, "-m", "harness", "demo", "--out", str(tmp_path / "out")], cwd=tmp_path,
                         env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HARNESS_TOOLS": str(empty_tools)},
                         capture_output=True, text=True, timeout=60)
    assert run.returncode != 0
    said = run.stderr
    assert "needs what `make setup` in this checkout installs" in said, said
    for missing in ("bin/toxiproxy-server", "allure/node_modules/.bin/allure", "bin/harness-vsim"):
        assert f"{empty_tools}/{missing}" in said, said
    assert not (tmp_path / "out").exists(), "nothing was started, nothing written"


def test_the_suites_are_run_by_package_name_with_their_node_ids_rooted_beside_the_package() -> None:
    import argparse

    from harness import demo

    args = argparse.Namespace(smoke=True, full=False, lab="lab", keep_lab=False, state_dir=None, pytest_args=[])
    command = demo.pytest_command(args, Path("/r"), Path("/t"), suites=demo.LAB_SUITES)
    assert command[3:4 + len(demo.LAB_SUITES)] == ["--pyargs", *(f"harness_suites.{s}" for s in demo.LAB_SUITES)]
    root = Path(command[command.index("--rootdir") + 1])
    assert (root / "harness_suites" / "s2" / "test_s2_component_failures.py").is_file()


def test_the_demo_holds_the_fault_longer_on_the_bound_lab_and_leaves_the_soak_to_full() -> None:
    import argparse

    from harness import demo

    args = argparse.Namespace(smoke=False, full=False, lab="lab", keep_lab=False, state_dir=None, pytest_args=[])
    lab = demo.pytest_command(args, Path("/r/allure-results"), Path("/t"), suites=demo.LAB_SUITES)
    bound = demo.pytest_command(args, Path("/r/allure-results"), Path("/t"), topology="/b/topology.yaml",
                                suites=demo.VSPHERE_SUITES, clean=False)
    assert lab[lab.index("--observe-s") + 1] == "25" and bound[bound.index("--observe-s") + 1] == "40"
    assert bound[bound.index("--figures-history") + 1] == "/r/report/figures.jsonl"
    assert any(a.startswith("--deselect=") and a.endswith("_not_replaced") for a in lab)
    full = demo.pytest_command(argparse.Namespace(**{**vars(args), "full": True}), Path("/r/x"), Path("/t"),
                               suites=demo.LAB_SUITES)
    assert not any(a.endswith("_not_replaced") for a in full) and "S6's N-1 soak" in demo.FULL_ADDS


def test_the_qos_comparison_runs_on_the_bound_lab_only_and_every_deselected_test_exists() -> None:
    import argparse

    from harness import demo

    args = argparse.Namespace(smoke=True, full=False, lab="lab", keep_lab=False, state_dir=None, pytest_args=[])
    lab = demo.pytest_command(args, Path("/r/x"), Path("/t"), suites=demo.LAB_SUITES, deselect=(demo.S7_QOS,))
    bound = demo.pytest_command(args, Path("/r/x"), Path("/t"), topology="/b/t.yaml", suites=(demo.S7,),
                                deselect=demo.S7_LAB_ONLY)
    assert "--qos-iops-limit" not in lab and bound[bound.index("--qos-iops-limit") + 1] == "512"
    assert f"--deselect={demo.S7_QOS}" in lab and all(f"--deselect={n}" in bound for n in demo.S7_LAB_ONLY)
    plain = demo.pytest_command(argparse.Namespace(**{**vars(args), "smoke": False}), Path("/r/x"), Path("/t"),
                                topology="/b/t.yaml", suites=demo.VSPHERE_SUITES)
    assert "--qos-iops-limit" not in plain, "the demo itself leaves the comparison to FULL"
    root = demo.suites_root()
    for node in (*demo.S7_LAB_ONLY, demo.S7_QOS, *demo.DEMO.deselect):
        path, _, test = node.partition("::")
        assert f"def {test.split('[')[0]}(" in (root / path).read_text(), node
