"""Redfish: a host's power cut at its BMC (ComputerSystem.Reset), the out-of-band way a host is lost."""
