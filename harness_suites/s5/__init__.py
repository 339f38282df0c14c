"""S5: live migration under added latency."""
