"""Dry-run plans without touching anything; secrets never printed. (The run lock: tests/unit/harness/safety.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from tests.support.victim import Victim, write_topology

ROOT = Path(__file__).parents[3]

SUITE = textwrap.dedent("""\
    import pytest
    from faults.base import FaultSpec

    @pytest.mark.parametrize("fault", [FaultSpec("process-freeze", "process:victim")])
    def test_freeze(fault, inject):
        with inject(fault) as active:
            active.sleep(5)
    """)


CARELESS_SUITE = textwrap.dedent("""\
    import logging, os
    import pytest
    from faults.base import FaultSpec

    @pytest.mark.parametrize("fault", [FaultSpec("process-freeze", "process:victim")])
    def test_freeze(fault, inject):
        logging.getLogger("driver").warning("login with %s", os.environ["HARNESS_JUMP_PW"])
        with inject(fault) as active:
            active.sleep(0.2)
    """)


def run_pytest(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "harness.plugin", *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env={"PATH": "/usr/bin:/bin", **(env or {})})


def test_dry_run_prints_each_plan_touches_nothing_and_lists_missing_credentials(tmp_path, victim: Victim):
    extra = "management:\n  ssh:\n    - {name: jump, address: 192.0.2.9, username: h, password: {env: HARNESS_JUMP_PW}}\n"
    topology = write_topology(tmp_path, victim.pidfile, extra=extra)
    suite = tmp_path / "test_suite.py"
    suite.write_text(SUITE)
    result = run_pytest([str(suite), "--topology", str(topology), "--dry-run", "--state-dir", str(tmp_path / "s"),
                         "--rootdir", str(ROOT), "-c", str(ROOT / "pyproject.toml")])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "process-freeze on process:victim via process" in result.stdout
    assert "inject: SIGSTOP the process tree" in result.stdout
    assert "credentials missing for a real run: management.ssh[0].password: the environment variable named at " \
           "management.ssh[0].password.env is not set" \
        in result.stdout
    assert "1 skipped" in result.stdout
    assert victim.running()
    assert not list((tmp_path / "s").glob("journal/*.json"))


def test_a_real_run_of_the_same_suite_injects_and_reverts(tmp_path, victim: Victim):
    topology = write_topology(tmp_path, victim.pidfile)
    suite = tmp_path / "test_suite.py"
    suite.write_text(SUITE.replace("active.sleep(5)", "active.sleep(0.2)"))
    result = run_pytest([str(suite), "--topology", str(topology), "--allow-destructive",
                         "--state-dir", str(tmp_path / "s"), "--rootdir", str(ROOT), "-c", str(ROOT / "pyproject.toml")])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout
    assert victim.running()


def test_secrets_appear_in_no_output_journal_or_plan(tmp_path, victim: Victim):
    secret = "Tr0ub4dor-unit-secret"
    extra = "management:\n  ssh:\n    - {name: jump, address: 192.0.2.9, username: h, password: {env: HARNESS_JUMP_PW}}\n"
    topology = write_topology(tmp_path, victim.pidfile, extra=extra)
    suite = tmp_path / "test_suite.py"
    suite.write_text(CARELESS_SUITE)
    state, results = tmp_path / "s", tmp_path / "allure-results"
    outputs = [
        run_pytest([str(suite), "--topology", str(topology), "--allow-destructive", "--state-dir", str(state),
                    "--rootdir", str(ROOT), "-c", str(ROOT / "pyproject.toml"), "-rA", "--log-level=INFO",
                    "--alluredir", str(results)], env={"HARNESS_JUMP_PW": secret}),
        run_pytest([str(suite), "--topology", str(topology), "--dry-run", "--state-dir", str(state),
                    "--rootdir", str(ROOT), "-c", str(ROOT / "pyproject.toml")], env={"HARNESS_JUMP_PW": secret}),
    ]
    assert outputs[0].returncode == 0, outputs[0].stdout
    for out in outputs:
        assert secret not in out.stdout + out.stderr
    assert "login with ***" in outputs[0].stdout, outputs[0].stdout
    assert list(results.glob("*-result.json")), "the run wrote Allure results"
    for path in [*state.rglob("*"), *results.rglob("*")]:
        if path.is_file():
            assert secret not in path.read_text(errors="replace"), path


@pytest.mark.skipif(os.geteuid() != 0, reason="a network namespace of its own needs root")
def test_plan_command_prints_its_plan_with_no_network_at_all():
    """In a network namespace with nothing in it, any contact would fail: the plan needs none."""
    result = subprocess.run(["unshare", "--net", sys.executable, "-m", "harness", "plan", "--topology",
                             "examples/stretched-2plus2.yaml", "--fault", "host-power-off@host:esx-a1"],
                            capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "host-power-off on host:esx-a1 via redfish" in result.stdout
    assert "ComputerSystem.Reset ResetType=ForceOff via redfish bmc-esx-a1" in result.stdout


def test_plan_json_is_one_document_automation_reads_and_names_what_the_allow_list_refuses(tmp_path):
    """`plan --json` (schema harness-plan/1): each fault's backend, inject and revert steps, the credentials it
    references and what the allow-list refuses; then the credentials a real run would miss. Nothing contacted."""
    document = yaml.safe_load((ROOT / "examples" / "stretched-2plus2.yaml").read_text())
    document["allow_list"] = [t for t in document["allow_list"] if t != "site:site-b"]
    topology = tmp_path / "topology.yaml"
    topology.write_text(yaml.safe_dump(document))
    result = subprocess.run([sys.executable, "-m", "harness", "plan", "--topology", str(topology), "--json",
                             "--fault", "host-power-off@host:esx-a1", "--fault", "site-power-off@site:site-b"],
                            capture_output=True, text=True, cwd=ROOT, timeout=60, env={"PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    assert plan["schema"] == "harness-plan/1" and plan["topology"] == "prod-stretched-01"
    host, site = plan["faults"]
    assert (host["kind"], host["target"], host["backend"], host["not_allowed"]) == (
        "host-power-off", "host:esx-a1", "redfish", None)
    assert host["inject"] == ["esx-a1: ComputerSystem.Reset ResetType=ForceOff via redfish bmc-esx-a1 (192.0.2.211:443) "
                              "its only system (discovered from /redfish/v1/Systems), then wait PowerState Off (up to "
                              "60 s)"]
    assert host["credentials"] == ["management.redfish[0].credential.password"]
    assert len(site["inject"]) == 2 and site["not_allowed"] == "target is not in the allow_list"
    assert any(m.startswith("management.vcenter.credential.password") for m in plan["credentials_missing"])


def test_plan_command_refuses_a_fault_that_does_not_fit_its_target_as_bad_input():
    result = subprocess.run([sys.executable, "-m", "harness", "plan", "--topology", "examples/stretched-2plus2.yaml",
                             "--fault", "process-freeze@host:esx-a1"], capture_output=True, text=True, cwd=ROOT,
                            timeout=60)
    assert result.returncode == 4  # bad input (README exit codes)
    assert "target 'host:esx-a1' is a host; this fault acts on a process" in result.stderr


def dry_run_suites(topology: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "harness_suites",
                           "--topology", topology, "--dry-run"], capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"})


def plan_of(output: str, header: str) -> str:
    """The lines of one planned fault: its header line and the indented lines under it."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith(header))
    block = [lines[start]]
    for line in lines[start + 1:]:
        if not line.startswith("    "):
            break
        block.append(line)
    return "\n".join(block)


