"""Nutanix AHV as a platform of the harness, in the plug-in shape: Prism Central v4, its own transport."""
