package main

import (
	"context"
	"fmt"
	"log"
	"math"
	"os"
	"sync"
	"time"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/types"
	vsantypes "github.com/vmware/govmomi/vsan/types"
)

// hostState is what the simulator tracks of a host beyond the vim objects.
type hostState struct {
	name, site  string
	witness     bool
	powered     bool
	maintenance bool
}

// vmState is the truth about a VM: where it runs, whether it is on, and
// whether HA owes it a restart.
type vmState struct {
	name, node, site, host string
	on                     bool
	pendingRestart         bool
}

// Sim is the vSAN-aware vCenter: the govmomi simulator plus the models it lacks.
type Sim struct {
	cfg      *Config
	model    *simulator.Model
	svc      *simulator.Service
	reg      *simulator.Registry
	sessions sessions
	inv      *Inventory
	hook     *Hook
	log      *log.Logger
	now      func() time.Time

	ctx    context.Context
	cancel context.CancelFunc
	timers sync.WaitGroup

	mu        sync.Mutex // guards everything below and the vSAN model
	vsan      *VsanModel
	hosts     map[string]*hostState
	vms       map[string]*vmState
	loadUntil map[string]time.Time // io-load announced per site
	// healthCache is the health service's last summary (a full run), served to fetchFromCache=true.
	healthCache *vsantypes.VsanClusterHealthSummary
	// diskPolicies is each disk whose policy a ReconfigVM_Task set ("vm-42:2000" -> profile id); a disk not
	// here follows its VM's policy.
	diskPolicies map[string]string
	pbm          *profileManager // the Storage Policy API's profile manager, once registered
}

// NewSim builds the inventory and models from the config; nothing listens yet.
func NewSim(cfg *Config, logger *log.Logger) (*Sim, error) {
	model := simulator.VPX()
	model.Datacenter, model.Host, model.Cluster, model.ClusterHost = 0, 0, 0, 0
	model.Machine, model.Datastore, model.Portgroup, model.Autostart = 0, 0, 0, false
	if err := model.Create(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Sim{
		cfg: cfg, model: model, svc: model.Service, reg: model.Map(), log: logger, now: time.Now,
		ctx: ctx, cancel: cancel,
		hosts: map[string]*hostState{}, vms: map[string]*vmState{}, loadUntil: map[string]time.Time{},
		diskPolicies: map[string]string{},
	}
	secrets := []string{cfg.PasswordEnv}
	for _, a := range cfg.Accounts {
		secrets = append(secrets, a.PasswordEnv)
	}
	s.hook = NewHook(ctx, cfg.Hook, logger, secrets...) // the hook never sees a vCenter password
	client, err := vim25.NewClient(ctx, model.Service)
	if err != nil {
		return nil, err
	}
	if s.inv, err = BuildInventory(ctx, client, cfg); err != nil {
		s.Close()
		return nil, err
	}
	s.vsan = NewVsanModel(cfg, s.now())
	for _, site := range cfg.Sites {
		for _, h := range site.Hosts {
			s.hosts[h.Name] = &hostState{name: h.Name, site: site.Name, powered: true}
		}
	}
	s.hosts[cfg.Witness.Name] = &hostState{name: cfg.Witness.Name, site: cfg.Witness.Site, witness: true, powered: true}
	for _, vm := range cfg.VMs {
		s.vms[vm.Name] = &vmState{name: vm.Name, node: vm.Node, site: cfg.SiteOf(vm.Host), host: vm.Host, on: true}
	}
	s.attachVsanConfig()
	s.attachHardwareIdentity()
	s.update(s.inv.Datastore, types.PropertyChange{Name: "summary.type", Val: "vsan"})
	s.reg.Handler = s.intercept
	return s, nil
}

// Close stops timers and hooks and removes the simulator's files.
func (s *Sim) Close() {
	s.cancel()
	s.timers.Wait()
	s.hook.Wait()
	s.model.Remove()
	if s.inv != nil && s.inv.dir != "" {
		_ = os.RemoveAll(s.inv.dir)
	}
}

// simCtx is a fresh simulator context for changes made outside a vim call.
func (s *Sim) simCtx() *simulator.Context {
	c := *s.svc.Context
	c.Context = context.Background()
	return &c
}

// update applies property changes so that WaitForUpdatesEx reports them.
func (s *Sim) update(ref types.ManagedObjectReference, changes ...types.PropertyChange) {
	ctx := s.simCtx()
	obj := s.reg.Get(ref)
	s.reg.WithLock(ctx, obj, func() { s.reg.Update(ctx, obj, changes) })
}

// postEvent records an event in the EventManager's history.
func (s *Sim) postEvent(ev types.BaseEvent) {
	ctx := s.simCtx()
	m := s.reg.EventManager()
	s.reg.WithLock(ctx, m, func() { m.PostEvent(ctx, &types.PostEvent{EventToPost: ev}) })
}

// after runs f once d has passed, unless the simulator is closing.
func (s *Sim) after(d time.Duration, f func()) {
	s.timers.Add(1)
	go func() {
		defer s.timers.Done()
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-s.ctx.Done():
		case <-t.C:
			f()
		}
	}()
}

// Tick advances the vSAN model every period: transient faults expire, repair
// timers fire, and each site with resync traffic is announced to the hook.
func (s *Sim) Tick(period time.Duration) {
	s.timers.Add(1)
	go func() {
		defer s.timers.Done()
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-s.ctx.Done():
				return
			case <-t.C:
				s.announceResync()
			}
		}
	}()
}

// announceResync runs `io-load SITE MB_PER_S SECONDS` when a site's resync
// would outlast what was announced before.
func (s *Sim) announceResync() {
	s.mu.Lock()
	now := s.now()
	rate := s.cfg.Model.ResyncRateMBs
	var calls [][]string
	for site, bytes := range s.vsan.SiteResync(now) {
		secs := math.Ceil(bytes / (rate * mib))
		end := now.Add(time.Duration(secs) * time.Second)
		if bytes > 0 && end.Sub(s.loadUntil[site]) > time.Second {
			s.loadUntil[site] = end
			calls = append(calls, []string{site, fmt.Sprintf("%g", rate), fmt.Sprintf("%d", int64(secs))})
		}
	}
	s.mu.Unlock()
	for _, c := range calls {
		s.hook.Run("io-load", c...)
	}
}

func (s *Sim) hostEvent(name string) types.HostEvent {
	return types.HostEvent{Event: types.Event{
		Host:            &types.HostEventArgument{EntityEventArgument: types.EntityEventArgument{Name: name}, Host: s.inv.Hosts[name]},
		ComputeResource: s.clusterArg(),
		Datacenter:      s.datacenterArg(),
	}}
}

func (s *Sim) clusterArg() *types.ComputeResourceEventArgument {
	return &types.ComputeResourceEventArgument{EntityEventArgument: types.EntityEventArgument{Name: s.cfg.Cluster},
		ComputeResource: s.inv.Cluster}
}

func (s *Sim) datacenterArg() *types.DatacenterEventArgument {
	return &types.DatacenterEventArgument{EntityEventArgument: types.EntityEventArgument{Name: s.cfg.Datacenter},
		Datacenter: s.inv.Datacenter}
}
