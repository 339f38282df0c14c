"""What a capture keeps: the fields the harness's parsers read, and nothing else.

An allow-list, not a deny-list: a field not named here leaves the capture, whatever it holds
(serial numbers, MAC addresses, a host's other identifiers, user names). The list follows the
readers: `harness_platforms.vsphere.probes`, `.policies` and `.qos`, `harness_platforms.vsphere.vsan.probes`, the privilege check
(`harness_platforms.vsphere.privileges`), `harness_platforms.vsphere.checks`,
`faults.transports.redfish` and pyVmomi's own session handling. A capture replayed with a field
missing here reaches another row than the live doctor did: `tests/integration/contract/
test_captures.py` is what keeps this list complete.
"""

from __future__ import annotations

import re

# SOAP data objects by their WSDL type name: the properties kept (a subtype inherits its bases' entries).
# Managed object references are kept wherever they stand: they are how a reader follows the inventory,
# and they name nothing outside vCenter.
SOAP_FIELDS: dict[str, frozenset[str]] = {k: frozenset(v) for k, v in {
    # the property collector's envelope (RetrievePropertiesEx) and its faults
    "RetrieveResult": {"token", "objects"},
    "ObjectContent": {"obj", "propSet", "missingSet"},
    "DynamicProperty": {"name", "val"},
    "MissingProperty": {"path", "fault"},
    "LocalizedMethodFault": {"fault", "localizedMessage"},
    "MethodFault": {"faultMessage"},
    "NoPermission": {"privilegeId"},
    # the session: what pyVmomi reads to connect, the key the privilege check asks about
    "ServiceContent": {"about"},
    "AboutInfo": {"name", "fullName", "vendor", "version", "build", "apiType", "apiVersion", "productLineId"},
    "UserSession": {"key", "userName"},
    "EntityPrivilege": {"privAvailability"},
    "PrivilegeAvailability": {"privId", "isGranted"},
    # the cluster's configuration: HA, DRS, VM/host rules (probes.discover_cluster, vsphere_checks)
    "ClusterConfigInfoEx": {"dasConfig", "drsConfig", "group", "rule"},
    "ClusterDasConfigInfo": {"enabled", "hostMonitoring", "admissionControlEnabled", "defaultVmSettings"},
    "ClusterDasVmSettings": {"isolationResponse", "restartPriority"},
    "ClusterDrsConfigInfo": {"enabled", "defaultVmBehavior"},
    "ClusterGroupInfo": {"name"},
    "ClusterRuleInfo": {"name", "enabled", "mandatory"},
    "ClusterVmHostRuleInfo": {"vmGroupName", "affineHostGroupName", "antiAffineHostGroupName"},
    # a host's vSAN configuration (probes.host_seen)
    "VsanHostConfigInfo": {"enabled", "clusterInfo", "storageInfo", "faultDomainInfo", "vsanEsaEnabled"},
    "VsanHostConfigInfoClusterInfo": {"uuid", "nodeUuid"},
    "VsanHostConfigInfoStorageInfo": {"autoClaimStorage", "diskMapping"},
    "VsanHostDiskMapping": {"ssd", "nonSsd"},
    "ScsiLun": {"canonicalName"},
    "VsanHostFaultDomainInfo": {"name"},
    # the vSAN API (/vsanHealth): witness, preferred site, configuration, objects, health, resync
    "VimClusterVSANWitnessHostInfo": {"nodeUuid", "faultDomainName", "preferredFdName", "preferredFdUuid",
                                      "metadataMode"},
    "VimClusterVSANPreferredFaultDomainInfo": {"preferredFaultDomainName", "preferredFaultDomainId"},
    "VsanConfigInfoEx": {"enabled", "defaultConfig", "extendedConfig"},
    "VsanClusterConfigInfoHostDefaultInfo": {"uuid", "autoClaimStorage"},
    "VsanExtendedConfig": {"objectRepairTimer"},
    "VsanObjectIdentityAndHealth": {"identities", "health"},
    "VsanObjectIdentity": {"uuid", "type", "vm"},
    "VsanObjectOverallHealth": {"objectHealthDetail"},
    "VsanObjectHealth": {"numObjects", "health", "objUuids"},
    "VsanClusterHealthSummary": {"timestamp", "overallHealth", "objectHealth", "groups"},
    "VsanClusterHealthGroup": {"groupId", "groupName", "groupHealth", "groupTests"},
    "VsanClusterHealthTest": {"testId", "testName", "testHealth"},
    "VsanHostVsanObjectSyncQueryResult": {"totalObjectsToSync", "totalBytesToSync", "totalRecoveryETA", "objects"},
    "VsanHostVsanObjectSyncState": {"uuid", "components"},
    "VsanHostComponentSyncState": {"uuid", "diskUuid", "hostUuid", "bytesToSync", "recoveryETA", "reasons"},
    # a VM's disks, by key (harness_platforms.vsphere.policies: each disk's storage policy)
    "VirtualDevice": {"key", "deviceInfo"},
    "Description": {"label"},  # a device's label ("Hard disk 1"): how the IOPS limit finds its disk
    # the Storage Policy API (/pbm): each VM's and disk's policy and its rules (harness_platforms.vsphere.policies)
    "PbmServiceInstanceContent": {"profileManager"},
    "PbmQueryProfileResult": {"object", "profileId", "fault"},
    "PbmServerObjectRef": {"objectType", "key"},
    "PbmProfileId": {"uniqueId"},
    "PbmProfile": {"profileId", "name"},
    "PbmCapabilityProfile": {"constraints"},
    "PbmCapabilitySubProfileConstraints": {"subProfiles"},
    "PbmCapabilitySubProfile": {"name", "capability"},
    "PbmCapabilityInstance": {"id", "constraint"},
    "PbmCapabilityMetadataUniqueId": {"namespace", "id"},
    "PbmCapabilityConstraintInstance": {"propertyInstance"},
    "PbmCapabilityPropertyInstance": {"id", "value"},
    "PbmCapabilityMetadataPerCategory": {"subCategory", "capabilityMetadata"},
    "PbmCapabilityMetadata": {"id", "propertyMetadata"},
    "PbmCapabilityPropertyMetadata": {"id"},
}.items()}

