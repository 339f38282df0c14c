"""A VPLEX / metro node's REST API v2 on 127.0.0.1, as the metro observer reads it: the contract tests' stand-in.

Written from Dell's generated SDK (dell/python-vplex, vplexapi-7.0.0: field names as its models declare
them), Dell's Ansible collection, centreon-plugins and Dell's guides, as quoted in
docs/reference/vplex-metro-rest-v2.md; every value the observer reads is a row of FACTS with its source
(the fields it does not read are left out, as the `fields` query would leave them). It answers GET
on the reads the observer makes (and `POST /token`, a login, for `auth: token`), refuses a request
without the account's Basic auth or a bearer token it issued with 401 and Dell's `Error` body,
answers 404 for a name it does not have, and records every request's method and path (it changes
nothing: any other method is refused with 405). A test sets its state: healthy, a partition, the
witness lost, a rebuild, or any word of its own.

Looser than the product: plain HTTP (the section allows http to loopback alone).
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

from tests.support.json_http import JsonHandler, loopback_origins
from tests.support.provenance import Fact, Facts

# the HTTP methods it reads from requests
OWN_TOKENS = frozenset({"GET", "POST"})
PV = "dell/python-vplex@02c5df5e vplexapi-7.0.0/vplexapi/"
AV = "dell/ansible-vplex@3dda56e9 plugins/"
CP = "centreon/centreon-plugins@d3cc6de7 src/storage/emc/vplex/restapi/"
MA = "Metro node Administrator Guide (manualshelf mirror, page-76 / page-74)"
MC = "Metro node CLI Guide, ds summary (manualshelf mirror, page-165)"

FACTS = Facts("vplex", [
    Fact("base", "/vplex/v2", "documented", f"{AV}module_utils/storage/dell/dellemc_ansible_vplex_utils.py L131",
         "config.host = 'https://' + host + '/vplex/v2'"),
    Fact("path.clusters", "/clusters/", "documented", f"{PV}api/clusters_api.py L221", "'/clusters/', 'GET',"),
    Fact("path.wan_com", "/health/wan_com", "documented", f"{PV}api/health_api.py L191", "'/health/wan_com', 'GET',"),
    Fact("path.cluster_witness", "/cluster_witness", "documented", f"{PV}api/cluster_witness_api.py L185",
         "'/cluster_witness', 'GET',"),
    Fact("path.distributed_cgs", "/distributed_storage/distributed_consistency_groups", "documented",
         f"{PV}api/distributed_storage_api.py L864", "'/distributed_storage/distributed_consistency_groups', 'GET',"),
    Fact("path.distributed_devices", "/distributed_storage/distributed_devices", "documented",
         f"{PV}api/distributed_storage_api.py L1084", "'/distributed_storage/distributed_devices', 'GET',"),
    Fact("path.distributed_volumes", "/distributed_storage/distributed_virtual_volumes", "documented",
         f"{PV}api/distributed_storage_api.py L1304 (in the volume URIs a group lists; the observer reads their last "
         "segment only, so no test depends on the rest)", "'/distributed_storage/distributed_virtual_volumes', 'GET',"),
    Fact("path.versions", "/versions", "documented", f"{PV}api/version_api.py L124", "'/versions', 'GET',"),
    Fact("auth.header", "Authorization", "documented", f"{PV}configuration.py L231", "'key': 'Authorization',"),
    Fact("auth.type", "basic", "documented", f"{PV}configuration.py L229 (basicAuth)", "'type': 'basic',"),
    Fact("auth.bearer", "Bearer", "documented", f"{CP}custom/apiv2.pm L200",
         "add_header(key => 'Authorization', value => 'Bearer ' . $self->{access_token})"),
    Fact("path.token", "/token", "documented", f"{PV}api/token_api.py L122", "'/token', 'POST',"),
    Fact("token.login_basic", 1, "documented", f"{CP}custom/apiv2.pm L169-171",
         "url_path => '/vplex/v2/token', credentials => 1, basic => 1,"),
    Fact("token.key", "token", "assumed",
         f"A-vplex-token-field: {PV}models/login_response.py L34 declares 'token': 'str', its api/token_api.py L37 "
         "docstring says access_token; the client reads either, so no test may depend on which"),
    Fact("error.unauthorized", 401, "documented", f"{AV}module_utils/storage/dell/dellemc_ansible_vplex_utils.py L169",
         "return 401, 'Could not authenticate user in %s' % (host)"),
    Fact("error.key.code", "error_code", "documented", f"{PV}models/error.py L34", "'error_code': 'str',"),
    Fact("error.key.message", "message", "documented", f"{PV}models/error.py L35", "'message': 'str',"),
    Fact("error.unauthorized.message", "Authentication failed", "stricter",
         "no sample 401 body found (Dell's Ansible reports its own text for a 401); the model's says nothing of the "
         "field, so the client's error must name it (no test depends on the text: the client names the field itself)"),
    Fact("error.not_found", 404, "stricter",
         "no document read says what GET of an unknown consistency group answers; the model answers 404 with an "
         "Error body (HTTP's 'not found'), and the client must name the topology field"),
    Fact("cluster.1", "cluster-1", "documented", f"{AV}modules/dellemc_vplex_distributed_device.py L100",
         'rule_set: "cluster-1-detaches"'),
    Fact("cluster.2", "cluster-2", "documented", MA, "(cluster-2,{ summary:: suspended, details:: [requires-resume-at-"),
    Fact("cluster.state.ok", "ok", "documented", f"{CP}mode/distributeddevices.pm L53 (centreon's healthy value; a "
         "cluster's operational_status and health_state are only shown among the words, no state is read from them)",
         '%{operational_status} ne "ok"'),
    Fact("wan.full", "full", "documented", f"{PV}models/com_status.py L30", 'FULL = "full"'),
    Fact("wan.none", "none", "documented", f"{PV}models/com_status.py L32", 'NONE = "none"'),
    Fact("witness.enabled", "enabled", "documented", f"{PV}models/admin_state.py L30", 'ENABLED = "enabled"'),
    Fact("witness.in_contact", "in-contact", "documented", f"{CP}mode/clustercommunication.pm L53",
         '%{operational_state} !~ /cluster-in-contact|in-contact/i'),
    Fact("witness.component.named_as_cluster", True, "assumed",
         "A-vplex-witness-components: one component per cluster, named as the cluster (no document names them)"),
    Fact("witness.lost", "unknown", "assumed",
         "A-vplex-witness-components: no document names a lost witness's states; the model serves a word that is "
         "neither in-contact nor cluster-in-contact"),
    Fact("cg.ok", "ok", "documented", MA, "ok - I/O can be serviced on the volumes in the consistency group."),
    Fact("cg.suspended", "suspended", "documented", f"{AV}modules/dellemc_vplex_distributed_consistency_group.py L534",
         'if (status_c1 == "suspended" and status_c2 == "suspended"):'),
    Fact("cg.detail.departure", "cluster-departure", "documented", MA,
         "cluster-departure - Not all the visible clusters are in communication."),
    Fact("cg.detail.resume_at_loser", "requires-resume-at-loser", "documented", MC,
         "requires-resume-at-loser - Displayed on the losing side when the inter-cluster link heals after an outage."),
    Fact("cg.resume_at_loser.shown", "when the inter-cluster link heals", "documented", MC,
         "requires-resume-at-loser - Displayed on the losing side when the inter-cluster link heals after an outage."),
    Fact("cg.outage.loser_detail", "cluster-departure", "documented",
         f"{MA}: page-74, the loser during the inter-cluster link outage",
         "(cluster-2,{ summary:: suspended, details:: [cluster-departure]"),
    Fact("cg.healed.winner", "ok", "documented",
         f"{MA}: page-74, after the link is back, before resume-at-loser (the loser then says "
         "[requires-resume-at-loser], as `cluster.2` quotes)",
         "operational-status [(cluster-1,{ summary:: ok, details:: [] }),"),
    Fact("cg.detach.type", "winner", "documented", f"{AV}modules/dellemc_vplex_distributed_consistency_group.py L656",
         "detach['type'] = 'winner'"),
    Fact("cg.detach.cluster", "/vplex/v2/clusters/", "documented",
         f"{AV}modules/dellemc_vplex_distributed_consistency_group.py L657",
         "detach['cluster'] = '/vplex/v2/clusters/' + detach_rule"),
    Fact("cg.detach.delay", 5, "documented", f"{AV}modules/dellemc_vplex_distributed_consistency_group.py L658",
         "detach['delay'] = 5"),
    Fact("cg.detach.key", "type", "documented",
         f"{AV}modules/dellemc_vplex_distributed_consistency_group.py L633 (the served rule is an object: the module "
         "reads its type)", "if detach_rule == d_cg_details['detach_rule']['type']:"),
    Fact("cg.detach.none", "no_automatic_winner", "documented",
         f"{AV}modules/dellemc_vplex_distributed_consistency_group.py L639-640 (the rule it PATCHes for it is "
         "{'type': 'no_automatic_winner'}; L625 lists the valid choices, not the wire shape; the SDK's PATCH doc "
         f"string agrees: {PV}api/consistency_group_api.py L461)",
         "if detach_rule == 'no_automatic_winner':\n                    detach['type'] = detach_rule"),
    Fact("cg.status.cluster_is_name", True, "assumed",
         "A-vplex-references: a group's operational_status names its cluster by name (the SDK says 'str'); flipped, "
         "it names it by URI, which the observer reads alike: no test may depend on it"),
    Fact("cg.volume_is_uri", True, "assumed",
         "A-vplex-references: a group lists its volumes as URIs, a device names its volume by name; flipped, both "
         "by name, which the observer reads alike: no test may depend on it"),
    Fact("dd.rebuilding", "rebuilding", "documented", f"{AV}modules/dellemc_vplex_device.py L801",
         'if "rebuilding" in device_details["health_indications"]:'),
    Fact("dd.rebuild_status", "rebuilding", "assumed",
         "A-vplex-status-words: a rebuilding device's rebuild_status says rebuilding"),
    Fact("dd.progress_per_percent", 1, "assumed", "A-vplex-rebuild-units: rebuild_progress counts percent"),
    Fact("dd.eta_per_second", 1, "assumed", "A-vplex-rebuild-units: rebuild_eta counts seconds"),
])
"""Facts the VPLEX model serves, each with its source (tests/support/provenance.py)."""


def _value(fact: str) -> Any:
    return FACTS.value(fact)


@dataclass
class VplexModel:
    """The system's state, as a test sets it; `requests` is every (method, path) the model was asked."""

    user: str
    password: str
    groups: tuple[str, ...] = ("cg-sql",)
    volumes_per_group: int = 2
    wan: str = ""
    wan_details: list[str] = field(default_factory=list)
    connected: dict[str, bool] = field(default_factory=dict)
    summaries: dict[str, dict[str, tuple[str, list[str]]]] = field(default_factory=dict)  # group -> cluster -> state
    detach: dict[str, Any] = field(default_factory=dict)
    auto_resume_at_loser: bool = False
    witness_admin: str = ""
    witness_states: dict[str, str] = field(default_factory=dict)
    rebuilding: dict[str, tuple[int, int, str]] = field(default_factory=dict)  # device -> (%, eta s, how it says so)
    busy: int = 0  # answer this many requests 503 first, as a management server under load would
    tokens: set[str] = field(default_factory=set)  # the bearer tokens issued and not yet expired
    requests: list[tuple[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.healthy()

    @property
    def clusters(self) -> tuple[str, str]:
        return str(_value("cluster.1")), str(_value("cluster.2"))

    # -- states a test sets ---------------------------------------------------------------------
    def healthy(self, winner: str | None = None) -> None:
        one, two = self.clusters
        self.wan, self.wan_details = str(_value("wan.full")), []
        self.connected = {one: True, two: True}
        ok = (str(_value("cg.ok")), [])
        self.summaries = {g: {one: ok, two: ok} for g in self.groups}
        self.detach = {str(_value("cg.detach.key")): _value("cg.detach.type"),
                       "cluster": f"{_value('cg.detach.cluster')}{winner or one}", "delay": _value("cg.detach.delay")}
        self.witness_admin = str(_value("witness.enabled"))
        self.witness_states = {one: str(_value("witness.in_contact")), two: str(_value("witness.in_contact"))}
        self.rebuilding = {}

    def partition(self, loser: str) -> None:
        """WAN-COM down; the loser suspends its I/O as the detach rule says, the winner goes on; both say a cluster
        departed (the loser nothing more: requires-resume-at-loser is shown only once the link heals, `heal`).
        Management stays connected (its path is not the WAN-COM one)."""
        self.wan = str(_value("wan.none"))
        loser_details = [str(_value("cg.outage.loser_detail"))]
        if not FACTS.as_documented("cg.resume_at_loser.shown"):
            loser_details.append(str(_value("cg.detail.resume_at_loser")))
        for group in self.groups:
            for cluster in self.clusters:
                self.summaries[group][cluster] = (
                    (str(_value("cg.suspended")), loser_details) if cluster == loser
                    else (str(_value("cg.ok")), [str(_value("cg.detail.departure"))]))

    def heal(self, loser: str) -> None:
        """WAN-COM back after a partition: the winner says ok with no details, the loser stays suspended and says
        requires-resume-at-loser until it is resumed (`resume_at_loser`), with auto_resume_at_loser false (the
        model's default: it does not model the automatic resume)."""
        self.wan = str(_value("wan.full"))
        for group in self.groups:
            for cluster in self.clusters:
                self.summaries[group][cluster] = (
                    (str(_value("cg.suspended")), [str(_value("cg.detail.resume_at_loser"))]) if cluster == loser
                    else (str(_value("cg.healed.winner")), []))

    def resume_at_loser(self) -> None:
        """`consistency-group resume-at-loser`: every cluster ok, no details (Admin Guide page-74)."""
        for group in self.groups:
            self.summaries[group] = {c: (str(_value("cg.ok")), []) for c in self.clusters}

    def no_winner(self) -> None:
        """The rule as Dell's Ansible reads and PATCHes it: an object whose type is no_automatic_winner."""
        self.detach = {str(_value("cg.detach.key")): str(_value("cg.detach.none"))}

    def witness_lost(self) -> None:
        self.witness_states = {c: str(_value("witness.lost")) for c in self.clusters}

    def expire_tokens(self) -> None:
        """Every session ends (a token's lifetime, or a management server restarted)."""
        self.tokens.clear()

    def rebuild(self, *devices: tuple[int, int], group: int = 0) -> None:
        """The group's devices rebuilding, each (percent done, seconds to go): the first says so among its health
        indications, the next by its rebuild status (each alone is how a client can tell)."""
        self.rebuilding = {self.device(group, n): (progress, eta_s, "health" if n % 2 == 0 else "status")
                           for n, (progress, eta_s) in enumerate(devices)}

    # -- what it serves -------------------------------------------------------------------------
    def device(self, group: int, n: int) -> str:
        return f"dd_{self.groups[group]}_{n}"

    def volume(self, group: int, n: int) -> str:
        return f"{self.device(group, n)}_vol"

    def cluster_rows(self) -> list[dict[str, Any]]:
        return [{"name": c, "connected": self.connected.get(c, False), "operational_status": _value("cluster.state.ok"),
                 "health_state": _value("cluster.state.ok"), "is_local": i == 0} for i, c in enumerate(self.clusters)]

    def group_row(self, name: str) -> dict[str, Any] | None:
        if name not in self.groups:
            return None
        index = self.groups.index(name)
        uri = _value("cg.volume_is_uri")
        volumes = [f"{_value('base')}{_value('path.distributed_volumes')}/{self.volume(index, n)}" if uri
                   else self.volume(index, n) for n in range(self.volumes_per_group)]
        by_name = _value("cg.status.cluster_is_name")
        return {"name": name, "operational_status": [
                    {"cluster": c if by_name else f"{_value('base')}{_value('path.clusters')}{c}", "summary": summary,
                     "details": details} for c, (summary, details) in self.summaries[name].items()],
                "active_clusters": list(self.clusters), "detach_rule": self.detach,
                "auto_resume_at_loser": self.auto_resume_at_loser, "virtual_volumes": volumes}

    def device_rows(self) -> list[dict[str, Any]]:
        rows = []
        for g in range(len(self.groups)):
            for n in range(self.volumes_per_group):
                name = self.device(g, n)
                busy = self.rebuilding.get(name)
                rows.append({"name": name, "virtual_volume": self.volume(g, n),
                             "health_indications": [_value("dd.rebuilding")] if busy and busy[2] == "health" else [],
                             "rebuild_status": _value("dd.rebuild_status") if busy and busy[2] == "status" else None,
                             "rebuild_progress": int(busy[0]) * int(_value("dd.progress_per_percent")) if busy else None,
                             "rebuild_eta": int(busy[1]) * int(_value("dd.eta_per_second")) if busy else None})
        return rows

    def witness_row(self) -> dict[str, Any]:
        named = _value("witness.component.named_as_cluster")
        return {"admin_state": self.witness_admin,
                "components": [{"name": c if named else f"witness-of-{c}", "admin_state": self.witness_admin,
                                "operational_state": state} for c, state in self.witness_states.items()]}

    def answer(self, method: str, path: str, authorization: str | None) -> tuple[int, Any]:
        self.requests.append((method, path))
        scheme, _, token = (authorization or "").partition(" ")
        expected = base64.b64encode(f"{self.user}:{self.password}".encode()).decode()
        basic = scheme.lower() == _value("auth.type") and token == expected
        if not basic and not (scheme.lower() == str(_value("auth.bearer")).lower() and token in self.tokens):
            return int(_value("error.unauthorized")), self.error("401", str(_value("error.unauthorized.message")))
        if self.busy > 0:
            self.busy -= 1
            return 503, self.error("503", "busy")
        base = str(_value("base"))
        route = unquote(urlsplit(path).path)
        if method == "POST" and route == f"{base}{_value('path.token')}" and basic and _value("token.login_basic"):
            issued = secrets.token_urlsafe(16)
            self.tokens.add(issued)
            return 200, {str(_value("token.key")): issued, "token_type": "Bearer"}
        if method != "GET":
            return 405, self.error("405", "the model only reads")
        if not route.startswith(base):
            return 404, self.error("404", "not found")
        route = route[len(base):]
        groups = f"{_value('path.distributed_cgs')}/"
        if route == _value("path.clusters"):
            return 200, self.cluster_rows()
        if route == _value("path.wan_com"):
            return 200, {"status": self.wan, "details": self.wan_details}
        if route == _value("path.cluster_witness"):
            return 200, self.witness_row()
        if route == _value("path.distributed_devices"):
            return 200, self.device_rows()
        if route == _value("path.versions"):
            return 200, [{"name": "(model)", "version": "(model)", "info": ""}]  # no sample found: shape only
        if route.startswith(groups) and (row := self.group_row(route[len(groups):])) is not None:
            return 200, row
        return int(_value("error.not_found")), self.error("404", f"no such object: {route}")

    @staticmethod
    def error(code: str, message: str) -> dict[str, str]:
        return {str(_value("error.key.code")): code, str(_value("error.key.message")): message}

    @contextmanager
    def serving(self) -> Iterator[str]:
        """The model on 127.0.0.1, an ephemeral port; yields its endpoint (http://127.0.0.1:PORT)."""
        model = self

        class Handler(JsonHandler):
            def _any(self) -> None:
                status, body = model.answer(self.command, self.path, self.headers.get(str(_value("auth.header"))))
                self.reply(body, status)

            do_GET = do_POST = do_PATCH = do_DELETE = do_PUT = _any

        with loopback_origins(Handler) as (origin,):
            yield origin
