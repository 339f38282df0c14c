"""Inter-site latency: `tc netem` where the kernel has it, otherwise Toxiproxy behind DNAT.

With netem, the latency fault is the router backend's own (`faults.backends.router`) on the
lab's router ports; this module only says which mechanism the lab has.

Toxiproxy runs in the router namespace and the lab's nft table redirects inter-site
PostgreSQL traffic (site A <-> site B, port 5432) through one proxy per direction, from
`up()` on, so replication connections already go through it when a latency fault starts
and survive failovers. Toxiproxy has whole-millisecond latency and no packet loss.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness_kernel.errors import ConfigError, ControlPlaneError
from harness_kernel.paths import tools_dir
from harness_lab import shell
from harness_lab.firewall import RouterFirewall
from harness_lab.layout import PG_PORT, LabLayout, Member
from harness_lab.services import Services

NETEM = "netem"
TOXIPROXY = "toxiproxy"
API_PORT = 8474
PROXY_PORT = 15432
SERVICE = "toxiproxy"
API_TIMEOUT_S = 5.0
TOXIC_NAMES = ("lab_latency_down", "lab_latency_up", "lab_rate_down", "lab_rate_up")


# An opener without proxies: urlopen's default honours http_proxy, which would send lab traffic
# (addressed to the lab's namespaces) to a proxy host off this machine.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def api_call(api: str, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    """One Toxiproxy API call, never through a proxy and never without a timeout.

    A GET or DELETE of something absent gives None, as does a GET the API does not answer
    (so callers can poll it); any other failure is a ControlPlaneError naming the lab address.
    """
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(api + path, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with _DIRECT.open(req, timeout=API_TIMEOUT_S) as resp:
            raw = resp.read()
    except urllib.error.HTTPError as exc:
        if exc.code == 404 and method in ("GET", "DELETE"):
            return None
        raise ControlPlaneError(f"toxiproxy {method} {path}: HTTP {exc.code} {exc.read()[:300]!r}") from exc
    except (urllib.error.URLError, OSError) as exc:
        if method == "GET":
            return None
        raise ControlPlaneError(f"toxiproxy {method} {api}{path}: {exc}") from exc
    return json.loads(raw) if raw else {}


def toxiproxy_binary() -> Path:
    return tools_dir() / "bin" / "toxiproxy-server"


def kernel_has_netem(netns: str) -> bool:
    """Try a netem qdisc on the namespace's loopback: the only reliable test (modules may be built in)."""
    done = shell.run(["tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "0ms"], netns=netns, check=False)
    if done.returncode == 0:
        shell.run(["tc", "qdisc", "del", "dev", "lo", "root"], netns=netns, check=False)
        return True
    return False


@dataclass(frozen=True)
class LatencyRequest:
    rtt_ms: float
    jitter_ms: float = 0.0
    rate_mbit: float | None = None
    loss_pct: float = 0.0


@dataclass(frozen=True)
class InterSiteLatency:
    layout: LabLayout
    services: Services
    mechanism: str

    @property
    def api(self) -> str:
        return f"http://{self.layout.client.router_address}:{API_PORT}"

    def _pairs(self) -> list[tuple[str, Member, Member]]:
        a, b = self.layout.site_a, self.layout.site_b
        return [("a_to_b", a, b), ("b_to_a", b, a)]

    # -- plumbing (lab up/down) -------------------------------------------------------
    def start(self) -> None:
        if self.mechanism != TOXIPROXY:
            return
        binary = toxiproxy_binary()
        if not os.access(binary, os.X_OK):
            raise ControlPlaneError(f"no Toxiproxy at {binary} and the kernel has no sch_netem: run `make setup` "
                                    f"or set HARNESS_TOOLS to a directory with bin/toxiproxy-server")
        self.services.start(SERVICE, [str(binary), "-host", self.layout.client.router_address, "-port", str(API_PORT)],
                            netns=self.layout.router_netns)
        shell.wait_for(lambda: self._call("GET", "/version") is not None, 10, "toxiproxy API")
        for name, src, dst in self._pairs():
            self._call("POST", "/proxies", {"name": name, "listen": f"{src.router_address}:{PROXY_PORT}",
                                            "upstream": f"{dst.address}:{PG_PORT}", "enabled": True})
        RouterFirewall(self.layout).set_dnat([(src, dst.address, PG_PORT, src.router_address, PROXY_PORT)
                                              for _, src, dst in self._pairs()])

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        return api_call(self.api, method, path, body)

    # -- the fault's operations -------------------------------------------------------
    def validate(self, req: LatencyRequest) -> None:
        """No contact: what this mechanism cannot do is a configuration error, said before inject."""
        if req.rtt_ms < 0 or req.jitter_ms < 0:
            raise ConfigError("latency: rtt_ms and jitter_ms must be >= 0")
        if self.mechanism == TOXIPROXY and req.loss_pct:
            raise ConfigError("latency: packet loss is not supported with Toxiproxy (this kernel has no sch_netem); "
                              "drop loss_pct or run on a kernel with netem")

    def apply(self, req: LatencyRequest) -> None:
        self.validate(req)
        self._toxiproxy_only()
        down, up = _halves(req.rtt_ms)
        jdown, jup = _halves(req.jitter_ms)
        for name, _, _ in self._pairs():
            self.clear_proxy(name)
            self._toxic(name, "lab_latency_down", "latency", "downstream", {"latency": down, "jitter": jdown})
            self._toxic(name, "lab_latency_up", "latency", "upstream", {"latency": up, "jitter": jup})
            if req.rate_mbit:
                kbps = max(1, int(req.rate_mbit * 1000 / 8))
                self._toxic(name, "lab_rate_down", "bandwidth", "downstream", {"rate": kbps})
                self._toxic(name, "lab_rate_up", "bandwidth", "upstream", {"rate": kbps})

    def _toxic(self, proxy: str, name: str, kind: str, stream: str, attributes: dict[str, int]) -> None:
        self._call("POST", f"/proxies/{proxy}/toxics",
                   {"name": name, "type": kind, "stream": stream, "toxicity": 1.0, "attributes": attributes})

    def clear_proxy(self, proxy: str) -> None:
        for toxic in TOXIC_NAMES:
            self._call("DELETE", f"/proxies/{proxy}/toxics/{toxic}")

    def _toxiproxy_only(self) -> None:
        if self.mechanism != TOXIPROXY:
            raise ControlPlaneError(f"lab {self.layout.prefix}: latency is netem here, applied by the router backend")

    def clear(self) -> None:
        self._toxiproxy_only()
        for name, _, _ in self._pairs():
            self.clear_proxy(name)

    def active(self) -> dict[str, list[str]]:
        """Toxics in place now, per proxy."""
        self._toxiproxy_only()
        found: dict[str, list[str]] = {}
        for name, _, _ in self._pairs():
            toxics = self._call("GET", f"/proxies/{name}/toxics")
            if toxics is None:
                raise ControlPlaneError(f"toxiproxy proxy {name} is gone (is the lab up?)")
            found[name] = sorted(str(t["name"]) for t in toxics)
        return found

    def clear_argv(self) -> list[str]:
        """A command that removes every toxic from another process (what the dead man's switch runs)."""
        urls = [f"{self.api}/proxies/{p}/toxics/{t}" for p, _, _ in self._pairs() for t in TOXIC_NAMES]
        return [sys.executable, "-m", "harness_lab.toxics", *urls]


def _halves(total: float) -> tuple[int, int]:
    """Whole milliseconds for the two directions, summing to the rounded total."""
    whole = round(total)
    return whole - whole // 2, whole // 2


PROBE = """
import socket, sys, time, struct
host, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for _ in range(count):
    s = socket.create_connection((host, port), timeout=5)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    t = time.perf_counter()
    s.sendall(struct.pack('!ii', 8, 80877103))
    s.recv(1)
    print((time.perf_counter() - t) * 1000)
    s.close()
    time.sleep(0.05)
"""


def probe_rtt_ms(src: Member, dst_address: str, count: int = 7, port: int = PG_PORT) -> float:
    """The least request/response time of `count` PostgreSQL SSLRequests from `src`'s namespace (one round trip
    each). A loaded machine only ever adds to a sample (a backend still forking, a proxy not yet scheduled), so the
    least is the link's own: the median of 7 read a base of 5.18 ms beside make test's lanes (0.28 ms in another run)."""
    done = shell.run([sys.executable, "-c", PROBE, dst_address, str(port), str(count)], netns=src.netns, timeout=60)
    samples = [float(x) for x in done.stdout.split()]
    if not samples:
        raise ControlPlaneError(f"rtt probe {src.address} -> {dst_address}: no answer")
    return min(samples)
