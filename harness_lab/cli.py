"""`python -m harness lab up [--vsphere] | down | status | vm`: the embedded lab from the command line."""

from __future__ import annotations

import argparse
import math
import re

from harness_kernel.topology.models import LabSettings
from harness_lab import netns
from harness_lab.controller import SITE_NODES, Lab, LabStatus
from harness_lab.layout import LabLayout
from harness_lab.postgres import NODES

LAB_NAMESPACE = re.compile(r"^([a-z][a-z0-9]{1,7})-(?:[abrw]|l[12])$")


def _lab(prefix: str, state_dir: str | None, subnet_index: int | None = None) -> Lab:
    return Lab(LabLayout.from_settings(LabSettings(prefix=prefix, state_dir=state_dir, subnet_index=subnet_index)))


def found_prefixes() -> list[str]:
    """Prefixes of every lab with a namespace on this machine (`{prefix}-a/-b/-w/-r`)."""
    return sorted({m.group(1) for ns in netns.existing_namespaces() if (m := LAB_NAMESPACE.match(ns))})


def render_status(status: LabStatus) -> str:
    lines = [f"lab {status.prefix}  subnet {status.subnet}  latency via {status.latency_mechanism or '-'}",
             f"  namespaces: {', '.join(status.namespaces) or 'none'}"]
    if status.processes:
        lines.append("  processes:  " + ", ".join(f"{k} {'up' if v else 'DOWN'}" for k, v in status.processes.items()))
    if status.nodes:
        lines.append(f"  {'node':<8} {'reported':<14} {'goal':<14} {'quorum':<7} health")
        lines += [f"  {n.name:<8} {n.reportedstate:<14} {n.goalstate:<14} {'yes' if n.replication_quorum else 'no':<7} "
                  f"{n.health}" for n in status.nodes]
        lines.append(f"  primary: {status.primary or 'none'}   replication: {status.sync_state or '-'}")
    if status.error:
        lines.append(f"  error: {status.error}")
    return "\n".join(lines)


def _cmd_up(args: argparse.Namespace) -> int:
    lab = _lab(args.prefix, args.state_dir, args.subnet_index)
    if args.vsphere:
        return _cmd_up_vsphere(lab, dict(args.model))
    took = lab.up()
    print(f"lab {args.prefix} up in {took:.1f} s")
    print(render_status(lab.status()))
    print(f"  router ssh: root@{lab.layout.client.router_address} key {lab.ssh_key_file}")
    return 0


def _cmd_up_vsphere(lab: Lab, model: dict[str, float]) -> int:
    from harness_lab.vsphere_binding import VsphereBinding  # needs cryptography: imported only when asked for

    binding = VsphereBinding(lab, model)
    bound = binding.up()
    print(f"lab {lab.layout.prefix} bound to the vSphere simulator in {bound.took_s:.1f} s")
    print("model (what the lab models rather than does): "
          + ", ".join(f"{name}={value:g}" for name, value in sorted(binding.model.items())))
    print(render_status(lab.status()))
    print(f"topology: {bound.topology_file}")
    print("# the topology references these; export them in the shell that runs the suites:")
    print(bound.render_exports())
    return 0


def _cmd_vm(args: argparse.Namespace) -> int:
    """The simulator's hook: what a VM's platform does to the lab node inside it."""
    lab = _lab(args.prefix, args.state_dir)
    if args.vm_action == "power-off":
        lab.kill_node(args.node)
        print(f"{args.node}: killed (its host lost power)")
    elif args.vm_action == "power-on":
        lab.power_on_node(args.node)
        print(f"{args.node}: started")
    elif args.vm_action == "io-pause":
        applied = lab.io_pause(args.node, args.seconds)
        print(f"{args.node}: I/O paused {applied:g} s (asked {args.seconds:g} s)")
    elif args.vm_action == "vmotion":
        from harness_lab.vmotion import PreCopyModel, migrate
        from harness_lab.vsphere_binding import running_model  # needs cryptography: imported only when asked for

        model = running_model(lab.layout)
        if model is None:
            raise SystemExit(f"lab {args.prefix}: no simulator model (is the lab bound with `lab up --vsphere`?)")
        done = migrate(lab, args.node, cross_site=args.from_site != args.to_site, model=PreCopyModel.of(model))
        print(f"{args.node}: {args.from_site} -> {args.to_site}: pre-copy {done.precopy_s:.2f} s at "
              f"{done.rtt_ms:.2f} ms RTT, stunned {done.stun_s:g} s")
    elif args.vm_action == "io-load":
        lab.io_load(args.site, args.mb_per_s, args.seconds)
        print(f"{args.site}: background writes at {args.mb_per_s:g} MB/s for {args.seconds:g} s")
    return 0


