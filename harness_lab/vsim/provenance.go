package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Fact is one thing the simulator serves that a real vCenter or vSAN decides (an enum value, a
// unit, an event type), with where it comes from. The schema is the project's one provenance
// schema (tests/support/provenance.py): Kind is documented (Quote holds the served value),
// captured (seen on a named product and version), assumed (Source names the backend's
// assumption, A-...) or stricter (stricter than documented; Source says why).
type Fact struct {
	ID, Value, Kind, Source, Quote string
}

// mutationEnv names one fact ("vsim/<id>") whose served value the mutation pass flips.
const mutationEnv = "HARNESS_STAND_IN_MUTATION"

const (
	vsanAPIExtendedConfig = "developer.broadcom.com/xapis/virtual-infrastructure-json-api/latest/data-structures/VsanExtendedConfig"
	pyVmomiTypeinfo       = "vmware/pyvmomi pyVmomi/_typeinfo_vsanhealth.py (vim.vsan.VsanSyncReason)"
	syncReasonQuote       = `CreateEnumType("vim.vsan.VsanSyncReason", "VsanSyncReason", "vsan.version.version7", ["repair", "evacuate", "rebalance", "reconfigure", "dying_evacuate", "stale", "merge_concat", "object_format_change"`
	eventCatalogue        = "lamw/vcenter-event-mapping vsphere-8.0u3.md (vCenter Server 8.0 Update 3 events)"
	rvc                   = "vmware/rvc lib/rvc/modules/vsan.rb"
	healthScript          = "a public vSAN health inventory script (Perl; its switch over the summary's groupId), read as the ids a vCenter returned to it"
	webServicesGuide      = "VMware vSphere 8.0 Web Services programming guide (vimServiceVersions.xml, the same shape)"
	vsanapiutils          = "vmware/pyvmomi vsanapiutils.py GetLatestVmodlVersion (what the vSAN SDK reads from /sdk/vsanServiceVersions.xml)"
	pyVmomiVimTypeinfo    = "vmware/pyvmomi pyVmomi/_typeinfo_vim.py (each method's required privilege)"
	relocateReference     = "developer.broadcom.com/xapis/virtual-infrastructure-json-api/latest/sdk/vim25/release/VirtualMachine/moId/RelocateVM_Task/post"
	// What a stretched cluster's policies carry, as Microsoft's AVS module builds them for its vSAN stretched
	// clusters (its "Site disaster tolerance" choices), and VMware's planning guide.
	avsModule     = "Azure/Microsoft.AVS.Management Microsoft.AVS.Management.psm1 (New-AVSStoragePolicy, vSANSiteDisasterTolerance)"
	vsanPlanning  = "docs.vmware.com VMware vSphere 6.5 vSAN, GUID-4172337E-E25F-4C6B-945E-01623D314FDA (stretched cluster design)"
	govmomiPbm    = "vmware/govmomi v0.52.0 pbm/client.go (the Storage Policy API's path)"
	pbmObjectType = "developer.broadcom.com/xapis/vmware-storage-policy-api/8.0U3/pbm.ServerObjectRef.ObjectType.html"
	pbmTypeinfo   = "vmware/pyvmomi pyVmomi/_typeinfo_pbm.py (pbm.profile.ProfileManager methods and their faults)"
	profileSample = "vmware/pyvmomi-community-samples samples/set_vm_storage_policy.py (SetVirtualDiskStorageProfile)"
	// The version ids are pyVmomi's; which vCenter release offers which is not published: the document
	// served is that of a vCenter offering 8.0.0.3 and older ids, shaped as the vim document is.
	pyVmomiVersions = "vmware/pyvmomi pyVmomi/_typeinfo_vsanhealth.py (the vSAN API version ids)"
)

// facts is the simulator's provenance table; served values are read from it with fact().
var facts = []Fact{
	{"repair_timer.unit", "minutes", "documented", vsanAPIExtendedConfig,
		"delay time in minutes ... Default value: 60"},
	{"repair_timer.default", "60", "documented", vsanAPIExtendedConfig, "Default value: 60"},
	{"sync_reason.repair", "repair", "documented", pyVmomiTypeinfo, syncReasonQuote},
	{"sync_reason.evacuate", "evacuate", "documented", pyVmomiTypeinfo, syncReasonQuote},
	{"sync_reason.rebalance", "rebalance", "documented", pyVmomiTypeinfo, syncReasonQuote},
	{"sync_reason.reconfigure", "reconfigure", "documented", pyVmomiTypeinfo, syncReasonQuote},
	{"sync_reason.dying_evacuate", "dying_evacuate", "documented", pyVmomiTypeinfo, syncReasonQuote},
	{"sync_reason.stale", "stale", "documented", pyVmomiTypeinfo, syncReasonQuote},
	{"sync_reason.merge_concat", "merge_concat", "documented", pyVmomiTypeinfo, syncReasonQuote},
	{"sync_reason.object_format_change", "object_format_change", "documented", pyVmomiTypeinfo, syncReasonQuote},
	{"sync_reason.other", "InvalidArgument", "stricter",
		"no source says what vCenter does with a resyncType outside VsanSyncReason; refused so that a backend sending one fails a test", ""},
	{"sync_reason.unset_matches_all", "true", "assumed",
		"A-vsan-resync-type-unset (the backend's probe compares the unset totals with each reason's)", ""},
	{"ha.host_failed.legacy", "DasHostFailedEvent", "documented", eventCatalogue,
		"| DasHostFailedEvent | Standard | vSphere HA host failed |"},
	{"ha.host_failed.extended", "com.vmware.vc.HA.DasHostFailedEvent", "documented", eventCatalogue,
		"| com.vmware.vc.HA.DasHostFailedEvent | ExtendedEvent | vSphere HA detected a host failure |"},
	{"ha.vm_restarted", "com.vmware.vc.ha.VmRestartedByHAEvent", "documented", eventCatalogue,
		"| com.vmware.vc.ha.VmRestartedByHAEvent | ExtendedEvent | vSphere HA restarted a virtual machine |"},
	{"disk_health.failed_bit", "4", "documented", rvc, `4 => "FAILED",`},
	{"disk_health.offline_bit", "5", "documented", rvc, `5 => "OFFLINE",`},
	{"component_state.active", "5", "documented", rvc, `'5' => 'ACTIVE',`},
	{"component_state.absent", "6", "documented", rvc, `'6' => 'ABSENT',`},
	{"component_state.degraded", "9", "documented", rvc, `'9' => 'DEGRADED',`},
	{"physical_disk.device_name", "devName", "assumed",
		"A-vsan-physical-disk-devname (RVC never asks QueryPhysicalVsanDisks for it; CMMDS DISK entries carry devName)", ""},
	{"permanent_clear.heals", "true", "assumed",
		"A-vsan-permanent-clear (no document says whether clearing a permanent error restores the device; the lab's model parameter permanent_clear_heals)", ""},
	{"vsan_versions.document_version", "1.0", "documented", webServicesGuide,
		`<namespaces version="1.0"> <namespace> <name>urn:vim25</name> <version>5.0</version> <priorVersions>`},
	{"vsan_versions.namespace", "urn:vsan", "documented", vsanapiutils, `if (element.firstChild.nodeValue == "urn:vsan"):`},
	{"vsan_versions.current", "8.0.0.3", "documented", pyVmomiVersions, `AddVersion("vsan.version.version22", "vsan", "8.0.0.3", 0, "vsan")`},
	{"vsan_versions.prior.1", "8.0.0.2", "documented", pyVmomiVersions, `AddVersion("vsan.version.version21", "vsan", "8.0.0.2", 0, "vsan")`},
	{"vsan_versions.prior.2", "8.0.0.1", "documented", pyVmomiVersions, `AddVersion("vsan.version.version20", "vsan", "8.0.0.1", 0, "vsan")`},
	{"vsan_versions.prior.3", "vSAN 7.0U3", "documented", pyVmomiVersions, `AddVersion("vsan.version.version18", "vsan", "vSAN 7.0U3", 0, "vsan")`},
	{"vsan_versions.prior.4", "7.0", "documented", pyVmomiVersions, `AddVersion("vsan.version.version12", "vsan", "7.0", 0, "vsan")`},
	{"health_group.network", "com.vmware.vsan.health.test.network", "captured", healthScript,
		`case "com.vmware.vsan.health.test.network"`},
	{"health_group.cluster", "com.vmware.vsan.health.test.cluster", "captured", healthScript,
		`case "com.vmware.vsan.health.test.cluster"`},
	{"health_group.hcl", "com.vmware.vsan.health.test.hcl", "captured", healthScript, `com.vmware.vsan.health.test.hcl`},
	{"health_group.data", "com.vmware.vsan.health.test.data", "assumed",
		"A-vsan-health-cache (the data group's id is not in the script; the harness judges objects live, never this group)", ""},
	{"health_cache.timestamp", "time of the last full run", "assumed",
		"A-vsan-health-cache (no document says the cached summary's timestamp is when the health service computed it)", ""},
	{"pbm.path", "/pbm", "documented", govmomiPbm, `Path      = "/pbm"`},
	{"pbm.object.vm", "virtualMachine", "documented", pbmObjectType,
		"virtualMachine Indicates a virtual machine, not including the disks"},
	{"pbm.object.disk", "virtualDiskId", "documented", pbmObjectType,
		"virtualDiskId Indicates a virtual disk, identified by disk key (virtual-machine-mor:disk-key)"},
	{"pbm.site_tolerance.capability", "hostFailuresToTolerate", "documented", avsModule,
		"# We'll set hostFailuresToTolerate=1 to indicate cross-site mirroring."},
	{"pbm.site_tolerance.mirrored", "1", "documented", vsanPlanning,
		"Configure the Primary level of failures to tolerate to 1 for stretched clusters."},
	{"pbm.site_tolerance.one_site", "0", "documented", avsModule,
		"# Indicate unmirrored (hostFailuresToTolerate=0) but with a site locality preference"},
	{"pbm.local_tolerance.capability", "subFailuresToTolerate", "documented", avsModule,
		"$fttId = if ($isStretch) { 'subFailuresToTolerate' } else { 'hostFailuresToTolerate' }"},
	{"pbm.locality.capability", "locality", "documented", avsModule, "-Id 'locality' -Value 'None'"},
	{"pbm.locality.mirrored", "None", "documented", avsModule, "-Id 'locality' -Value 'None'"},
	{"pbm.locality.preferred", "Preferred Fault Domain", "documented", avsModule,
		"-Id 'locality' -Value 'Preferred Fault Domain'"},
	{"pbm.iops_limit.capability", "iopsLimit", "documented", avsModule,
		`New-SpbmRule -Capability (Get-SpbmCapability -Name "VSAN.iopsLimit" ) -Value $vSANIOLimit`},
	{"pbm.iops_limit.max", "2147483647", "documented", avsModule,
		"Default is unset. Valid values are 0..2147483647 IOPS limit for the policy."},
	{"pbm.iops_limit.property", "iopsLimit", "assumed",
		"A-pbm-iops-limit-rule (the property inside the capability: no document names it; its metadata says)", ""},
	{"pbm.fault.duplicate_name", "DuplicateName", "documented", pbmTypeinfo,
		`"StorageProfile.Update", ["vmodl.fault.InvalidArgument", "pbm.fault.ProfileStorageFault", "pbm.fault.DuplicateName", ])`},
	{"vm.disk_label.prefix", "Hard disk ", "captured",
		"vmware/pyvmomi-community-samples (delete_disk_from_vm: how clients find a disk of a real vCenter's VM by its label)",
		"hdd_label = 'Hard disk ' + str(disk_number)"},
	{"pbm.create.default_category", "REQUIREMENT", "assumed",
		"A-pbm-default-category (category is a field of PBM version 11; no document says what an older client's policy gets)", ""},
	{"pbm.compliance.unknown", "unknown", "documented", "vmware/govmomi v0.52.0 pbm/types/enum.go (PbmComplianceStatus)",
		`// Compliance status of the entity is not known. PbmComplianceStatusUnknown = PbmComplianceStatus("unknown")`},
	{"vim.disk_profile.edit", "edit", "documented", profileSample,
		"deviceSpec.operation = vim.vm.device.VirtualDeviceSpec.Operation.edit"},
	{"drs.should_rule_corrects", "attempts to correct the situation", "documented",
		"VMware vSphere API reference, vim.cluster.RuleInfo (as mirrored by yavijava)",
		"If the existing cluster configuration violates the rule, the Server attempts to correct the situation."},
	{"esa.disk_management_system", "vsan-disk-management-system", "documented", vsanapiutils,
		`'vsan-disk-management-system' : vim.cluster.VsanVcDiskManagementSystem(`},
	{"privilege.ShutdownHost_Task", "Host.Config.Maintenance", "documented", pyVmomiVimTypeinfo,
		`"ShutdownHost_Task", ... (0, "vim.Task", "void"), "Host.Config.Maintenance"`},
	{"privilege.RebootHost_Task", "Host.Config.Maintenance", "documented", pyVmomiVimTypeinfo,
		`"RebootHost_Task", ... (0, "vim.Task", "void"), "Host.Config.Maintenance"`},
	{"privilege.EnterMaintenanceMode_Task", "Host.Config.Maintenance", "documented", pyVmomiVimTypeinfo,
		`"EnterMaintenanceMode_Task", ... (0, "vim.Task", "void"), "Host.Config.Maintenance"`},
	{"privilege.ExitMaintenanceMode_Task", "Host.Config.Maintenance", "documented", pyVmomiVimTypeinfo,
		`"ExitMaintenanceMode_Task", ... (0, "vim.Task", "void"), "Host.Config.Maintenance"`},
	{"privilege.ReconnectHost_Task", "Host.Config.Connection", "documented", pyVmomiVimTypeinfo,
		`"ReconnectHost_Task", ... (0, "vim.Task", "void"), "Host.Config.Connection"`},
	{"privilege.RelocateVM_Task", "Resource.ColdMigrate", "documented", pyVmomiVimTypeinfo,
		`"RelocateVM_Task", ... (0, "vim.Task", "void"), "Resource.ColdMigrate"`},
	{"privilege.PowerOnVM_Task", "VirtualMachine.Interact.PowerOn", "documented", pyVmomiVimTypeinfo,
		`"PowerOnVM_Task", ... (0, "vim.Task", "void"), "VirtualMachine.Interact.PowerOn"`},
	{"privilege.PowerOffVM_Task", "VirtualMachine.Interact.PowerOff", "documented", pyVmomiVimTypeinfo,
		`"PowerOffVM_Task", ... (0, "vim.Task", "void"), "VirtualMachine.Interact.PowerOff"`},
	{"privilege.UpdateVsan_Task", "Host.Config.Storage", "documented", pyVmomiVimTypeinfo,
		`"UpdateVsan_Task", ... (0, "vim.Task", "void"), "Host.Config.Storage"`},
	{"vsan.update_fault_domain", "specifying and retrieving fault domain configuration", "documented",
		"VMware vSphere API reference, VsanHostFaultDomainInfo (vim.vsan.host.ConfigInfo.FaultDomainInfo)",
		"This data object is used both for specifying and retrieving fault domain configuration for a host participating in the VSAN service."},
	{"vsan.update_other", "the simulator changes only a host's fault domain", "stricter",
		"UpdateVsan_Task reconfigures vSAN on the host as a whole; the simulator models no other change and refuses it rather than pretend", ""},
	{"privilege.RelocateVM_Task.powered_on", "Resource.HotMigrate", "documented", relocateReference,
		"Requires the following additional permissions: - Resource.HotMigrate if the virtual machine is powered on."},
	{"privilege.session_unknown", "InvalidArgument", "stricter",
		"no source says what HasPrivilegeOnEntities answers for a sessionId that is not a session; refused so that a client asking about the wrong session fails a test", ""},
	{"vsan_endpoint.property_collector", "NotSupported", "stricter",
		"whether /vsanHealth serves PropertyCollector calls is not documented; refused so that the backend reads properties on /sdk", ""},
}

var factIndex = func() map[string]Fact {
	index := make(map[string]Fact, len(facts))
	for _, f := range facts {
		index[f.ID] = f
	}
	return index
}()

// fact is the value served for id; the mutation pass flips one (see mutationEnv).
func fact(id string) string {
	f, ok := factIndex[id]
	if !ok {
		panic("no provenance row for " + id)
	}
	if os.Getenv(mutationEnv) == "vsim/"+id {
		return mutated(f.Value)
	}
	return f.Value
}

func factInt(id string) int64 {
	n, err := strconv.ParseInt(fact(id), 10, 64)
	if err != nil {
		panic(fmt.Sprintf("provenance row %s is not a whole number: %v", id, err))
	}
	return n
}

func factBool(id string) bool { return fact(id) == "true" }

// asDocumented is whether fact id is served as its row says (false only under the mutation pass).
func asDocumented(id string) bool { return fact(id) == factIndex[id].Value }

// mutated turns a value into a different one of the same kind, as tests/support/provenance.py does.
func mutated(value string) string {
	if n, err := strconv.ParseInt(value, 10, 64); err == nil {
		return strconv.FormatInt(n+1, 10)
	}
	if value == "true" || value == "false" {
		return strconv.FormatBool(value != "true")
	}
	return value + "-mutated"
}

// factProblems is the provenance check: a row without a source, a documented row whose value its
// quote does not hold, an assumed row that names no assumption, an unknown kind.
func factProblems() []string {
	var found []string
	for _, f := range facts {
		where := "vsim: " + f.ID
		switch {
		case strings.TrimSpace(f.Source) == "":
			found = append(found, where+": no source")
		case f.Kind == "documented" && !strings.Contains(f.Quote, f.Value):
			found = append(found, fmt.Sprintf("%s: served %q, which its quote does not contain: %q", where, f.Value, f.Quote))
		case f.Kind == "assumed" && !strings.Contains(f.Source, "A-"):
			found = append(found, where+": an assumed fact names the assumption it mirrors (A-...)")
		case f.Kind != "documented" && f.Kind != "captured" && f.Kind != "assumed" && f.Kind != "stricter":
			found = append(found, where+": unknown kind "+f.Kind)
		}
	}
	return found
}
