package main

// The Storage Policy API (PBM) on /pbm: govmomi's PBM simulator, with the two stretched-cluster policies the
// VMs' object placement follows (PolicySiteLocal or site mirroring) and each VM's association with its policy,
// which the stock simulator answers empty. vSphere keeps that association in PBM only ("Neither the association
// nor the policy data is persisted in Virtual Machine configuration", vim.vm.DefinedProfileSpec), so PBM is
// where a client reads it.

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/vmware/govmomi/pbm/methods"
	pbmsim "github.com/vmware/govmomi/pbm/simulator"
	"github.com/vmware/govmomi/pbm/types"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/soap"
	vim "github.com/vmware/govmomi/vim25/types"
)

// Policy names as the lab's vCenter lists them.
const (
	PolicyNameMirrored  = "Stretched cluster: dual site mirroring"
	PolicyNameSiteLocal = "Stretched cluster: none - keep data on preferred"
)

type profileManager struct {
	*pbmsim.ProfileManager
	sim *Sim
	ids map[string]string // VMConfig.Policy -> its profile's unique id
}

// pbmRegistry is govmomi's PBM registry with this cluster's policies and associations.
func (s *Sim) pbmRegistry() *simulator.Registry {
	r := pbmsim.New()
	r.Path = fact("pbm.path")
	ref := vim.ManagedObjectReference{Type: "PbmProfileProfileManager", Value: "ProfileManager"}
	base := r.Get(ref).(*pbmsim.ProfileManager)
	ctx := &simulator.Context{Session: &simulator.Session{UserSession: vim.UserSession{UserName: "harness-vsim"}}}
	m := &profileManager{ProfileManager: base, sim: s, ids: map[string]string{
		"":              create(ctx, base, PolicyNameMirrored, factInt("pbm.site_tolerance.mirrored"), fact("pbm.locality.mirrored")),
		PolicySiteLocal: create(ctx, base, PolicyNameSiteLocal, factInt("pbm.site_tolerance.one_site"), fact("pbm.locality.preferred")),
	}}
	r.Put(m)
	r.Put(&complianceManager{Self: vim.ManagedObjectReference{Type: "PbmComplianceManager", Value: "complianceManager"}, pbm: m})
	s.pbm = m
	return r
}

// complianceManager answers what a client asks after the association (govc vm.policy.ls does): the model computes
// no compliance, so every entity's status is "unknown" ("Compliance status of the entity is not known").
type complianceManager struct {
	Self vim.ManagedObjectReference
	pbm  *profileManager
}

func (c *complianceManager) Reference() vim.ManagedObjectReference { return c.Self }

func (c *complianceManager) PbmFetchComplianceResult(req *types.PbmFetchComplianceResult) soap.HasFault {
	results := make([]types.PbmComplianceResult, 0, len(req.Entities))
	for _, entity := range req.Entities {
		result := types.PbmComplianceResult{CheckTime: time.Now(), Entity: entity,
			ComplianceStatus: fact("pbm.compliance.unknown")}
		if ids := c.pbm.associated(entity); len(ids) > 0 {
			result.Profile = &ids[0]
		}
		results = append(results, result)
	}
	return &methods.PbmFetchComplianceResultBody{Res: &types.PbmFetchComplianceResultResponse{Returnval: results}}
}

