package main

import (
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vmware/govmomi/vim25/types"
	vsantypes "github.com/vmware/govmomi/vsan/types"
)

func testConfig() *Config {
	host := func(name string) HostConfig {
		return HostConfig{Name: name, DiskGroups: []DiskGroup{{
			Cache: "naa.5000c5000" + name[4:] + "00", Capacity: []string{"naa.5000c5000" + name[4:] + "01", "naa.5000c5000" + name[4:] + "02"}}}}
	}
	cfg := &Config{
		Datacenter: "dc-lab", Cluster: "stretched-01",
		Sites: []Site{
			{Name: "site-a", Preferred: true, Hosts: []HostConfig{host("esx-a1"), host("esx-a2")}},
			{Name: "site-b", Hosts: []HostConfig{host("esx-b1"), host("esx-b2")}},
		},
		Witness: Witness{Name: "vsan-witness-01", Site: "witness",
			DiskGroups: []DiskGroup{{Cache: "mpx.vmhba1:C0:T1:L0", Capacity: []string{"mpx.vmhba1:C0:T2:L0"}}}},
		VMs: []VMConfig{{Name: "pg-node-a", Host: "esx-a1", Node: "node-a", DiskGB: 8},
			{Name: "pg-node-b", Host: "esx-b1", Node: "node-b", DiskGB: 8}},
		Model:  ModelConfig{HARestartDelayS: 0.05, ResyncRateMBs: 100, ComponentMB: 1000, IOPauseS: 1, RepairTimerS: 60, MigrationS: 0.01, PermanentClearHeals: 1},
		Listen: "127.0.0.1:0", ControlListen: "127.0.0.1:0", Username: "u", PasswordEnv: "P", ReadyFile: "r",
	}
	return cfg
}

// clock is a manual clock for the vSAN model.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

func totalBytes(m *VsanModel, now time.Time) int64 {
	var n int64
	for _, o := range m.Syncing(now, "") {
		for _, c := range o.Components {
			n += c.BytesToSync
		}
	}
	return n
}

func TestResyncDrainsAtTheModelledRateAndReachesZero(t *testing.T) {
	for _, rate := range []float64{50, 200} {
		cfg := testConfig()
		cfg.Model.ResyncRateMBs = rate
		clk := &clock{t: time.Unix(1000, 0)}
		m := NewVsanModel(cfg, clk.now())
		// naa.5000c5000a101 holds the home components of pg-node-a's two objects.
		m.SetFault(m.DiskByDevice("esx-a1", "naa.5000c5000a101"), FaultPermanent, 0, clk.now())
		want := int64(2 * cfg.Model.ComponentMB * mib)
		if got := totalBytes(m, clk.now()); got != want {
			t.Fatalf("rate %g: bytes to sync at start = %d, want %d", rate, got, want)
		}
		clk.advance(time.Second)
		if got, left := totalBytes(m, clk.now()), want-int64(rate*mib); got != left {
			t.Fatalf("rate %g: after 1 s bytes = %d, want %d", rate, got, left)
		}
		full := time.Duration(float64(want) / (rate * mib) * float64(time.Second))
		clk.advance(full - time.Second - 10*time.Millisecond)
		if totalBytes(m, clk.now()) == 0 {
			t.Fatalf("rate %g: resync ended before %s", rate, full)
		}
		clk.advance(20 * time.Millisecond)
		if got := totalBytes(m, clk.now()); got != 0 {
			t.Fatalf("rate %g: %d bytes left after %s", rate, got, full)
		}
		if h, why := m.Health(clk.now()); h != "green" {
			t.Fatalf("rate %g: health %s after resync: %v", rate, h, why)
		}
	}
}

func TestAbsentComponentsWaitForTheRepairTimer(t *testing.T) {
	cfg := testConfig()
	clk := &clock{t: time.Unix(1000, 0)}
	m := NewVsanModel(cfg, clk.now())
	m.SetFault(m.DiskByDevice("esx-a1", "naa.5000c5000a101"), FaultUnplug, 0, clk.now())
	if h, _ := m.Health(clk.now()); h != "yellow" || totalBytes(m, clk.now()) != 0 {
		t.Fatalf("unplugged disk: health %s, %d bytes syncing; want yellow and no resync yet", h, totalBytes(m, clk.now()))
	}
	clk.advance(time.Duration(cfg.Model.RepairTimerS) * time.Second)
	if totalBytes(m, clk.now()) == 0 {
		t.Fatal("no resync once the repair timer expired")
	}
}

