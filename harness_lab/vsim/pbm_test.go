package main

import (
	"testing"

	"github.com/vmware/govmomi/pbm/methods"
	"github.com/vmware/govmomi/pbm/types"
	vim "github.com/vmware/govmomi/vim25/types"
)

// rulesOf reads a profile's VSAN rules back through PbmRetrieveContent, as a client does.
func rulesOf(t *testing.T, m *profileManager, id types.PbmProfileId) (string, map[string]any) {
	t.Helper()
	body := m.PbmRetrieveContent(&types.PbmRetrieveContent{ProfileIds: []types.PbmProfileId{id}}).(*methods.PbmRetrieveContentBody)
	if body.Fault_ != nil || len(body.Res.Returnval) != 1 {
		t.Fatalf("retrieve %s: %+v", id.UniqueId, body.Fault_)
	}
	profile := body.Res.Returnval[0].(*types.PbmCapabilityProfile)
	rules := map[string]any{}
	for _, sub := range profile.Constraints.(*types.PbmCapabilitySubProfileConstraints).SubProfiles {
		for _, c := range sub.Capability {
			rules[c.Id.Namespace+"."+c.Id.Id] = c.Constraint[0].PropertyInstance[0].Value
		}
	}
	return profile.Name, rules
}

func TestEachVMAndItsDisksAreAssociatedWithThePolicyItsObjectsFollow(t *testing.T) {
	cfg := testConfig()
	cfg.VMs[0].Policy = PolicySiteLocal
	s := newTestSim(t, cfg)
	r := s.pbmRegistry()
	m := r.Get(vim.ManagedObjectReference{Type: "PbmProfileProfileManager", Value: "ProfileManager"}).(*profileManager)

	local, mirrored := s.inv.VMs[cfg.VMs[0].Name].Value, s.inv.VMs[cfg.VMs[1].Name].Value
	for key, want := range map[types.PbmServerObjectRef]struct {
		name     string
		site     int32
		locality string
	}{
		{ObjectType: "virtualMachine", Key: local}:          {PolicyNameSiteLocal, 0, "Preferred Fault Domain"},
		{ObjectType: "virtualDiskId", Key: local + ":2000"}: {PolicyNameSiteLocal, 0, "Preferred Fault Domain"},
		{ObjectType: "virtualMachine", Key: mirrored}:       {PolicyNameMirrored, 1, "None"},
	} {
		body := m.PbmQueryAssociatedProfile(&types.PbmQueryAssociatedProfile{Entity: key}).(*methods.PbmQueryAssociatedProfileBody)
		if len(body.Res.Returnval) != 1 {
			t.Fatalf("%+v: %d profiles", key, len(body.Res.Returnval))
		}
		name, rules := rulesOf(t, m, body.Res.Returnval[0])
		if name != want.name || rules["VSAN.hostFailuresToTolerate"] != want.site || rules["VSAN.locality"] != want.locality {
			t.Errorf("%+v: %s %v, want %+v", key, name, rules, want)
		}
	}
	none := m.PbmQueryAssociatedProfile(&types.PbmQueryAssociatedProfile{
		Entity: types.PbmServerObjectRef{ObjectType: "virtualMachine", Key: "vm-does-not-exist"}}).(*methods.PbmQueryAssociatedProfileBody)
	if len(none.Res.Returnval) != 0 {
		t.Errorf("an unknown VM has a policy: %v", none.Res.Returnval)
	}
	all := m.PbmQueryAssociatedProfiles(&types.PbmQueryAssociatedProfiles{Entities: []types.PbmServerObjectRef{
		{ObjectType: "virtualMachine", Key: local}, {ObjectType: "virtualMachine", Key: mirrored}}}).(*methods.PbmQueryAssociatedProfilesBody)
	if len(all.Res.Returnval) != 2 || all.Res.Returnval[1].ProfileId[0].UniqueId != m.ids[""] {
		t.Errorf("one result per entity, in order: %+v", all.Res.Returnval)
	}
}
