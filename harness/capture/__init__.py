"""`doctor --capture DIR`: a cluster's answers as contract fixtures, kept to the fields the parsers read.

The transports hand doctor's answers over raw (`faults.transports.wire`); `scrub` keeps of each
only what the harness's parsers read (an allow-list, `fields`), `aliases` replaces names and
identifiers by stable stand-ins, `store` writes the capture with its manifest, and `replay`
serves it from loopback servers so pyVmomi, requests and paramiko run unchanged.
"""
