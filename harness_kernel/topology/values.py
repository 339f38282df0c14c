"""What a topology field may hold: each value type (`Name`, `Address`, `Subnet`, `Port`, ...) with its check.

Values reach a root shell on a router, `nft -f` and `tc` scripts, file paths and connection
strings, so each field has a type that says what it may hold, checked once when the topology is
read, with an error that names its field path (`harness_kernel.topology.models`).
"""

from __future__ import annotations

import ipaddress
import os
import re
import stat
from collections.abc import Callable, Mapping
from pathlib import PurePosixPath
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationInfo

from harness_kernel.text import one_line

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")
DEVICE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}")
IFNAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,14}")
HOSTNAME = re.compile(rf"(?=.{{1,253}}$){_LABEL}(?:\.{_LABEL})*")
DISPLAY = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9 _.()+-]{0,126}[A-Za-z0-9_.()+-])?")
USERNAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.@\\-]{0,127}")
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
KEYRING_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9 _.@:/\\-]{0,127}")
HOST_KEY = re.compile(r"[a-z][a-z0-9@.-]{2,63} [A-Za-z0-9+/]{16,}={0,2}")
FILE_PATH = re.compile(r"/[A-Za-z0-9_.@+=:,~/-]{0,4095}")


def shown(value: str) -> str:
    """A value for an error message: quoted, escaped, short (it may be hostile)."""
    return repr(value if len(value) <= 40 else value[:40] + "...")


