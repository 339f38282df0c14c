"""A certificate authority of one lab, and a server certificate for 127.0.0.1 / localhost it signs.

The bound lab's endpoints (simulated vCenter, Redfish emulator) serve TLS with this
certificate and the generated topology verifies it against this CA (`tls.ca_file`), so the
production clients run with verification on, as they must against a real cluster. Keys never
leave the lab's private directory (0700, files 0600); the CA certificate is public.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALID_DAYS = 30


@dataclass(frozen=True)
class LabCa:
    directory: Path

    @property
    def ca_file(self) -> Path:
        return self.directory / "ca.pem"

    @property
    def ca_key_file(self) -> Path:
        return self.directory / "ca.key"

    @property
    def cert_file(self) -> Path:
        return self.directory / "server.pem"

    @property
    def key_file(self) -> Path:
        return self.directory / "server.key"

    def ensure(self, name: str) -> None:
        """Create the CA and the server certificate unless both exist. `name` goes into the subjects."""
        if all(p.exists() for p in (self.ca_file, self.ca_key_file, self.cert_file, self.key_file)):
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        self.directory.chmod(0o700)
        now = datetime.datetime.now(datetime.UTC)
        start, end = now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=VALID_DAYS)
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{name} lab CA")])
        ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
              .serial_number(x509.random_serial_number()).not_valid_before(start).not_valid_after(end)
              .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
              .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                           content_commitment=False, key_encipherment=False, data_encipherment=False,
                                           key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
              .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
              .sign(ca_key, hashes.SHA256()))
        key = ec.generate_private_key(ec.SECP256R1())
        server = (x509.CertificateBuilder()
                  .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
                  .issuer_name(ca_name).public_key(key.public_key())
                  .serial_number(x509.random_serial_number()).not_valid_before(start).not_valid_after(end)
                  .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                              x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                                 critical=False)
                  .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                  .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
                  .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
                  .sign(ca_key, hashes.SHA256()))
        _write(self.ca_key_file, _private(ca_key), 0o600)
        _write(self.key_file, _private(key), 0o600)
        _write(self.ca_file, ca.public_bytes(serialization.Encoding.PEM), 0o644)
        _write(self.cert_file, server.public_bytes(serialization.Encoding.PEM), 0o644)


def _private(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


def _write(path: Path, data: bytes, mode: int) -> None:
    """Created with its final mode, so a key is never readable by others, not even for a moment."""
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
