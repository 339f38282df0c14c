package main

import (
	"math"
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
			NodeUUID: stableUUID("node", name)}
		m.HostOrder = append(m.HostOrder, name)
		for _, g := range groups {
			cache := m.addDisk(name, g.Cache, true, "")
			for _, dev := range g.Capacity {
				m.addDisk(name, dev, false, cache.UUID)
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
	cache := m.Disks[d.GroupUUID]
	if d.Fault == FaultPermanent || cache.Fault == FaultPermanent {
		return "degraded"
	}
	if d.Fault != FaultNone || cache.Fault != FaultNone {
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

// RepairNow starts rebuilding every failed component whose repair timer is running.
func (m *VsanModel) RepairNow(now time.Time) {
	m.Advance(now)
	for _, obj := range m.Objects {
		for _, c := range obj.Components {
			if c.Rebuild == nil && m.State(c) != StateActive {
				m.startRebuild(c, "repair")
			}
		}
	}
	m.Advance(now)
}

// Advance moves the model to now: resync drains at the modelled rate, transient
// faults expire, and failed components whose time has come start rebuilding.
func (m *VsanModel) Advance(now time.Time) {
	if now.Before(m.last) {
		now = m.last
	}
	budget := now.Sub(m.last).Seconds() * m.cfg.ResyncRateMBs * mib
	m.last = now
	for len(m.queue) > 0 && budget > 0 {
		c := m.queue[0]
		if m.failure(c.Rebuild.Host, c.Rebuild.DiskUUID) != "" {
			c.Rebuild = nil // target lost: retried below
			m.queue = m.queue[1:]
			continue
		}
		take := math.Min(budget, c.Rebuild.Left)
		c.Rebuild.Left -= take
		budget -= take
		if c.Rebuild.Left <= 0.5 {
			c.Host, c.DiskUUID = c.Rebuild.Host, c.Rebuild.DiskUUID
			c.Rebuild, c.FailedAt = nil, time.Time{}
			m.queue = m.queue[1:]
		}
	}
	for _, id := range m.DiskOrder {
		if d := m.Disks[id]; d.Fault == FaultTransient && !d.FaultUntil.IsZero() && !now.Before(d.FaultUntil) {
			d.Fault, d.FaultUntil = FaultNone, time.Time{}
		}
	}
	for _, obj := range m.Objects {
		for _, c := range obj.Components {
			why := m.failure(c.Host, c.DiskUUID)
			if why == "" {
				if c.Rebuild == nil && !c.FailedAt.IsZero() {
					m.resyncStale(c, now)
					c.FailedAt = time.Time{}
				}
				continue
			}
			if c.FailedAt.IsZero() {
				c.FailedAt = now
			}
			if c.Rebuild != nil {
				continue
			}
			switch {
			case m.Hosts[c.Host].Evacuate:
				m.startRebuild(c, "evacuate")
			case why == "degraded" || now.Sub(c.FailedAt) >= m.RepairTimer:
				m.startRebuild(c, "repair")
			}
		}
	}
}

// startRebuild queues a rebuild of c on a usable capacity disk of its own site
// (its own host first), away from the object's other components.
func (m *VsanModel) startRebuild(c *Component, reason string) {
	h := m.Hosts[c.Host]
	used := map[string]bool{}
	for _, other := range m.objectOf(c).Components {
		used[other.DiskUUID] = true
		if other.Rebuild != nil {
			used[other.Rebuild.DiskUUID] = true
		}
	}
	hosts := []string{c.Host}
	for _, name := range m.HostOrder {
		if o := m.Hosts[name]; name != c.Host && o.Site == h.Site && o.Witness == h.Witness {
			hosts = append(hosts, name)
		}
	}
	for _, name := range hosts {
		for _, d := range m.capacityDisks(name) {
			if used[d.UUID] || m.failure(name, d.UUID) != "" {
				continue
			}
			size := float64(m.cfg.ComponentMB) * mib
			c.Rebuild = &Rebuild{Host: name, DiskUUID: d.UUID, Reason: reason, Total: size, Left: size}
			m.queue = append(m.queue, c)
			return
		}
	}
}

// resyncStale queues the in-place resync of a component that is back after
// missing the writes made meanwhile (model.stale_write_mb_s).
func (m *VsanModel) resyncStale(c *Component, now time.Time) {
	size := math.Min(float64(m.cfg.ComponentMB)*mib, now.Sub(c.FailedAt).Seconds()*m.cfg.StaleWriteMBs*mib)
	if size < 1 {
		return
	}
	c.Rebuild = &Rebuild{Host: c.Host, DiskUUID: c.DiskUUID, Reason: "stale", Total: size, Left: size}
	m.queue = append(m.queue, c)
}

func (m *VsanModel) objectOf(c *Component) *VsanObject {
	for _, obj := range m.Objects {
		if obj.UUID == c.Object {
			return obj
		}
	}
	return nil
}

// SyncingComponent is one component being resynced, in queue order.
type SyncingComponent struct {
	Component   *Component
	BytesToSync int64
	ETA         int64 // seconds until this component is in sync
	Active      bool  // resyncing now (false: queued behind others)
}

// SyncingObject groups the syncing components of one object.
type SyncingObject struct {
	UUID       string
	Components []SyncingComponent
}

// Syncing lists the resync queue by object; status "active" or "queued" filters it.
func (m *VsanModel) Syncing(now time.Time, status string) []SyncingObject {
	m.Advance(now)
	rate := m.cfg.ResyncRateMBs * mib
	var cumulative float64
	byObj := map[string]*SyncingObject{}
	var order []string
	for i, c := range m.queue {
		cumulative += c.Rebuild.Left
		sc := SyncingComponent{Component: c, BytesToSync: int64(math.Ceil(c.Rebuild.Left)),
			ETA: int64(math.Ceil(cumulative / rate)), Active: i == 0}
		if (status == "active" && !sc.Active) || (status == "queued" && sc.Active) {
			continue
		}
		so, ok := byObj[c.Object]
		if !ok {
			so = &SyncingObject{UUID: c.Object}
			byObj[c.Object] = so
			order = append(order, c.Object)
		}
		so.Components = append(so.Components, sc)
	}
	out := make([]SyncingObject, 0, len(order))
	for _, id := range order {
		out = append(out, *byObj[id])
	}
	return out
}

// SiteResync is the bytes still to resync onto a site and when that ends.
func (m *VsanModel) SiteResync(now time.Time) map[string]float64 {
	m.Advance(now)
	out := map[string]float64{}
	for _, c := range m.queue {
		out[m.Hosts[c.Rebuild.Host].Site] += c.Rebuild.Left
	}
	return out
}

// Health is the cluster's overall vSAN health: red when a cluster host is down
// or an object lost its majority, yellow while components are failed, resyncing
// or a host is in maintenance, green otherwise. Reasons say why.
func (m *VsanModel) Health(now time.Time) (string, []string) {
	m.Advance(now)
	var red, yellow []string
	for _, name := range m.HostOrder {
		h := m.Hosts[name]
		switch {
		case !h.Up && !h.Witness:
			red = append(red, "host "+name+" is not responding")
		case !h.Up:
			yellow = append(yellow, "witness host "+name+" is not responding")
		case h.Maintenance:
			yellow = append(yellow, "host "+name+" is in maintenance mode")
		}
	}
	for _, obj := range m.Objects {
		failed := 0
		for _, c := range obj.Components {
			if m.State(c) != StateActive {
				failed++
			}
		}
		switch {
		case failed*2 > len(obj.Components):
			red = append(red, "object "+obj.UUID+" is inaccessible")
		case failed > 0:
			yellow = append(yellow, "object "+obj.UUID+" has reduced availability")
		}
	}
	if len(m.queue) > 0 {
		yellow = append(yellow, "resync in progress")
	}
	switch {
	case len(red) > 0:
		return "red", append(red, yellow...)
	case len(yellow) > 0:
		return "yellow", yellow
	}
	return "green", nil
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

// ObjectHealth names an object's state as vSAN's object health check does
// (VsanObjectHealthState): healthy, inaccessible, or the kind of reduced availability.
func (m *VsanModel) ObjectHealth(obj *VsanObject) string {
	failed, rebuilding, waiting := 0, false, false
	for _, c := range obj.Components {
		state := m.State(c)
		if state == StateActive {
			rebuilding = rebuilding || c.Rebuild != nil // back, resyncing what it missed
			continue
		}
		failed++
		rebuilding = rebuilding || c.Rebuild != nil
		waiting = waiting || (state == StateAbsent && c.Rebuild == nil)
	}
	switch {
	case failed == 0 && !rebuilding:
		return "healthy"
	case failed*2 > len(obj.Components):
		return "inaccessible"
	case rebuilding:
		return "reducedavailabilitywithactiverebuild"
	case waiting:
		return "reducedavailabilitywithnorebuilddelaytimer"
	}
	return "reducedavailabilitywithnorebuild"
}
