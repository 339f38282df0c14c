"""A rack PDU's Redfish service on 127.0.0.1, the stand-in the example plug-in (examples/harness-pdu) acts on.

A real HTTP server in a process of its own, written from DMTF's schemas, not from the plug-in:
every fact it serves is in `PROVENANCE` with its source and a short quote, and it refuses what
a service must refuse (a wrong login, a PowerState outside the action's values, a locked outlet).

    python rack_pdu.py --ready-file F --outlets A1,A2,A3 [--off-delay-s 0.5] [--user admin]

The password is the environment's `RACK_PDU_PASSWORD`. When it listens it writes F atomically:
{"port": P, "pid": N}. Every accepted PowerControl is appended to F's `.log` as JSON lines.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

PROVENANCE = {
    "paths": ("Redfish PowerEquipment.v1_2_3 / PowerDistribution schemas (gofish redfish/powerequipment.go, "
              "powerdistribution.go)", "RackPDUs shall contain a link to a resource collection of type "
              "'PowerDistributionCollection' that contains a set of rack-level power distribution units; Outlets "
              "shall contain a link to a resource collection of type 'OutletCollection' that contains the outlets "
              "for this equipment"),
    "PowerState": ("Outlet.v1_4_4 (gofish redfish/outlet.go)", "PowerState shall contain the power state of the outlet"),
    "PowerControl": ("Outlet.v1_4_4, #Outlet.PowerControl", "powerState - This parameter shall contain the desired "
                     "power state of the outlet"),
    "PowerState values": ("Outlet.v1_4_4, OutletPowerState", "On ... Off ... PowerCycle"),
    "PowerControlLocked": ("Outlet.v1_4_0", "If 'true', services shall reject requests to the 'PowerControl' action"),
    "PowerStateInTransition": ("Outlet.v1_4_0", "If 'true', the 'PowerState' property will transition at the "
                               "conclusion of a configured delay"),
    "PowerOffDelaySeconds": ("Outlet.v1_4_4", "the number of seconds to delay power off after a 'PowerControl' "
                             "action"),
    "PowerWatts": ("Outlet.v1_4_4", "PowerWatts shall contain the total power, in watt units, for this outlet"),
    "Basic authentication": ("Lenovo XCC Redfish REST API, Authentication Methods (pubs.lenovo.com/xcc-restapi)",
                             "HTTP Basic Authentication (as defined by RFC7235) uses HTTP \"Authorization\" header "
                             "field"),
    # looser than a real service: it serves plain HTTP, on 127.0.0.1 only (the plug-in allows http to loopback alone)
    "TLS": ("the same page", "Redfish requires the use of a compliant TLS connection"),
}
VALUES = ("On", "Off", "PowerCycle")
DRAW_W = 180.0  # a host's idle draw, for the PowerWatts reading: a model, not a measurement


class Outlets:
    def __init__(self, ids: list[str], off_delay_s: float, log: Path) -> None:
        self.state = {i: "On" for i in ids}
        self.changing: dict[str, float] = {}  # outlet -> when its pending state takes effect
        self.pending: dict[str, str] = {}
        self.locked: set[str] = set()
        self.off_delay_s = off_delay_s
        self.log = log
        self.lock = threading.Lock()

    def settle(self) -> None:
        now = time.monotonic()
        for outlet, at in list(self.changing.items()):
            if now >= at:
                self.state[outlet] = self.pending.pop(outlet)
                del self.changing[outlet]

    def resource(self, pdu: str, outlet: str) -> dict[str, Any]:
        with self.lock:
            self.settle()
            path = f"/redfish/v1/PowerEquipment/RackPDUs/{pdu}/Outlets/{outlet}"
            on = self.state[outlet] == "On"
            return {"@odata.id": path, "@odata.type": "#Outlet.v1_4_4.Outlet", "Id": outlet, "Name": f"Outlet {outlet}",
                    "PowerState": self.state[outlet], "PowerStateInTransition": outlet in self.changing,
                    "PowerControlLocked": outlet in self.locked, "PowerOffDelaySeconds": self.off_delay_s,
                    "PowerWatts": {"Reading": DRAW_W if on else 0.0},
                    "Actions": {"#Outlet.PowerControl": {"target": f"{path}/Actions/Outlet.PowerControl",
                                                         "PowerState@Redfish.AllowableValues": list(VALUES)}}}

    def control(self, outlet: str, wanted: str) -> None:
        with self.lock:
            self.settle()
            delay = self.off_delay_s if wanted == "Off" else 0.0
            if wanted == "PowerCycle":
                self.state[outlet] = "Off"
                wanted, delay = "On", self.off_delay_s
            if delay:
                self.pending[outlet], self.changing[outlet] = wanted, time.monotonic() + delay
            else:
                self.state[outlet] = wanted
                self.changing.pop(outlet, None)
                self.pending.pop(outlet, None)
            with self.log.open("a") as handle:
                handle.write(json.dumps({"outlet": outlet, "PowerState": wanted, "wall": time.time()}) + "\n")


def handler(outlets: Outlets, user: str, password: str, pdu: str = "1") -> type[BaseHTTPRequestHandler]:
    base = f"/redfish/v1/PowerEquipment/RackPDUs/{pdu}"
    token = base64.b64encode(f"{user}:{password}".encode()).decode()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def _reply(self, status: int, body: Any = None) -> None:
            data = json.dumps(body).encode() if body is not None else b""
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _error(self, status: int, message_id: str, message: str) -> None:
            self._reply(status, {"error": {"code": message_id, "message": message,
                                           "@Message.ExtendedInfo": [{"MessageId": message_id, "Message": message}]}})

        def _authorised(self) -> bool:
            if self.headers.get("Authorization") == f"Basic {token}":
                return True
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="RackPDU"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return False

        def _outlet(self, path: str) -> str | None:
            prefix = f"{base}/Outlets/"
            name = path.removeprefix(prefix).removesuffix("/Actions/Outlet.PowerControl")
            return name if path.startswith(prefix) and name in outlets.state else None

        def do_GET(self) -> None:
            if not self._authorised():
                return
            path = self.path.rstrip("/")
            if path == base:
                self._reply(200, {"@odata.id": base, "@odata.type": "#PowerDistribution.v1_3_1.PowerDistribution",
                                  "Id": pdu, "EquipmentType": "RackPDU", "Manufacturer": "Stand-in",
                                  "Model": "RackPDU-8", "FirmwareVersion": "1.0.0",
                                  "Outlets": {"@odata.id": f"{base}/Outlets"}})
            elif (outlet := self._outlet(path)) is not None and not path.endswith("PowerControl"):
                self._reply(200, outlets.resource(pdu, outlet))
            else:
                self._error(404, "Base.1.8.ResourceMissingAtURI", f"{path} is not here")

        def do_POST(self) -> None:
            if not self._authorised():
                return
            path = self.path.rstrip("/")
            outlet = self._outlet(path)
            if outlet is None or not path.endswith("/Actions/Outlet.PowerControl"):
                self._error(404, "Base.1.8.ResourceMissingAtURI", f"{path} is not an action here")
                return
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
            except ValueError:
                self._error(400, "Base.1.8.MalformedJSON", "the request body is not JSON")
                return
            wanted = body.get("PowerState") if isinstance(body, dict) else None
            if wanted not in VALUES:
                self._error(400, "Base.1.8.ActionParameterValueNotInList",
                            f"PowerState {wanted!r} is not one of {', '.join(VALUES)}")
                return
            if outlet in outlets.locked:
                self._error(409, "Base.1.8.ResourceCannotBeUpdated", f"outlet {outlet}: PowerControlLocked")
                return
            outlets.control(outlet, str(wanted))
            self._reply(204)

    return Handler


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ready-file", type=Path, required=True)
    parser.add_argument("--outlets", required=True)
    parser.add_argument("--off-delay-s", type=float, default=0.5)
    parser.add_argument("--locked", default="")
    parser.add_argument("--user", default="admin")
    parser.add_argument("--lifetime-s", type=float, default=1800.0, help="it stops by itself after this long")
    args = parser.parse_args()
    password = os.environ["RACK_PDU_PASSWORD"]
    outlets = Outlets(args.outlets.split(","), args.off_delay_s, args.ready_file.with_suffix(".log"))
    outlets.locked = set(filter(None, args.locked.split(",")))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler(outlets, args.user, password))
    threading.Timer(args.lifetime_s, server.shutdown).start()
    tmp = args.ready_file.with_suffix(".tmp")
    tmp.write_text(json.dumps({"port": server.server_address[1], "pid": os.getpid()}))
    os.replace(tmp, args.ready_file)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
