"""`python -m harness demo`: the main job against the embedded lab, start to report.

Brings the lab up (through the suites' fixtures), runs S1-S7 with short windows, builds the
Allure report (site + single file, trend kept in OUT), prints the scenario tables and ends
with `report: <single-file path>`. Windows are options, so a nightly run lengthens them.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from harness.phases import PhaseDurations
from harness_kernel.paths import tools_dir
from harness_lab.latency import toxiproxy_binary
from harness_lab.shell import BASE_PATH
from harness_lab.vsphere_binding import simulator_binary
from reports.allure.generate import allure_binary
from reports.cli import add_regression_options, regression_rule
from reports.regression import FIGURES_HISTORY, REGRESSION_EXIT_CODE

CHECKOUT = Path(__file__).resolve().parents[1]  # the repository, when run from one (its Makefile sets the lab up)


@dataclass(frozen=True)
class DemoSettings:
    """A demo's scale: the phases every experiment uses (the same `PhaseDurations` the fixtures build from the
    options), and what the suites add."""

    phases: PhaseDurations
    step_s: float
    warmup_s: float
    rtt_steps: str
    component_mb: int  # the bound lab's modelled vSAN component size: how long a resync lasts
    migration_rtt_steps: str = "0,4"
    backup_rates: str = "4M"
    # S6's offered database I/O (the logs take a quarter more), direct to the one virtual disk that also holds the
    # database's WAL: the lab's scale, not a mail store's. At 200 its interference ran from -1 % to -25 % between
    # demo runs on this machine, one of three a FAIL: a true reading of that disk, too unsteady for a demo verdict
    io_rate_iops: int = 100
    soak_s: float = 45.0  # S6's N-1 soak of the mail workload: the ESRP shape, shortened to the demo's scale
    deselect: tuple[str, ...] = ()  # node ids left to FULL
    # the fault held on the bound lab (S2, S3): a failed disk's steady state needs more seconds than the lab's own
    # faults to give TPS after / before an interval that decides
    bound_observe_s: float | None = None
    # S7's backup compared under a vSAN IOPS limit, on the bound lab (the only platform here that sets one)
    qos_iops_limit: int | None = None

    def options(self, *, bound: bool = False) -> list[str]:
        """The suites' command-line options for these settings (every phase's, then the suites')."""
        observe = self.bound_observe_s if bound and self.bound_observe_s is not None else self.phases.observe_s
        phases = [("--baseline-s", self.phases.baseline_s), ("--observe-s", observe),
                  ("--settle-s", self.phases.settle_s), ("--steady-window-s", self.phases.steady_window_s)]
        suites = [("--step-s", self.step_s), ("--warmup-s", self.warmup_s), ("--rtt-steps", self.rtt_steps),
                  ("--migration-rtt-steps", self.migration_rtt_steps), ("--backup-rates", self.backup_rates),
                  ("--io-rate-iops", self.io_rate_iops), ("--soak-s", self.soak_s),
                  *([("--qos-iops-limit", self.qos_iops_limit)] if bound and self.qos_iops_limit else [])]
        return [text for name, value in phases + suites for text in (name, str(value))]


# The demo keeps fewer cases with longer windows, so that each verdict's interval rests on enough seconds to decide
# (8 s windows made them decoration): S2's disk group and host, S5 at 0 ms and S6's N-1 soak (no threshold of its
# own) go to FULL; the fault is held 40 s on the bound lab (S2's TPS after / before was INCONCLUSIVE at 25 s).
# One case a scenario where a second would repeat its path at the same cost: S3's witness isolation (the link
# partition and the bound site failure stay), S4's standby loss (the unplanned and planned failovers stay) and
# S7's restore (the backup stays) are FULL's; each is about 50-70 s of a demo that must end within 10 minutes.
FULL_ONLY_CASES = ("harness_suites/s3/test_s3_partitions.py::"
                   "test_a_site_keeps_serving_while_the_sites_or_the_witness_are_cut_off[witness-isolation]",
                   "harness_suites/s4/test_s4_application_failover.py::"
                   "test_losing_the_standby_stalls_the_workload_no_longer_than_tolerated",
                   "harness_suites/s7/test_s7_backup_under_load.py::"
                   "test_a_restore_under_load_completes_and_keeps_the_business_running")
