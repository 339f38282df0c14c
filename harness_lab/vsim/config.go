package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Config is the simulator's configuration file (see harness-vsim -config).
type Config struct {
	Datacenter string      `json:"datacenter"`
	Cluster    string      `json:"cluster"`
	Sites      []Site      `json:"sites"`
	Witness    Witness     `json:"witness"`
	VMs        []VMConfig  `json:"vms"`
	Model      ModelConfig `json:"model"`
	// HAHostFailedEvent is which event a host failure posts: "legacy" (the DasHostFailedEvent class,
	// the default), "extended" (eventTypeId com.vmware.vc.HA.DasHostFailedEvent) or "both". The vCenter
	// 8.0U3 event catalogue (lamw/vcenter-event-mapping, vsphere-8.0u3.md) lists both; which one a real
	// failure posts is not documented, so the harness's tests run all three.
	HAHostFailedEvent string     `json:"ha_host_failed_event"`
	Hook              []string   `json:"hook"`
	Listen            string     `json:"listen"`
	ControlListen     string     `json:"control_listen"`
	TLS               *TLSConfig `json:"tls"`
	Username          string     `json:"username"`
	PasswordEnv       string     `json:"password_env"`
	// Accounts are users besides the administrator, each with a role (accounts.go).
	Accounts  []Account `json:"accounts"`
	ReadyFile string    `json:"ready_file"`
}

// Site is a vSAN fault domain of the stretched cluster.
type Site struct {
	Name      string       `json:"name"`
	Preferred bool         `json:"preferred"`
	Hosts     []HostConfig `json:"hosts"`
}

// HostConfig is an ESXi host of a site.
type HostConfig struct {
	Name       string      `json:"name"`
	DiskGroups []DiskGroup `json:"disk_groups"`
	// ESA makes the host a vSAN Express Storage Architecture host: one storage pool (a disk group
	// without a cache device), vsanEsaEnabled in its config, no disk mappings.
	ESA bool `json:"esa"`
	// UUID is the server's SMBIOS UUID (hardware.systemInfo.uuid): the one its BMC reports, so a
	// client can tell which BMC powers which host. Empty: the simulator's own, derived from the name.
	UUID string `json:"uuid"`
	// Serial is the server's serial number (hardware.systemInfo.serialNumber); empty: none.
	Serial string `json:"serial"`
}

// DiskGroup is one vSAN disk group: a cache device and its capacity devices.
type DiskGroup struct {
	Cache    string   `json:"cache"`
	Capacity []string `json:"capacity"`
}

// Witness is the witness host, outside the cluster.
type Witness struct {
	Name       string      `json:"name"`
	Site       string      `json:"site"`
	DiskGroups []DiskGroup `json:"disk_groups"`
	// Address is the witness's management VMkernel address (config.network.vnic); empty: the
	// simulator's default, which every host shares.
	Address string `json:"address"`
}

// VMConfig is a virtual machine placed on a host; Node names it to the hook.
type VMConfig struct {
	Name   string `json:"name"`
	Host   string `json:"host"`
	Node   string `json:"node"`
	DiskGB int    `json:"disk_gb"`
	// Policy is where its objects' mirrors go: "" (site mirroring, the stretched cluster's default
	// policy: one mirror per site) or "site-local" (both mirrors in the VM's site, as a policy with
	// site disaster tolerance "none - keep data on preferred/secondary" places them).
	Policy string `json:"policy"`
}

// PolicySiteLocal keeps both mirrors of a VM's objects in its own site.
const PolicySiteLocal = "site-local"

