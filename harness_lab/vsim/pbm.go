package main

// The Storage Policy API (PBM) on /pbm: govmomi's PBM simulator, with the two stretched-cluster policies the
// VMs' object placement follows (PolicySiteLocal or site mirroring) and each VM's association with its policy,
// which the stock simulator answers empty. vSphere keeps that association in PBM only ("Neither the association
// nor the policy data is persisted in Virtual Machine configuration", vim.vm.DefinedProfileSpec), so PBM is
// where a client reads it.

import (
	"strings"

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
	return r
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
