"""A Windows Server failover cluster through PowerShell's FailoverClusters module, read only."""
