package main

import (
	"context"
	"fmt"
	"os"
	"path"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// Inventory holds the references of the objects built from the config.
type Inventory struct {
	Datacenter types.ManagedObjectReference
	Cluster    types.ManagedObjectReference
	Hosts      map[string]types.ManagedObjectReference // cluster hosts and the witness
	VMs        map[string]types.ManagedObjectReference
	Datastore  types.ManagedObjectReference
	dir        string
}

// BuildInventory creates the stretched cluster in an empty vCenter model:
// datacenter, cluster (HA, DRS, per-site VM/host "should" rules), hosts, the
// witness host outside the cluster, a shared vsanDatastore and the VMs.
func BuildInventory(ctx context.Context, c *vim25.Client, cfg *Config) (*Inventory, error) {
	inv := &Inventory{Hosts: map[string]types.ManagedObjectReference{}, VMs: map[string]types.ManagedObjectReference{}}
	dc, err := object.NewRootFolder(c).CreateDatacenter(ctx, cfg.Datacenter)
	if err != nil {
		return nil, err
	}
	inv.Datacenter = dc.Reference()
	folders, err := dc.Folders(ctx)
	if err != nil {
		return nil, err
	}
	spec := types.ClusterConfigSpecEx{
		DasConfig: &types.ClusterDasConfigInfo{Enabled: types.NewBool(true), HostMonitoring: "enabled",
			VmMonitoring: "vmMonitoringDisabled", AdmissionControlEnabled: types.NewBool(true)},
		DrsConfig: &types.ClusterDrsConfigInfo{Enabled: types.NewBool(true), DefaultVmBehavior: types.DrsBehaviorFullyAutomated},
	}
	cluster, err := folders.HostFolder.CreateCluster(ctx, cfg.Cluster, spec)
	if err != nil {
		return nil, err
	}
	inv.Cluster = cluster.Reference()

	var clusterHosts []*object.HostSystem
	for _, site := range cfg.Sites {
		for _, h := range site.Hosts {
			host, err := waitHost(ctx, c, func() (*object.Task, error) {
				return cluster.AddHost(ctx, types.HostConnectSpec{HostName: h.Name}, true, nil, nil)
			})
			if err != nil {
				return nil, fmt.Errorf("host %s: %w", h.Name, err)
			}
			inv.Hosts[h.Name] = host.Reference()
			clusterHosts = append(clusterHosts, host)
		}
	}
	witness, err := waitHost(ctx, c, func() (*object.Task, error) {
		return folders.HostFolder.AddStandaloneHost(ctx, types.HostConnectSpec{HostName: cfg.Witness.Name}, true, nil, nil)
	})
	if err != nil {
		return nil, fmt.Errorf("witness %s: %w", cfg.Witness.Name, err)
	}
	inv.Hosts[cfg.Witness.Name] = witness.Reference()

	if inv.dir, err = os.MkdirTemp("", "harness-vsim-"); err != nil {
		return nil, err
	}
	for _, host := range clusterHosts {
		dss, err := host.ConfigManager().DatastoreSystem(ctx)
		if err != nil {
			return nil, err
		}
		if _, err := dss.CreateLocalDatastore(ctx, "vsanDatastore", inv.dir); err != nil {
			return nil, err
		}
	}
	var first mo.HostSystem
	if err := clusterHosts[0].Properties(ctx, clusterHosts[0].Reference(), []string{"datastore"}, &first); err != nil {
		return nil, err
	}
	if len(first.Datastore) != 1 {
		return nil, fmt.Errorf("host %s has %d datastores, want vsanDatastore only", clusterHosts[0].Name(), len(first.Datastore))
	}
	inv.Datastore = first.Datastore[0]

	pool, err := cluster.ResourcePool(ctx)
	if err != nil {
		return nil, err
	}
	for _, vm := range cfg.VMs {
		ref, err := createVM(ctx, c, folders, pool, object.NewHostSystem(c, inv.Hosts[vm.Host]), vm)
		if err != nil {
			return nil, fmt.Errorf("vm %s: %w", vm.Name, err)
		}
		inv.VMs[vm.Name] = ref
	}
	if err := addSiteRules(ctx, cluster, cfg, inv); err != nil {
		return nil, err
	}
	return inv, nil
}

func waitHost(ctx context.Context, c *vim25.Client, add func() (*object.Task, error)) (*object.HostSystem, error) {
	task, err := add()
	if err != nil {
		return nil, err
	}
	info, err := task.WaitForResult(ctx, nil)
	if err != nil {
		return nil, err
	}
	return object.NewHostSystem(c, info.Result.(types.ManagedObjectReference)), nil
}

func createVM(ctx context.Context, c *vim25.Client, folders *object.DatacenterFolders, pool *object.ResourcePool,
	host *object.HostSystem, vm VMConfig) (types.ManagedObjectReference, error) {
	// On vSAN a VM's directory is its namespace object, named by the object's UUID.
	namespace := stableUUID("object", vm.Name+"/vmnamespace")
	var devices object.VirtualDeviceList
	scsi, err := devices.CreateSCSIController("pvscsi")
	if err != nil {
		return types.ManagedObjectReference{}, err
	}
	devices = append(devices, scsi)
	if vm.DiskGB > 0 {
		disk := devices.CreateDisk(scsi.(types.BaseVirtualController), types.ManagedObjectReference{},
			"[vsanDatastore] "+path.Join(namespace, vm.Name+".vmdk"))
		disk.CapacityInKB = int64(vm.DiskGB) << 20
		// the label vCenter gives a VM's first disk, by which a client (and the harness's params.disk) finds it
		disk.DeviceInfo = &types.Description{Label: fact("vm.disk_label.prefix") + "1"}
		if b, ok := disk.Backing.(*types.VirtualDiskFlatVer2BackingInfo); ok {
			b.BackingObjectId = stableUUID("object", vm.Name+"/vdisk")
		}
		devices = append(devices, disk)
	}
	spec := types.VirtualMachineConfigSpec{
		Name: vm.Name, GuestId: string(types.VirtualMachineGuestOsIdentifierOtherLinux64Guest),
		NumCPUs: 2, MemoryMB: 4096,
		Files: &types.VirtualMachineFileInfo{VmPathName: "[vsanDatastore] " + path.Join(namespace, vm.Name+".vmx")},
	}
	if spec.DeviceChange, err = devices.ConfigSpec(types.VirtualDeviceConfigSpecOperationAdd); err != nil {
		return types.ManagedObjectReference{}, err
	}
	task, err := folders.VmFolder.CreateVM(ctx, spec, pool, host)
	if err != nil {
		return types.ManagedObjectReference{}, err
	}
	info, err := task.WaitForResult(ctx, nil)
	if err != nil {
		return types.ManagedObjectReference{}, err
	}
	ref := info.Result.(types.ManagedObjectReference)
	on, err := object.NewVirtualMachine(c, ref).PowerOn(ctx)
	if err != nil {
		return ref, err
	}
	return ref, on.Wait(ctx)
}

// addSiteRules adds a host group and a VM group per site and a non-mandatory
// ("should run on") VM/host rule binding them, as a stretched cluster has.
func addSiteRules(ctx context.Context, cluster *object.ClusterComputeResource, cfg *Config, inv *Inventory) error {
	spec := types.ClusterConfigSpecEx{
		DasConfig: &types.ClusterDasConfigInfo{Enabled: types.NewBool(true), AdmissionControlEnabled: types.NewBool(true)},
		DrsConfig: &types.ClusterDrsConfigInfo{Enabled: types.NewBool(true), DefaultVmBehavior: types.DrsBehaviorFullyAutomated},
	}
	for _, site := range cfg.Sites {
		var hosts, vms []types.ManagedObjectReference
		for _, h := range site.Hosts {
			hosts = append(hosts, inv.Hosts[h.Name])
		}
		for _, vm := range cfg.VMs {
			if cfg.SiteOf(vm.Host) == site.Name {
				vms = append(vms, inv.VMs[vm.Name])
			}
		}
		hostGroup, vmGroup := site.Name+"-hosts", site.Name+"-vms"
		spec.GroupSpec = append(spec.GroupSpec,
			types.ClusterGroupSpec{ArrayUpdateSpec: types.ArrayUpdateSpec{Operation: types.ArrayUpdateOperationAdd},
				Info: &types.ClusterHostGroup{ClusterGroupInfo: types.ClusterGroupInfo{Name: hostGroup}, Host: hosts}},
			types.ClusterGroupSpec{ArrayUpdateSpec: types.ArrayUpdateSpec{Operation: types.ArrayUpdateOperationAdd},
				Info: &types.ClusterVmGroup{ClusterGroupInfo: types.ClusterGroupInfo{Name: vmGroup}, Vm: vms}})
		spec.RulesSpec = append(spec.RulesSpec, types.ClusterRuleSpec{
			ArrayUpdateSpec: types.ArrayUpdateSpec{Operation: types.ArrayUpdateOperationAdd},
			Info: &types.ClusterVmHostRuleInfo{
				ClusterRuleInfo: types.ClusterRuleInfo{Name: site.Name + "-affinity", Enabled: types.NewBool(true),
					Mandatory: types.NewBool(false), UserCreated: types.NewBool(true)},
				VmGroupName: vmGroup, AffineHostGroupName: hostGroup,
			}})
	}
	task, err := cluster.Reconfigure(ctx, &spec, true)
	if err != nil {
		return err
	}
	return task.Wait(ctx)
}

// hostObject returns the simulator's HostSystem for a reference.
func hostObject(m *simulator.Registry, ref types.ManagedObjectReference) *simulator.HostSystem {
	return m.Get(ref).(*simulator.HostSystem)
}

// vmObject returns the simulator's VirtualMachine for a reference.
func vmObject(m *simulator.Registry, ref types.ManagedObjectReference) *simulator.VirtualMachine {
	return m.Get(ref).(*simulator.VirtualMachine)
}

// attachHardwareIdentity gives each cluster host the SMBIOS UUID and serial number the
// configuration names (those its BMC reports), as hardware.systemInfo and summary.hardware show them,
// and the witness its management address.
func (s *Sim) attachHardwareIdentity() {
	if s.cfg.Witness.Address != "" {
		w := hostObject(s.reg, s.inv.Hosts[s.cfg.Witness.Name])
		vnics := append([]types.HostVirtualNic(nil), w.Config.Network.Vnic...) // the simulator shares the template's
		for i := range vnics {
			if vnics[i].Portgroup == "Management Network" && vnics[i].Spec.Ip != nil {
				ip := *vnics[i].Spec.Ip
				ip.IpAddress = s.cfg.Witness.Address
				vnics[i].Spec.Ip = &ip
			}
		}
		network := *w.Config.Network
		network.Vnic = vnics
		config := *w.Config
		config.Network = &network
		w.Config = &config
	}
	for _, site := range s.cfg.Sites {
		for _, hc := range site.Hosts {
			h := hostObject(s.reg, s.inv.Hosts[hc.Name])
			if hc.UUID != "" {
				h.Hardware.SystemInfo.Uuid, h.Summary.Hardware.Uuid = hc.UUID, hc.UUID
			}
			if hc.Serial != "" {
				h.Hardware.SystemInfo.SerialNumber = hc.Serial
			}
		}
	}
}
