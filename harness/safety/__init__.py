"""The fault lifecycle: the run (lock, journal), the runner (journal → inject → revert), recover, signals and guards."""
