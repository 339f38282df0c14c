"""X-7's classes of hostile values, drawn: each is refused at load with one `ConfigError` line that names the file
and the field (or the option), never another exception.

The classes: a REST endpoint or fallback at a link-local address (Basic credentials would go to a cloud's metadata
service), a restore named like a system database or the database itself, a restore destination that is a system
root, relative or special, a CA file that is the kernel's or no regular file, and the witness or a site's host at
this machine's loopback. Profiles are fuzz_support's (`HARNESS_FUZZ=long` for a larger random run).
"""

from __future__ import annotations

import copy
import ipaddress
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from faults import sections
from harness.options import read
from harness.run_options import check_restore_destination
from harness.topology_source import load_source
from harness_kernel.errors import ConfigError
from harness_kernel.topology.loader import parse_topology
from harness_suites.s7.options import Options as S7Options
from tests.unit.harness_kernel.topology.fuzz_support import PROFILE
from tests.unit.harness_kernel.topology.test_topology_fuzz import refusal_path
from tests.unit.harness_kernel.topology.topology_docs import ROOT, example, set_at
from tests.unit.harness_kernel.topology.topology_strategies import documents

ORIGIN = "fuzz.yaml"
FEW = settings(PROFILE, max_examples=max(50, PROFILE.max_examples // 15))
PLATFORMS = {"vplex": "examples/stretched-metro-vplex.yaml", "nutanix": "examples/nutanix-ahv-esrp.yaml"}
EXAMPLES = {name: yaml.safe_load((ROOT / path).read_text()) for name, path in PLATFORMS.items()}
SEGMENT = st.from_regex(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,11}", fullmatch=True).filter(lambda s: s not in (".", ".."))


def refused_at(load: Any, origin: str = ORIGIN) -> str:
    """The field path the refusal names (one line, starting with the file); fails if nothing was refused."""
    with pytest.raises(ConfigError) as caught:
        load()
    return refusal_path(str(caught.value), origin)


def with_section(platform: str, field: str, value: Any) -> Any:
    """Load the platform's example with one field of its section set, as `load_source` does (then the sections)."""
    doc = copy.deepcopy(EXAMPLES[platform])
    doc["management"]["platforms"][platform][field] = value
    return lambda: sections.check(parse_topology(doc, ORIGIN))


# -- link-local REST endpoints and fallbacks ---------------------------------------------------------

LINK_LOCAL_V4 = st.integers(0, 2**16 - 1).map(lambda n: ipaddress.IPv4Address(int(ipaddress.IPv4Address("169.254.0.0")) + n))
LINK_LOCAL_V6 = st.integers(0, 2**118 - 1).map(lambda n: ipaddress.IPv6Address(int(ipaddress.IPv6Address("fe80::")) + n))
LINK_LOCAL_HOSTS = st.one_of(
    LINK_LOCAL_V4.map(str), LINK_LOCAL_V6.map(lambda ip: f"[{ip}]"),
    LINK_LOCAL_V4.map(lambda ip: f"[::ffff:{ip}]"), LINK_LOCAL_V4.map(lambda ip: hex(int(ip))),  # spelled otherwise
    st.just("169.254.169.254"), st.just("[fe80::1]"),
)
LINK_LOCAL_URLS = st.builds(lambda scheme, host, port: f"{scheme}://{host}{port}", st.sampled_from(["https", "http"]),
                            LINK_LOCAL_HOSTS, st.sampled_from(["", ":443", ":9440", ":8443/"]))


@pytest.mark.reproducer("X-7")
def test_a_link_local_rest_endpoint_or_fallback_is_refused_naming_the_file_and_its_field() -> None:
    @FEW
    @given(st.sampled_from(sorted(PLATFORMS)), st.booleans(), LINK_LOCAL_URLS)
    def endpoints(platform: str, fallback: bool, url: str) -> None:
        field, where = ("fallback_endpoints", "fallback_endpoints[0]") if fallback else ("endpoint", "endpoint")
        load = with_section(platform, field, [url] if fallback else url)
        assert refused_at(load) == f"management.platforms.{platform}.{where}"

    endpoints()


# -- restore_as: a system database or the database itself ----------------------------------------------

def any_case(word: str) -> st.SearchStrategy[str]:
    return st.lists(st.booleans(), min_size=len(word), max_size=len(word)).map(
        lambda upper: "".join(c.upper() if u else c.lower() for c, u in zip(word, upper, strict=True)))


SYSTEM_DATABASES = st.sampled_from(["master", "model", "msdb", "tempdb"]).flatmap(any_case)


@pytest.mark.reproducer("X-7")
def test_restore_as_naming_a_system_database_or_the_database_itself_is_refused_naming_its_field() -> None:
    @FEW
    @given(documents(), st.data())
    def restores(doc: dict[str, Any], data: st.DataObject) -> None:
        assume(doc["databases"])
        index = data.draw(st.integers(0, len(doc["databases"]) - 1))
        own = doc["databases"][index]["database"]
        doc["databases"][index]["restore_as"] = data.draw(st.one_of(SYSTEM_DATABASES, any_case(own)))
        assert refused_at(lambda: parse_topology(doc, ORIGIN)) == f"databases[{index}].restore_as"

    restores()


# -- --restore-destination: roots, system directories, relative and device paths --------------------------

POSIX_ROOTS = ["/", "/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/boot", "/dev", "/proc",
               "/sys", "/var", "/root", "/run"]


def _respelled(root: str, doubled: bool, dotted: bool, trailing: int) -> str:
    """The same directory written another way: `//etc`, `/./etc`, `/etc//`."""
    path = root.replace("/", "//", 1) if doubled else root
    path = path.replace("/", "/./", 1) if dotted and path != "/" else path
    return path + "/" * trailing


DRIVES = st.sampled_from("CDEFRZcdz")
SEPARATORS = st.sampled_from(["\\", "/"])
DANGEROUS_DESTINATIONS = st.one_of(
    st.builds(_respelled, st.sampled_from(POSIX_ROOTS), st.booleans(), st.booleans(), st.integers(0, 2)),
    st.builds(lambda root, parts: "/".join([root, *parts]), st.sampled_from(["/proc", "/sys", "/dev"]),
              st.lists(SEGMENT, min_size=1, max_size=3)),
    st.builds(lambda parts, root: "/" + "/".join(parts) + "/.." * len(parts) + root, st.lists(SEGMENT, min_size=1,
              max_size=3), st.sampled_from(POSIX_ROOTS[1:])),
    st.lists(SEGMENT, min_size=1, max_size=3).map("/".join),  # relative
    st.builds(lambda drive, sep: f"{drive}:{sep}", DRIVES, st.sampled_from(["", "\\", "/", "\\\\"])),  # drive roots
    st.builds(lambda drive, sep, windows, parts: f"{drive}:{sep}{windows}" + "".join(sep + p for p in parts),
              DRIVES, SEPARATORS, any_case("windows"), st.lists(SEGMENT, max_size=2)),
    st.builds(lambda prefix, part: prefix + part, st.sampled_from(["\\\\.\\", "\\\\?\\", "//./"]),
              st.sampled_from(["PhysicalDrive0", "C:\\Restore", "pipe\\x"])),
    st.builds(lambda drive, part: f"{drive}:{part}", DRIVES, SEGMENT),  # drive-relative
)


@pytest.mark.reproducer("X-7")
def test_a_restore_destination_wrong_for_every_engine_is_refused_naming_the_option(pytestconfig: pytest.Config) -> None:
    @FEW
    @given(DANGEROUS_DESTINATIONS)
    def destinations(destination: str) -> None:
        with pytest.raises(ConfigError) as caught:
            read(S7Options, lambda name: destination if name == "--restore-destination" else None)
        message = str(caught.value)
        assert len(message.splitlines()) == 1 and message.startswith("--restore-destination: "), message

    destinations()


POSIX_DIRECTORIES = st.lists(SEGMENT, min_size=1, max_size=3).map(lambda parts: "/srv/" + "/".join(parts))
WINDOWS_DIRECTORIES = st.builds(lambda drive, parts: f"{drive}:\\" + "\\".join(parts), st.sampled_from("DERZ"),
                                st.lists(SEGMENT.filter(lambda s: s.casefold() != "windows"), min_size=1, max_size=3))


@pytest.mark.reproducer("X-7")
def test_a_restore_destination_for_another_engine_is_refused_once_the_topology_names_the_engine() -> None:
    lab, sqlserver = load_source("lab"), parse_topology(example(), "t.yaml")

    @FEW
    @given(st.booleans(), POSIX_DIRECTORIES, WINDOWS_DIRECTORIES)
    def destinations(on_sqlserver: bool, posix: str, windows: str) -> None:
        topology, origin, wrong, right = (sqlserver, "t.yaml", posix, windows) if on_sqlserver else (lab, "lab", windows, posix)
        check_restore_destination(right, topology, origin)
        with pytest.raises(ConfigError) as caught:
            check_restore_destination(wrong, topology, origin)
        message = str(caught.value)
        assert len(message.splitlines()) == 1 and message.startswith("--restore-destination: "), message
        assert f"{origin}: databases[0].kind" in message, message

    destinations()


# -- CA files: the kernel's, or no regular file ---------------------------------------------------------

KNOWN_SPECIAL = ["/proc/self/environ", "/proc/self/fd/0", "/proc/kcore", "/proc/1/stat", "/dev/zero", "/dev/null",
                 "/dev/stdin", "/dev/urandom", "/dev/shm", "/sys/kernel/uevent_seqnum", "/sys/power/state"]
KERNEL_PATHS = st.builds(lambda root, parts: "/".join([root, *parts]), st.sampled_from(["/proc", "/sys", "/dev"]),
                         st.lists(SEGMENT, max_size=3))
CA_FIELDS = [("vcenter", "management.vcenter.tls"), ("redfish", "management.redfish[0].tls"),
             ("vplex", "management.platforms.vplex"), ("nutanix", "management.platforms.nutanix")]


def not_regular_files(where: Path) -> list[str]:
    """On disk, things that exist and are no regular file: a directory, a pipe (read, it waits), links to the kernel's."""
    where.mkdir()
    (where / "dir").mkdir()
    os.mkfifo(where / "fifo")
    (where / "to-environ").symlink_to("/proc/self/environ")
    (where / "to-zero").symlink_to("/dev/zero")
    (where / "to-dir").symlink_to(where / "dir")
    return [str(where / n) for n in ("dir", "fifo", "to-environ", "to-zero", "to-dir")]


def loading_with_ca_file(surface: str, path: str) -> Any:
    if surface in PLATFORMS:
        return with_section(surface, "ca_file", path)
    doc = example()
    set_at(doc, dict(CA_FIELDS)[surface], {"ca_file": path})
    return lambda: parse_topology(doc, ORIGIN)


@pytest.mark.reproducer("X-7")
def test_a_ca_file_that_is_the_kernels_or_no_regular_file_is_refused_naming_its_field(tmp_path: Path) -> None:
    on_disk = not_regular_files(tmp_path / "special")

    @FEW
    @given(st.sampled_from(CA_FIELDS), st.one_of(st.sampled_from([*KNOWN_SPECIAL, *on_disk]), KERNEL_PATHS))
    def ca_files(surface: tuple[str, str], path: str) -> None:
        assert refused_at(loading_with_ca_file(surface[0], path)) == f"{surface[1]}.ca_file"

    ca_files()


def test_a_ca_file_not_there_yet_is_accepted_at_load_on_every_surface() -> None:
    @FEW
    @given(st.sampled_from(CA_FIELDS), st.lists(SEGMENT, min_size=1, max_size=3))
    def missing(surface: tuple[str, str], parts: list[str]) -> None:
        loading_with_ca_file(surface[0], "/nonexistent/" + "/".join(parts))()

    missing()


# -- the witness at this machine ----------------------------------------------------

LOOPBACK_V4 = st.integers(0, 2**24 - 1).map(lambda n: str(ipaddress.IPv4Address((127 << 24) + n)))


@pytest.mark.reproducer("X-7")
def test_the_witness_at_loopback_is_refused_naming_its_field() -> None:
    @FEW
    @given(documents(), LOOPBACK_V4)
    def witnesses(doc: dict[str, Any], address: str) -> None:
        assume("witness" in doc)
        doc["witness"]["address"] = address
        assert refused_at(lambda: parse_topology(doc, ORIGIN)) == "witness.address"

    witnesses()
