package main

import (
	"fmt"
	"time"

	"github.com/vmware/govmomi/vim25/types"
)

// errUnknown reports a name the inventory does not have.
type errUnknown struct{ kind, name string }

func (e errUnknown) Error() string { return fmt.Sprintf("unknown %s %q", e.kind, e.name) }

// PowerHost is an out-of-band power change (BMC): "off" is an abrupt power
// loss that HA answers; "on" brings the host back and returns VMs owed to it.
func (s *Sim) PowerHost(name string, on bool) error {
	if _, ok := s.hosts[name]; !ok {
		return errUnknown{"host", name}
	}
	if on {
		s.powerOnHost(name)
	} else {
		s.powerOffHost(name, false)
	}
	return nil
}

// powerOffHost takes a host down. Abrupt: its VMs are owed an HA restart and
// DasHostFailedEvent is posted. Graceful (ShutdownHost_Task): VMs stay off.
func (s *Sim) powerOffHost(name string, graceful bool) {
	s.mu.Lock()
	h := s.hosts[name]
	if !h.powered {
		s.mu.Unlock()
		return
	}
	h.powered = false
	s.vsan.SetHost(name, false, h.maintenance, false, s.now())
	var victims []*vmState
	for _, vm := range s.sortedVMs() {
		if vm.host == name && vm.on {
			vm.on = false
			vm.pendingRestart = !graceful
			victims = append(victims, vm)
		}
	}
	s.mu.Unlock()

	s.setHostRuntime(name, types.HostSystemPowerStatePoweredOff, types.HostSystemConnectionStateNotResponding)
	for _, vm := range victims {
		s.setVMPower(vm.name, types.VirtualMachinePowerStatePoweredOff)
		s.hook.Run("power-off", vm.node)
	}
	if graceful || s.hosts[name].witness {
		return
	}
	if s.cfg.HAHostFailedEvent != "extended" {
		if asDocumented("ha.host_failed.legacy") {
			s.postEvent(&types.DasHostFailedEvent{
				ClusterEvent: types.ClusterEvent{Event: types.Event{ComputeResource: s.clusterArg(), Datacenter: s.datacenterArg()}},
				FailedHost:   *s.hostEvent(name).Host,
			})
		} else { // the mutation pass: another type id than the catalogue's class
			s.postEvent(&types.EventEx{Event: s.hostEvent(name).Event, EventTypeId: fact("ha.host_failed.legacy"),
				Severity: "error"})
		}
	}
	if s.cfg.HAHostFailedEvent != "legacy" {
		// The catalogue's ExtendedEvent, posted as an EventEx: both carry eventTypeId (what clients filter
		// and read), and the stock simulator's event filter matches eventTypeId on EventEx only.
		ev := s.hostEvent(name).Event
		ev.FullFormattedMessage = "vSphere HA detected a possible host failure of host " + name
		s.postEvent(&types.EventEx{Event: ev, EventTypeId: fact("ha.host_failed.extended"), Severity: "error",
			ObjectId: s.inv.Hosts[name].Value, ObjectType: "HostSystem", ObjectName: name})
	}
	for _, vm := range victims {
		s.scheduleRestart(vm.name)
	}
}

// powerOnHost brings a host back; VMs of its site still owed a restart get it.
func (s *Sim) powerOnHost(name string) {
	s.mu.Lock()
	h := s.hosts[name]
	if h.powered {
		s.mu.Unlock()
		return
	}
	h.powered = true
	s.vsan.SetHost(name, true, h.maintenance, false, s.now())
	s.mu.Unlock()
	s.setHostRuntime(name, types.HostSystemPowerStatePoweredOn, types.HostSystemConnectionStateConnected)
	s.postEvent(&types.HostConnectedEvent{HostEvent: s.hostEvent(name)})
	s.retryRestarts(h.site)
}

func (s *Sim) retryRestarts(site string) {
	s.mu.Lock()
	var owed []string
	for _, vm := range s.sortedVMs() {
		if vm.pendingRestart && vm.site == site {
			owed = append(owed, vm.name)
		}
	}
	s.mu.Unlock()
	for _, name := range owed {
		s.scheduleRestart(name)
	}
}

func (s *Sim) scheduleRestart(vm string) {
	s.after(seconds(s.cfg.Model.HARestartDelayS), func() { s.haRestart(vm) })
}