SLOW_PATHS = (*(f"harness_suites/s2/test_s2_component_failures.py::"
                f"test_the_business_recovers_to_a_steady_state_within_the_slo[{case}]" for case in ("host", "disk-group")),
              "harness_suites/s6/test_s6_mixed_workloads.py::"
              "test_the_mail_workload_is_held_for_a_whole_window_with_one_node_lost_and_not_replaced")
DEMO = DemoSettings(PhaseDurations(baseline_s=14, observe_s=25, settle_s=8, steady_window_s=8), step_s=14, warmup_s=2,
                    rtt_steps="0,4", component_mb=256, migration_rtt_steps="4", bound_observe_s=40,
                    deselect=(*SLOW_PATHS, *FULL_ONLY_CASES))
FULL = DemoSettings(PhaseDurations(baseline_s=14, observe_s=25, settle_s=10, steady_window_s=8), step_s=14, warmup_s=3,
                    rtt_steps="0,1,2,4,8", component_mb=256, migration_rtt_steps="0,1,2,4", backup_rates="none,4M",
                    soak_s=120.0, qos_iops_limit=128)
# The smoke run is the demo's cases with minimal windows: it checks each path once, not the product. What the demo
# leaves to FULL it leaves out too (S2's disk group and host take the vSAN backend, ESXi shell and BMC S2's disk and
# S3's site failure take, and the bound lab's own specs fail them; S6's soak is S6's mixed case held longer); the
# nightly tier runs the FULL-only cases at these windows (tests/integration/reports/test_demo_full_only_cases.py).
SMOKE = DemoSettings(PhaseDurations(baseline_s=5, observe_s=6, settle_s=4, steady_window_s=3), step_s=4, warmup_s=1,
                     rtt_steps="0,4", component_mb=128, migration_rtt_steps="2", backup_rates="16M", soak_s=12.0,
                     qos_iops_limit=512, deselect=DEMO.deselect)
# What FULL adds to the demo: longer windows, the whole RTT sweeps, S2's host row (S3 and S4 lose hosts too),
# the unthrottled backup, and the backup compared under a vSAN IOPS limit on the bound lab.
FULL_ADDS = ("S1 at 1, 2 and 8 ms; S2's disk group and host power-off; S3's witness isolation; S4's standby loss; "
             "S5 at 0, 1 and 2 ms; S6's N-1 soak; S7's restore, its unthrottled backup, and its backup with and without "
             "a vSAN IOPS limit (bound lab)")


REPORT_DIR = "report"  # under OUT: the report, and the figures history the suites read (`--figures-history`)
SUITES = "harness_suites"  # run by name (`--pyargs`), from a checkout or an installed package alike
# S3's partitions read the lab's HA manager as metro storage: they run on the lab, its site failure on the bound lab
LAB_SUITES = ("s1.test_s1_latency_sweep", "s3.test_s3_partitions", "s4.test_s4_application_failover",
              "s6.test_s6_mixed_workloads", "s7.test_s7_backup_under_load")
VSPHERE_SUITES = ("s2.test_s2_component_failures", "s3.test_s3_site_failure", "s5.test_s5_live_migration")
# on the bound lab S7 runs its QoS comparison only: its backup and restore are the lab run's
S7 = "s7.test_s7_backup_under_load"
S7_FILE = "harness_suites/s7/test_s7_backup_under_load.py"
S7_LAB_ONLY = tuple(f"{S7_FILE}::{test}" for test in (
    "test_a_full_backup_under_load_completes_and_keeps_the_business_running",
    "test_a_restore_under_load_completes_and_keeps_the_business_running"))
S7_QOS = f"{S7_FILE}::test_a_backup_under_a_vsan_iops_limit_holds_the_limit_and_keeps_the_business_running"


def suites_root() -> Path:
    """The folder holding the suites' package: the root their node ids (`--deselect`) are written against."""
    spec = importlib.util.find_spec(SUITES)
    if spec is None or spec.origin is None:
        raise SystemExit(f"the ready-made suites ({SUITES}) are not installed with this harness")
    return Path(spec.origin).parent.parent


def demo_needs(no_vsphere: bool) -> list[str]:
    """What the demo needs on this machine and does not find: the lab's programs and the report's."""
    missing = [] if os.geteuid() == 0 else ["root (the lab makes network namespaces and runs PostgreSQL as postgres)"]
    missing += [f"{name} (apt)" for name in ("pg_autoctl", "fio", "nft", "ip") if shutil.which(name, path=BASE_PATH) is None]
    needed = [toxiproxy_binary(), allure_binary()] + ([] if no_vsphere else [simulator_binary()])
    missing += [str(path) for path in needed if not path.exists()]
    return missing


