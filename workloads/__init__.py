"""The clients: workloads that generate load and record every transaction's outcome."""