// haRestart restarts a VM on a usable host of its own site (the "should run
// on" rule); with none, the VM waits for a host of its site to come back.
func (s *Sim) haRestart(name string) {
	s.mu.Lock()
	vm := s.vms[name]
	target := s.usableHost(vm.site, "")
	if !vm.pendingRestart || vm.on || target == "" {
		s.mu.Unlock()
		return
	}
	from := vm.host
	vm.host, vm.on, vm.pendingRestart = target, true, false
	s.mu.Unlock()

	s.moveVM(name, from, target)
	s.setVMPower(name, types.VirtualMachinePowerStatePoweredOn)
	ev := s.hostEvent(target).Event
	ev.Vm = &types.VmEventArgument{EntityEventArgument: types.EntityEventArgument{Name: name}, Vm: s.inv.VMs[name]}
	ev.FullFormattedMessage = fmt.Sprintf("vSphere HA restarted virtual machine %s on host %s in cluster %s", name, target, s.cfg.Cluster)
	s.postEvent(&types.EventEx{Event: ev, EventTypeId: fact("ha.vm_restarted"),
		Severity: "warning", ObjectId: s.inv.VMs[name].Value, ObjectType: "VirtualMachine", ObjectName: name})
	s.log.Printf("HA restarted %s on %s", name, target)
	s.hook.Run("power-on", vm.node)
}

// usableHost picks a powered, connected host of site not in maintenance,
// preferring one other than avoid. Callers hold s.mu.
func (s *Sim) usableHost(site, avoid string) string {
	var fallback string
	for _, st := range s.cfg.Sites {
		if st.Name != site {
			continue
		}
		for _, hc := range st.Hosts {
			h := s.hosts[hc.Name]
			if !h.powered || h.maintenance {
				continue
			}
			if hc.Name != avoid {
				return hc.Name
			}
			fallback = hc.Name
		}
	}
	return fallback
}

func (s *Sim) sortedVMs() []*vmState {
	out := make([]*vmState, 0, len(s.cfg.VMs))
	for _, vm := range s.cfg.VMs {
		out = append(out, s.vms[vm.Name])
	}
	return out
}

func (s *Sim) setHostRuntime(name string, power types.HostSystemPowerState, conn types.HostSystemConnectionState) {
	status := types.ManagedEntityStatusGreen
	if conn != types.HostSystemConnectionStateConnected {
		status = types.ManagedEntityStatusRed
	}
	s.update(s.inv.Hosts[name],
		types.PropertyChange{Name: "runtime.powerState", Val: power},
		types.PropertyChange{Name: "runtime.connectionState", Val: conn},
		types.PropertyChange{Name: "overallStatus", Val: status},
		types.PropertyChange{Name: "summary.overallStatus", Val: status},
	)
}

func (s *Sim) setVMPower(name string, state types.VirtualMachinePowerState) {
	changes := []types.PropertyChange{
		{Name: "runtime.powerState", Val: state},
		{Name: "summary.runtime.powerState", Val: state},
	}
	if state == types.VirtualMachinePowerStatePoweredOn {
		now := time.Now()
		changes = append(changes, types.PropertyChange{Name: "runtime.bootTime", Val: &now},
			types.PropertyChange{Name: "summary.runtime.bootTime", Val: &now})
	}
	s.update(s.inv.VMs[name], changes...)
}

// moveVM re-registers a VM from one host to another (runtime.host and host.vm).
func (s *Sim) moveVM(name, from, to string) {
	if from == to {
		return
	}
	ref := s.inv.VMs[name]
	for _, h := range []string{from, to} {
		host := hostObject(s.reg, s.inv.Hosts[h])
		ctx := s.simCtx()
		s.reg.WithLock(ctx, host, func() {
			list := make([]types.ManagedObjectReference, 0, len(host.Vm)+1)
			for _, r := range host.Vm {
				if r != ref {
					list = append(list, r)
				}
			}
			if h == to {
				list = append(list, ref)
			}
			s.reg.Update(ctx, host, []types.PropertyChange{{Name: "vm", Val: list}})
		})
	}
	target := s.inv.Hosts[to]
	s.update(ref,
		types.PropertyChange{Name: "runtime.host", Val: &target},
		types.PropertyChange{Name: "summary.runtime.host", Val: &target})
}

// vmName and hostName map references back to config names ("" if none).
func (s *Sim) vmName(ref types.ManagedObjectReference) string {
	for name, r := range s.inv.VMs {
		if r == ref {
			return name
		}
	}
	return ""
}

func (s *Sim) hostName(ref types.ManagedObjectReference) string {
	for name, r := range s.inv.Hosts {
		if r == ref {
			return name
		}
	}
	return ""
}
