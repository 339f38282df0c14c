module github.com/harness/lab/vsim

go 1.23.0

require (
	github.com/google/uuid v1.6.0
	github.com/vmware/govmomi v0.52.0
)
