"""S6: mixed workloads (OLTP beside an I/O or mail workload)."""