def _add_vm_parser(verbs: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    vm = verbs.add_parser("vm", help="what a simulated VM's platform does to its lab node (the vSphere simulator's hook)")
    vm.add_argument("--prefix", default="hlab", help="lab prefix (default hlab)")
    vm.add_argument("--state-dir", default=None, help="lab state directory (as for `lab up`)")
    vm.set_defaults(func=_cmd_vm)
    actions = vm.add_subparsers(dest="vm_action", required=True)
    nodes = list(NODES)
    actions.add_parser("power-off", help="the VM's host lost power: kill the node now").add_argument("node", choices=nodes)
    actions.add_parser("power-on", help="the VM started: start the node").add_argument("node", choices=nodes)
    pause = actions.add_parser("io-pause", help="vSAN paused the VM's I/O (capped under the HA detection time)")
    pause.add_argument("node", choices=nodes)
    pause.add_argument("seconds", type=_non_negative)
    vmotion = actions.add_parser("vmotion", help="the VM moves to another host: modelled pre-copy, then a real stun")
    vmotion.add_argument("node", choices=nodes)
    vmotion.add_argument("from_site", choices=sorted(SITE_NODES))
    vmotion.add_argument("to_site", choices=sorted(SITE_NODES))
    load = actions.add_parser("io-load", help="resync traffic on a site's storage (0 stops it)")
    load.add_argument("site", choices=sorted(SITE_NODES))
    load.add_argument("mb_per_s", type=_non_negative)
    load.add_argument("seconds", type=_non_negative)


def _non_negative(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: a finite number >= 0")
    return value


def _cmd_down(args: argparse.Namespace) -> int:
    prefixes = found_prefixes() if args.all else [args.prefix]
    for prefix in prefixes:
        _lab(prefix, None if args.all else args.state_dir).down()
        print(f"lab {prefix} down")
    if not prefixes:
        print("no lab found")
    return 0


def _cmd_status(args: argparse.Namespace) -> int:
    status = _lab(args.prefix, args.state_dir).status()
    print(render_status(status))
    return 0 if status.up else 1


def _model_parameter(text: str) -> tuple[str, float]:
    name, sep, value = text.partition("=")
    try:
        number = float(value)
    except ValueError:
        number = float("nan")
    if not sep or not math.isfinite(number):
        raise argparse.ArgumentTypeError(f"{text!r}: expected NAME=NUMBER")
    return name, number


def add_lab_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    lab = subparsers.add_parser("lab", help="the embedded lab: namespaces, PostgreSQL + pg_auto_failover, router")
    verbs = lab.add_subparsers(dest="lab_command", required=True)
    for name, func, text in (("up", _cmd_up, "build the lab (idempotent; cleans a half-torn-down one)"),
                             ("down", _cmd_down, "remove the lab's processes, rules, namespaces and state"),
                             ("status", _cmd_status, "namespaces, processes, node states, latency mechanism")):
        verb = verbs.add_parser(name, help=text)
        verb.add_argument("--prefix", default="hlab", help="lab prefix (default hlab)")
        verb.add_argument("--state-dir", default=None, help="lab state directory (default $HARNESS_LAB_DIR or "
                                                            "/var/lib/resilience-lab/PREFIX)")
        verb.set_defaults(func=func)
        if name == "up":
            verb.add_argument("--subnet-index", type=int, default=None, help="which /24 of 198.18.0.0/15 (0-511)")
            verb.add_argument("--model", type=_model_parameter, action="append", default=[], metavar="NAME=VALUE",
                              help="with --vsphere: change one parameter of the simulator's model "
                                   "(e.g. component_mb=512 for a shorter resync)")
            verb.add_argument("--vsphere", action="store_true", help="also the vSphere simulator, BMCs and ESXi "
                                                                     "shells; prints the topology bound to them")
        if name == "down":
            verb.add_argument("--all", action="store_true", help="every lab found on this machine")
    _add_vm_parser(verbs)
