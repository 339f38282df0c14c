package main

import (
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/soap"
	vim "github.com/vmware/govmomi/vim25/types"
	"github.com/vmware/govmomi/vsan/types"
)

// diskManagementSystem is vsan-disk-management-system: QueryVsanManagedDisks answers an ESA host's
// storage pool (storagePools[].storagePoolDisks[], vsan.version.version20), the only place an ESA
// host's devices are listed (its config has no disk mappings). An OSA host gets an empty answer.
type diskManagementSystem struct {
	Self vim.ManagedObjectReference
	sim  *Sim
}

func (d *diskManagementSystem) Reference() vim.ManagedObjectReference { return d.Self }

// The response types as pyVmomi's typeinfo names them (govmomi's generated ones predate storagePools).
type managedDisksInfo struct {
	vim.DynamicData
	StoragePools []storagePoolInfo `xml:"storagePools,omitempty"`
}

type storagePoolInfo struct {
	vim.DynamicData
	StoragePoolDisks []storagePoolDiskInfo `xml:"storagePoolDisks,omitempty"`
}

type storagePoolDiskInfo struct {
	vim.DynamicData
	Disk      vim.HostScsiDisk `xml:"disk"`
	VsanUuid  string           `xml:"vsanUuid,omitempty"`
	IsMounted *bool            `xml:"isMounted,omitempty"`
}

type managedDisksResponse struct {
	Returnval *managedDisksInfo `xml:"returnval,omitempty"`
}

type managedDisksBody struct {
	Res    *managedDisksResponse `xml:"urn:vsan QueryVsanManagedDisksResponse,omitempty"`
	Fault_ *soap.Fault           `xml:"http://schemas.xmlsoap.org/soap/envelope/ Fault,omitempty"`
}

func (b *managedDisksBody) Fault() *soap.Fault { return b.Fault_ }

// QueryVsanManagedDisks lists a host's vSAN-managed devices; for ESA, its storage pool.
func (d *diskManagementSystem) QueryVsanManagedDisks(ctx *simulator.Context, req *types.QueryVsanManagedDisks) soap.HasFault {
	s := d.sim
	name := ""
	for host, ref := range s.inv.Hosts {
		if ref == req.Host {
			name = host
		}
	}
	if name == "" {
		return &managedDisksBody{Fault_: simulator.Fault("no such host: "+req.Host.Value, &vim.ManagedObjectNotFound{Obj: req.Host})}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	info := &managedDisksInfo{}
	if m := s.vsan; m.Hosts[name].ESA {
		pool := storagePoolInfo{}
		for _, id := range m.DiskOrder {
			if disk := m.Disks[id]; disk.Host == name {
				pool.StoragePoolDisks = append(pool.StoragePoolDisks, storagePoolDiskInfo{
					Disk: scsiDisk(disk), VsanUuid: disk.UUID, IsMounted: vim.NewBool(true)})
			}
		}
		info.StoragePools = []storagePoolInfo{pool}
	}
	return &managedDisksBody{Res: &managedDisksResponse{Returnval: info}}
}