def test_the_suites_plan_an_availability_group_failover_with_the_exact_t_sql_and_its_replica():
    result = dry_run_suites("examples/stretched-2plus2.yaml")
    assert result.returncode == 0, result.stdout + result.stderr
    plan = plan_of(result.stdout, "role-move on database:sql-ag-01 via sqlserver")
    assert "ALTER AVAILABILITY GROUP [AG01] FAILOVER;" in plan, plan
    assert "FORCE_FAILOVER_ALLOW_DATA_LOSS" not in plan, "a planned role move never forces"
    assert "sql02" in plan and "sql02.example.net" in plan, "sent to the secondary in the other site, by its own address"
    assert "databases[0].credential.password" in plan
    assert "no backend" not in result.stdout


def test_the_suites_plan_a_failover_cluster_instance_role_move_with_the_exact_powershell():
    result = dry_run_suites("examples/stretched-fci.yaml")
    assert result.returncode == 0, result.stdout + result.stderr
    plan = plan_of(result.stdout, "role-move on database:sql-fci-01 via wsfc")
    assert "Move-ClusterGroup" in plan and "SQL Server (MSSQLSERVER)" in plan and "-Wait" in plan, plan
    assert "fci02" in plan
    assert "management.winrm[0].credential.password" in plan
    assert "host-power-off on host:esx-a1 via redfish" in result.stdout  # S4 unplanned: the active node's host
    assert "no backend" not in result.stdout


