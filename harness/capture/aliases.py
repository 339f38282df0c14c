"""Stable stand-ins for what names a cluster: its names, addresses, UUIDs, device ids and serial numbers.

One mapping per capture, applied to every kept payload, the topology and doctor's rows alike, so
what matched before still matches (a BMC's UUID and its host's; a VM's host). Addresses keep their
prefixes (a host stays in its site's subnet: the mapping is prefix-preserving, keyed per capture);
a UUID keeps its SMBIOS byte-swapped twin's relation; identifiers keep their shape (hex stays hex,
the length stays). Loopback addresses and words the harness itself uses stay as they are.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import re
from collections.abc import Iterable

from harness.names import is_address
from harness_kernel.topology.models import Topology

UUID = re.compile(r"(?<![0-9a-fA-F])[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}(?![0-9a-fA-F])")
DEVICE = re.compile(r"\b(?:naa|eui)\.[0-9A-Fa-f]+\b|\bt10\.[0-9A-Za-z_]+")
SERIAL = re.compile(r"(<serialNumber>|\"SerialNumber\": \"|<name>hardware\.systemInfo\.serialNumber</name><val[^>]*>)"
                    r"([^<\"]+)")
IPV4 = re.compile(r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?![\d.])")
CIDR = re.compile(r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}/\d{1,2}(?![\d.])")
# candidates only: what `ipaddress` parses as IPv6 (a time or a MAC address does not)
IPV6 = re.compile(r"(?<![0-9A-Fa-f:])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?:/\d{1,3})?(?![0-9A-Fa-f:])")
# Words the harness and vSAN use themselves: never aliased, even where a topology uses one as a name.
KEPT = frozenset({"witness", "preferred", "primary", "secondary", "root", "lab", "site", "host", "disk", "link",
                  "node", "database", "vsan", "router", "cluster"})
_NAME_EDGE = r"[A-Za-z0-9_-]"


class Aliases:
    def __init__(self, key: bytes) -> None:
        self._key = key
        self.map: dict[str, str] = {}
        self._counts: dict[str, int] = {}
        self._pattern: re.Pattern[str] | None = None

    # -- what is aliased -------------------------------------------------------------------------
    def name(self, value: str, kind: str) -> None:
        """A name, in the cases Windows and SQL Server also write it (SQL01 for sql01): one alias, the same case."""
        if not value or value in self.map or value in KEPT or is_address(value):
            return  # an address is aliased as one (`address`), keeping its subnet
        self._counts[kind] = self._counts.get(kind, 0) + 1
        alias = f"{kind}-{self._counts[kind]}"
        self._add(value, alias)
        self._add(value.upper(), alias.upper())
        self._add(value.lower(), alias)

    def identifier(self, value: str) -> None:
        """A UUID, device id or serial: same shape, other characters; a UUID's byte-swapped twin follows."""
        if value in self.map:
            return
        alias = self._shaped(value)
        self._add(value, alias)
        if UUID.fullmatch(value):
            self._add(_swapped(value), _swapped(alias))

    def address(self, value: str) -> None:
        try:
            address = ipaddress.ip_address(value)
        except ValueError:
            return
        if address.is_loopback or address.is_unspecified or address.is_link_local or value in self.map:
            return
        if address.version == 4:
            self._add(value, self._ipv4(int(address)))
        else:
            self._add_spellings(address.compressed, address.exploded, str(self._ipv6(int(address))))

    def network(self, value: str) -> None:
        """A subnet: its aliased prefix, host bits cleared (the hosts in it alias into it: prefix-preserving)."""
        try:
            net = ipaddress.ip_network(value, strict=False)
        except ValueError:
            return
        if net.is_loopback or net.is_link_local or value in self.map:
            return
        if net.version == 4:
            mapped = ipaddress.ip_network(f"{self._ipv4(int(net.network_address))}/{net.prefixlen}", strict=False)
            self._add(value, str(mapped))
        else:
            mapped = ipaddress.ip_network(f"{self._ipv6(int(net.network_address))}/{net.prefixlen}", strict=False)
            self._add_spellings(net.compressed, net.exploded, str(mapped))

    def found_in(self, texts: Iterable[str]) -> None:
        """Register the UUIDs, device ids and serial numbers these payloads hold."""
        for text in texts:
            for match in UUID.finditer(text):
                self.identifier(match.group(0).lower() if match.group(0).islower() else match.group(0))
            for match in DEVICE.finditer(text):
                self.identifier(match.group(0))
            for match in SERIAL.finditer(text):
                self.identifier(match.group(2))

    def topology(self, topology: Topology, text: str) -> None:
        """The names a topology gives, and every address its text writes."""
        self.name(topology.name, "topology")
        vcenter = topology.management.vcenter
        if vcenter is not None:
            self.name(vcenter.cluster, "cluster")
            self.name(vcenter.datacenter or "", "datacenter")
            self.name(vcenter.credential.username, "user")
        for site in topology.sites:
            self.name(site.name, "site")
            for host in site.hosts:
                self.name(host.name, "host")
        if topology.witness is not None:
            self.name(topology.witness.name, "witness")
        for db in topology.databases:
            self.name(db.name, "db")
            self.name(db.ag_name or "", "ag")
            self.name(db.role_name or "", "role")
            self.name(db.credential.username if db.credential else "", "user")
            for server in db.endpoint.split(","):
                self.name(server.strip(), "server")
            for node in db.nodes:
                self.name(node.vm or "", "vm")
                self.name(node.address or "", "server")
                self.name(node.replica or "", "node")
                self.name(node.name, "node")
        for router in topology.routers:
            self.name(router.name, "router")
        for bmc in topology.management.redfish:
            self.name(bmc.name, "endpoint")
            self.name(bmc.credential.username, "user")
        for shell in topology.management.ssh:
            self.name(shell.name, "endpoint")
        for winrm in topology.management.winrm:
            self.name(winrm.name, "endpoint")
            self.name(winrm.address, "server")
            self.name(winrm.credential.username, "user")
        for match in CIDR.finditer(text):
            self.network(match.group(0))
        for match in IPV4.finditer(text):
            self.address(match.group(0))
        for match in IPV6.finditer(text):
            (self.network if "/" in match.group(0) else self.address)(match.group(0))
        self.found_in([text])

    # -- applying --------------------------------------------------------------------------------
    def apply(self, text: str) -> str:
        if not self.map:
            return text
        if self._pattern is None:
            keys = sorted(self.map, key=len, reverse=True)
            self._pattern = re.compile(f"(?<!{_NAME_EDGE})(?:{'|'.join(re.escape(k) for k in keys)})(?!{_NAME_EDGE})")
        return self._pattern.sub(lambda m: self.map[m.group(0)], text)

    def _add(self, value: str, alias: str) -> None:
        self.map.setdefault(value, alias)
        self._pattern = None

    def _add_spellings(self, compressed: str, exploded: str, alias: str) -> None:
        """An IPv6 address as payloads may write it: compressed or in full, in lower or upper case."""
        for spelling in {compressed, exploded}:
            self._add(spelling, alias)
            self._add(spelling.upper(), alias)

    def _digest(self, data: str) -> bytes:
        return hmac.new(self._key, data.encode(), hashlib.sha256).digest()

    def _shaped(self, value: str) -> str:
        stream = self._digest(value) * (1 + len(value) // 32)
        out = []
        for ch, byte in zip(value, stream[:len(value)], strict=True):
            if ch in "0123456789":
                out.append("0123456789"[byte % 10])
            elif ch in "abcdef" and value.lower() == value and _hexish(value):
                out.append("0123456789abcdef"[byte % 16])
            elif ch in "ABCDEF" and _hexish(value):
                out.append("0123456789ABCDEF"[byte % 16])
            elif ch.isalpha():
                pool = "abcdefghijklmnopqrstuvwxyz"
                out.append(pool[byte % 26] if ch.islower() else pool[byte % 26].upper())
            else:
                out.append(ch)
        prefix = value.split(".", 1)[0] + "." if DEVICE.fullmatch(value) else ""
        return prefix + "".join(out)[len(prefix):]

    def _ipv4(self, bits: int) -> str:
        """Prefix-preserving (Crypto-PAn's construction: bit i flips by a keyed function of the bits before it).
        An address in a range of its own kind (the lab's 198.18.0.0/15, the documentation and private ranges)
        stays in that range, only the bits below its prefix aliased; any other takes its first octet from a keyed
        permutation of ordinary unicast octets. Prefixes of 8 bits and longer are kept: a host stays in its
        subnet, and no address lands where a topology refuses one."""
        address = ipaddress.IPv4Address(bits)
        kept = next((net for net in _RANGES if address in net), None)
        if kept is not None:
            out, start = bits >> (32 - kept.prefixlen), kept.prefixlen
        else:
            first = bits >> 24
            if first not in _UNICAST:
                return str(address)
            order = sorted(_UNICAST, key=lambda octet: self._digest(f"octet/{octet}"))
            out, start = order[_UNICAST.index(first)], 8
        for i in range(start, 32):
            flip = self._digest(f"{i}/{bits >> (32 - i)}")[0] & 1
            out = (out << 1) | (((bits >> (31 - i)) & 1) ^ flip)
        return str(ipaddress.IPv4Address(out))

    def _ipv6(self, bits: int) -> ipaddress.IPv6Address:
        """Prefix-preserving as `_ipv4`: a documentation (2001:db8::/32) or unique local (fc00::/7) address stays in
        its range, a global one in 2000::/3; any other is left as it is (no endpoint has one)."""
        address = ipaddress.IPv6Address(bits)
        kept = next((net for net in _RANGES_V6 if address in net), None)
        if kept is None:
            return address
        out = bits >> (128 - kept.prefixlen)
        for i in range(kept.prefixlen, 128):
            flip = self._digest(f"v6/{i}/{bits >> (128 - i)}")[0] & 1
            out = (out << 1) | (((bits >> (127 - i)) & 1) ^ flip)
        return ipaddress.IPv6Address(out)


_RANGES_V6 = [ipaddress.IPv6Network(n) for n in ("2001:db8::/32", "fc00::/7", "2000::/3")]
_RANGES = [ipaddress.IPv4Network(n) for n in ("198.18.0.0/15", "192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24",
                                              "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10")]
_UNICAST = [o for o in range(1, 224) if o not in (127, 169)]  # loopback and link-local stay what they are


def _hexish(value: str) -> bool:
    return all(c in "0123456789abcdefABCDEF-.:" for c in value.split(".", 1)[-1])


def _swapped(uuid: str) -> str:
    """The SMBIOS 2.6 little-endian reading of the first three fields (`harness`'s BMC check accepts either)."""
    a, b, c, rest = uuid[:8], uuid[9:13], uuid[14:18], uuid[18:]
    return "".join(reversed([a[i:i + 2] for i in range(0, 8, 2)])) + "-" + b[2:] + b[:2] + "-" + c[2:] + c[:2] + rest
