package main

import (
	"fmt"
	"time"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"
)

// longTask registers a vim Task that runs work in the background without
// holding the entity's lock, so readers are never blocked while it runs.
func (s *Sim) longTask(entity types.ManagedObjectReference, entityName, method string,
	work func() types.BaseMethodFault) types.ManagedObjectReference {
	t := &simulator.Task{}
	t.Info.Name = method
	t.Info.DescriptionId = fmt.Sprintf("%s.%s", entity.Type, method)
	t.Info.Entity = &entity
	t.Info.EntityName = entityName
	t.Info.Reason = &types.TaskReasonUser{UserName: s.cfg.Username}
	t.Info.QueueTime = time.Now()
	t.Info.State = types.TaskInfoStateRunning
	now := time.Now()
	t.Info.StartTime = &now
	s.reg.Put(t)
	t.Info.Key = t.Self.Value
	t.Info.Task = t.Self
	s.timers.Add(1)
	go func() {
		defer s.timers.Done()
		fault := work()
		changes := []types.PropertyChange{
			{Name: "info.completeTime", Val: time.Now()},
			{Name: "info.state", Val: types.TaskInfoStateSuccess},
		}
		if fault != nil {
			changes[1].Val = types.TaskInfoStateError
			changes = append(changes, types.PropertyChange{Name: "info.error",
				Val: types.LocalizedMethodFault{Fault: fault, LocalizedMessage: fmt.Sprintf("%T", fault)}})
		}
		s.update(t.Self, changes...)
	}()
	return t.Self
}

// sleep waits d unless the simulator is closing (then it returns false).
func (s *Sim) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func seconds(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }

func invalidState(msg string) types.BaseMethodFault {
	return &types.InvalidState{VimFault: types.VimFault{MethodFault: types.MethodFault{
		FaultMessage: []types.LocalizableMessage{{Key: "com.vmware.vsim.invalidState", Message: msg}}}}}
}