# vSAN answers that are JSON inside a string (QueryPhysicalVsanDisks, QueryVsanObjects): keys kept. Keys that
# are object or disk UUIDs (the maps' keys) and a component tree's `child-N` are structure and always kept.
VSAN_JSON_KEYS = frozenset({
    "uuid", "devName", "isSsd", "owner", "disk_health", "healthFlags", "capacity", "capacityUsed",
    "disk_objects", "dom_objects", "lsom_objects", "content", "ssdUuid", "config", "attributes", "type",
    "componentUuid", "diskUuid", "componentState", "bytesToSync", "recoveryETA", "faultDomainId", "faultDomainName",
})
JSON_IN_SOAP = frozenset({"QueryPhysicalVsanDisks", "QueryVsanObjects", "QuerySyncingVsanObjects"})

# Redfish resources (faults.transports.redfish): the keys its reader follows.
REDFISH_KEYS = frozenset({
    "@odata.id", "@odata.type", "Id", "Members", "Systems", "Managers", "PowerState", "Actions",
    "#ComputerSystem.Reset", "target", "ResetType@Redfish.AllowableValues", "@Redfish.ActionInfo",
    "Parameters", "Name", "AllowableValues", "UUID", "SerialNumber", "error", "message", "@Message.ExtendedInfo",
    "Message", "MessageId",
})

# Shell commands whose output a reader parses (and any program's usage text, `-h`: the disk fault script's is
# read for its flags); any other command keeps its exit status alone.
SSH_OUTPUT_READ = ("nft list tables", "nft -j list", "tc -j qdisc show", "tc qdisc show", "capsh --print", "id -u",
                   "command -v nft")  # the router's tools and capabilities (`faults.backends.router`)

# PowerShell answers (`harness_platforms.sqlserver.wsfc.probes`, JSON from ConvertTo-Json): the properties its readers take.
WINRM_KEYS = frozenset({
    "Name", "OwnerNode", "State", "OwnerGroup", "ResourceType", "QuorumType", "QuorumResource", "Resource",
    "OwnerNodes", "SameSubnetDelay", "SameSubnetThreshold", "CrossSubnetDelay", "CrossSubnetThreshold",
    "LeaseTimeout", "HealthCheckTimeout", "FailureConditionLevel", "Id", "TimeUtc", "Message", "MachineName",
    "Properties", "Module", "Installed",
})
# T-SQL answers are kept whole: each statement is the backend's own constant and selects only what its reader reads.

STRUCTURAL_JSON_KEY = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|child-\d+")