func create(ctx *simulator.Context, m *pbmsim.ProfileManager, name string, siteTolerance int64, locality string) string {
	rule := func(id string, value any) types.PbmCapabilityInstance {
		return types.PbmCapabilityInstance{
			Id: types.PbmCapabilityMetadataUniqueId{Namespace: "VSAN", Id: id},
			Constraint: []types.PbmCapabilityConstraintInstance{{
				PropertyInstance: []types.PbmCapabilityPropertyInstance{{Id: id, Value: value}},
			}},
		}
	}
	spec := types.PbmCapabilityProfileCreateSpec{
		Name: name, Category: "REQUIREMENT", ResourceType: types.PbmProfileResourceType{ResourceType: "STORAGE"},
		Constraints: &types.PbmCapabilitySubProfileConstraints{SubProfiles: []types.PbmCapabilitySubProfile{{
			Name: "VSAN sub-profile",
			Capability: []types.PbmCapabilityInstance{
				rule(fact("pbm.site_tolerance.capability"), int32(siteTolerance)),
				rule(fact("pbm.local_tolerance.capability"), int32(0)), // two hosts a site: no mirror within one
				rule(fact("pbm.locality.capability"), locality),
			},
		}}},
	}
	body := m.PbmCreate(ctx, &types.PbmCreate{CreateSpec: spec}).(*methods.PbmCreateBody)
	return body.Res.Returnval.UniqueId
}

// associated is the profile of the VM an object names: the VM itself, or one of its disks ("vm-42:2000").
func (m *profileManager) associated(object types.PbmServerObjectRef) []types.PbmProfileId {
	key := object.Key
	switch object.ObjectType {
	case fact("pbm.object.vm"):
	case fact("pbm.object.disk"):
		key, _, _ = strings.Cut(key, ":")
	default:
		return nil
	}
	if object.ObjectType == fact("pbm.object.disk") {
		m.sim.mu.Lock()
		id, set := m.sim.diskPolicies[object.Key]
		m.sim.mu.Unlock()
		if set {
			return []types.PbmProfileId{{UniqueId: id}}
		}
	}
	for _, vm := range m.sim.cfg.VMs {
		if m.sim.inv.VMs[vm.Name].Value == key {
			return []types.PbmProfileId{{UniqueId: m.ids[vm.Policy]}}
		}
	}
	return nil
}

func (m *profileManager) PbmQueryAssociatedProfile(req *types.PbmQueryAssociatedProfile) soap.HasFault {
	return &methods.PbmQueryAssociatedProfileBody{
		Res: &types.PbmQueryAssociatedProfileResponse{Returnval: m.associated(req.Entity)},
	}
}

func (m *profileManager) PbmQueryAssociatedProfiles(req *types.PbmQueryAssociatedProfiles) soap.HasFault {
	results := make([]types.PbmQueryProfileResult, 0, len(req.Entities))
	for _, entity := range req.Entities {
		results = append(results, types.PbmQueryProfileResult{Object: entity, ProfileId: m.associated(entity)})
	}
	return &methods.PbmQueryAssociatedProfilesBody{
		Res: &types.PbmQueryAssociatedProfilesResponse{Returnval: results},
	}
}

// exists says whether a profile of that id is stored (what a ReconfigVM_Task's profile spec must name).
func (m *profileManager) exists(id string) bool {
	body := m.PbmRetrieveContent(&types.PbmRetrieveContent{ProfileIds: []types.PbmProfileId{{UniqueId: id}}})
	return body.(*methods.PbmRetrieveContentBody).Fault_ == nil
}

// PbmCreate refuses a name a stored profile has (the method's declared DuplicateName fault), then creates.
func (m *profileManager) PbmCreate(ctx *simulator.Context, req *types.PbmCreate) soap.HasFault {
	all := m.PbmQueryProfile(&types.PbmQueryProfile{ResourceType: types.PbmProfileResourceType{ResourceType: "STORAGE"}})
	if ids := all.(*methods.PbmQueryProfileBody).Res.Returnval; len(ids) > 0 {
		content := m.PbmRetrieveContent(&types.PbmRetrieveContent{ProfileIds: ids}).(*methods.PbmRetrieveContentBody)
		for _, p := range content.Res.Returnval {
			if p.GetPbmProfile().Name == req.CreateSpec.Name {
				fault := &types.PbmDuplicateName{Name: req.CreateSpec.Name}
				if strings.TrimPrefix(reflect.TypeOf(fault).Elem().Name(), "Pbm") != fact("pbm.fault.duplicate_name") {
					break // the method's declared fault, by its name
				}
				return &methods.PbmCreateBody{Fault_: simulator.Fault("a profile named "+req.CreateSpec.Name+" exists", fault)}
			}
		}
	}
	if req.CreateSpec.Category == "" { // a client of PBM version 1 cannot send one
		req.CreateSpec.Category = fact("pbm.create.default_category")
	}
	return m.ProfileManager.PbmCreate(ctx, req)
}

