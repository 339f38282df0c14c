// Command govc is govmomi v0.52.0's govc CLI with the commands used to
// cross-check the simulator (the govc module itself is not published at that
// version, so this main links the same command packages).
package main

import (
	"os"

	"github.com/vmware/govmomi/cli"

	_ "github.com/vmware/govmomi/cli/about"
	_ "github.com/vmware/govmomi/cli/cluster"
	_ "github.com/vmware/govmomi/cli/cluster/group"
	_ "github.com/vmware/govmomi/cli/cluster/rule"
	_ "github.com/vmware/govmomi/cli/datacenter"
	_ "github.com/vmware/govmomi/cli/datastore"
	_ "github.com/vmware/govmomi/cli/env"
	_ "github.com/vmware/govmomi/cli/events"
	_ "github.com/vmware/govmomi/cli/fields"
	_ "github.com/vmware/govmomi/cli/folder"
	_ "github.com/vmware/govmomi/cli/host"
	_ "github.com/vmware/govmomi/cli/host/maintenance"
	_ "github.com/vmware/govmomi/cli/host/storage"
	_ "github.com/vmware/govmomi/cli/ls"
	_ "github.com/vmware/govmomi/cli/object"
	_ "github.com/vmware/govmomi/cli/option"
	_ "github.com/vmware/govmomi/cli/pool"
	_ "github.com/vmware/govmomi/cli/session"
	_ "github.com/vmware/govmomi/cli/storage/policy"
	_ "github.com/vmware/govmomi/cli/task"
	_ "github.com/vmware/govmomi/cli/version"
	_ "github.com/vmware/govmomi/cli/vm"
	_ "github.com/vmware/govmomi/cli/vm/disk"
	_ "github.com/vmware/govmomi/cli/vm/policy"
	_ "github.com/vmware/govmomi/cli/vsan"
)

func main() {
	os.Exit(cli.Run(os.Args[1:]))
}
