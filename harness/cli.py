"""`python -m harness`: recover after a crash, plan faults, drive the lab, build reports."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from faults import registry
from faults.base import FaultSpec
from harness.demo import add_demo_parser
from harness.doctor import SCHEMA, examine
from harness.safety.journal import Journal
from harness.safety.recover import EXIT_BAD_INPUT, EXIT_REVERT_FAILED, recover
from harness.safety.run import HarnessRun
from harness.topology_source import is_lab, load_source
from harness_kernel import redaction
from harness_kernel.errors import ConfigError, HarnessError
from harness_kernel.paths import state_dir
from harness_kernel.topology.values import WIDEST_SITE_PREFIX
from harness_lab.cli import add_lab_parser
from reports.cli import add_report_parser

EXIT_HARNESS_BROKEN = EXIT_REVERT_FAILED  # README: 1 = SLO violated; 10 = harness/infrastructure; 4 = bad input


RECOVER_SCHEMA = "harness-recover/1"


def _cmd_recover(args: argparse.Namespace) -> int:
    """Exit 0: all reverted (or left to their live run) or nothing to do; 10: a revert failed; 4: an entry is unreadable."""
    journal = Journal(state_dir(args.state_dir) / "journal")
    report = recover(journal, force=args.force, say=(lambda line: print(line, file=sys.stderr)) if args.json else print)
    if args.json:
        print(json.dumps({
            "schema": RECOVER_SCHEMA, "exit_code": report.exit_code, "journal": str(journal.directory),
            "entries": [{"kind": o.entry.spec.kind, "target": o.entry.spec.target, "run_id": o.entry.run_id,
                         "pid": o.entry.pid, "action": o.action, "detail": o.detail} for o in report],
            "unreadable": [{"path": str(path), "reason": reason} for path, reason in report.unreadable]}, indent=1))
        return report.exit_code
    for line in report.lines():
        print(line)
    if not report and not report.unreadable:
        print(f"nothing to recover: journal {journal.directory} is empty")
    return report.exit_code


PLAN_SCHEMA = "harness-plan/1"


def _cmd_plan(args: argparse.Namespace) -> int:
    topology = load_source(args.topology, widest_site_prefix=args.widest_site_subnet)
    session = HarnessRun(topology=topology, topology_source=args.topology, state_dir=state_dir(args.state_dir))
    planned = []
    for text in args.fault:
        kind, _, target = text.partition("@")
        if not target:
            raise ConfigError(f"--fault {text!r}: expected KIND@TARGET, e.g. host-crash@host:host-a")
        spec = FaultSpec(kind=kind, target=target)
        plan = session.build(spec).plan()
        not_allowed = registry.not_allowed(plan, topology)
        planned.append({"kind": spec.kind, "target": spec.target, "backend": plan.backend,
                        "inject": list(plan.inject_steps), "revert": list(plan.revert_steps),
                        "credentials": list(plan.credentials), "not_allowed": not_allowed or None})
        if not args.json:
            print(plan.render())
            if not_allowed:
                print(f"  NOT ALLOWED: {not_allowed}")
    missing = session.missing_credentials(open_keyring=False)
    if args.json:
        print(json.dumps({"schema": PLAN_SCHEMA, "topology": topology.name, "faults": planned,
                          "credentials_missing": missing}, indent=1))
    else:
        print("credentials missing for a real run: " + ("; ".join(missing) if missing else "none"))
    return 0


def _cmd_doctor(args: argparse.Namespace) -> int:
    """Exit 0: nothing FAILed; 4: the input is wrong (a credential, a field); 10: the cluster is not ready."""
    if args.replay:
        return _replay(args)
    topology = load_source(args.topology, widest_site_prefix=args.widest_site_subnet)
    if args.capture:
        from harness.capture.session import capture  # paramiko, cryptography: only where a capture is asked for

        findings = capture(topology, Path(args.topology).read_text() if not is_lab(args.topology) else "",
                           Path(args.capture))
    else:
        findings = examine(topology)
    print(findings.dumps() if args.json else findings.render())
    if args.capture:
        print(f"capture: {args.capture} (read its manifest.json before sending it anywhere)", file=sys.stderr)
    return findings.exit_code


def _replay(args: argparse.Namespace) -> int:
    """Doctor against a capture served from loopback: exit 0 when it reaches the live run's rows, 10 otherwise."""
    from harness.capture.session import replay

    result = replay(Path(args.replay))
    print(result.findings.dumps() if args.json else result.findings.render())
    print(f"replay: {result.compared} rows compared, {len(result.differences)} differ, "
          f"{len(result.not_replayed)} not replayed (their evidence is on the machine that captured), "
          f"{len(result.misses)} requests not in the capture", file=sys.stderr)
    for line in result.differences + [f"not in the capture: {m}" for m in result.misses]:
        print(f"  {line}", file=sys.stderr)
    return 0 if not result.differences else 10