func TestHostDownIsRedAndObjectsKeepMajority(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	m := NewVsanModel(testConfig(), clk.now())
	m.SetHost("esx-a1", false, false, false, clk.now())
	h, why := m.Health(clk.now())
	if h != "red" {
		t.Fatalf("health %s, want red: %v", h, why)
	}
	for _, r := range why {
		if len(r) > 6 && r[:6] == "object" && r[len(r)-12:] == "inaccessible" {
			t.Fatalf("one host down must not make an object inaccessible: %v", why)
		}
	}
}

func newTestSim(t *testing.T, cfg *Config) *Sim {
	t.Helper()
	s, err := NewSim(cfg, log.New(io.Discard, "", 0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func TestSyncingSummaryPaginatesObjectsButTotalsCoverAll(t *testing.T) {
	s := newTestSim(t, testConfig())
	frozen := time.Now()
	s.now = func() time.Time { return frozen }
	// The cache device takes the whole disk group: both objects of pg-node-a
	// and the mirrors of pg-node-b's objects lose their component.
	if err := s.DiskFault("esx-a1", "naa.5000c5000a100", FaultPermanent, 0); err != nil {
		t.Fatal(err)
	}
	all := s.syncSummary(vsantypes.VsanSyncingObjectFilter{})
	if all.TotalObjectsToSync != 4 || len(all.Objects) != 4 {
		t.Fatalf("total %d objects, %d listed; want 4 and 4", all.TotalObjectsToSync, len(all.Objects))
	}
	seen := map[string]bool{}
	for offset := int64(0); offset < 4; offset++ {
		page := s.syncSummary(vsantypes.VsanSyncingObjectFilter{Offset: offset, NumberOfObjects: 1})
		if len(page.Objects) != 1 || page.TotalObjectsToSync != 4 || page.TotalBytesToSync != all.TotalBytesToSync {
			t.Fatalf("offset %d: %d objects, totals %d/%d", offset, len(page.Objects), page.TotalObjectsToSync, page.TotalBytesToSync)
		}
		seen[page.Objects[0].Uuid] = true
	}
	if len(seen) != 4 {
		t.Fatalf("pages repeated objects: %v", seen)
	}
	if past := s.syncSummary(vsantypes.VsanSyncingObjectFilter{Offset: 9, NumberOfObjects: 2}); len(past.Objects) != 0 {
		t.Fatalf("offset past the end listed %d objects", len(past.Objects))
	}
	if active := s.syncSummary(vsantypes.VsanSyncingObjectFilter{ResyncStatus: "active"}); active.TotalObjectsToSync != 1 {
		t.Fatalf("%d active objects, want 1 (resync runs one component at a time)", active.TotalObjectsToSync)
	}
}

func TestHARestartsOnTheOtherHostOfTheSameSite(t *testing.T) {
	s := newTestSim(t, testConfig())
	if err := s.PowerHost("esx-a1", false); err != nil {
		t.Fatal(err)
	}
	vm := vmObject(s.reg, s.inv.VMs["pg-node-a"])
	ctx := s.simCtx()
	// Wait on what a client sees (the vim runtime): the simulator's own
	// state flips before the inventory is updated.
	deadline := time.Now().Add(5 * time.Second)
	for {
		var on bool
		s.reg.WithLock(ctx, vm, func() { on = vm.Runtime.PowerState == types.VirtualMachinePowerStatePoweredOn })
		if on {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("pg-node-a was not restarted")
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.reg.WithLock(ctx, vm, func() {
		if *vm.Runtime.Host != s.inv.Hosts["esx-a2"] {
			t.Errorf("vim VM runtime: restarted on %v, want esx-a2 (same site)", vm.Runtime.Host)
		}
	})
	s.mu.Lock()
	st := *s.vms["pg-node-a"]
	s.mu.Unlock()
	if !st.on || st.host != "esx-a2" {
		t.Errorf("simulator state: %+v, want on esx-a2", st)
	}
	host := hostObject(s.reg, s.inv.Hosts["esx-a1"])
	s.reg.WithLock(ctx, host, func() {
		if host.Runtime.ConnectionState != types.HostSystemConnectionStateNotResponding {
			t.Errorf("failed host connection state %s", host.Runtime.ConnectionState)
		}
	})
	s.mu.Lock()
	other := *s.vms["pg-node-b"]
	s.mu.Unlock()
	if other.host != "esx-b1" || !other.on {
		t.Errorf("pg-node-b moved or stopped: %+v", other)
	}
}

func TestVMOfADeadSiteReturnsWithAHostOfItsSite(t *testing.T) {
	s := newTestSim(t, testConfig())
	_ = s.PowerHost("esx-a1", false)
	_ = s.PowerHost("esx-a2", false)
	time.Sleep(200 * time.Millisecond)
	s.mu.Lock()
	st := *s.vms["pg-node-a"]
	s.mu.Unlock()
	if st.on || !st.pendingRestart {
		t.Fatalf("with site-a down pg-node-a must wait, got %+v", st)
	}
	_ = s.PowerHost("esx-a2", true)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		s.mu.Lock()
		st = *s.vms["pg-node-a"]
		s.mu.Unlock()
		if st.on {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !st.on || st.host != "esx-a2" {
		t.Fatalf("pg-node-a after esx-a2 came back: %+v", st)
	}
}

func TestConfigRefusesNonLoopbackListen(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":8989", "192.0.2.1:443", "[::1]:0"} {
		cfg := testConfig()
		cfg.Listen = addr
		if err := cfg.Validate(); err == nil {
			t.Errorf("listen %q accepted", addr)
		}
	}
}

func TestTransientFaultEndsOnItsOwn(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	m := NewVsanModel(testConfig(), clk.now())
	d := m.DiskByDevice("esx-b1", "naa.5000c5000b101")
	m.SetFault(d, FaultTransient, 2, clk.now())
	if h, _ := m.Health(clk.now()); h != "yellow" {
		t.Fatalf("health %s during a transient fault, want yellow", h)
	}
	clk.advance(2 * time.Second)
	if h, why := m.Health(clk.now()); h != "green" || d.Fault != FaultNone {
		t.Fatalf("after the transient window: health %s (%v), fault %q", h, why, d.Fault)
	}
}

func TestEvacuatingMaintenanceRebuildsEveryComponentOfTheHost(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	cfg := testConfig()
	m := NewVsanModel(cfg, clk.now())
	m.SetHost("esx-a1", true, true, true, clk.now())
	clk.advance(time.Minute)
	m.Advance(clk.now())
	for _, obj := range m.Objects {
		for _, c := range obj.Components {
			if c.Host == "esx-a1" {
				t.Fatalf("component %s still on esx-a1 after evacuation", c.UUID)
			}
			if c.Kind == "Component" && m.Hosts[c.Host].Site == "site-a" && c.Host != "esx-a2" {
				t.Fatalf("component rebuilt on %s, want esx-a2 (same site)", c.Host)
			}
		}
	}
}

func TestAComponentBackFromAbsenceResyncsTheWritesItMissed(t *testing.T) {
	cfg := testConfig()
	cfg.Model.StaleWriteMBs = 10
	clk := &clock{t: time.Unix(1000, 0)}
	m := NewVsanModel(cfg, clk.now())
	m.SetHost("esx-b2", false, false, false, clk.now()) // holds no component: nothing to resync
	m.SetHost("esx-a1", false, false, false, clk.now())
	clk.advance(5 * time.Second)
	m.SetHost("esx-b2", true, false, false, clk.now())
	m.SetHost("esx-a1", true, false, false, clk.now())
	// esx-a1 holds 4 components (pg-node-a's data, pg-node-b's mirrors): 5 s x 10 MB/s each.
	if got, want := totalBytes(m, clk.now()), int64(4*5*10*mib); got != want {
		t.Fatalf("stale bytes %d, want %d", got, want)
	}
	for _, o := range m.Syncing(clk.now(), "") {
		for _, c := range o.Components {
			if c.Component.Rebuild.Reason != "stale" || c.Component.Rebuild.Host != "esx-a1" {
				t.Fatalf("stale resync %+v, want in place on esx-a1", c.Component.Rebuild)
			}
		}
	}
	if h, _ := m.Health(clk.now()); h != "yellow" {
		t.Fatalf("health %s while resyncing, want yellow", h)
	}
	clk.advance(2 * time.Second) // 200 MiB at 100 MB/s
	if got := totalBytes(m, clk.now()); got != 0 {
		t.Fatalf("%d bytes left", got)
	}
}

func TestAModelledMigrationWaitsForTheLabsVmotionAndMovesTheVMOnlyIfItSucceeds(t *testing.T) {
	for _, tc := range []struct {
		name   string
		exit   int
		wantOn string
	}{{"lab moved the node", 0, "esx-b1"}, {"lab failed", 1, "esx-a1"}} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "calls")
			cfg := testConfig()
			cfg.Model.VMMemoryMB = 1024
			cfg.Hook = []string{"/bin/bash", "-c", `sleep 0.3; echo "$@" >> "$0"; exit ` + fmt.Sprint(tc.exit), out}
			s := newTestSim(t, cfg)
			started := time.Now()
			fault := s.migrate("pg-node-a", "esx-b1")
			if took := time.Since(started); took < 300*time.Millisecond {
				t.Fatalf("migration returned after %s, before the lab's vmotion ended", took)
			}
			if (fault == nil) != (tc.exit == 0) {
				t.Fatalf("migration fault %v with the hook exiting %d", fault, tc.exit)
			}
			data, err := os.ReadFile(out)
			if err != nil || string(data) != "vmotion node-a site-a site-b\n" {
				t.Fatalf("hook calls %q (%v)", data, err)
			}
			s.mu.Lock()
			host := s.vms["pg-node-a"].host
			s.mu.Unlock()
			if host != tc.wantOn {
				t.Fatalf("VM on %s, want %s", host, tc.wantOn)
			}
		})
	}
}

func TestAClearAfterAPermanentErrorHealsOnlyWhereTheModelSaysSo(t *testing.T) {
	for _, heals := range []float64{1, 0} {
		cfg := testConfig()
		cfg.Model.PermanentClearHeals = heals
		clk := &clock{t: time.Unix(1000, 0)}
		m := NewVsanModel(cfg, clk.now())
		d := m.DiskByDevice("esx-a1", "naa.5000c5000a101")
		m.SetFault(d, FaultPermanent, 0, clk.now())
		m.SetFault(d, "clear", 0, clk.now())
		if healed := d.Fault == FaultNone; healed != (heals == 1) {
			t.Fatalf("permanent_clear_heals=%v: device fault after the clear is %q", heals, d.Fault)
		}
		m.SetFault(d, FaultTransient, 0, clk.now())
		m.SetFault(d, "clear", 0, clk.now())
		if heals == 1 && d.Fault != FaultNone {
			t.Fatalf("a transient error outlived its clear: %q", d.Fault)
		}
	}
}

func TestASiteLocalPolicyKeepsBothMirrorsInTheVMsSite(t *testing.T) {
	cfg := testConfig()
	cfg.VMs[0].Policy = PolicySiteLocal
	m := NewVsanModel(cfg, time.Unix(1000, 0))
	for _, obj := range m.Objects {
		sites := map[string]bool{}
		for _, c := range obj.Components {
			if c.Kind == "Component" {
				sites[m.Hosts[c.Host].Site] = true
			}
		}
		want := map[string]bool{"site-a": true, "site-b": true}
		if obj.VM == "pg-node-a" {
			want = map[string]bool{"site-a": true}
		}
		if len(sites) != len(want) || !sites["site-a"] {
			t.Errorf("%s %s: data in %v, want %v", obj.VM, obj.Type, sites, want)
		}
	}
}