// PbmFetchCapabilityMetadata serves the VSAN capabilities the cluster's policies use, each with its property.
func (m *profileManager) PbmFetchCapabilityMetadata(req *types.PbmFetchCapabilityMetadata) soap.HasFault {
	capability := func(id, property, typeName string) types.PbmCapabilityMetadata {
		return types.PbmCapabilityMetadata{
			Id:      types.PbmCapabilityMetadataUniqueId{Namespace: "VSAN", Id: id},
			Summary: types.PbmExtendedElementDescription{Label: id, Summary: id},
			PropertyMetadata: []types.PbmCapabilityPropertyMetadata{{
				Id: property, Summary: types.PbmExtendedElementDescription{Label: property, Summary: property},
				Type: &types.PbmCapabilityTypeInfo{TypeName: typeName},
			}},
		}
	}
	site, local := fact("pbm.site_tolerance.capability"), fact("pbm.local_tolerance.capability")
	return &methods.PbmFetchCapabilityMetadataBody{Res: &types.PbmFetchCapabilityMetadataResponse{
		Returnval: []types.PbmCapabilityMetadataPerCategory{{SubCategory: "VSAN", CapabilityMetadata: []types.PbmCapabilityMetadata{
			capability(site, site, "xsd:int"),
			capability(local, local, "xsd:int"),
			capability(fact("pbm.locality.capability"), fact("pbm.locality.capability"), "xsd:string"),
			capability(fact("pbm.iops_limit.capability"), fact("pbm.iops_limit.property"), "xsd:int"),
		}}},
	}}
}

// setDiskPolicies applies a ReconfigVM_Task's profile-only disk edits: each device must be a disk of the VM
// and each profile a stored one, else nothing changes (InvalidArgument, as an unknown profile gets from PBM).
func (s *Sim) setDiskPolicies(vm *simulator.VirtualMachine, spec *vim.VirtualMachineConfigSpec) vim.BaseMethodFault {
	set := map[string]string{}
	for _, change := range spec.DeviceChange {
		c := change.GetVirtualDeviceConfigSpec()
		key := c.Device.GetVirtualDevice().Key
		var disk *vim.VirtualDisk
		for _, d := range vm.Config.Hardware.Device {
			if d, ok := d.(*vim.VirtualDisk); ok && d.Key == key {
				disk = d
			}
		}
		if disk == nil {
			return &vim.InvalidArgument{InvalidProperty: fmt.Sprintf("deviceChange.device.key %d: no disk of %s", key, vm.Name)}
		}
		for _, p := range c.Profile {
			defined, ok := p.(*vim.VirtualMachineDefinedProfileSpec)
			if !ok || s.pbm == nil || !s.pbm.exists(defined.ProfileId) {
				return &vim.InvalidArgument{InvalidProperty: "deviceChange.profile"}
			}
			set[fmt.Sprintf("%s:%d", vm.Self.Value, key)] = defined.ProfileId
		}
	}
	s.mu.Lock()
	for k, id := range set {
		s.diskPolicies[k] = id
	}
	s.mu.Unlock()
	return nil
}

// profileOnly says whether a reconfiguration only sets disks' policies: edits of existing disks, each carrying a
// profile (what a policy change sends); anything else goes to the stock simulator.
func profileOnly(spec *vim.VirtualMachineConfigSpec) bool {
	if len(spec.DeviceChange) == 0 {
		return false
	}
	for _, change := range spec.DeviceChange {
		c := change.GetVirtualDeviceConfigSpec()
		if string(c.Operation) != fact("vim.disk_profile.edit") || c.FileOperation != "" || len(c.Profile) == 0 {
			return false
		}
	}
	return true
}