def _cmd_discover(args: argparse.Namespace) -> int:
    """Exit 0: the draft is printed; 4: no trust given (the thumbprint is printed), a field or login refused; 10: unreachable."""
    from harness.discover import draft

    print(draft(vars(args)), end="")
    return 0


def _cmd_examples(args: argparse.Namespace) -> int:
    """Exit 0: the list, or the example printed; 4: no example of that name."""
    from harness import examples

    if args.name:
        print(examples.text(args.name), end="")
        return 0
    for name in examples.names():
        print(f"{name}  {examples.summary(name)}")
    return 0


def _cmd_schema(args: argparse.Namespace) -> int:
    from faults.catalogue import installed
    from harness.schema import dumps

    print(dumps(installed()), end="")
    return 0


class _Parser(argparse.ArgumentParser):
    """A usage error is bad input: the README's exit code 4, not argparse's 2."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m harness",
                                     description="Resilience harness: inject infrastructure faults under load and measure.")
    parser.add_argument("-v", "--verbose", action="store_true")
    parser.add_argument("--version", action="version", version=f"%(prog)s {installed_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("recover", help="revert every fault a crashed run left in the journal")
    rec.add_argument("--state-dir", default=None)
    rec.add_argument("--force", action="store_true", help="also revert faults of runs that still look alive")
    rec.add_argument("--json", action="store_true", help=f"one JSON document (schema {RECOVER_SCHEMA}) on stdout; "
                                                         "progress on stderr")
    rec.set_defaults(func=_cmd_recover)
    plan = sub.add_parser("plan", help="print the plan of faults against a topology without touching anything")
    plan.add_argument("--topology", required=True)
    plan.add_argument("--fault", action="append", default=[], metavar="KIND@TARGET")
    plan.add_argument("--state-dir", default=None)
    plan.add_argument("--widest-site-subnet", type=int, default=WIDEST_SITE_PREFIX, metavar="PREFIX",
                      choices=range(1, 33), help="accept site subnets as wide as /PREFIX")
    plan.add_argument("--json", action="store_true", help=f"one JSON document (schema {PLAN_SCHEMA}) for automation")
    plan.set_defaults(func=_cmd_plan)
    doctor = sub.add_parser("doctor", help="run every check a run makes before its first fault, changing nothing")
    where = doctor.add_mutually_exclusive_group(required=True)
    where.add_argument("--topology")
    where.add_argument("--replay", metavar="DIR", help="run against a capture served from loopback and compare its "
                                                        "rows with the live run's")
    doctor.add_argument("--capture", metavar="DIR", help="also write what doctor read, scrubbed to the fields the "
                                                         "harness reads and aliased, as contract fixtures")
    doctor.add_argument("--json", action="store_true", help=f"one JSON document (schema {SCHEMA}) for CI")
    doctor.add_argument("--widest-site-subnet", type=int, default=WIDEST_SITE_PREFIX, metavar="PREFIX",
                        choices=range(1, 33), help="accept site subnets as wide as /PREFIX")
    doctor.set_defaults(func=_cmd_doctor)
    find = sub.add_parser("discover", help="print a draft topology from what the cluster's platforms say (vCenter "
                                           "first), changing nothing")
    from harness.discover import add_draft_options  # each platform declares the options its drafter reads

    add_draft_options(find)
    find.set_defaults(func=_cmd_discover)
    example = sub.add_parser("examples", help="list the example topologies, or print one to start your own from")
    example.add_argument("name", nargs="?", help="the example to print (as listed)")
    example.set_defaults(func=_cmd_examples)
    schema = sub.add_parser("schema", help="print the topology's JSON Schema, with every installed platform's "
                                           "section (for an editor's completion and checks)")
    schema.set_defaults(func=_cmd_schema)
    add_lab_parser(sub)
    add_report_parser(sub)
    add_demo_parser(sub)
    return parser


def installed_version() -> str:
    """The installed distribution's version (a checkout used without installing says so)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("resilience-harness")
    except PackageNotFoundError:
        return "(not installed: a checkout)"


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    redaction.install_for_command(args)
    try:
        return int(args.func(args))
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except HarnessError as exc:
        print(f"harness error: {exc}", file=sys.stderr)
        return EXIT_HARNESS_BROKEN
