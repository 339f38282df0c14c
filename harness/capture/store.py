"""A capture on disk: what doctor read (scrubbed and aliased), what it concluded, and a manifest.

    DIR/manifest.json    schema, when, from what (a real cluster, or the harness's own simulator),
                         product versions, counts per transport, every field the scrubber dropped
    DIR/topology.yaml    the topology, aliased, without trust material or secret references
    DIR/doctor.json      doctor's rows as the live run wrote them (aliased): what a replay must reach
    DIR/exchanges.jsonl  one line per distinct request: its answers in the order they came

Nothing of a credential is ever written: requests lose their credential elements at the wire
(`faults.transports.http_recording`), secret references are replaced, and the alias mapping
itself stays in memory.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from faults.transports.http_recording import withheld
from faults.transports.wire import Exchange
from harness.capture import scrub, xmltree
from harness.capture.aliases import Aliases
from harness_kernel.topology.models import Topology

SCHEMA = "harness-capture/1"
# Rows whose evidence is on this machine, not on a captured wire: a replay does not judge them.
LOCAL_ROWS = {"credentials": "secrets are looked up on the machine that runs doctor",
              "names": "names resolve through this machine's resolver",
              "lab": "the embedded lab's own faults read the lab on this machine",
              "pg_basebackup": "the backup fault checks this machine's pg_basebackup and disk"}
REPLAY_LAB_PREFIX = "replay"
_VIEW = re.compile(r"session\[[^\]]*\][0-9A-Fa-f-]+")
_ENDPOINT = re.compile(r"(?:[\w.-]+@)?(?:\d{1,3}\.){3}\d{1,3}:\d+")


@dataclass
class Capture:
    manifest: dict[str, Any]
    topology: dict[str, Any]
    rows: list[dict[str, Any]]
    exchanges: list[dict[str, Any]] = field(default_factory=list)


def request_key(transport: str, request: Mapping[str, Any]) -> str:
    """What a replay matches a request on: a SOAP body with its session's view ids and credentials masked (a
    session key in its header differs from run to run); a path; a command."""
    if transport == "ssh":
        return str(request["command"])
    if transport == "winrm":
        return str(request["script"])
    if transport == "odbc":
        return " ".join(str(request["sql"]).split()) + " " + json.dumps(request.get("params", []), sort_keys=True)
    if transport == "soap" and request.get("method", "POST") == "POST":
        masked = withheld(str(request.get("body", "")).encode()).decode("utf-8", "replace")  # as it was recorded
        body = _canonical(_VIEW.sub("session[]", masked))
        return "POST " + str(request.get("path", "")) + " " + hashlib.sha256(body.encode()).hexdigest()
    return f"{request.get('method', 'GET')} {request.get('path', '')}"


def _canonical(body: str) -> str:
    """A SOAP request with each run of same-named leaf elements sorted: the harness sorts what it sends, but by
    the real values, and a replay's client sorts the aliases."""
    try:
        root = xmltree.parse(body)
    except Exception:  # not XML: matched as it is
        return body
    for node in root.walk():
        node.children = _sorted_runs(node.children)
        node.attrs.pop("versionId", None)
    return xmltree.serialize(root)


def _sorted_runs(children: list[xmltree.Node]) -> list[xmltree.Node]:
    out: list[xmltree.Node] = []
    run: list[xmltree.Node] = []
    for child in [*children, None]:
        if child is not None and not child.children and run and child.name == run[0].name:
            run.append(child)
            continue
        out += sorted(run, key=lambda n: n.text)
        run = [child] if child is not None and not child.children else []
        if child is not None and child.children:
            out.append(child)
    return out


def soap_method(body: str) -> str:
    found = re.search(r"<(?:\w+:)?Body[^>]*>\s*<(?:\w+:)?(\w+)", body)
    return found.group(1) if found else ""