// ModelConfig holds every quantity the simulator models instead of measuring.
type ModelConfig struct {
	HARestartDelayS float64 `json:"ha_restart_delay_s"`
	ResyncRateMBs   float64 `json:"resync_rate_mb_s"`
	ComponentMB     int64   `json:"component_mb"`
	IOPauseS        float64 `json:"io_pause_s"`
	RepairTimerS    int64   `json:"repair_timer_s"`
	MigrationS      float64 `json:"migration_s"`
	// VMMemoryMB > 0 hands a migration's timing to the hook ("vmotion NODE
	// FROM-SITE TO-SITE", waited for): the lab models the pre-copy from the
	// VM's memory and the measured inter-site RTT, then stuns the node. The
	// vmotion_* and stun_s parameters are the hook's; the simulator keeps them
	// in its model so the report names every modelled quantity in one place.
	VMMemoryMB      float64 `json:"vm_memory_mb"`
	VMotionMBs      float64 `json:"vmotion_mb_s"`
	VMotionWindowMB float64 `json:"vmotion_window_mb"`
	DirtyMBs        float64 `json:"dirty_mb_s"`
	StunS           float64 `json:"stun_s"`
	// StaleWriteMBs is the rate at which writes land on an object while one of
	// its components is absent: a component that comes back resyncs that much
	// (capped at component_mb). 0: components come back in sync.
	StaleWriteMBs float64 `json:"stale_write_mb_s"`
	// PermanentClearHeals (1 or 0) is whether clearing a permanent device error restores the
	// device (1: at once) or leaves it failed until it is removed and re-added (0). No document
	// settles it: the backend's assumption A-vsan-permanent-clear, modelled both ways.
	PermanentClearHeals float64 `json:"permanent_clear_heals"`
	// HCLRed (1 or 0) makes the hardware compatibility health group red, as it often is on labs
	// and proofs of concept whatever the cluster's state (and with it the overall health colour).
	HCLRed float64 `json:"hcl_red"`
	// ResyncSummaryRefused (1 or 0) answers the cluster's resync summary with NotSupported (an older or
	// degraded vCenter), so clients fall back to each host's QuerySyncingVsanObjects.
	ResyncSummaryRefused float64 `json:"resync_summary_refused"`
	// DRSMoveBackS > 0: fully automated DRS moves a VM migrated out of its site back to a host of its
	// site (its "should run on" rule) that many seconds after the migration; 0: DRS never acts.
	DRSMoveBackS float64 `json:"drs_move_back_s"`
	// IOPSLimitIOKB is the lab's: it cannot limit a disk's IOPS, so an operation writing to a disk whose policy has
	// VSAN.iopsLimit runs at that limit times this many KB a second (vSAN weighs each I/O against 32 KB). The
	// simulator keeps it in its model so the report names every modelled quantity in one place.
	IOPSLimitIOKB float64 `json:"iops_limit_io_kb"`
}

// TLSConfig names the PEM certificate and key served on /sdk and /vsanHealth.
type TLSConfig struct {
	Cert string `json:"cert"`
	Key  string `json:"key"`
}

// DefaultModel is used for every model field the file leaves out: vSAN's documented repair
// timer, and a clear that heals a permanent error (the assumption's default).
func DefaultModel() ModelConfig {
	heals := 0.0
	if factBool("permanent_clear.heals") {
		heals = 1
	}
	return ModelConfig{
		HARestartDelayS: 3, ResyncRateMBs: 40, ComponentMB: 2048, IOPauseS: 3, MigrationS: 2,
		RepairTimerS:        factInt("repair_timer.default") * int64(repairTimerUnit()/time.Second),
		PermanentClearHeals: heals,
	}
}

// LoadConfig reads, completes and validates a configuration file.
// Relative TLS paths are taken relative to the file's directory.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	cfg := &Config{Model: DefaultModel()}
	if err := json.Unmarshal(data, cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if cfg.TLS != nil {
		dir := filepath.Dir(path)
		for _, p := range []*string{&cfg.TLS.Cert, &cfg.TLS.Key} {
			if *p != "" && !filepath.IsAbs(*p) {
				*p = filepath.Join(dir, *p)
			}
		}
	}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.ControlListen == "" {
		cfg.ControlListen = "127.0.0.1:0"
	}
	if len(cfg.Witness.DiskGroups) == 0 {
		cfg.Witness.DiskGroups = []DiskGroup{{Cache: "mpx.vmhba1:C0:T1:L0", Capacity: []string{"mpx.vmhba1:C0:T2:L0"}}}
	}
	if cfg.Witness.Site == "" {
		cfg.Witness.Site = "witness"
	}
	return cfg, cfg.Validate()
}

