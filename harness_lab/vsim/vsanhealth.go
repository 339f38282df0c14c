package main

import (
	"math"
	"strings"
	"time"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/soap"
	vim "github.com/vmware/govmomi/vim25/types"
	"github.com/vmware/govmomi/vsan"
	"github.com/vmware/govmomi/vsan/methods"
	"github.com/vmware/govmomi/vsan/types"
)

// vsanRegistry serves the vCenter vSAN management API on /vsanHealth, with
// the managed object IDs vsanapiutils.GetVsanVcMos uses.
func (s *Sim) vsanRegistry() *simulator.Registry {
	r := simulator.NewRegistry()
	r.Namespace = vsan.Namespace
	r.Path = vsan.Path
	r.Put(&objectSystem{Self: vsan.VsanQueryObjectIdentitiesInstance, sim: s})
	r.Put(&healthSystem{Self: vim.ManagedObjectReference{Type: "VsanVcClusterHealthSystem", Value: "vsan-cluster-health-system"}, sim: s})
	r.Put(&configSystem{Self: vsan.VsanVcClusterConfigSystemInstance, sim: s})
	r.Put(&stretchedSystem{Self: vsan.VsanVcStretchedClusterSystem, sim: s})
	r.Put(&diskManagementSystem{Self: vim.ManagedObjectReference{Type: "VimClusterVsanVcDiskManagementSystem",
		Value: fact("esa.disk_management_system")}, sim: s})
	return r
}

func (s *Sim) wrongCluster(ref vim.ManagedObjectReference) *soap.Fault {
	if ref == s.inv.Cluster {
		return nil
	}
	return simulator.Fault("not a vSAN cluster: "+ref.Value, &vim.ManagedObjectNotFound{Obj: ref})
}

// objectSystem is vsan-cluster-object-system.
type objectSystem struct {
	Self vim.ManagedObjectReference
	sim  *Sim
}

func (o *objectSystem) Reference() vim.ManagedObjectReference { return o.Self }

// syncResult is VsanHostVsanObjectSyncQueryResult with its totals always on
// the wire (vCenter sends 0, the generated type would omit it).
type syncResult struct {
	vim.DynamicData
	TotalObjectsToSync int64                               `xml:"totalObjectsToSync"`
	TotalBytesToSync   int64                               `xml:"totalBytesToSync"`
	TotalRecoveryETA   int64                               `xml:"totalRecoveryETA"`
	Objects            []types.VsanHostVsanObjectSyncState `xml:"objects,omitempty"`
}

// QuerySyncingVsanObjectsSummaryResponse carries syncResult under the wire name.
type QuerySyncingVsanObjectsSummaryResponse struct {
	Returnval syncResult `xml:"returnval"`
}

type syncSummaryBody struct {
	Res    *QuerySyncingVsanObjectsSummaryResponse `xml:"urn:vsan QuerySyncingVsanObjectsSummaryResponse,omitempty"`
	Fault_ *soap.Fault                             `xml:"http://schemas.xmlsoap.org/soap/envelope/ Fault,omitempty"`
}

func (b *syncSummaryBody) Fault() *soap.Fault { return b.Fault_ }

// QuerySyncingVsanObjectsSummary reports the resync queue: totals over every
// object matching the filter, objects[] paginated by offset/numberOfObjects.
func (o *objectSystem) QuerySyncingVsanObjectsSummary(ctx *simulator.Context, req *types.QuerySyncingVsanObjectsSummary) soap.HasFault {
	if f := o.sim.wrongCluster(req.Cluster); f != nil {
		return &syncSummaryBody{Fault_: f}
	}
	filter := types.VsanSyncingObjectFilter{}
	if req.SyncingObjectFilter != nil {
		filter = *req.SyncingObjectFilter
	}
	if o.sim.cfg.Model.ResyncSummaryRefused == 1 {
		return &syncSummaryBody{Fault_: simulator.Fault("QuerySyncingVsanObjectsSummary is not available",
			&vim.NotSupported{})}
	}
	if filter.ResyncType != "" && !syncReasons()[filter.ResyncType] && asDocumented("sync_reason.other") {
		return &syncSummaryBody{Fault_: simulator.Fault("resyncType "+filter.ResyncType+" is not a VsanSyncReason",
			&vim.InvalidArgument{InvalidProperty: "resyncType"})}
	}
	return &syncSummaryBody{Res: &QuerySyncingVsanObjectsSummaryResponse{Returnval: o.sim.syncSummary(filter)}}
}

