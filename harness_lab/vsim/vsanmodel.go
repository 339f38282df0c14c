package main

import (
	"sort"
	"time"

	"github.com/google/uuid"
)

// Component states as CMMDS reports them (RVC's vsan.vm_object_info names them).
const (
	StateActive   = 5
	StateAbsent   = 6
	StateDegraded = 9
)

// Disk fault kinds, as the ESXi fault injection script names them.
const (
	FaultNone      = ""
	FaultPermanent = "permanent"
	FaultTransient = "transient"
	FaultUnplug    = "unplug"
)

const mib = 1 << 20

var uuidSpace = uuid.MustParse("6ba7b811-9dad-11d1-80b4-00c04fd430c8")

// stableUUID gives the same vSAN UUID to the same name in every run.
func stableUUID(kind, name string) string {
	return uuid.NewSHA1(uuidSpace, []byte(kind+"/"+name)).String()
}

// VsanHost is a host as vSAN sees it: up (powered and connected) or not.
type VsanHost struct {
	Name, Site, NodeUUID string
	Witness              bool
	Up                   bool
	Maintenance          bool
	Evacuate             bool // maintenance with vsanMode evacuateAllData
	ESA                  bool // vSAN Express Storage Architecture: a storage pool, no disk group
	// FaultDomain is the fault domain an UpdateVsan_Task named (nil: the host's site, as configured). Placement
	// keeps following Site: renaming a fault domain moves no data.
	FaultDomain *string
}

// FaultDomainName is what vSAN reports as the host's fault domain.
func (h *VsanHost) FaultDomainName() string {
	if h.FaultDomain != nil {
		return *h.FaultDomain
	}
	return h.Site
}

// VsanDisk is one device of a disk group; GroupUUID is the cache device's UUID.
type VsanDisk struct {
	UUID, Host, Device, GroupUUID string
	Cache                         bool
	Fault                         string
	FaultUntil                    time.Time
}

// Component is one replica or witness of an object, on a capacity disk.
type Component struct {
	UUID, Object, Kind string // Kind: "Component" or "Witness"
	Host, DiskUUID     string
	FailedAt           time.Time
	Rebuild            *Rebuild
}

// Rebuild is a resync rebuilding a failed component on another disk.
type Rebuild struct {
	Host, DiskUUID, Reason string
	Total, Left            float64 // bytes
}

// VsanObject is a DOM object of a VM (namespace or virtual disk).
type VsanObject struct {
	UUID, VM, Type, Description string
	OwnerHost                   string
	Components                  []*Component // site A data, site B data, witness
}

// VsanModel is the cluster's storage: disks, objects, components and resync.
// It knows nothing of the vim API; every method takes the current time.
type VsanModel struct {
	cfg         ModelConfig
	RepairTimer time.Duration
	Hosts       map[string]*VsanHost
	HostOrder   []string
	Disks       map[string]*VsanDisk
	DiskOrder   []string
	Objects     []*VsanObject
	comps       map[string]*Component
	queue       []*Component
	last        time.Time
}

// NewVsanModel lays out disks from the config and places each VM's objects:
// one data component on the VM's host, a mirror in the other site, a witness
// component on the witness host.
func NewVsanModel(cfg *Config, now time.Time) *VsanModel {
	m := &VsanModel{
		cfg:         cfg.Model,
		RepairTimer: time.Duration(cfg.Model.RepairTimerS) * time.Second,
		Hosts:       map[string]*VsanHost{},
		Disks:       map[string]*VsanDisk{},
		comps:       map[string]*Component{},
		last:        now,
	}
	addHost := func(name, site string, witness bool, groups []DiskGroup) {
		m.Hosts[name] = &VsanHost{Name: name, Site: site, Witness: witness, Up: true,
			NodeUUID: stableUUID("node", name), ESA: len(groups) > 0 && groups[0].Cache == ""}
		m.HostOrder = append(m.HostOrder, name)
		for _, g := range groups {
			group := stableUUID("pool", name) // ESA: the storage pool, no cache device
			if g.Cache != "" {
				group = m.addDisk(name, g.Cache, true, "").UUID
			}
			for _, dev := range g.Capacity {
				m.addDisk(name, dev, false, group)
			}
		}
	}
	for _, s := range cfg.Sites {
		for _, h := range s.Hosts {
			addHost(h.Name, s.Name, false, h.DiskGroups)
		}
	}
	addHost(cfg.Witness.Name, cfg.Witness.Site, true, cfg.Witness.DiskGroups)

	for i, vm := range cfg.VMs {
		home := vm.Host
		mirror := m.peerHost(home)
		if vm.Policy == PolicySiteLocal {
			mirror = m.siteNeighbour(home)
		}
		for _, kind := range []string{"vmnamespace", "vdisk"} {
			obj := &VsanObject{UUID: stableUUID("object", vm.Name+"/"+kind), VM: vm.Name, Type: kind, OwnerHost: home}
			obj.Description = vm.Name
			if kind == "vdisk" {
				obj.Description = vm.Name + ".vmdk"
			}
			for j, placement := range []struct{ host, kind string }{
				{home, "Component"}, {mirror, "Component"}, {cfg.Witness.Name, "Witness"},
			} {
				c := &Component{UUID: stableUUID("component", obj.UUID+"/"+string(rune('a'+j))),
					Object: obj.UUID, Kind: placement.kind, Host: placement.host}
				disks := m.capacityDisks(placement.host)
				c.DiskUUID = disks[i%len(disks)].UUID
				obj.Components = append(obj.Components, c)
				m.comps[c.UUID] = c
			}
			m.Objects = append(m.Objects, obj)
		}
	}
	return m
}