def settings_of(args: argparse.Namespace) -> DemoSettings:
    return SMOKE if args.smoke else FULL if args.full else DEMO


def add_demo_parser(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "demo", help="run the S1-S7 suites against the embedded lab and build the report")
    parser.add_argument("--out", type=Path, default=Path("out"), help="results, tables and report go here")
    parser.add_argument("--lab", default="lab", help="lab topology: 'lab' or 'lab:PREFIX'")
    parser.add_argument("--smoke", action="store_true", help="minimal windows: checks the path, not the product")
    parser.add_argument("--full", action="store_true", help=f"the whole matrix; adds {FULL_ADDS}")
    parser.add_argument("--keep-lab", action="store_true", help="leave the lab running afterwards")
    parser.add_argument("--no-vsphere", action="store_true",
                        help="run S2 and S3 with the lab's own faults instead of through the production vSphere, "
                             "vSAN and Redfish backends against the lab's simulator")
    parser.add_argument("--state-dir", default=None)
    parser.add_argument("--no-pdf", action="store_true", help="do not print the summary page to PDF")
    add_regression_options(parser)
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments (e.g. -k S4, --observe-s 60)")
    parser.set_defaults(func=run_demo)


def pytest_command(args: argparse.Namespace, results: Path, tables: Path, *, topology: str | None = None,
                   suites: Sequence[str] = (), clean: bool = True, deselect: Sequence[str] = ()) -> list[str]:
    w = settings_of(args)
    modules = [f"{SUITES}.{suite}" for suite in suites] or [SUITES]
    command = [sys.executable, "-m", "pytest", "--pyargs", *modules, "--rootdir", str(suites_root()),
               "-p", "no:cacheprovider",
               "--topology", topology or args.lab, "--alluredir", str(results), "--tables-dir", str(tables),
               "--figures-history", str(results.parent / REPORT_DIR / FIGURES_HISTORY),
               *w.options(bound=topology is not None), "-q", "-rA",
               *(f"--deselect={node}" for node in (*w.deselect, *deselect))]
    if clean:
        command.append("--clean-alluredir")
    if topology is not None:
        command.append("--allow-destructive")  # the bound lab is a vsphere topology: the run must say so
    if args.keep_lab or topology is not None:
        command.append("--keep-lab")  # the demo brings the bound lab down itself, after the last suite
    if args.state_dir:
        command += ["--state-dir", args.state_dir]
    if os.environ.get("CI") or args.smoke:
        command.append("--quiet-progress")
    return command + list(args.pytest_args)


@dataclass(frozen=True)
class BoundLab:
    """The lab bound to its vSphere simulator: the topology file and the credentials it references."""

    prefix: str
    topology: Path
    environment: dict[str, str]


def lab_prefix(lab: str) -> str:
    return lab.partition(":")[2] or "hlab"


def bind_vsphere(prefix: str, component_mb: int) -> BoundLab:
    """`python -m harness lab up --vsphere`: its `topology:` line, and the `export NAME=VALUE` lines it prints."""
    run = subprocess.run([sys.executable, "-m", "harness", "lab", "up", "--vsphere", "--prefix", prefix,
                          "--model", f"component_mb={component_mb}"],
                         stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600)
    if run.returncode != 0:
        raise SystemExit(f"lab up --vsphere failed (exit {run.returncode}):\n{run.stderr[-3000:]}")
    topology, environment = None, {}
    for line in run.stdout.splitlines():
        if line.startswith("topology: "):
            topology = Path(line.removeprefix("topology: ").strip())
        elif line.startswith("export "):
            name, _, value = shlex.split(line.removeprefix("export "))[0].partition("=")
            environment[name] = value
    if topology is None:
        raise SystemExit("lab up --vsphere printed no 'topology:' line")
    return BoundLab(prefix, topology, environment)