// syncReasons are VsanSyncReason's values (pyVmomi typeinfo vim.vsan.VsanSyncReason); the filter's
// resyncType is "one of the values defined in VsanSyncReason" (vSAN Management API 8.0U3,
// vim.cluster.VsanSyncingObjectFilter). What vCenter does with another value is not documented:
// the simulator refuses it (stricter than documented) so that a backend sending one fails a test.
// Unset, it matches every reason (itself an assumption of the backend's, checked by its probe).
func syncReasons() map[string]bool {
	reasons := map[string]bool{}
	for _, f := range facts {
		if strings.HasPrefix(f.ID, "sync_reason.") && f.Kind == "documented" {
			reasons[fact(f.ID)] = true
		}
	}
	return reasons
}

func (s *Sim) syncSummary(filter types.VsanSyncingObjectFilter) syncResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	var res syncResult
	var objs []types.VsanHostVsanObjectSyncState
	for _, so := range s.vsan.Syncing(s.now(), filter.ResyncStatus) {
		state := types.VsanHostVsanObjectSyncState{Uuid: so.UUID}
		for _, sc := range so.Components {
			c := sc.Component
			if filter.ResyncType != "" && filter.ResyncType != c.Rebuild.Reason {
				continue
			}
			if filter.ResyncType == "" && !factBool("sync_reason.unset_matches_all") {
				continue
			}
			state.Components = append(state.Components, types.VsanHostComponentSyncState{
				Uuid: c.UUID, DiskUuid: c.Rebuild.DiskUUID, HostUuid: s.vsan.Hosts[c.Rebuild.Host].NodeUUID,
				BytesToSync: sc.BytesToSync, RecoveryETA: sc.ETA, Reasons: []string{c.Rebuild.Reason},
			})
			res.TotalBytesToSync += sc.BytesToSync
			res.TotalRecoveryETA = max(res.TotalRecoveryETA, sc.ETA)
		}
		if len(state.Components) > 0 {
			objs = append(objs, state)
		}
	}
	res.TotalObjectsToSync = int64(len(objs))
	offset := min(max(filter.Offset, 0), int64(len(objs)))
	end := int64(len(objs))
	if filter.NumberOfObjects > 0 {
		end = min(offset+filter.NumberOfObjects, end)
	}
	res.Objects = objs[offset:end]
	return res
}

// VsanQueryObjectIdentities maps each object to its VM, type and description.
func (o *objectSystem) VsanQueryObjectIdentities(ctx *simulator.Context, req *types.VsanQueryObjectIdentities) soap.HasFault {
	if req.Cluster != nil {
		if f := o.sim.wrongCluster(*req.Cluster); f != nil {
			return &methods.VsanQueryObjectIdentitiesBody{Fault_: f}
		}
	}
	want := map[string]bool{}
	for _, u := range req.ObjUuids {
		want[u] = true
	}
	kinds := map[string]bool{}
	for _, t := range req.ObjTypes {
		kinds[t] = true
	}
	res := &types.VsanObjectIdentityAndHealth{}
	s := o.sim
	s.mu.Lock()
	s.vsan.Advance(s.now())
	overall := objectHealth(s.vsan)
	for _, obj := range s.vsan.Objects {
		if (len(want) > 0 && !want[obj.UUID]) || (len(kinds) > 0 && !kinds[obj.Type]) {
			continue
		}
		if req.IncludeObjIdentity != nil && !*req.IncludeObjIdentity {
			continue
		}
		vm := s.inv.VMs[obj.VM]
		res.Identities = append(res.Identities, types.VsanObjectIdentity{
			Uuid: obj.UUID, Type: obj.Type, Vm: &vm, Description: obj.Description,
			VmInstanceUuid: stableUUID("vm", obj.VM),
		})
	}
	s.mu.Unlock()
	if req.IncludeHealth != nil && *req.IncludeHealth {
		res.Health = overall
	}
	return &methods.VsanQueryObjectIdentitiesBody{Res: &types.VsanQueryObjectIdentitiesResponse{Returnval: res}}
}