func (m *VsanModel) addDisk(host, dev string, cache bool, group string) *VsanDisk {
	d := &VsanDisk{UUID: stableUUID("disk", host+"/"+dev), Host: host, Device: dev, Cache: cache, GroupUUID: group}
	if cache {
		d.GroupUUID = d.UUID
	}
	m.Disks[d.UUID] = d
	m.DiskOrder = append(m.DiskOrder, d.UUID)
	return d
}

// peerHost is the host of the other site at the same position (the mirror's home).
// siteNeighbour is another host of host's own site (a site-local policy mirrors within the site).
func (m *VsanModel) siteNeighbour(host string) string {
	for _, name := range m.HostOrder {
		if h := m.Hosts[name]; !h.Witness && h.Site == m.Hosts[host].Site && name != host {
			return name
		}
	}
	return host
}

func (m *VsanModel) peerHost(host string) string {
	site := m.Hosts[host].Site
	var mine, other []string
	for _, name := range m.HostOrder {
		h := m.Hosts[name]
		switch {
		case h.Witness:
		case h.Site == site:
			mine = append(mine, name)
		default:
			other = append(other, name)
		}
	}
	for i, name := range mine {
		if name == host {
			return other[i%len(other)]
		}
	}
	return other[0]
}

func (m *VsanModel) capacityDisks(host string) []*VsanDisk {
	var out []*VsanDisk
	for _, id := range m.DiskOrder {
		if d := m.Disks[id]; d.Host == host && !d.Cache {
			out = append(out, d)
		}
	}
	return out
}

// DiskByDevice finds a host's device by its canonical name.
func (m *VsanModel) DiskByDevice(host, dev string) *VsanDisk {
	for _, id := range m.DiskOrder {
		if d := m.Disks[id]; d.Host == host && d.Device == dev {
			return d
		}
	}
	return nil
}

// failure says why a component on this host/disk cannot serve I/O:
// "" (it can), "absent" (may come back) or "degraded" (will not).
func (m *VsanModel) failure(host, diskUUID string) string {
	h := m.Hosts[host]
	if !h.Up || h.Maintenance {
		return "absent"
	}
	d := m.Disks[diskUUID]
	cacheFault := FaultNone
	if cache := m.Disks[d.GroupUUID]; cache != nil { // ESA's storage pool has no cache device
		cacheFault = cache.Fault
	}
	if d.Fault == FaultPermanent || cacheFault == FaultPermanent {
		return "degraded"
	}
	if d.Fault != FaultNone || cacheFault != FaultNone {
		return "absent"
	}
	return ""
}

// State is the component's CMMDS state now.
func (m *VsanModel) State(c *Component) int {
	switch m.failure(c.Host, c.DiskUUID) {
	case "degraded":
		return StateDegraded
	case "absent":
		return StateAbsent
	}
	return StateActive
}

// SetFault applies a disk fault; seconds bounds a transient fault (0: until cleared).
func (m *VsanModel) SetFault(d *VsanDisk, fault string, seconds float64, now time.Time) {
	m.Advance(now)
	if fault == "clear" {
		if d.Fault == FaultPermanent && m.cfg.PermanentClearHeals == 0 {
			return // a permanent error outlives the clear: the device stays failed until removed and re-added
		}
		fault = FaultNone
	}
	d.Fault = fault
	d.FaultUntil = time.Time{}
	if fault == FaultTransient && seconds > 0 {
		d.FaultUntil = now.Add(time.Duration(seconds * float64(time.Second)))
	}
	m.Advance(now)
}

// SetHost records a host's power/connection and maintenance state.
func (m *VsanModel) SetHost(name string, up, maintenance, evacuate bool, now time.Time) {
	m.Advance(now)
	h := m.Hosts[name]
	h.Up, h.Maintenance, h.Evacuate = up, maintenance, evacuate
	m.Advance(now)
}

// ObjectsWithComponentsIn lists objects with a component on the given disk group.
func (m *VsanModel) ObjectsWithComponentsIn(groupUUID string) []*VsanObject {
	var out []*VsanObject
	for _, obj := range m.Objects {
		for _, c := range obj.Components {
			if m.Disks[c.DiskUUID].GroupUUID == groupUUID {
				out = append(out, obj)
				break
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].VM < out[j].VM })
	return out
}
