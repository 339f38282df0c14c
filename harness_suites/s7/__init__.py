"""S7: backup and restore under load."""
