"""A rack PDU's switched outlets as a platform of the resilience harness (an example plug-in).

A host without a BMC still loses power when the outlet that feeds it is switched off. This
package declares the `pdu` platform under the `resilience_harness.platforms` entry point: the
harness then realises `host-power-loss` on such a host with the outlet, before vCenter's
graceful shutdown, without a line of the harness changed. It speaks DMTF Redfish's power
distribution model (`/redfish/v1/PowerEquipment/RackPDUs/<id>/Outlets/<id>`, the
`#Outlet.PowerControl` action) with the standard library only.
"""

__version__ = "0.1.0"
