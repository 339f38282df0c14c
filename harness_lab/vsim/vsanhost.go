package main

import (
	"encoding/json"
	"sort"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

const diskBlocks = 800 << 21 // 800 GiB of 512-byte blocks

// scsiDisk describes a vSAN device as the host's storage stack lists it.
func scsiDisk(d *VsanDisk) types.HostScsiDisk {
	return types.HostScsiDisk{
		ScsiLun: types.ScsiLun{
			HostDevice:       types.HostDevice{DeviceName: "/vmfs/devices/disks/" + d.Device, DeviceType: "disk"},
			Key:              "key-vim.host.ScsiDisk-" + d.Device,
			Uuid:             d.UUID,
			CanonicalName:    d.Device,
			DisplayName:      "Local ATA Disk (" + d.Device + ")",
			LunType:          "disk",
			Vendor:           "ATA",
			Model:            "Simulated",
			OperationalState: []string{"ok"},
		},
		Capacity:     types.HostDiskDimensionsLba{BlockSize: 512, Block: diskBlocks},
		DevicePath:   "/vmfs/devices/disks/" + d.Device,
		Ssd:          types.NewBool(true),
		VsanDiskInfo: &types.VsanHostVsanDiskInfo{VsanUuid: d.UUID, FormatVersion: 15},
	}
}

// vsanHostConfig is host.config.vsanHostConfig: cluster membership, fault
// domain (the site) and the disk groups (cache in ssd, capacity in nonSsd).
func vsanHostConfig(m *VsanModel, host string, ref types.ManagedObjectReference, clusterUUID string) *types.VsanHostConfigInfo {
	h := m.Hosts[host]
	var mappings []types.VsanHostDiskMapping
	for _, id := range m.DiskOrder {
		d := m.Disks[id]
		if d.Host != host || !d.Cache {
			continue
		}
		mapping := types.VsanHostDiskMapping{Ssd: scsiDisk(d)}
		for _, cid := range m.DiskOrder {
			if c := m.Disks[cid]; c.GroupUUID == d.UUID && !c.Cache {
				mapping.NonSsd = append(mapping.NonSsd, scsiDisk(c))
			}
		}
		mappings = append(mappings, mapping)
	}
	return &types.VsanHostConfigInfo{
		Enabled:        types.NewBool(true),
		VsanEsaEnabled: types.NewBool(h.ESA),
		HostSystem:     &ref,
		ClusterInfo: &types.VsanHostConfigInfoClusterInfo{
			Uuid: clusterUUID, NodeUuid: h.NodeUUID,
		},
		StorageInfo: &types.VsanHostConfigInfoStorageInfo{
			AutoClaimStorage: types.NewBool(false),
			DiskMapping:      mappings,
		},
		FaultDomainInfo: &types.VsanHostFaultDomainInfo{Name: h.FaultDomainName()},
	}
}

// HostVsanSystem is host.configManager.vsanSystem: its config, and UpdateVsan_Task for the fault domain.
type HostVsanSystem struct {
	mo.HostVsanSystem
	sim  *Sim
	host string
}

// UpdateVsanTask applies a VsanHostConfigInfo that names only a fault domain (fact vsan.update_fault_domain):
// the host's reported fault domain changes, its data stays where it is. Any other part of the configuration
// is refused (fact vsan.update_other): the simulator models no other change.
func (v *HostVsanSystem) UpdateVsanTask(ctx *simulator.Context, req *types.UpdateVsan_Task) soap.HasFault {
	c := req.Config
	if c.FaultDomainInfo == nil || c.Enabled != nil || c.HostSystem != nil || c.ClusterInfo != nil ||
		c.StorageInfo != nil || c.NetworkInfo != nil || c.VsanEsaEnabled != nil {
		return &methods.UpdateVsan_TaskBody{Fault_: simulator.Fault(fact("vsan.update_other"), &types.NotSupported{})}
	}
	if len(c.FaultDomainInfo.Name) > 256 {
		return &methods.UpdateVsan_TaskBody{Fault_: simulator.Fault("fault domain name longer than 256",
			&types.InvalidArgument{InvalidProperty: "faultDomainInfo.name"})}
	}
	name := c.FaultDomainInfo.Name
	task := v.sim.longTask(v.sim.inv.Hosts[v.host], v.host, "UpdateVsan_Task", func() types.BaseMethodFault {
		v.sim.mu.Lock()
		v.sim.vsan.Hosts[v.host].FaultDomain = &name
		info := vsanHostConfig(v.sim.vsan, v.host, v.sim.inv.Hosts[v.host], stableUUID("cluster", v.sim.cfg.Cluster))
		v.sim.mu.Unlock()
		v.sim.update(v.sim.inv.Hosts[v.host], types.PropertyChange{Name: "config.vsanHostConfig", Val: *info})
		v.sim.update(v.Self, types.PropertyChange{Name: "config", Val: *info})
		return nil
	})
	return &methods.UpdateVsan_TaskBody{Res: &types.UpdateVsan_TaskResponse{Returnval: task}}
}

// HostVsanInternalSystem is host.configManager.vsanInternalSystem: the CMMDS
// view of objects and disks, answered as JSON strings as ESXi does.
type HostVsanInternalSystem struct {
	mo.HostVsanInternalSystem
	sim  *Sim
	host string
}

// attachVsanConfig gives each host its vSAN configuration and per-host vSAN systems.
func (s *Sim) attachVsanConfig() {
	clusterUUID := stableUUID("cluster", s.cfg.Cluster)
	for name, ref := range s.inv.Hosts {
		h := hostObject(s.reg, ref)
		info := vsanHostConfig(s.vsan, name, ref, clusterUUID)
		h.Config.VsanHostConfig = info
		vsys := &HostVsanSystem{sim: s, host: name}
		vsys.Self = types.ManagedObjectReference{Type: "HostVsanSystem", Value: "vsanSystem-" + ref.Value}
		vsys.Config = *info
		s.reg.Put(vsys)
		isys := &HostVsanInternalSystem{sim: s, host: name}
		isys.Self = types.ManagedObjectReference{Type: "HostVsanInternalSystem", Value: "vsanInternalSystem-" + ref.Value}
		s.reg.Put(isys)
		h.ConfigManager.VsanSystem = &vsys.Self
		h.ConfigManager.VsanInternalSystem = &isys.Self
	}
}

func (s *HostVsanInternalSystem) notConnected() soap.HasFault {
	return &methods.QueryVsanObjectsBody{Fault_: simulator.Fault("host "+s.host+" is not responding",
		&types.HostNotConnected{})}
}

// QueryVsanObjects returns dom_objects (config tree with componentUuid,
// componentState, diskUuid), lsom_objects and disk_objects as JSON.
func (s *HostVsanInternalSystem) QueryVsanObjects(ctx *simulator.Context, req *types.QueryVsanObjects) soap.HasFault {
	out, up := s.sim.vsanObjectsJSON(s.host, req.Uuids)
	if !up {
		return s.notConnected()
	}
	return &methods.QueryVsanObjectsBody{Res: &types.QueryVsanObjectsResponse{Returnval: out}}
}

// QueryPhysicalVsanDisks returns the cluster's vSAN disks keyed by UUID as JSON.
func (s *HostVsanInternalSystem) QueryPhysicalVsanDisks(ctx *simulator.Context, req *types.QueryPhysicalVsanDisks) soap.HasFault {
	out, up := s.sim.physicalDisksJSON(s.host, req.Props)
	if !up {
		return &methods.QueryPhysicalVsanDisksBody{Fault_: s.notConnected().Fault()}
	}
	return &methods.QueryPhysicalVsanDisksBody{Res: &types.QueryPhysicalVsanDisksResponse{Returnval: out}}
}

// QuerySyncingVsanObjects is the host's view of the resync (what RVC's vsan.resync_dashboard reads):
// the syncing objects' configuration trees, each component with bytesToSync and recoveryETA.
func (s *HostVsanInternalSystem) QuerySyncingVsanObjects(ctx *simulator.Context, req *types.QuerySyncingVsanObjects) soap.HasFault {
	out, up := s.sim.onUpHost(s.host, func(m *VsanModel) string { return s.sim.syncingJSON(m, req.Uuids) })
	if !up {
		return &methods.QuerySyncingVsanObjectsBody{Fault_: s.notConnected().Fault()}
	}
	return &methods.QuerySyncingVsanObjectsBody{Res: &types.QuerySyncingVsanObjectsResponse{Returnval: out}}
}

// onUpHost runs read on the vSAN model, advanced to now, if host `asked` is up: a host's
// internal system answers only while the host runs.
func (s *Sim) onUpHost(asked string, read func(m *VsanModel) string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.vsan
	m.Advance(s.now())
	if !m.Hosts[asked].Up {
		return "", false
	}
	return read(m), true
}

func (s *Sim) vsanObjectsJSON(asked string, uuids []string) (string, bool) {
	return s.onUpHost(asked, func(m *VsanModel) string { return s.objectsJSON(m, uuids) })
}

// syncingJSON is objectsJSON narrowed to objects with a component to sync, each such component
// carrying its recoveryETA (seconds) beside bytesToSync. Callers hold s.mu.
func (s *Sim) syncingJSON(m *VsanModel, uuids []string) string {
	eta := map[string]int64{}
	var syncing []string
	for _, so := range m.Syncing(s.now(), "") {
		syncing = append(syncing, so.UUID)
		for _, sc := range so.Components {
			eta[sc.Component.UUID] = sc.ETA
		}
	}
	if len(uuids) > 0 {
		asked := map[string]bool{}
		for _, u := range uuids {
			asked[u] = true
		}
		kept := syncing[:0]
		for _, u := range syncing {
			if asked[u] {
				kept = append(kept, u)
			}
		}
		syncing = kept
	}
	if len(syncing) == 0 {
		return `{"dom_objects": {}}`
	}
	return s.objectsJSONWith(m, syncing, eta)
}

func (s *Sim) objectsJSON(m *VsanModel, uuids []string) string {
	return s.objectsJSONWith(m, uuids, nil)
}

func (s *Sim) objectsJSONWith(m *VsanModel, uuids []string, eta map[string]int64) string {
	want := map[string]bool{}
	for _, u := range uuids {
		want[u] = true
	}
	dom, lsom, disks := map[string]any{}, map[string]any{}, map[string]any{}
	for _, obj := range m.Objects {
		if len(want) > 0 && !want[obj.UUID] {
			continue
		}
		comp := func(c *Component) map[string]any {
			attrs := map[string]any{"componentState": componentStateCode(m.State(c)), "capacity": s.cfg.Model.ComponentMB * mib}
			if c.Rebuild != nil {
				attrs["bytesToSync"] = int64(c.Rebuild.Left)
			}
			if seconds, ok := eta[c.UUID]; ok {
				attrs["recoveryETA"] = seconds
			}
			lsom[c.UUID] = map[string]any{"uuid": c.UUID, "owner": m.Hosts[c.Host].NodeUUID,
				"content": map[string]any{"diskUuid": c.DiskUUID, "compositeUuid": obj.UUID}}
			d := m.Disks[c.DiskUUID]
			disks[d.UUID] = map[string]any{"uuid": d.UUID, "owner": m.Hosts[d.Host].NodeUUID,
				"content": map[string]any{"ssdUuid": d.GroupUUID, "devName": d.Device}}
			return map[string]any{"type": c.Kind, "componentUuid": c.UUID, "diskUuid": c.DiskUUID, "attributes": attrs}
		}
		content := map[string]any{
			"type":       "Configuration",
			"attributes": map[string]any{"CSN": 1, "addressSpace": s.cfg.Model.ComponentMB * mib},
			"child-1": map[string]any{"type": "RAID_1", "attributes": map[string]any{},
				"child-1": comp(obj.Components[0]), "child-2": comp(obj.Components[1])},
			"child-2": comp(obj.Components[2]),
		}
		dom[obj.UUID] = map[string]any{
			"config": map[string]any{"uuid": obj.UUID, "owner": m.Hosts[obj.OwnerHost].NodeUUID, "content": content},
			"policy": s.objectPolicy(obj.VM),
		}
	}
	data, _ := json.Marshal(map[string]any{"dom_objects": dom, "lsom_objects": lsom, "disk_objects": disks})
	return string(data)
}

func (s *Sim) physicalDisksJSON(asked string, props []string) (string, bool) {
	return s.onUpHost(asked, func(m *VsanModel) string { return s.disksJSON(m, props) })
}

func (s *Sim) disksJSON(m *VsanModel, props []string) string {
	counts := map[string]int{}
	for _, obj := range m.Objects {
		for _, c := range obj.Components {
			counts[c.DiskUUID]++
		}
	}
	out := map[string]map[string]any{}
	ids := append([]string(nil), m.DiskOrder...)
	sort.Strings(ids)
	for _, id := range ids {
		d := m.Disks[id]
		flags := int64(0)
		switch d.Fault {
		case FaultPermanent:
			flags = 1 << factInt("disk_health.failed_bit")
		case FaultUnplug, FaultTransient:
			flags = 1 << factInt("disk_health.offline_bit")
		}
		isSsd := 0
		if d.Cache {
			isSsd = 1
		}
		all := map[string]any{
			"uuid": d.UUID, fact("physical_disk.device_name"): d.Device, "owner": m.Hosts[d.Host].NodeUUID, "isSsd": isSsd,
			"ssdUuid": d.GroupUUID, "capacity": int64(diskBlocks) * 512,
			"capacityUsed": int64(counts[d.UUID]) * s.cfg.Model.ComponentMB * mib, "capacityReserved": 0,
			"lsom_objects_count": counts[d.UUID], "iops": 20000, "iopsReserved": 0,
			"disk_health": map[string]any{"healthFlags": flags},
		}
		if len(props) > 0 {
			picked := map[string]any{"uuid": d.UUID}
			for _, p := range props {
				if v, ok := all[p]; ok {
					picked[p] = v
				}
			}
			all = picked
		}
		out[d.UUID] = all
	}
	data, _ := json.Marshal(out)
	return string(data)
}

// componentStateCode is a component state as CMMDS numbers it (RVC's state_names).
func componentStateCode(state int) int64 {
	switch state {
	case StateAbsent:
		return factInt("component_state.absent")
	case StateDegraded:
		return factInt("component_state.degraded")
	}
	return factInt("component_state.active")
}

// objectPolicy is an object's policy as the host lists it: its VM's, as PBM associates it (pbm.go).
func (s *Sim) objectPolicy(vm string) map[string]any {
	site, locality := factInt("pbm.site_tolerance.mirrored"), fact("pbm.locality.mirrored")
	for _, v := range s.cfg.VMs {
		if v.Name == vm && v.Policy == PolicySiteLocal {
			site, locality = factInt("pbm.site_tolerance.one_site"), fact("pbm.locality.preferred")
		}
	}
	return map[string]any{fact("pbm.site_tolerance.capability"): site, fact("pbm.local_tolerance.capability"): 0,
		"stripeWidth": 1, "forceProvisioning": 0, "proportionalCapacity": 0, fact("pbm.locality.capability"): locality}
}
