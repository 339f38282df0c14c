"""S4: application failover, planned and unplanned."""