// objectHealth counts the objects in each VsanObjectHealthState. Callers hold s.mu.
func objectHealth(m *VsanModel) *types.VsanObjectOverallHealth {
	byHealth := map[string]*types.VsanObjectHealth{}
	var order []string
	for _, obj := range m.Objects {
		h := m.ObjectHealth(obj)
		if byHealth[h] == nil {
			byHealth[h] = &types.VsanObjectHealth{Health: h}
			order = append(order, h)
		}
		byHealth[h].NumObjects++
		byHealth[h].ObjUuids = append(byHealth[h].ObjUuids, obj.UUID)
	}
	out := &types.VsanObjectOverallHealth{}
	for _, h := range order {
		out.ObjectHealthDetail = append(out.ObjectHealthDetail, *byHealth[h])
	}
	return out
}

// healthSystem is vsan-cluster-health-system.
type healthSystem struct {
	Self vim.ManagedObjectReference
	sim  *Sim
}

func (h *healthSystem) Reference() vim.ManagedObjectReference { return h.Self }

// VsanQueryVcClusterHealthSummary gives overallHealth and one group per area.
func (h *healthSystem) VsanQueryVcClusterHealthSummary(ctx *simulator.Context, req *types.VsanQueryVcClusterHealthSummary) soap.HasFault {
	if req.Cluster != nil {
		if f := h.sim.wrongCluster(*req.Cluster); f != nil {
			return &methods.VsanQueryVcClusterHealthSummaryBody{Fault_: f}
		}
	}
	s := h.sim
	s.mu.Lock()
	defer s.mu.Unlock()
	if req.FetchFromCache == nil || !*req.FetchFromCache || s.healthCache == nil {
		s.healthCache = s.healthRun() // a full health run; the service keeps its result
	}
	return &methods.VsanQueryVcClusterHealthSummaryBody{Res: &types.VsanQueryVcClusterHealthSummaryResponse{Returnval: *s.healthCache}}
}

// healthRun is a full health check now: the network group (hosts reachable), the cluster group,
// the data group (objects) and the hardware compatibility group (its colour a model parameter:
// often red on labs whatever the cluster's state). Callers hold s.mu.
func (s *Sim) healthRun() *types.VsanClusterHealthSummary {
	overall, reasons := s.vsan.Health(s.now())
	test := func(id, name, health string) types.VsanClusterHealthTest {
		return types.VsanClusterHealthTest{TestId: id, TestName: name, TestHealth: health, TestShortDescription: name}
	}
	network := "green"
	for _, name := range s.vsan.HostOrder {
		if host := s.vsan.Hosts[name]; !host.Up && !host.Witness {
			network = "red"
		}
	}
	hcl := "green"
	if s.cfg.Model.HCLRed == 1 {
		hcl = "red"
	}
	data := test(fact("health_group.data")+".objecthealth", "vSAN object health", overall)
	groups := []types.VsanClusterHealthGroup{
		{GroupId: fact("health_group.network"), GroupName: "Network", GroupHealth: network,
			GroupTests: []types.VsanClusterHealthTest{test(fact("health_group.network")+".clusterpartition", "vSAN cluster partition", network)}},
		{GroupId: fact("health_group.cluster"), GroupName: "Cluster", GroupHealth: "green",
			GroupTests: []types.VsanClusterHealthTest{test(fact("health_group.cluster")+".clomdliveness", "CLOMD liveness", "green")}},
		{GroupId: fact("health_group.data"), GroupName: "Data", GroupHealth: overall, GroupTests: []types.VsanClusterHealthTest{data}},
		{GroupId: fact("health_group.hcl"), GroupName: "Hardware compatibility", GroupHealth: hcl,
			GroupTests: []types.VsanClusterHealthTest{test(fact("health_group.hcl")+".hcldbuptodate", "vSAN HCL DB up-to-date", hcl)}},
	}
	for _, r := range reasons {
		groups[2].GroupTests = append(groups[2].GroupTests, test(fact("health_group.data")+".reason", r, overall))
	}
	if hcl == "red" {
		overall = "red" // the overall colour rolls every group up
	}
	now := s.now()
	if !asDocumented("health_cache.timestamp") {
		now = time.Unix(0, 0) // the mutation pass: a summary stamped other than when it was computed
	}
	return &types.VsanClusterHealthSummary{
		Timestamp: &now, OverallHealth: overall, Cluster: &s.inv.Cluster, ObjectHealth: objectHealth(s.vsan),
		OverallHealthDescription: "vSAN cluster health is " + overall, Groups: groups,
	}
}

