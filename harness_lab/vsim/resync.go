package main

import (
	"math"
	"time"
)

// RepairNow starts rebuilding every failed component whose repair timer is running.
func (m *VsanModel) RepairNow(now time.Time) {
	m.Advance(now)
	for _, obj := range m.Objects {
		for _, c := range obj.Components {
			if c.Rebuild == nil && m.State(c) != StateActive {
				m.startRebuild(c, fact("sync_reason.repair"))
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
				m.startRebuild(c, fact("sync_reason.evacuate"))
			case why == "degraded" || now.Sub(c.FailedAt) >= m.RepairTimer:
				m.startRebuild(c, fact("sync_reason.repair"))
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