def test_the_suites_plan_a_cross_site_migration_of_each_database_vm_and_the_n_minus_1_host():
    result = dry_run_suites("examples/stretched-2plus2.yaml")
    assert result.returncode == 0, result.stdout + result.stderr
    plan = plan_of(result.stdout, "vm-migrate on node:sql-ag-01/sql01 via vsphere")
    assert "RelocateVM_Task of VM sql01-vm to a connected host of another site" in plan, plan
    assert "back to the host it ran on at inject" in plan
    after = result.stdout[result.stdout.index("vm-migrate on node:sql-ag-01/sql01"):].split("\n[", 1)[0]
    assert "NOT ALLOWED" not in after, "the example's allow-list names its database nodes"
    assert "test_s6_mixed_workloads.py" in result.stdout and "host-power-off on host:esx-b1 via redfish" in result.stdout


def test_the_backup_suite_plans_a_copy_only_backup_where_it_is_told_to_write():
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             "harness_suites/s7/test_s7_backup_under_load.py", "--topology", "examples/stretched-2plus2.yaml",
                             "--dry-run", "--backup-destination", "D:\\Backup"], capture_output=True, text=True, cwd=ROOT,
                            timeout=120, env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"})
    assert result.returncode == 0, result.stdout + result.stderr
    plan = plan_of(result.stdout, "backup on database:sql-ag-01 via sqlserver")
    assert "BACKUP DATABASE [bench] TO DISK = N'D:\\Backup\\harness-bench-" in plan and "WITH COPY_ONLY" in plan, plan
    assert "KILL the backup's session" in plan and "Remove-Item -LiteralPath 'D:\\Backup\\harness-bench-" in plan


REPEATED_SUITE = SUITE.replace('@pytest.mark.parametrize("fault"', '@pytest.mark.repeated\n@pytest.mark.parametrize("fault"')


def test_a_repeated_test_plans_each_fault_as_many_trials_as_repeat_asks(tmp_path, victim: Victim):
    topology = write_topology(tmp_path, victim.pidfile)
    suite = tmp_path / "test_suite.py"
    suite.write_text(REPEATED_SUITE)
    result = run_pytest([str(suite), "--topology", str(topology), "--dry-run", "--repeat", "3", "--state-dir",
                         str(tmp_path / "s"), "--rootdir", str(ROOT), "-c", str(ROOT / "pyproject.toml")])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "--repeat=3" in result.stdout
    assert "3 trials (--repeat), each after a baseline and, bounded, a quiet cluster" in result.stdout


def test_a_usage_error_is_bad_input_exit_4_as_the_readme_says():
    """argparse exits 2 on a usage error; the README's table gives bad input 4, and so does every command."""
    for argv in (["plan"], ["plan", "--topology", "examples/stretched-2plus2.yaml", "--widest-site-subnet", "40"],
                 ["no-such-command"]):
        result = subprocess.run([sys.executable, "-m", "harness", *argv], capture_output=True, text=True, cwd=ROOT,
                                timeout=60)
        assert result.returncode == 4, (argv, result.stderr)
        assert "error:" in result.stderr and "usage:" in result.stderr