// VsanHealthRepairClusterObjectsImmediate starts rebuilding every failed
// component now instead of at the end of the repair timer.
func (h *healthSystem) VsanHealthRepairClusterObjectsImmediate(ctx *simulator.Context, req *types.VsanHealthRepairClusterObjectsImmediate) soap.HasFault {
	s := h.sim
	if f := s.wrongCluster(req.Cluster); f != nil {
		return &methods.VsanHealthRepairClusterObjectsImmediateBody{Fault_: f}
	}
	task := s.longTask(s.inv.Cluster, s.cfg.Cluster, "VsanHealthRepairClusterObjectsImmediate", func() vim.BaseMethodFault {
		s.mu.Lock()
		s.vsan.RepairNow(s.now())
		s.mu.Unlock()
		s.announceResync()
		return nil
	})
	return &methods.VsanHealthRepairClusterObjectsImmediateBody{
		Res: &types.VsanHealthRepairClusterObjectsImmediateResponse{Returnval: task}}
}

// configSystem is vsan-cluster-config-system.
type configSystem struct {
	Self vim.ManagedObjectReference
	sim  *Sim
}

func (c *configSystem) Reference() vim.ManagedObjectReference { return c.Self }

// objectRepairTimer is in minutes: "delay time in minutes ... Default value: 60"
// (developer.broadcom.com/xapis/virtual-infrastructure-json-api/latest/data-structures/VsanExtendedConfig).
// The lab's model keeps the timer as a duration; the API serves and takes whole minutes.
func repairTimerMinutes(d time.Duration) int64 {
	return int64(math.Ceil(float64(d) / float64(repairTimerUnit())))
}

// repairTimerUnit is the unit objectRepairTimer is served and taken in (a mutated unit serves seconds).
func repairTimerUnit() time.Duration {
	if asDocumented("repair_timer.unit") {
		return time.Minute
	}
	return time.Second
}

// VsanClusterGetConfig reports vSAN enabled and extendedConfig.objectRepairTimer (minutes).
func (c *configSystem) VsanClusterGetConfig(ctx *simulator.Context, req *types.VsanClusterGetConfig) soap.HasFault {
	s := c.sim
	if f := s.wrongCluster(req.Cluster); f != nil {
		return &methods.VsanClusterGetConfigBody{Fault_: f}
	}
	s.mu.Lock()
	timer := repairTimerMinutes(s.vsan.RepairTimer)
	s.mu.Unlock()
	info := types.VsanConfigInfoEx{
		VsanClusterConfigInfo: types.VsanClusterConfigInfo{Enabled: vim.NewBool(true),
			DefaultConfig: &vim.VsanClusterConfigInfoHostDefaultInfo{Uuid: stableUUID("cluster", s.cfg.Cluster),
				AutoClaimStorage: vim.NewBool(false)}},
		ExtendedConfig: &types.VsanExtendedConfig{ObjectRepairTimer: timer},
	}
	return &methods.VsanClusterGetConfigBody{Res: &types.VsanClusterGetConfigResponse{Returnval: info}}
}

