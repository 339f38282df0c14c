package main

import (
	"fmt"
	"testing"

	"github.com/vmware/govmomi/simulator"

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

func TestAProfileOnlyDiskEditSetsTheDisksPolicyInPBMAndAnUnknownProfileChangesNothing(t *testing.T) {
	s := newTestSim(t, testConfig())
	r := s.pbmRegistry()
	m := r.Get(vim.ManagedObjectReference{Type: "PbmProfileProfileManager", Value: "ProfileManager"}).(*profileManager)
	vmRef := s.inv.VMs[testConfig().VMs[0].Name]
	vm := vmObject(s.reg, vmRef)
	var device vim.BaseVirtualDevice
	for _, d := range vm.Config.Hardware.Device {
		if _, ok := d.(*vim.VirtualDisk); ok {
			device = d
		}
	}
	disk := types.PbmServerObjectRef{ObjectType: "virtualDiskId", Key: fmt.Sprintf("%s:%d", vmRef.Value, device.GetVirtualDevice().Key)}
	before := m.PbmQueryAssociatedProfile(&types.PbmQueryAssociatedProfile{Entity: disk}).(*methods.PbmQueryAssociatedProfileBody).Res.Returnval

	spec := types.PbmCapabilityProfileCreateSpec{Name: "harness-iops-400-test", Category: "REQUIREMENT",
		ResourceType: types.PbmProfileResourceType{ResourceType: "STORAGE"}}
	created := m.PbmCreate(testContext(), &types.PbmCreate{CreateSpec: spec}).(*methods.PbmCreateBody)
	if created.Fault_ != nil {
		t.Fatalf("create: %+v", created.Fault_)
	}
	again := m.PbmCreate(testContext(), &types.PbmCreate{CreateSpec: spec}).(*methods.PbmCreateBody)
	if again.Fault_ == nil {
		t.Errorf("a second profile of the same name was created")
	}
	edit := func(id string) *vim.VirtualMachineConfigSpec {
		return &vim.VirtualMachineConfigSpec{DeviceChange: []vim.BaseVirtualDeviceConfigSpec{&vim.VirtualDeviceConfigSpec{
			Operation: vim.VirtualDeviceConfigSpecOperationEdit, Device: device,
			Profile: []vim.BaseVirtualMachineProfileSpec{&vim.VirtualMachineDefinedProfileSpec{ProfileId: id}},
		}}}
	}
	if !profileOnly(edit(created.Res.Returnval.UniqueId)) {
		t.Fatalf("a disk edit carrying a profile is not a profile-only edit")
	}
	if fault := s.setDiskPolicies(vm, edit("no-such-profile")); fault == nil {
		t.Errorf("an unknown profile was accepted")
	}
	if fault := s.setDiskPolicies(vm, edit(created.Res.Returnval.UniqueId)); fault != nil {
		t.Fatalf("edit: %+v", fault)
	}
	now := m.PbmQueryAssociatedProfile(&types.PbmQueryAssociatedProfile{Entity: disk}).(*methods.PbmQueryAssociatedProfileBody).Res.Returnval
	if len(now) != 1 || now[0].UniqueId != created.Res.Returnval.UniqueId {
		t.Errorf("the disk's policy is %v, want the new one", now)
	}
	home := m.PbmQueryAssociatedProfile(&types.PbmQueryAssociatedProfile{Entity: types.PbmServerObjectRef{
		ObjectType: "virtualMachine", Key: vmRef.Value}}).(*methods.PbmQueryAssociatedProfileBody).Res.Returnval
	if len(home) != 1 || home[0] != before[0] {
		t.Errorf("the VM home's policy changed with its disk's: %v", home)
	}
	if fault := s.setDiskPolicies(vm, edit(before[0].UniqueId)); fault != nil {
		t.Fatalf("edit back: %+v", fault)
	}
	back := m.PbmQueryAssociatedProfile(&types.PbmQueryAssociatedProfile{Entity: disk}).(*methods.PbmQueryAssociatedProfileBody).Res.Returnval
	if len(back) != 1 || back[0] != before[0] {
		t.Errorf("the disk's policy is %v after the edit back, want %v", back, before)
	}
}

func TestTheCapabilityMetadataNamesTheIopsLimitAndItsProperty(t *testing.T) {
	s := newTestSim(t, testConfig())
	m := s.pbmRegistry().Get(vim.ManagedObjectReference{Type: "PbmProfileProfileManager", Value: "ProfileManager"}).(*profileManager)
	body := m.PbmFetchCapabilityMetadata(&types.PbmFetchCapabilityMetadata{}).(*methods.PbmFetchCapabilityMetadataBody)
	found := map[string]string{}
	for _, category := range body.Res.Returnval {
		for _, c := range category.CapabilityMetadata {
			found[c.Id.Namespace+"."+c.Id.Id] = c.PropertyMetadata[0].Id
		}
	}
	if found["VSAN.iopsLimit"] != "iopsLimit" || found["VSAN.locality"] != "locality" {
		t.Errorf("capabilities: %v", found)
	}
}

func testContext() *simulator.Context {
	return &simulator.Context{Session: &simulator.Session{UserSession: vim.UserSession{UserName: "harness-test"}}}
}
