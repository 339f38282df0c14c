"""`python -m harness doctor`: every check a run makes before its first fault, all at once, changing nothing.

First contact with a cluster, and every night before the suites. One row per check, grouped by
where it goes: PASS, WARN or FAIL, what was seen, the fault kinds a failure blocks, how to fix
it. The rows are the run's own checks, not a second implementation of them:

- each secret the topology references (the core's and plug-in sections'), looked up;
- each fault the allow-list enables (every kind a platform here serves on an allowed target):
  it builds and plans, the account may make its calls (asked of the control plane, for
  backends that can say), its backend's preflight passes (reachable, trusted, credentials
  accepted, the target ready), and each assumption its backend names holds;
- the cluster's own preflight and its plug-in parts' (healthy enough to start);
- the probes of plug-in platforms present in the topology.

Preflights, assumption probes, the cluster's preflight and platform probes are read-only by
their contracts (`faults.base.Preflight`, `faults.assumptions`, `harness.clusters`): doctor adds
no call of its own to a cluster. Exit codes as the README's table: 0 nothing FAILed (WARN
allowed), 4 the input is wrong (a missing or rejected credential, a fault the topology cannot
express), 10 the cluster or the harness is not ready (unreachable, lacking a privilege, an
assumption not holding, not healthy).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from faults import registry, sections
from faults.assumptions import Assumes, ProbeResult
from faults.base import Checked, Fault, FaultSpec, Preflight, Uncertain
from faults.catalogue import installed
from faults.platform import PlatformChecks
from faults.transports import wire
from faults.transports.vcenter import close_all
from faults.transports.wire import WireCall
from harness.analysis.replication import ACCEPT_OPTION, FIRST_CONTACT, ReplicationReading, weaker_than_policy
from harness.clusters import ReadsReplication, cluster_for, cluster_parts, probes
from harness.names import Resolver, resolve_names, system_resolver
from harness_kernel.errors import ConfigError, HarnessError
from harness_kernel.text import escaped
from harness_kernel.topology.credentials import missing_secrets
from harness_kernel.topology.models import Topology
from harness_kernel.topology.targets import Target

SCHEMA = "harness-doctor/1"
EXIT_OK, EXIT_BAD_INPUT, EXIT_NOT_READY = 0, 4, 10
Status = Literal["PASS", "WARN", "FAIL"]


@dataclass(frozen=True)
class Row:
    where: str  # the endpoint or part the check goes to
    check: str
    status: Status
    seen: str
    blocks: tuple[str, ...] = ()  # fault kinds a FAIL keeps from running
    fix: str = ""
    bad_input: bool = False  # a FAIL the user's input causes (exit 4), not the cluster (exit 10)


@dataclass
class Findings:
    rows: list[Row] = field(default_factory=list)
    calls: list[WireCall] = field(default_factory=list)  # everything doctor sent, as the transports saw it
    exchanges: list[wire.Exchange] = field(default_factory=list)  # with `capture`: what came back, raw

    @property
    def exit_code(self) -> int:
        failed = [r for r in self.rows if r.status == "FAIL"]
        if any(not r.bad_input for r in failed):
            return EXIT_NOT_READY
        return EXIT_BAD_INPUT if failed else EXIT_OK

    def render(self) -> str:
        """Grouped by where each check goes, then one line per FAIL: what a person reads first."""
        lines: list[str] = []
        for where in dict.fromkeys(r.where for r in self.rows):
            lines.append(where)
            for row in (r for r in self.rows if r.where == where):
                lines.append(f"  {row.status:4}  {row.check}: {row.seen}")
                if row.status != "PASS" and row.blocks:
                    lines.append(f"        blocks: {', '.join(row.blocks)}")
                if row.status != "PASS" and row.fix:
                    lines.append(f"        fix: {row.fix}")
        counts = {s: sum(r.status == s for r in self.rows) for s in ("PASS", "WARN", "FAIL")}
        lines.append(f"doctor: {len(self.rows)} checks: {counts['PASS']} PASS, {counts['WARN']} WARN, "
                     f"{counts['FAIL']} FAIL (exit {self.exit_code})")
        lines += [f"FAIL {r.where}: {r.check}: {r.seen}" for r in self.rows if r.status == "FAIL"]
        return "\n".join(escaped(line) for line in lines)

    def to_json(self) -> dict[str, Any]:
        sent = Counter(self.calls)  # each distinct call once, with how often it went out, in the order first sent
        return {"schema": SCHEMA, "exit_code": self.exit_code, "rows": [asdict(r) for r in self.rows],
                "calls": [{**asdict(c), "count": n} for c, n in sent.items()]}

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=1)


def examine(topology: Topology, *, open_keyring: bool = True, resolve: Resolver = system_resolver,
            capture: bool = False) -> Findings:
    """Every check, in the order a run meets them; each failure is a row, never an exception.

    Read-only at the wire: the transports refuse any call that is not a read while doctor runs
    (`faults.transports.wire`), its vCenter sessions are logged out before it returns, and the last
    row says what was sent. With `capture`, the answers are kept too (`harness.capture` writes them)."""
    findings = Findings()
    with wire.watching(read_only=True, capture=capture) as sent:
        try:
            faults = list(_allowed_faults(topology, findings))
            findings.rows += _credentials(topology, faults, open_keyring)
            for fault in faults:
                findings.rows += _ready(fault, topology)
            findings.rows += _names(topology, resolve)
            findings.rows += _platform_checks(topology)
            findings.rows += _cluster(topology)
            for name, probe in probes(topology).items():
                findings.rows.append(_row(name.partition(" probe ")[0], f"probe {name.partition(' probe ')[2]}", probe))
        finally:
            close_all()  # logout: within the watch, so it is recorded too
    findings.calls, findings.exchanges = list(sent.calls), list(sent.exchanges)
    findings.rows.append(_read_only(sent))
    return findings


def _read_only(sent: wire.Wire) -> Row:
    """The row doctor writes about itself: what it sent, every call a read, every session object destroyed."""
    counts = Counter(c.transport for c in sent.calls)
    seen = f"{len(sent.calls)} calls ({', '.join(f'{n} {t}' for t, n in sorted(counts.items())) or 'none'})"
    problems = [f"refused: {c.endpoint}: {c.operation}" for c in sent.writes()]
    problems += [f"left open: {what}" for what in sent.left_open()]
    if problems:
        return Row("doctor", "sent only reads", "FAIL", f"{seen}; " + "; ".join(problems),
                   fix="a check tried to change something: report it, it is the harness's bug")
    return Row("doctor", "sent only reads", "PASS", f"{seen}, every one a read; every session object destroyed")


def _allowed_faults(topology: Topology, findings: Findings) -> Iterator[Fault]:
    """Each fault the allow-list enables: every kind a platform here serves on each allowed target."""
    catalogue = installed()
    for text in topology.allow_list:
        target = Target.parse(text)
        for kind in (k for k in catalogue.kinds.values() if k.target is target.kind):
            spec = FaultSpec(kind.name, text, _params(kind.name, target, topology))
            try:
                if registry.resolve(spec, topology, catalogue).served is None:
                    continue
                yield registry.build(spec, topology, catalogue)
            except ConfigError as exc:  # its backend cannot act on this target at all: nothing a run could do
                findings.rows.append(Row(text, f"{kind.name} on {text}", "WARN", f"not possible here: {exc}",
                                         (kind.name,), "leave it out of the suites, or correct the field it names"))


def _params(kind: str, target: Target, topology: Topology) -> dict[str, Any]:
    """The params a run would give: latency needs an RTT to plan (any will do), an IOPS limit a limit; a cache device
    fails as one; a restore reads the backup its run takes first, and on SQL Server moves its files where the run
    says (neither is read before inject)."""
    if kind == "latency":
        return {"rtt_ms": 1.0}
    if kind == "disk-iops-limit":
        return {"iops_limit": 1}
    if kind == "restore":  # it reads the backup a run takes first: checked when it starts, not here
        database = next((d for d in topology.databases if d.name == target.name), None)
        if database is not None and database.kind != "postgres":
            return {"backup": "(the backup the run takes)", "destination": "(--restore-destination)"}
        area = topology.databases[0].backup_area if topology.databases else None
        return {"backup": f"{area or ''}/harness-backup-(taken by the run)"}
    if kind == "disk-failure":
        host, device = target.parts
        caches = {g.cache for g in topology.host(host).disk_groups if g.cache}
        return {"device": "cache"} if device in caches else {}
    return {}


def _credentials(topology: Topology, faults: list[Fault], open_keyring: bool) -> list[Row]:
    rows = []
    for path, ref in sections.every_secret_ref(topology):
        missing = missing_secrets([(path, ref)], open_keyring=open_keyring)
        users = tuple(sorted({f.spec.kind for f in faults if any(path.startswith(c) or c.startswith(path)
                                                                   for c in f.plan().credentials)}))
        if missing:
            rows.append(Row("credentials", path, "FAIL", missing[0], users,
                            f"set what {path} references (environment variable or keyring entry)", bad_input=True))
        else:
            rows.append(Row("credentials", path, "PASS", f"{ref.describe()} is set"))
    return rows


def _ready(fault: Fault, topology: Topology) -> list[Row]:
    plan = fault.plan()
    kind, what = fault.spec.kind, f"{fault.spec.kind} on {fault.spec.target}"
    not_allowed = registry.not_allowed(plan, topology)
    if not_allowed:
        return [Row(plan.backend, what, "WARN", f"not allowed: {not_allowed}", (kind,), "extend allow_list")]
    rows: list[Row] = []
    if isinstance(fault, Checked):
        rows += [_row(check.where or plan.backend, f"{what}: {check.name}", check.run, blocks=(kind,), fix=check.fix)
                 for check in fault.checks()]
        if any(r.status == "FAIL" for r in rows):
            return rows  # its preflight asks the same questions: one row says it
    if not isinstance(fault, Preflight):
        rows.append(Row(plan.backend, what, "PASS", "builds and plans; its backend checks nothing before inject"))
    else:
        rows.append(_row(plan.backend, f"{what}: ready", fault.preflight, blocks=(kind,),
                         fix="see what it names; a run refuses this fault until it passes"))
        if rows[-1].status == "FAIL":
            return rows  # a run stops there: its assumptions are not asked (their probes would say why not again)
    if isinstance(fault, Assumes):
        fix = "see the README's Assumptions table; override the configured commands if they differ"
        for assumption, probe in fault.assumptions():
            check = f"{what}: assumption {assumption.id}"
            try:
                answer = probe()
            except Exception as exc:  # the probe could not run at all: why is the row
                rows.append(_failed(plan.backend, check, exc, (kind,), fix))
                continue
            rows.append(Row(plan.backend, check, "PASS" if answer.result is ProbeResult.PASS else "FAIL",
                            f"{answer.result.value}: {answer.seen}", (kind,), fix))
    return rows


def _names(topology: Topology, resolve: Resolver) -> list[Row]:
    """Each host name of the topology resolved and judged against the site subnets (`harness.names`)."""
    rows = []
    for found in resolve_names(topology, resolve):
        what = f"{found.path}: {found.name}"
        if not found.problem:
            rows.append(Row("names", what, "PASS", f"resolves to {', '.join(found.addresses)}"))
        else:
            rows.append(Row("names", what, "WARN" if found.warning else "FAIL", found.problem,
                            fix="correct the name in DNS or write the address in the topology"))
    return rows


def _platform_checks(topology: Topology) -> list[Row]:
    """Each installed platform's own read-only checks (`Platform.checks`: vSphere reads each host's vSAN disks),
    one row each, under the check's `where` or the platform's name."""
    rows = []
    for platform in installed().platforms:
        for path in platform.checks:
            where = platform.name
            try:
                checks: PlatformChecks = registry.named(path)
                found = checks(topology)
            except Exception as exc:  # its SDK missing, or its reading failed: one row says why
                rows.append(_failed(where, f"checks {path}", exc, (), ""))
                continue
            rows += [_row(c.where or where, c.name, c.run, fix=c.fix) for c in found]
    return rows


def _cluster(topology: Topology) -> list[Row]:
    try:
        cluster = cluster_for(topology)
    except ConfigError as exc:  # faults can still be injected (`inject`); the suites cannot run
        return [Row("cluster", "its view builds from the topology", "WARN", str(exc),
                    fix="the suites need a cluster view (management.vcenter and a database, or the lab)")]
    rows = [_row(f"cluster {cluster.name}", check.name, check.run, fix=check.fix)
            for check in (cluster.checks() if isinstance(cluster, Checked) else [])]
    if not any(r.status == "FAIL" for r in rows):  # its preflight runs the same checks: one row says it
        rows.insert(0, _row(f"cluster {cluster.name}", "healthy enough to start (the suites' preflight)",
                            cluster.preflight, fix="bring the cluster back to health first: a run would refuse to start"))
    if isinstance(cluster, ReadsReplication) and topology.databases:
        rows.append(_replication(f"cluster {cluster.name}", cluster, topology.databases[0].replication))
    for name, part in cluster_parts(topology).items():
        rows.append(_row(f"cluster part {name}", "healthy enough to start", part.preflight))
    return rows


def _replication(where: str, cluster: ReadsReplication, policy: str) -> Row:
    """The replication the cluster runs with now against the topology's policy: a weaker one is a WARN (the suites
    run, but do not judge a '0 lost' a pass), one that cannot be read too."""
    check = f"replicates as the policy expects ({policy})"
    try:
        state = cluster.replication()
    except Exception as exc:
        return _failed(where, check, exc, (), "")
    weaker = weaker_than_policy(policy, [ReplicationReading(0.0, FIRST_CONTACT, state.mode, state.read_from)])
    if weaker is not None:
        return Row(where, check, "WARN", weaker, fix="restore the replication the policy expects, or set "
                   f"databases[].replication and run with {ACCEPT_OPTION} to judge lost commits knowingly")
    if state.mode == "unknown":
        return Row(where, check, "WARN", state.describe())
    return Row(where, check, "PASS", state.describe())


def _row(where: str, check: str, call: Callable[[], object], *, blocks: tuple[str, ...] = (),
         fix: str = "") -> Row:
    """Run one read-only check: PASS with what it returned, or FAIL with what it raised."""
    try:
        seen = call()
    except Uncertain as exc:
        return Row(where, check, "WARN", str(exc), blocks, fix)
    except Exception as exc:
        return _failed(where, check, exc, blocks, fix)
    return Row(where, check, "PASS", "ok" if seen is None else str(seen))


def _failed(where: str, check: str, exc: Exception, blocks: tuple[str, ...], fix: str) -> Row:
    """A FAIL row; the input's fault (a credential refused or missing, a field that does not fit) is exit 4."""
    if isinstance(exc, ConfigError):
        return Row(where, check, "FAIL", str(exc), blocks, fix, bad_input=True)
    if isinstance(exc, HarnessError):  # the harness's own errors say what and where
        return Row(where, check, "FAIL", str(exc), blocks, fix)
    return Row(where, check, "FAIL", f"{type(exc).__name__}: {exc}", blocks, fix)