// VsanClusterReconfig applies extendedConfig.objectRepairTimer, in minutes (other
// parts of the spec are accepted and ignored).
func (c *configSystem) VsanClusterReconfig(ctx *simulator.Context, req *types.VsanClusterReconfig) soap.HasFault {
	s := c.sim
	if f := s.wrongCluster(req.Cluster); f != nil {
		return &methods.VsanClusterReconfigBody{Fault_: f}
	}
	ext := req.VsanReconfigSpec.ExtendedConfig
	task := s.longTask(s.inv.Cluster, s.cfg.Cluster, "VsanClusterReconfig", func() vim.BaseMethodFault {
		if ext != nil && ext.ObjectRepairTimer > 0 {
			s.mu.Lock()
			s.vsan.Advance(s.now())
			s.vsan.RepairTimer = time.Duration(ext.ObjectRepairTimer) * repairTimerUnit()
			s.vsan.Advance(s.now())
			s.mu.Unlock()
			s.log.Printf("vSAN object repair timer set to %d min", ext.ObjectRepairTimer)
		}
		return nil
	})
	return &methods.VsanClusterReconfigBody{Res: &types.VsanClusterReconfigResponse{Returnval: task}}
}

// stretchedSystem is vsan-stretched-cluster-system.
type stretchedSystem struct {
	Self vim.ManagedObjectReference
	sim  *Sim
}

func (t *stretchedSystem) Reference() vim.ManagedObjectReference { return t.Self }

func (s *Sim) preferredSite() string {
	for _, site := range s.cfg.Sites {
		if site.Preferred {
			return site.Name
		}
	}
	return s.cfg.Sites[0].Name
}

// VSANVcGetWitnessHosts lists the witness host with its preferred fault domain.
func (t *stretchedSystem) VSANVcGetWitnessHosts(ctx *simulator.Context, req *types.VSANVcGetWitnessHosts) soap.HasFault {
	s := t.sim
	if f := s.wrongCluster(req.Cluster); f != nil {
		return &methods.VSANVcGetWitnessHostsBody{Fault_: f}
	}
	ref := s.inv.Hosts[s.cfg.Witness.Name]
	pref := s.preferredSite()
	info := types.VimClusterVSANWitnessHostInfo{
		NodeUuid: s.vsan.Hosts[s.cfg.Witness.Name].NodeUUID, FaultDomainName: s.cfg.Witness.Site,
		PreferredFdName: pref, PreferredFdUuid: stableUUID("faultdomain", pref), Host: &ref,
		MetadataMode: vim.NewBool(false),
	}
	return &methods.VSANVcGetWitnessHostsBody{Res: &types.VSANVcGetWitnessHostsResponse{
		Returnval: []types.VimClusterVSANWitnessHostInfo{info}}}
}

// VSANVcGetPreferredFaultDomain names the preferred site.
func (t *stretchedSystem) VSANVcGetPreferredFaultDomain(ctx *simulator.Context, req *types.VSANVcGetPreferredFaultDomain) soap.HasFault {
	s := t.sim
	if f := s.wrongCluster(req.Cluster); f != nil {
		return &methods.VSANVcGetPreferredFaultDomainBody{Fault_: f}
	}
	pref := s.preferredSite()
	return &methods.VSANVcGetPreferredFaultDomainBody{Res: &types.VSANVcGetPreferredFaultDomainResponse{
		Returnval: &types.VimClusterVSANPreferredFaultDomainInfo{
			PreferredFaultDomainName: pref, PreferredFaultDomainId: stableUUID("faultdomain", pref)}}}
}
