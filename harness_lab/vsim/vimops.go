package main

import (
	"fmt"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// intercept routes the vim methods the stock simulator lacks or models too
// thinly (host shutdown, maintenance, relocation, VM power) to this model.
func (s *Sim) intercept(ctx *simulator.Context, m *simulator.Method) (mo.Reference, types.BaseMethodFault) {
	if ctx.Session != nil {
		s.sessions.note(ctx.Session.Key, ctx.Session.UserName)
	}
	if fault := s.refusal(ctx, m); fault != nil {
		return nil, fault
	}
	h := s.authzFor(m)
	switch m.Name {
	case "ShutdownHost_Task", "RebootHost_Task", "EnterMaintenanceMode_Task", "ExitMaintenanceMode_Task",
		"ReconnectHost_Task":
		if name := s.hostName(m.This); name != "" {
			h = &hostOps{Self: m.This, sim: s, name: name}
		}
	case "RelocateVM_Task", "MigrateVM_Task", "PowerOnVM_Task", "PowerOffVM_Task":
		if name := s.vmName(m.This); name != "" {
			h = &vmOps{Self: m.This, sim: s, name: name}
		}
	case "ReconfigVM_Task":
		// a disk's policy lives in PBM, which the stock simulator never links to a disk: a profile-only edit
		// is this model's; any other reconfiguration the stock simulator's
		if req, ok := m.Body.(*types.ReconfigVM_Task); ok && profileOnly(&req.Spec) {
			if name := s.vmName(m.This); name != "" {
				h = &vmOps{Self: m.This, sim: s, name: name}
			}
		}
	}
	if h != nil && ctx.Session != nil {
		// The simulator looks the target up in the caller's session after this
		// hook (falling back to the inventory), so the handler must be found
		// there. ctx.Session is this request's own copy: nothing else sees it.
		r := simulator.NewRegistry()
		r.Put(h)
		ctx.Session.Registry = r
	}
	return h, nil
}

type hostOps struct {
	Self types.ManagedObjectReference
	sim  *Sim
	name string
}

func (o *hostOps) Reference() types.ManagedObjectReference { return o.Self }

// ShutdownHostTask is a graceful shutdown: VMs powered off, no HA restart.
// Without force the host must be in maintenance mode, as on vCenter.
func (o *hostOps) ShutdownHostTask(ctx *simulator.Context, req *types.ShutdownHost_Task) soap.HasFault {
	task := o.sim.longTask(o.Self, o.name, "ShutdownHost_Task", func() types.BaseMethodFault {
		o.sim.mu.Lock()
		h := o.sim.hosts[o.name]
		ok := req.Force || h.maintenance
		o.sim.mu.Unlock()
		if !ok {
			return invalidState("host " + o.name + " is not in maintenance mode; use force")
		}
		o.sim.powerOffHost(o.name, true)
		return nil
	})
	return &methods.ShutdownHost_TaskBody{Res: &types.ShutdownHost_TaskResponse{Returnval: task}}
}

// RebootHostTask is refused: a reboot through vCenter is not modelled.
func (o *hostOps) RebootHostTask(ctx *simulator.Context, req *types.RebootHost_Task) soap.HasFault {
	return &methods.RebootHost_TaskBody{Fault_: simulator.Fault("reboot is not modelled", &types.NotSupported{})}
}

// EnterMaintenanceModeTask migrates the host's VMs within their site (DRS,
// model.migration_s each), then applies maintenanceSpec.vsanMode.objectAction:
// evacuateAllData waits for the host's components to be rebuilt elsewhere.
func (o *hostOps) EnterMaintenanceModeTask(ctx *simulator.Context, req *types.EnterMaintenanceMode_Task) soap.HasFault {
	action := string(types.VsanHostDecommissionModeObjectActionEnsureObjectAccessibility)
	if req.MaintenanceSpec != nil && req.MaintenanceSpec.VsanMode != nil && req.MaintenanceSpec.VsanMode.ObjectAction != "" {
		action = req.MaintenanceSpec.VsanMode.ObjectAction
	}
	evacuateOff := req.EvacuatePoweredOffVms != nil && *req.EvacuatePoweredOffVms
	task := o.sim.longTask(o.Self, o.name, "EnterMaintenanceMode_Task", func() types.BaseMethodFault {
		return o.sim.enterMaintenance(o.name, action, evacuateOff, req.Timeout)
	})
	return &methods.EnterMaintenanceMode_TaskBody{Res: &types.EnterMaintenanceMode_TaskResponse{Returnval: task}}
}

// ExitMaintenanceModeTask ends maintenance; components on the host come back.
func (o *hostOps) ExitMaintenanceModeTask(ctx *simulator.Context, req *types.ExitMaintenanceMode_Task) soap.HasFault {
	task := o.sim.longTask(o.Self, o.name, "ExitMaintenanceMode_Task", func() types.BaseMethodFault {
		return o.sim.exitMaintenance(o.name)
	})
	return &methods.ExitMaintenanceMode_TaskBody{Res: &types.ExitMaintenanceMode_TaskResponse{Returnval: task}}
}

// ReconnectHostTask reconnects a host that is up; one without power stays
// notResponding and the task fails, as vCenter's does.
func (o *hostOps) ReconnectHostTask(ctx *simulator.Context, req *types.ReconnectHost_Task) soap.HasFault {
	task := o.sim.longTask(o.Self, o.name, "ReconnectHost_Task", func() types.BaseMethodFault {
		o.sim.mu.Lock()
		powered := o.sim.hosts[o.name].powered
		o.sim.mu.Unlock()
		if !powered {
			return &types.HostConnectFault{}
		}
		o.sim.setHostRuntime(o.name, types.HostSystemPowerStatePoweredOn, types.HostSystemConnectionStateConnected)
		return nil
	})
	return &methods.ReconnectHost_TaskBody{Res: &types.ReconnectHost_TaskResponse{Returnval: task}}
}

type vmOps struct {
	Self types.ManagedObjectReference
	sim  *Sim
	name string
}

func (o *vmOps) Reference() types.ManagedObjectReference { return o.Self }

// RelocateVMTask migrates a VM to spec.host, taking model.migration_s.
func (o *vmOps) RelocateVMTask(ctx *simulator.Context, req *types.RelocateVM_Task) soap.HasFault {
	task := o.sim.longTask(o.Self, o.name, "RelocateVM_Task", func() types.BaseMethodFault {
		if req.Spec.Host == nil {
			return nil
		}
		return o.sim.migrate(o.name, o.sim.hostName(*req.Spec.Host))
	})
	return &methods.RelocateVM_TaskBody{Res: &types.RelocateVM_TaskResponse{Returnval: task}}
}

// MigrateVMTask is the older migration call: the same move as RelocateVMTask.
func (o *vmOps) MigrateVMTask(ctx *simulator.Context, req *types.MigrateVM_Task) soap.HasFault {
	task := o.sim.longTask(o.Self, o.name, "MigrateVM_Task", func() types.BaseMethodFault {
		if req.Host == nil {
			return nil
		}
		return o.sim.migrate(o.name, o.sim.hostName(*req.Host))
	})
	return &methods.MigrateVM_TaskBody{Res: &types.MigrateVM_TaskResponse{Returnval: task}}
}

// ReconfigVMTask sets the policies of disks (a profile-only edit): recorded in PBM, the VM's devices unchanged.
func (o *vmOps) ReconfigVMTask(ctx *simulator.Context, req *types.ReconfigVM_Task) soap.HasFault {
	vm := vmObject(o.sim.reg, o.Self)
	task := o.sim.longTask(o.Self, o.name, "ReconfigVM_Task", func() types.BaseMethodFault {
		return o.sim.setDiskPolicies(vm, &req.Spec)
	})
	return &methods.ReconfigVM_TaskBody{Res: &types.ReconfigVM_TaskResponse{Returnval: task}}
}

// PowerOnVMTask powers a VM on where its host is up and tells the hook.
func (o *vmOps) PowerOnVMTask(ctx *simulator.Context, req *types.PowerOnVM_Task) soap.HasFault {
	s := o.sim
	s.mu.Lock()
	vm := s.vms[o.name]
	up := s.hosts[vm.host].powered
	wasOn := vm.on
	if up {
		vm.on, vm.pendingRestart = true, false
	}
	s.mu.Unlock()
	if !up {
		return &methods.PowerOnVM_TaskBody{Fault_: simulator.Fault("host "+vm.host+" is not responding",
			&types.HostNotConnected{})}
	}
	res := vmObject(s.reg, o.Self).PowerOnVMTask(ctx, req)
	if !wasOn {
		s.hook.Run("power-on", vm.node)
	}
	return res
}

// PowerOffVMTask powers a VM off (no HA restart follows) and tells the hook.
func (o *vmOps) PowerOffVMTask(ctx *simulator.Context, req *types.PowerOffVM_Task) soap.HasFault {
	s := o.sim
	s.mu.Lock()
	vm := s.vms[o.name]
	wasOn := vm.on
	vm.on, vm.pendingRestart = false, false
	s.mu.Unlock()
	res := vmObject(s.reg, o.Self).PowerOffVMTask(ctx, req)
	if wasOn {
		s.hook.Run("power-off", vm.node)
	}
	return res
}

func (s *Sim) migrate(vmName, target string) types.BaseMethodFault {
	s.mu.Lock()
	h, ok := s.hosts[target]
	usable := ok && h.powered && !h.maintenance && !h.witness
	s.mu.Unlock()
	if !usable {
		return invalidState(fmt.Sprintf("host %q cannot run virtual machines now", target))
	}
	if s.cfg.Model.VMMemoryMB > 0 {
		s.mu.Lock()
		vm := s.vms[vmName]
		node, fromSite, toSite := vm.node, s.hosts[vm.host].site, s.hosts[target].site
		s.mu.Unlock()
		if !s.hook.RunWait("vmotion", node, fromSite, toSite) {
			return invalidState(fmt.Sprintf("migration of %s failed: the lab could not move its node", vmName))
		}
	} else if !s.sleep(seconds(s.cfg.Model.MigrationS)) {
		return invalidState("simulator is stopping")
	}
	s.mu.Lock()
	vm := s.vms[vmName]
	from := vm.host
	vm.host = target
	s.mu.Unlock()
	s.moveVM(vmName, from, target)
	ev := s.hostEvent(target)
	ev.Vm = &types.VmEventArgument{EntityEventArgument: types.EntityEventArgument{Name: vmName}, Vm: s.inv.VMs[vmName]}
	ev.FullFormattedMessage = fmt.Sprintf("Migration of virtual machine %s from %s to %s completed", vmName, from, target)
	ds := &types.DatastoreEventArgument{EntityEventArgument: types.EntityEventArgument{Name: "vsanDatastore"},
		Datastore: s.inv.Datastore}
	ev.Ds = ds
	s.postEvent(&types.VmMigratedEvent{VmEvent: types.VmEvent{Event: ev.Event},
		SourceHost: *s.hostEvent(from).Host, SourceDatacenter: s.datacenterArg(), SourceDatastore: ds})
	s.mu.Lock()
	outside := s.hosts[target].site != s.vms[vmName].site
	s.mu.Unlock()
	if s.cfg.Model.DRSMoveBackS > 0 && outside {
		s.after(seconds(s.cfg.Model.DRSMoveBackS), func() { s.drsCorrects(vmName) })
	}
	return nil
}

// drsCorrects is fully automated DRS acting on a "should run on" rule the VM now violates: it moves the VM
// back to a usable host of its site. The cluster's VM/host rules are preferential (mandatory false), and
// DRS attempts to correct a configuration that violates a rule
// (provenance: drs.should_rule_corrects); when it does so is the model's drs_move_back_s.
func (s *Sim) drsCorrects(vmName string) {
	s.mu.Lock()
	vm := s.vms[vmName]
	target := s.usableHost(vm.site, "")
	outside := vm.on && s.hosts[vm.host].site != vm.site
	s.mu.Unlock()
	if !outside || target == "" || !asDocumented("drs.should_rule_corrects") {
		return
	}
	if fault := s.migrate(vmName, target); fault != nil {
		s.log.Printf("DRS could not move %s back to %s: %T", vmName, target, fault)
		return
	}
	ev := s.hostEvent(target)
	ev.Vm = &types.VmEventArgument{EntityEventArgument: types.EntityEventArgument{Name: vmName}, Vm: s.inv.VMs[vmName]}
	ev.FullFormattedMessage = fmt.Sprintf("Migrating %s to %s in %s (DRS, VM/host rule)", vmName, target, s.cfg.Cluster)
	s.postEvent(&types.DrsVmMigratedEvent{VmMigratedEvent: types.VmMigratedEvent{VmEvent: types.VmEvent{Event: ev.Event},
		SourceHost: *s.hostEvent(target).Host, SourceDatacenter: s.datacenterArg()}})
	s.log.Printf("DRS moved %s back to %s (its site's should-run rule)", vmName, target)
}

func (s *Sim) enterMaintenance(name, action string, evacuateOff bool, timeout int32) types.BaseMethodFault {
	s.mu.Lock()
	h := s.hosts[name]
	var moves [][2]string
	for _, vm := range s.sortedVMs() {
		if vm.host != name || (!vm.on && !evacuateOff) {
			continue
		}
		target := s.usableHost(vm.site, name)
		if target == name || target == "" {
			target = s.usableHost(s.otherSite(vm.site), name)
		}
		if target == "" {
			s.mu.Unlock()
			return invalidState("no host can take virtual machine " + vm.name)
		}
		moves = append(moves, [2]string{vm.name, target})
	}
	s.mu.Unlock()
	for _, mv := range moves {
		if f := s.migrate(mv[0], mv[1]); f != nil {
			return f
		}
	}
	evacuate := action == string(types.VsanHostDecommissionModeObjectActionEvacuateAllData)
	s.mu.Lock()
	h.maintenance = true
	s.vsan.SetHost(name, h.powered, true, evacuate, s.now())
	s.mu.Unlock()
	if evacuate && !s.waitEvacuated(name, timeout) {
		return &types.Timedout{}
	}
	s.update(s.inv.Hosts[name], types.PropertyChange{Name: "runtime.inMaintenanceMode", Val: true})
	s.postEvent(&types.EnteredMaintenanceModeEvent{HostEvent: s.hostEvent(name)})
	return nil
}

// waitEvacuated waits until no component is left on the host (bounded by the
// task's timeout, or an hour).
func (s *Sim) waitEvacuated(name string, timeout int32) bool {
	limit := s.now().Add(3600 * 1e9)
	if timeout > 0 {
		limit = s.now().Add(seconds(float64(timeout)))
	}
	for s.now().Before(limit) {
		s.mu.Lock()
		s.vsan.Advance(s.now())
		left := 0
		for _, obj := range s.vsan.Objects {
			for _, c := range obj.Components {
				if c.Host == name {
					left++
				}
			}
		}
		s.mu.Unlock()
		if left == 0 {
			return true
		}
		if !s.sleep(100 * 1e6) {
			return false
		}
	}
	return false
}

func (s *Sim) exitMaintenance(name string) types.BaseMethodFault {
	s.mu.Lock()
	h := s.hosts[name]
	h.maintenance = false
	s.vsan.SetHost(name, h.powered, false, false, s.now())
	s.mu.Unlock()
	s.update(s.inv.Hosts[name], types.PropertyChange{Name: "runtime.inMaintenanceMode", Val: false})
	s.postEvent(&types.ExitMaintenanceModeEvent{HostEvent: s.hostEvent(name)})
	s.retryRestarts(h.site)
	return nil
}

func (s *Sim) otherSite(site string) string {
	for _, st := range s.cfg.Sites {
		if st.Name != site {
			return st.Name
		}
	}
	return ""
}
