"""Always On availability groups through T-SQL, read only: replica health, readiness, the failover's own record."""
