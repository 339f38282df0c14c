"""Load from several machines: OLTP drivers on load generators, merged into one workload on the harness clock."""
