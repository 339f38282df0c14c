package main

import (
	"fmt"
	"sort"
)

// DiskFault injects or clears a fault on a host's device, as the ESXi disk
// fault injection script does. A fault on a cache device takes the whole disk
// group; VMs with components there see their I/O paused (io-pause hook).
func (s *Sim) DiskFault(host, device, fault string, secs float64) error {
	switch fault {
	case FaultPermanent, FaultTransient, FaultUnplug, "clear":
	default:
		return fmt.Errorf("unknown fault %q (permanent, transient, unplug, clear)", fault)
	}
	s.mu.Lock()
	d := s.vsan.DiskByDevice(host, device)
	if d == nil {
		s.mu.Unlock()
		return errUnknown{"device", host + "/" + device}
	}
	s.vsan.SetFault(d, fault, secs, s.now())
	nodes := map[string]bool{}
	if d.Cache && fault != "clear" {
		for _, obj := range s.vsan.ObjectsWithComponentsIn(d.GroupUUID) {
			if vm := s.vms[obj.VM]; vm != nil && vm.on {
				nodes[vm.node] = true
			}
		}
	}
	s.mu.Unlock()
	s.log.Printf("disk %s/%s: %s", host, device, fault)
	var sorted []string
	for n := range nodes {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	for _, n := range sorted {
		s.hook.Run("io-pause", n, fmt.Sprintf("%g", s.cfg.Model.IOPauseS))
	}
	s.announceResync()
	return nil
}
