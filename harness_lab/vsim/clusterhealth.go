package main

import "time"

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