def write(directory: Path, topology: Topology, topology_text: str, rows: Iterable[Mapping[str, Any]],
          exchanges: Iterable[Exchange], *, simulator: bool, exit_code: int) -> Capture:
    dropped: set[str] = set()
    kept = [_scrubbed(e, dropped) for e in exchanges]
    aliases = Aliases(os.urandom(32))
    aliases.topology(topology, topology_text)
    aliases.found_in(_texts(kept))
    kept = [_aliased(e, aliases) for e in kept]
    grouped = _grouped(kept)
    live_rows = [{k: aliases.apply(v) if isinstance(v, str) else v for k, v in row.items()} for row in rows]
    document = _portable(yaml.safe_load(aliases.apply(topology_text)))
    capture = Capture(_manifest(kept, grouped, dropped, simulator, exit_code, topology), document, live_rows, grouped)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "manifest.json").write_text(json.dumps(capture.manifest, indent=1) + "\n")
    (directory / "topology.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    (directory / "doctor.json").write_text(json.dumps({"exit_code": exit_code, "rows": live_rows}, indent=1) + "\n")
    with (directory / "exchanges.jsonl").open("w") as out:
        for line in grouped:
            out.write(json.dumps(line, sort_keys=True) + "\n")
    return capture


def read(directory: Path) -> Capture:
    manifest = json.loads((directory / "manifest.json").read_text())
    if manifest.get("schema") != SCHEMA:
        raise ValueError(f"{directory}: not a {SCHEMA} capture (schema {manifest.get('schema')!r})")
    document = yaml.safe_load((directory / "topology.yaml").read_text())
    rows = json.loads((directory / "doctor.json").read_text())["rows"]
    with (directory / "exchanges.jsonl").open() as lines:
        exchanges = [json.loads(line) for line in lines if line.strip()]
    return Capture(manifest, document, rows, exchanges)


def comparable(row: Mapping[str, Any]) -> tuple[str, str]:
    """A row's place, with endpoint addresses and ports left out (a replay serves them elsewhere)."""
    return _ENDPOINT.sub("<endpoint>", str(row["where"])), _ENDPOINT.sub("<endpoint>", str(row["check"]))


def not_replayed(row: Mapping[str, Any], document: Mapping[str, Any]) -> str:
    """Why a replay does not judge this row, or "" if it does."""
    if row["where"] in LOCAL_ROWS:
        return LOCAL_ROWS[str(row["where"])]
    if document.get("lab") and str(row["check"]).startswith(("healthy enough to start",
                                                               "replicates as the policy expects")):
        return "the cluster's database part is the embedded lab on this machine"
    return ""


# -- scrubbing, aliasing, grouping ---------------------------------------------------------------------
def _scrubbed(exchange: Exchange, dropped: set[str]) -> dict[str, Any]:
    request, response = dict(exchange.request), dict(exchange.response)
    if exchange.transport == "soap":
        response["body"] = scrub.soap_answer(str(response.get("body", "")), str(request.get("body", "")), dropped)
        response.pop("content_type", None)
    elif exchange.transport == "https":
        response["body"] = scrub.redfish_answer(str(response.get("body", "")), str(request.get("path", "")), dropped)
        response.pop("content_type", None)
    elif exchange.transport == "winrm":
        response["stdout"] = scrub.powershell_output(str(response.get("stdout", "")), dropped)
        if response.get("status") == 0 and response.get("stderr"):
            response["stderr"] = ""  # progress records: read only when the script fails
    elif exchange.transport == "ssh":
        response["stdout"] = scrub.command_output(str(request["command"]), str(response.get("stdout", "")), dropped)
        response["stderr"] = ""
        if exchange.response.get("stderr"):
            dropped.add("ssh: standard error (only the exit status is read)")
    return {"transport": exchange.transport, "endpoint": exchange.endpoint, "request": request,
            "response": response, "at": round(exchange.at, 3)}


def _texts(exchanges: list[dict[str, Any]]) -> Iterable[str]:
    def strings(value: Any) -> Iterable[str]:
        if isinstance(value, str):
            yield value
        elif isinstance(value, list | tuple):
            for v in value:
                yield from strings(v)
        elif isinstance(value, dict):
            for v in value.values():
                yield from strings(v)
    for e in exchanges:
        yield from strings([e["endpoint"], e["request"], e["response"]])


def _aliased(exchange: dict[str, Any], aliases: Aliases) -> dict[str, Any]:
    """Every text of the exchange aliased, however deep (a row's values, a request's parameters) and its endpoint."""
    def deep(value: Any) -> Any:
        if isinstance(value, str):
            return aliases.apply(value)
        if isinstance(value, list):
            return [deep(v) for v in value]
        if isinstance(value, dict):
            return {k: deep(v) for k, v in value.items()}
        return value
    return {**exchange, "endpoint": deep(exchange["endpoint"]), "request": deep(exchange["request"]),
            "response": deep(exchange["response"])}


def _grouped(exchanges: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per (endpoint, request): its distinct answers in order, each with how often it came in a row."""
    by_key: dict[tuple[str, str, str], dict[str, Any]] = {}
    for e in exchanges:
        key = request_key(e["transport"], e["request"])
        entry = by_key.setdefault((e["transport"], e["endpoint"], key),
                                  {"transport": e["transport"], "endpoint": e["endpoint"], "key": key,
                                   "request": e["request"], "answers": []})
        answers = entry["answers"]
        if answers and answers[-1]["response"] == e["response"]:
            answers[-1]["times"] += 1
        else:
            answers.append({"response": e["response"], "at": e["at"], "times": 1})
    return list(by_key.values())


def _portable(document: dict[str, Any]) -> dict[str, Any]:
    """The topology without what belongs to the machine that captured it: trust files, pinned keys, secret names."""
    if isinstance(document.get("lab"), dict):  # a replay is never the lab: a prefix no lab here has
        document["lab"]["prefix"] = REPLAY_LAB_PREFIX
    management = document.get("management") or {}
    if isinstance(management.get("vcenter"), dict):
        management["vcenter"].pop("tls", None)
        _secret_refs(management["vcenter"])
    for endpoint in (*(management.get("redfish") or []), *(management.get("winrm") or []), *(management.get("ssh") or [])):
        endpoint.pop("tls", None)
        endpoint.pop("host_key", None)
        _secret_refs(endpoint)
    for database in document.get("databases") or []:
        _secret_refs(database)
    return document


def _secret_refs(section: dict[str, Any]) -> None:
    for holder in (section, section.get("credential") or {}):
        for key in ("password", "key_file"):
            if key in holder:
                holder[key] = {"env": "HARNESS_REPLAY_SECRET" if key == "password" else "HARNESS_REPLAY_SSH_KEY"}


def _manifest(kept: list[dict[str, Any]], grouped: list[dict[str, Any]], dropped: set[str], simulator: bool,
              exit_code: int, topology: Topology) -> dict[str, Any]:
    counts: dict[str, int] = {}
    for e in kept:
        counts[e["transport"]] = counts.get(e["transport"], 0) + 1
    about = next((re.search(r"<fullName>([^<]*)</fullName>", a["response"].get("body", ""))
                  for g in grouped if soap_method(g["request"].get("body", "")) == "RetrieveServiceContent"
                  for a in g["answers"][:1]), None)
    return {
        "schema": SCHEMA,
        "captured_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "source": "the harness's own vSphere simulator (the embedded lab bound to it): evidence about the harness's "
                  "parsers, never about a VMware product" if simulator else "a cluster, as its operator captured it",
        "simulator": simulator,
        "products": {"vcenter": about.group(1) if about else None},
        "exit_code": exit_code,
        "calls": counts,
        "distinct_requests": len(grouped),
        "dropped": sorted(dropped),
        "aliased": "names, addresses (prefix-preserving), UUIDs, device ids and serial numbers; the mapping is not kept",
        "not_replayed": LOCAL_ROWS,
        "endpoints": sorted({e["endpoint"] for e in kept}),
    }
