"""S2: component failures (disk, disk group, host)."""
