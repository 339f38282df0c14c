"""What the VPLEX / metro node observer assumes where Dell's documents leave the REST API open.

The observer only reads: what it assumes blocks no fault; a reading its assumption does not fit
is UNKNOWN with the product's word beside it (docs/reference/vplex-metro-rest-v2.md, "Not
settled"). `probe_assumptions` (the view) reads each that a read can settle.
"""

from __future__ import annotations

from faults.contract import Assumption

VPLEX_BASIC_AUTH = Assumption(
    "A-vplex-basic-auth",
    "REST API v2 accepts HTTP Basic auth on every call, without a token from POST /token",
    "Dell's Ansible collection sets the SDK's user and password and never calls /token (dell/ansible-vplex "
    "dellemc_ansible_vplex_utils.py L131-133); the v2 guide's contents list basicAuth; which key a token reply uses "
    "(token or access_token) is not settled, so no token is used by default",
    ())
VPLEX_TOKEN_FIELD = Assumption(
    "A-vplex-token-field",
    "with auth: token, POST /vplex/v2/token answers the bearer token under the key token or access_token",
    "Dell's SDK model LoginResponse declares 'token' (models/login_response.py L34), its token_api.py docstring says "
    "access_token, centreon tests access_token and reads token (apiv2.pm L185-190): both keys are read, token first; "
    "a reply with neither is refused naming both",
    ())
VPLEX_STATUS_WORDS = Assumption(
    "A-vplex-status-words",
    "a consistency group's per-cluster summary is ok, degraded, suspended or unknown in lower case, its details "
    "spelled as the CLI's (cluster-departure, requires-resume-at-loser) or with underscores, and a distributed "
    "device's rebuild_status says rebuilding during a rebuild",
    "REST's lower-case suspended is attested (Dell's Ansible compares it); the rest are the GUI and CLI words of "
    "Dell's guides; REST's spelling of the details is not documented",
    ())
VPLEX_WITNESS_COMPONENTS = Assumption(
    "A-vplex-witness-components",
    "the Cluster Witness lists a component per VPLEX cluster, named as the cluster, whose operational_state "
    "in-contact or cluster-in-contact means that cluster reaches the witness (no other state is read as reachable "
    "or unreachable)",
    "centreon-plugins' default rule accepts in-contact and cluster-in-contact; the SDK types operational_state as "
    "a free string and no document names the components or the states of a lost witness",
    ())
VPLEX_REFERENCES = Assumption(
    "A-vplex-references",
    "a consistency group names its clusters and virtual volumes, and a distributed device its virtual volume, by "
    "name or by a URI ending in the name, so a device belongs to the group that lists its volume",
    "a detach rule's cluster is a URI (Dell's Ansible builds /vplex/v2/clusters/<name>); the SDK declares the "
    "other references as plain strings",
    ())
VPLEX_REBUILD_UNITS = Assumption(
    "A-vplex-rebuild-units",
    "a distributed device's rebuild_progress is a percent (0-100) and its rebuild_eta is in seconds",
    "none found: Dell's Ansible describes them as 'the percentage of this device that has been rebuild' and "
    "'the estimated time remaining'; the SDK types them int (distributed) or str (local)",
    ())


ASSUMPTIONS: tuple[Assumption, ...] = (VPLEX_BASIC_AUTH, VPLEX_TOKEN_FIELD, VPLEX_STATUS_WORDS,
                                       VPLEX_WITNESS_COMPONENTS, VPLEX_REFERENCES, VPLEX_REBUILD_UNITS)
