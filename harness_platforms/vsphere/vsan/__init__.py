"""vSAN through vCenter's vSAN management API (/vsanHealth), read only: placement, resync, repair timer, health."""
