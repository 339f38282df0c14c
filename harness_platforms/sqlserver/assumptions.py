"""What the SQL Server and WSFC platforms assume where Microsoft's documents leave a reading open.

Each has a read-only probe (`wsfc.probes.FailoverCluster.probe_role_event_strings`); the
README's assumptions table lists them with every other platform's.
"""

from __future__ import annotations

from faults.contract import Assumption

ROLE_EVENT_STRINGS = Assumption(
    "A-wsfc-role-event-strings",
    "FailoverClustering events 1641 (role moving) and 1201 (role online) carry the role's name in their first "
    "insertion string and 1641 its target node in its last (the role is read by name, in any position all the same: "
    "only the failover phases that read them depend on it)",
    "settled from the provider's message table (a public dump of Microsoft-Windows-FailoverClustering's templates, "
    "scheatkode/brain knowledgebase/systems/windows/event-logs/Microsoft-Windows-FailoverClustering.md; Microsoft's "
    "System-log article gives templates for 1135, 1069, 1177 and 1205 only): 1201 \"The Cluster service successfully "
    "brought the clustered role '%1' online.\"; 1641 in two forms, \"Clustered role '%1' is moving to cluster node "
    "'%2'.\" and \"Clustered role '%1' is moving from cluster node '%2' to cluster node '%3'.\", so the target node "
    "is the last string of either; the probe still checks that the roles brought online name a role",
    ())

ASSUMPTIONS = (ROLE_EVENT_STRINGS,)
