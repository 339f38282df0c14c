"""What the Nutanix platform assumes about Prism where no document settles it (the harness's one protocol,
`faults.assumptions`): its descriptor lists them, so the README's table and doctor read them as the in-tree ones."""

from __future__ import annotations

from faults.contract import Assumption

PRISM_STALE_ETAG = Assumption(
    "A-prism-stale-etag",
    "Prism answers a VM change whose If-Match is no longer the entity's ETag with HTTP 412; the change is then read "
    "again and sent again with the same NTNX-Request-Id",
    "none found: Nutanix's SDK README says changes are 'protected using ETag' and sends If-Match, not the status "
    "of a refusal; unprobed (a probe would need a change); guarded: another status is an error naming it",
    ())
PRISM_REQUEST_ID_DEDUP = Assumption(
    "A-prism-request-id-dedup",
    "a change that repeats an NTNX-Request-Id Prism has seen answers the first change's task and is not done again, "
    "so a revert retried after a crash (same derived id) powers on, migrates or exits maintenance once",
    "the SDK sets NTNX-Request-Id on every request (vmm-go-client api_client.go) for idempotency; the reply to a "
    "repeat is not documented; guarded: a revert acts only while Prism shows the fault in effect",
    ())
PRISM_API_VERSION = Assumption(
    "A-prism-api-version",
    "each v4 namespace is asked at the version Nutanix's SDK negotiates (OPTIONS /api/<namespace>/unversioned/info "
    "answers the highest served; older than the section's, it is used), and a release serves its paths there",
    "ntnx-clustermgmt-py-client 4.3.2 api_client.py negotiate_version: `self.__call_api('/api/clustermgmt/unversioned/"
    "info', 'OPTIONS',` then `server_version = response[\"data\"]`; doctor's probe names the versions asked; a 404 "
    "names its path and is negotiated again",
    ())
PRISM_FT_STATUS_SHAPE = Assumption(
    "A-prism-ft-status-shape",
    "Prism Element's v2 domain_fault_tolerance_status is a bare list of domains with UPPERCASE component keys, each "
    "with number_of_failures_tolerable, and cluster_under_replicated_data_bytes per domain",
    "one capture from a live AOS 6.8.1 cluster (jkmills/nutanix-mcp-server tests/test_health_check_tools.py); a "
    "dict-wrapped variant is read too; guarded: another shape is an error, never 'OK'",
    ())
PRISM_MAINTENANCE_STATE = Assumption(
    "A-prism-maintenance-state",
    "a host's maintenanceState is 'normal' outside maintenance and any other word while it enters or is in it",
    "'normal' is in Nutanix's Ansible sample (ntnx_hosts_info_v2.py); no document names the other values",
    ("host-maintenance",))
PRISM_NON_MIGRATABLE_RESULT = Assumption(
    "A-prism-non-migratable-result",
    "the compute-non-migratable-vms task names its result among entitiesAffected (a rel naming "
    "non-migratable-vms-result), read at .../non-migratable-vms-result/{extId}; the call changes nothing",
    "the SDK has both calls and no link between them; guarded: a task naming no result refuses the maintenance",
    ("host-maintenance",))
PRISM_ELEMENT_READS = Assumption(
    "A-prism-element-reads",
    "a site's Prism Element answers the v4 reads for its own cluster, with the section's (Prism Central's) login, "
    "while Prism Central does not (after a site loss); only Prism Element serves the v2 resiliency read",
    "none found for v4 on Prism Element; probed read-only by doctor (probe_elements: a v4 read on each listed Prism "
    "Element, a WARN naming one that refuses); guarded: only reads go there, never a change",
    ())
PRISM_MAINTENANCE_UNGUARDED = Assumption(
    "A-prism-maintenance-unguarded",
    "Prism takes enter- and exit-host-maintenance without If-Match, as Nutanix's own client sends them",
    "nutanix/nutanix.ansible plugins/modules/ntnx_cluster_host_maintenance_v2.py calls `enter_host_maintenance("
    "clusterExtId=cluster_ext_id, extId=ext_id, body=spec)` with a new spec, and the SDK adds If-Match only from an "
    "ETag the body carries; unprobed (a probe would need a change); a refusal is an error naming Prism's words",
    ("host-maintenance",))
PRISM_ROLE_PERMISSIONS = Assumption(
    "A-prism-role-permissions",
    "the account's role allows the calls each enabled fault makes; unprobed: Prism documents no read-only call that "
    "says which operations a role grants the caller",
    "Nutanix's Ansible names the roles for host maintenance (Cluster Admin, Prism Admin, Super Admin); doctor shows "
    "a WARN row per fault naming its calls",
    ())

ASSUMPTIONS: tuple[Assumption, ...] = (PRISM_STALE_ETAG, PRISM_REQUEST_ID_DEDUP, PRISM_API_VERSION, PRISM_FT_STATUS_SHAPE,
                                       PRISM_MAINTENANCE_STATE, PRISM_NON_MIGRATABLE_RESULT, PRISM_ELEMENT_READS,
                                       PRISM_MAINTENANCE_UNGUARDED, PRISM_ROLE_PERMISSIONS)