def matching(pattern: re.Pattern[str], what: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        if not pattern.fullmatch(value):
            raise ValueError(f"{shown(value)} is not {what}")
        return value
    return check


NUMERIC_LABEL = re.compile(r"0[xX][0-9A-Fa-f]*|[0-9]+")
"""A label the C resolver reads as a number (inet_aton: decimal, octal, 0x hex): `0xc0000214` is an address."""


def valid_address(value: str) -> str:
    """A canonical IP address or a DNS host name; never a spelling the resolver turns into an address
    (`0xc0000214`, `192.0.2.0x14`, `0300.0.2.11`, `::ffff:192.0.2.20`): subnet checks compare addresses,
    so an address written another way would slip past them."""
    try:
        ip = ipaddress.ip_address(value)
    except ValueError:
        if HOSTNAME.fullmatch(value) and not all(NUMERIC_LABEL.fullmatch(label) for label in value.split(".")):
            return value
        if HOSTNAME.fullmatch(value):
            raise ValueError(f"{shown(value)} is an address written another way: write it as a.b.c.d") from None
        raise ValueError(f"{shown(value)} is neither an IP address nor a DNS host name") from None
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.scope_id is not None:
            raise ValueError(f"{shown(value)}: an IPv6 zone (%...) is not accepted")
        if ip.ipv4_mapped is not None:
            raise ValueError(f"{shown(value)} is an IPv4 address in IPv6 form: write it as {ip.ipv4_mapped}")
    _reachable_class(value, ip)
    return str(ip)


def host_address(value: str) -> str:
    """`value` checked as an `Address` is (canonical, one host's, loopback kept): for a host read out of a URL, such as
    a plug-in platform's REST endpoint, that a credential is sent to."""
    return valid_address(value)


def _reachable_class(value: str, ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> None:
    """An endpoint is one host: not every address, not a link-local (a cloud metadata service lives at
    169.254.169.254), not a group (multicast), not reserved or broadcast. Loopback stays: a tunnel."""
    for what, yes, why in (("unspecified", ip.is_unspecified, ""),
                           ("link-local", ip.is_link_local, " (169.254.0.0/16, fe80::/10: a cloud's metadata service "
                                                            "answers at 169.254.169.254)"),
                           ("multicast", ip.is_multicast, ""),
                           ("reserved or broadcast", ip.is_reserved and not ip.is_loopback, "")):
        if yes:
            raise ValueError(f"{shown(value)} is a {what} address, not one host's{why}")


def this_machine(address: str) -> bool:
    """A loopback address, or a name every resolver gives one (`localhost`, `*.localhost`: RFC 6761)."""
    name = address.casefold()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def _ipv4(value: str) -> str:
    try:
        ip = ipaddress.IPv4Address(value)
    except ValueError:
        raise ValueError(f"{shown(value)} is not an IPv4 address (the router drops it as <address>/32)") from None
    _reachable_class(value, ip)
    return str(ip)


SPECIAL_NETWORKS = tuple(ipaddress.IPv4Network(n) for n in (
    "0.0.0.0/8", "127.0.0.0/8", "169.254.0.0/16", "224.0.0.0/4", "240.0.0.0/4"))
"""This network, loopback, link-local, multicast, reserved and broadcast (RFC 6890): never a site."""
WIDEST_SITE_PREFIX = 16
"""A site subnet is at most a /16 unless the command line says otherwise (`--widest-site-subnet`):
a partition drops a whole site subnet, so a file must not be able to make it half the Internet."""


def _subnet(value: str) -> str:
    """An IPv4 network without host bits, never /0: the router drops traffic by it (`ip saddr`)."""
    try:
        network = ipaddress.ip_network(value, strict=False)
    except ValueError:
        raise ValueError(f"{shown(value)} is not a network like 192.0.2.0/26") from None
    if "/" not in value:
        raise ValueError(f"{shown(value)}: write the prefix length ({network})")
    if network.version != 4:
        raise ValueError(f"{shown(value)} is IPv6: the router's drop rules match IPv4 (ip saddr)")
    if network.prefixlen == 0:
        raise ValueError(f"{shown(value)} is every address: a partition would cut the harness off too")
    try:
        ipaddress.ip_network(value, strict=True)
    except ValueError:
        raise ValueError(f"{shown(value)} has host bits set: the network is {network}") from None
    for special in SPECIAL_NETWORKS:
        if network.overlaps(special):
            raise ValueError(f"{shown(value)} overlaps {special}, which is no site's (loopback, link-local, "
                             "multicast, reserved or broadcast)")
    return str(network)


def _file_path(value: str) -> str:
    if not FILE_PATH.fullmatch(value) or ".." in PurePosixPath(value).parts:
        raise ValueError(f"{shown(value)} is not an absolute path of letters, digits and '/_.@+=:,~-' without '..'")
    return value


KERNEL_TREES = ("proc", "sys", "dev")
"""The kernel's file systems: what reads there never ends (/dev/zero), waits (/dev/stdin) or is a secret
(/proc/self/environ); no file a topology names for the harness to read lives there."""
NOT_REGULAR = ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
               (stat.S_ISFIFO, "a pipe"), (stat.S_ISSOCK, "a socket"))


def _kernel_tree(path: str) -> str | None:
    parts = PurePosixPath(path).parts
    return parts[1] if parts[:1] in (("/",), ("//",)) and parts[1:2] and parts[1] in KERNEL_TREES else None


def ca_file(value: str) -> str:
    """A CA bundle is an ordinary file: never under /proc, /sys or /dev (written so, or through a link) and, where
    it exists, a regular file. One that is not there (yet) is accepted: a plan is made on a laptop, and the
    transport says at connect time that it cannot load it. Examined with stat, never opened (a pipe would wait)."""
    one_line(value)
    for path in (os.path.normpath(value), os.path.realpath(value)):
        tree = _kernel_tree(path)
        if tree is not None:
            through = "" if path == os.path.normpath(value) else " (through a link)"
            raise ValueError(f"{shown(value)} is under /{tree}{through}: a CA bundle is an ordinary file, never the "
                             "kernel's (/proc, /sys, /dev)")
    try:
        mode = os.stat(value).st_mode
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return value  # not there, or not ours to read: the preflight says so
    except OSError as exc:
        raise ValueError(f"{shown(value)} cannot be examined ({exc.strerror or type(exc).__name__})") from None
    if not stat.S_ISREG(mode):
        kind = next((what for test, what in NOT_REGULAR if test(mode)), "a special file")
        raise ValueError(f"{shown(value)} is {kind}, not a regular file: a CA bundle is a PEM file")
    return value


Name = Annotated[str, AfterValidator(matching(NAME, "a name: 1-63 letters, digits, '.', '_' or '-', "
                                                    "starting with a letter or digit"))]
Device = Annotated[str, AfterValidator(matching(DEVICE, "a device name: letters, digits, '.', '_', ':' or '-'"))]
Interface = Annotated[str, AfterValidator(matching(IFNAME, "an interface name: 1-15 letters, digits, '.', '_' "
                                                            "or '-', starting with a letter or digit"))]
Display = Annotated[str, AfterValidator(matching(DISPLAY, "a name of letters, digits, spaces and '_.()+-'"))]
Username = Annotated[str, AfterValidator(matching(USERNAME, "a user name: letters, digits and '_.@\\-'"))]
HostKey = Annotated[str, AfterValidator(matching(HOST_KEY, "an ssh host key '<type> <base64>'"))]
Address = Annotated[str, AfterValidator(valid_address)]
IPv4 = Annotated[str, AfterValidator(_ipv4)]
Subnet = Annotated[str, AfterValidator(_subnet)]
FilePath = Annotated[str, AfterValidator(_file_path)]
CaFile = Annotated[str, AfterValidator(_file_path), AfterValidator(ca_file)]
Port = Annotated[int, Field(strict=True, ge=1, le=65535)]
Seconds = Annotated[float, Field(strict=True, gt=0)]


class StrictModel(BaseModel):
    """Every topology model: unknown keys refused, frozen once read, no inf or nan."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def from_document(info: ValidationInfo) -> bool:
    return isinstance(info.context, Mapping) and bool(info.context.get("document"))


def is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return address == "localhost"
