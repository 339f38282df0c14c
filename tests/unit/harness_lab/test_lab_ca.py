"""The lab's CA: a server certificate for 127.0.0.1 and localhost that verifies against it; keys private."""

from __future__ import annotations

import ipaddress
import stat
from pathlib import Path

from cryptography import x509

from harness_lab.ca import LabCa


def test_the_server_certificate_is_issued_by_the_lab_ca_for_loopback(tmp_path: Path) -> None:
    ca = LabCa(tmp_path / "ca")
    ca.ensure("t1")
    root = x509.load_pem_x509_certificate(ca.ca_file.read_bytes())
    server = x509.load_pem_x509_certificate(ca.cert_file.read_bytes())
    server.verify_directly_issued_by(root)
    assert root.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert not server.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    names = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["localhost"]
    assert names.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]


def test_keys_are_private_and_a_second_ensure_keeps_them(tmp_path: Path) -> None:
    ca = LabCa(tmp_path / "ca")
    ca.ensure("t1")
    assert stat.S_IMODE(ca.directory.stat().st_mode) == 0o700
    for key in (ca.ca_key_file, ca.key_file):
        assert stat.S_IMODE(key.stat().st_mode) == 0o600
    before = ca.cert_file.read_bytes()
    ca.ensure("t1")
    assert ca.cert_file.read_bytes() == before