// Validate refuses configurations the simulator cannot model faithfully,
// and any listen address other than 127.0.0.1.
func (c *Config) Validate() error {
	for _, addr := range []string{c.Listen, c.ControlListen} {
		if err := loopbackOnly(addr); err != nil {
			return err
		}
	}
	if c.Datacenter == "" || c.Cluster == "" {
		return fmt.Errorf("datacenter and cluster are required")
	}
	if len(c.Sites) != 2 {
		return fmt.Errorf("a stretched cluster has exactly 2 sites, got %d", len(c.Sites))
	}
	hosts := map[string]bool{}
	for _, s := range c.Sites {
		if s.Name == "" || len(s.Hosts) == 0 {
			return fmt.Errorf("site %q needs a name and hosts", s.Name)
		}
		for _, h := range s.Hosts {
			if h.Name == "" || hosts[h.Name] {
				return fmt.Errorf("host name %q empty or repeated", h.Name)
			}
			if len(h.DiskGroups) == 0 {
				return fmt.Errorf("host %s has no disk group", h.Name)
			}
			for _, g := range h.DiskGroups {
				if (g.Cache == "") != h.ESA || len(g.Capacity) == 0 || (h.ESA && len(h.DiskGroups) != 1) {
					return fmt.Errorf("host %s: an OSA disk group needs a cache and capacity devices; an ESA "+
						"host has one storage pool (capacity devices, no cache)", h.Name)
				}
			}
			hosts[h.Name] = true
		}
	}
	if c.Witness.Name == "" || hosts[c.Witness.Name] {
		return fmt.Errorf("witness name %q empty or used by a cluster host", c.Witness.Name)
	}
	for _, vm := range c.VMs {
		if vm.Name == "" || !hosts[vm.Host] {
			return fmt.Errorf("vm %q: unknown host %q", vm.Name, vm.Host)
		}
		if vm.Policy != "" && vm.Policy != PolicySiteLocal {
			return fmt.Errorf("vm %q: policy %q: empty (site mirroring) or %s", vm.Name, vm.Policy, PolicySiteLocal)
		}
	}
	switch c.HAHostFailedEvent {
	case "":
		c.HAHostFailedEvent = "legacy"
	case "legacy", "extended", "both":
	default:
		return fmt.Errorf("ha_host_failed_event %q: legacy, extended or both", c.HAHostFailedEvent)
	}
	m := c.Model
	if m.ResyncRateMBs <= 0 || m.ComponentMB <= 0 || m.HARestartDelayS < 0 || m.IOPauseS < 0 ||
		m.RepairTimerS < 0 || m.MigrationS < 0 || m.StaleWriteMBs < 0 || m.DRSMoveBackS < 0 {
		return fmt.Errorf("model: rates and sizes must be positive, delays not negative")
	}
	if m.PermanentClearHeals != 0 && m.PermanentClearHeals != 1 {
		return fmt.Errorf("model: permanent_clear_heals is 1 or 0")
	}
	if m.HCLRed != 0 && m.HCLRed != 1 {
		return fmt.Errorf("model: hcl_red is 1 or 0")
	}
	if m.ResyncSummaryRefused != 0 && m.ResyncSummaryRefused != 1 {
		return fmt.Errorf("model: resync_summary_refused is 1 or 0")
	}
	if c.Username == "" || c.PasswordEnv == "" {
		return fmt.Errorf("username and password_env are required")
	}
	if c.ReadyFile == "" {
		return fmt.Errorf("ready_file is required")
	}
	for _, a := range c.Accounts {
		if a.Username == "" || a.Username == c.Username || a.PasswordEnv == "" || len(a.Privileges) == 0 {
			return fmt.Errorf("account %q: a username other than the administrator's, password_env and privileges "+
				"are required", a.Username)
		}
	}
	return nil
}

func loopbackOnly(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	if host != "127.0.0.1" {
		return fmt.Errorf("listen address %q: only 127.0.0.1 is allowed", addr)
	}
	return nil
}

// SiteOf returns the site of a cluster host ("" if unknown).
func (c *Config) SiteOf(host string) string {
	for _, s := range c.Sites {
		for _, h := range s.Hosts {
			if h.Name == host {
				return s.Name
			}
		}
	}
	return ""
}