def run_demo(args: argparse.Namespace) -> int:
    from reports.build import build_report

    missing = demo_needs(args.no_vsphere)
    if missing:
        where = ("`make setup` in this checkout installs them" if (CHECKOUT / "Makefile").exists() else
                 "a checkout of the harness's repository installs them with `make setup`")
        raise SystemExit(f"the demo runs the embedded lab on this machine and needs what {where} (root, idempotent: "
                         f"apt packages, Toxiproxy, the Allure CLI and the vSphere simulator into $HARNESS_TOOLS, "
                         f"now {tools_dir()}); missing here: {'; '.join(missing)}")

    out: Path = args.out.resolve()
    results, tables = out / "allure-results", out / "tables"
    for stale in tables.glob("*") if tables.exists() else []:
        stale.unlink()
    started = time.monotonic()
    if args.no_vsphere:
        returncode, signals = run_to_end(pytest_command(args, results, tables, deselect=(S7_QOS,)), Path.cwd())
    else:
        returncode, signals = run_bound(args, results, tables)
    if signals:
        print(f"demo interrupted ({', '.join(signal.Signals(s).name for s in signals)}): pytest exit {returncode}; "
              "no report built", file=sys.stderr)
        return returncode or 128 + signals[0]
    report = build_report(results, out / REPORT_DIR, name="Resilience demo (embedded lab)", rule=regression_rule(args),
                          pdf=not args.no_pdf)
    print("\nscenario tables (measured in this run)\n")
    for table in sorted(tables.glob("*.md")):
        print(table.read_text().rstrip() + "\n")
    for judgement in report.regressions:
        print(f"REGRESSION {judgement.sentence()}")
    print(f"demo wall time: {time.monotonic() - started:.0f} s; pytest exit {returncode}; "
          f"{len(report.regressions)} figure(s) regressed")
    if not (args.full or args.smoke):
        print(f"make demo FULL=1 adds {FULL_ADDS}")
    print(f"allure site: {report.allure.site_dir / 'index.html'}")
    if report.pdf_file is not None:
        print(f"pdf: {report.pdf_file}")
    print(f"report: {report.summary_file}")
    if returncode == 0 and args.fail_on_regression and report.regressions:
        return REGRESSION_EXIT_CODE
    return returncode


def run_bound(args: argparse.Namespace, results: Path, tables: Path) -> tuple[int, list[int]]:
    """S1, S3's partitions, S4, S6 and S7 on the lab's own faults, S2, S3's site failure and S5 through the
    production vSphere path on the bound lab."""
    prefix = lab_prefix(args.lab)
    try:
        bound = bind_vsphere(prefix, settings_of(args).component_mb)
        print(f"lab {prefix} bound to its vSphere simulator: {bound.topology}", flush=True)
        first, signals = run_to_end(pytest_command(args, results, tables, suites=LAB_SUITES, deselect=(S7_QOS,)),
                                    Path.cwd())
        if signals:
            return first, signals
        qos = (S7,) if settings_of(args).qos_iops_limit else ()
        second, signals = run_to_end(pytest_command(args, results, tables, topology=str(bound.topology),
                                                    suites=(*VSPHERE_SUITES, *qos), clean=False,
                                                    deselect=S7_LAB_ONLY if qos else ()),
                                     Path.cwd(), environment=bound.environment)
        return _worst(first, second), signals
    finally:
        if not args.keep_lab:
            subprocess.run([sys.executable, "-m", "harness", "lab", "down", "--prefix", prefix],
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=300, check=False)


def _worst(first: int, second: int) -> int:
    """pytest's exit codes, the harness's 10 above a test failure's 1."""
    return max(first, second, key=lambda code: (code == 10, code != 0, code))


FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def run_to_end(command: Sequence[str], cwd: Path,
               environment: dict[str, str] | None = None) -> tuple[int, list[int]]:
    """Run `command` and wait for it to end, however often we are signalled; returns (exit code, signals).

    The child reverts its faults, releases its lock and scrubs its results when interrupted; all
    that takes seconds. subprocess.run would SIGKILL it 0.25 s after a Ctrl-C, so instead the
    child has its own process group (a terminal's Ctrl-C reaches it once, through us) and every
    SIGINT, SIGTERM and SIGHUP we get is passed on while we keep waiting, without a timeout.
    """
    received: list[int] = []
    children: list[subprocess.Popen[bytes]] = []

    def forward(signum: int, frame: FrameType | None) -> None:
        received.append(signum)
        for child in children:
            with contextlib.suppress(ProcessLookupError):
                child.send_signal(signum)

    previous = {signum: signal.signal(signum, forward) for signum in FORWARDED}
    try:
        child = subprocess.Popen(command, cwd=cwd, stdin=subprocess.DEVNULL, process_group=0,
                                 env={**os.environ, **(environment or {})})
        signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)  # later signals wait until the child is known
        try:
            children.append(child)
            for signum in received:  # arrived while the child was being started
                child.send_signal(signum)
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)
        return child.wait(), received
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
