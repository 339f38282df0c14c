"""What a WinRM listener does before it reads an envelope: TLS, NTLM inside Negotiate, channel binding, sealing.

The transport's default is pywinrm's `ntlm` over https with the certificate validated; on http
(a loopback tunnel) pywinrm seals every message with the NTLM context instead. A listener with
Windows' defaults asks for `Negotiate` (401), authenticates the connection once (NTLM, three
legs), and then:
- over https, checks the client's channel binding: the hash of the listener's certificate
  (RFC 5929 tls-server-end-point) in the NTLMv2 response's MsvAvChannelBindings ([MS-NLMP]),
  refusing a login without one (CbtHardeningLevel Strict; Windows' default, Relaxed, would
  let it in, and a transport that stopped binding would go unnoticed);
- over http, reads and writes only `multipart/encrypted` bodies sealed with that context
  ([MS-WSMV] 2.2.9.1.1) and answers a plaintext one 401 (AllowUnencrypted=false).

The NTLM acceptor is pyspnego's (`spnego.server(protocol="ntlm")`), which reads accounts from
the file named by NTLM_USER_FILE: a test sets that variable (monkeypatch) to its site's file.
The header names, MIME types, protocol strings and statuses served come from
`tests.support.wsman_facts.FACTS`, each with its source.
"""

from __future__ import annotations

import base64
import ipaddress
import os
import re
import ssl
import struct
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import spnego
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from spnego.channel_bindings import GssChannelBindings
from spnego.exceptions import BadBindingsError, SpnegoError

from tests.support.wsman_facts import FACTS, text

ACCOUNTS_ENV = "NTLM_USER_FILE"  # pyspnego's NTLM acceptor reads its accounts from the file this names
# the environment variable pyspnego reads, not a value on the wire
OWN_TOKENS = frozenset({ACCOUNTS_ENV})

SCHEME = text("auth.scheme")  # "Negotiate"
NTLM_SIGNATURE = text("auth.token").encode() + b"\0"  # every NTLM message starts "NTLMSSP\0" ([MS-NLMP] 2.2.1)
CHANNEL_BINDINGS_AV_ID = int(text("cbt.av_id"), 16)  # MsvAvChannelBindings
ENCRYPTED = text("encryption.content_type")
PROTOCOL = text("encryption.protocol")
BOUNDARY = text("encryption.boundary")
ORIGINAL = text("encryption.original_content")
OCTETS = text("encryption.data_type")
LENGTH_FIELD = text("encryption.length_byte_order")  # "<i": 4 bytes, little-endian, as pywinrm packs it
TAB = "\t" if FACTS.as_documented("encryption.part_header_prefix") else " "  # before each part header's name


def _private_file(path: Path, data: bytes) -> None:
    """Write `data` to a new file only its owner can read (0600)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)


def tls_server_end_point(certificate_der: bytes) -> bytes:
    """RFC 5929 4.1: the certificate's hash with its signature's hash function, SHA-256 in place of MD5 or SHA-1."""
    algorithm = x509.load_der_x509_certificate(certificate_der).signature_hash_algorithm
    if algorithm is None:  # "uses no hash functions ... channel bindings are undefined"
        raise ValueError("no tls-server-end-point binding for a certificate signed without a hash function")
    if algorithm.name in ("md5", "sha1"):
        algorithm = {"SHA-256": hashes.SHA256()}[text("cbt.hash_of_md5_or_sha1")]
    digest = hashes.Hash(algorithm)
    digest.update(certificate_der)
    return digest.finalize()


@dataclass(frozen=True)
class WsmanSite:
    """A throwaway listener certificate (self-signed, 127.0.0.1) and the NTLM accounts of one test's stand-ins.

    Made at run time in a directory only its owner can read; the certificate file is also the
    trust path a client is given (`tls.ca_file`), so TLS is verified, not switched off.
    """

    directory: Path
    certificate: Path  # PEM
    key: Path  # PEM, 0600
    accounts: Path  # NTLM_USER_FILE: DOMAIN:USER:PASSWORD lines, 0600

    @classmethod
    def create(cls, directory: Path) -> WsmanSite:
        directory.mkdir(mode=0o700, parents=True)
        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "wsman stand-in on 127.0.0.1")])
        now = datetime.now(UTC)
        certificate = (
            x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(minutes=5)).not_valid_after(now + timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                         crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))
        site = cls(directory, directory / "listener.pem", directory / "listener.key", directory / "ntlm-accounts")
        site.certificate.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
        _private_file(site.key, key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                  serialization.NoEncryption()))
        _private_file(site.accounts, b"")
        return site

    @property
    def certificate_der(self) -> bytes:
        return x509.load_pem_x509_certificate(self.certificate.read_bytes()).public_bytes(serialization.Encoding.DER)

    def channel_bindings(self) -> GssChannelBindings:
        """What a client on this listener's TLS channel must bind its NTLM response to."""
        return GssChannelBindings(application_data=text("cbt.prefix").encode() + tls_server_end_point(self.certificate_der))

    def tls_context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.certificate, self.key)
        return context

    def add_account(self, username: str, password: str) -> None:
        """Accept `DOMAIN\\user` (or `user`) with `password`: one line of the NTLM_USER_FILE format."""
        domain, _, user = username.rpartition("\\")
        if any(c in field for field in (domain, user, password) for c in ":\r\n") or not user:
            raise ValueError("an NTLM account line is DOMAIN:USER:PASSWORD: no colon or line break in any of them")
        for line in self.accounts.read_text().splitlines():
            known_domain, known_user, known_password = line.split(":")
            if (known_domain.upper(), known_user.upper()) == (domain.upper(), user.upper()):
                if known_password != password:
                    raise ValueError(f"{username} is already an account of this site with another password")
                return
        with self.accounts.open("a") as out:
            out.write(f"{domain}:{user}:{password}\n")


def _channel_binding_of(authenticate: bytes) -> bytes | None:
    """The MsvAvChannelBindings value an NTLMv2 AUTHENTICATE_MESSAGE carries, None when it carries none.

    [MS-NLMP] 2.2.1.3: NtChallengeResponseFields (Len, MaxLen: 2 bytes each; BufferOffset: 4)
    follow Signature (8), MessageType (4) and LmChallengeResponseFields (8), so sit at offset 20.
    2.2.2.8 NTLMv2_RESPONSE: "Response (16 bytes)" then the NTLMv2_CLIENT_CHALLENGE, whose
    AvPairs follow 28 fixed bytes (2.2.2.7: RespType, HiRespType, Reserved1, Reserved2,
    TimeStamp, ChallengeFromClient, Reserved3). 2.2.2.1: AvId (2), AvLen (2), Value; MsvAvEOL is 0.
    """
    length, _, offset = struct.unpack_from("<HHI", authenticate, 20)
    response = authenticate[offset:offset + length]
    if len(response) <= 24:  # an NTLMv1 response: no AV pairs at all
        return None
    pairs, at = response[16 + 28:], 0
    while at + 4 <= len(pairs):
        av_id, av_len = struct.unpack_from("<HH", pairs, at)
        if av_id == 0:
            break
        if av_id == CHANNEL_BINDINGS_AV_ID:
            return pairs[at + 4:at + 4 + av_len]
        at += 4 + av_len
    return None


@dataclass(frozen=True)
class AuthStep:
    """What the listener does with a request's Authorization: serve it, or answer 401 with `challenge`."""

    challenge: str | None = None  # the WWW-Authenticate value of a 401; None: serve the request
    refusal: str | None = None  # why a login was refused (None on a handshake's first two legs)
    user: str | None = None  # who the connection just authenticated as


class NtlmLogin:
    """One connection's login. NTLM authenticates the connection ([MS-WSMV] 2.2.9.1.1.1: the client sends
    Authorization "until the ... service responds with a "200 OK" response, indicating that the security
    context is complete"), so later requests on it carry none."""

    def __init__(self, bindings: GssChannelBindings | None) -> None:
        self.bindings = bindings  # the TLS channel's (https), or None (http)
        self.context: spnego.ContextProxy | None = None

    @property
    def complete(self) -> bool:
        return self.context is not None and self.context.complete

    @property
    def established(self) -> spnego.ContextProxy:
        """The connection's security context, once its login is complete (it seals and unseals the messages)."""
        if self.context is None or not self.context.complete:
            raise ValueError("the connection has not logged in")
        return self.context

    def reset(self) -> None:
        self.context = None

    def step(self, authorization: str | None) -> AuthStep:
        if authorization is None:
            return AuthStep() if self.complete else AuthStep(SCHEME)
        scheme, _, data = authorization.partition(" ")
        if scheme != SCHEME:
            return AuthStep(SCHEME, f"the {scheme} scheme, not {SCHEME}")
        try:
            token = base64.b64decode(data, validate=True)
        except ValueError:
            token = b""
        if not token.startswith(NTLM_SIGNATURE) or len(token) < 12:
            return AuthStep(SCHEME, "not an NTLM token")
        message_type = struct.unpack_from("<I", token, 8)[0]
        if message_type == 1:  # NEGOTIATE_MESSAGE: a new handshake, on a new connection or after a refusal
            self.context = spnego.server(protocol="ntlm", options=spnego.NegotiateOptions.use_ntlm,
                                         channel_bindings=self.bindings)
            challenge = self.context.step(token) or b""
            return AuthStep(f"{SCHEME} {base64.b64encode(challenge).decode()}")
        if message_type != 3 or self.context is None or self.context.complete:
            self.reset()
            return AuthStep(SCHEME, "an NTLM message out of order")
        if self.bindings is not None:  # CbtHardeningLevel Strict: absent and all-zero both mean "no binding"
            bound = _channel_binding_of(token)
            if bound is None or bound == bytes(len(bound)):
                self.reset()
                return AuthStep(SCHEME, "channel binding absent")
        try:
            self.context.step(token)
        except BadBindingsError:
            self.reset()
            return AuthStep(SCHEME, "channel binding mismatch")
        except SpnegoError:
            self.reset()
            return AuthStep(SCHEME, "credentials")
        return AuthStep(user=self.context.client_principal)


def content_type() -> str:
    """The Content-Type of a sealed message ([MS-WSMV] 2.2.9.1.1.1)."""
    return f'{ENCRYPTED};protocol="{PROTOCOL}";boundary="{BOUNDARY}"'


def is_sealed(header: str) -> bool:
    params = [p.strip() for p in header.split(";")]
    return params[0] == ENCRYPTED and f'protocol="{PROTOCOL}"' in params[1:]


_PART = re.compile(
    rf"{TAB}Content-Type: {re.escape(PROTOCOL)}\r\n{TAB}OriginalContent: type={re.escape(ORIGINAL)};"
    rf"charset=(UTF-8|UTF-16);Length=(\d+)\r\n--{re.escape(BOUNDARY)}\r\n{TAB}Content-Type: {re.escape(OCTETS)}\r\n".encode())


def unseal(body: bytes, header: str, context: spnego.ContextProxy) -> str:
    """The SOAP envelope of a `multipart/encrypted` body; ValueError when it is not framed as [MS-WSMV] 2.2.9.1.1.2 says."""
    if f'boundary="{BOUNDARY}"' not in [p.strip() for p in header.split(";")]:
        raise ValueError("the boundary is not Encrypted Boundary")
    opening, closing = f"--{BOUNDARY}\r\n".encode(), f"--{BOUNDARY}--\r\n".encode()
    if not body.startswith(opening) or not body.endswith(closing):
        raise ValueError("not delimited by --Encrypted Boundary")
    part = _PART.match(body, len(opening))
    if part is None:
        raise ValueError("the parts' headers are not those of an SPNEGO-encrypted message")
    stream = body[part.end():-len(closing)]
    (header_length,) = struct.unpack_from(LENGTH_FIELD, stream)
    signature, sealed = stream[4:4 + header_length], stream[4 + header_length:]
    plain = context.unwrap_winrm(signature, sealed)
    if len(plain) != int(part.group(2)):
        raise ValueError("the unsealed message is not the length its OriginalContent states")
    return plain.decode("utf-8" if part.group(1) == b"UTF-8" else "utf-16")


def seal(envelope: str, context: spnego.ContextProxy) -> bytes:
    """`envelope` sealed with the connection's context, framed as pywinrm's winrm/encryption.py reads it."""
    plain = envelope.encode("utf-8")
    wrapped = context.wrap_winrm(plain)
    return (f"--{BOUNDARY}\r\n{TAB}Content-Type: {PROTOCOL}\r\n"
            f"{TAB}OriginalContent: type={ORIGINAL};charset=UTF-8;Length={len(plain)}\r\n"
            f"--{BOUNDARY}\r\n{TAB}Content-Type: {OCTETS}\r\n").encode() \
        + struct.pack(LENGTH_FIELD, len(wrapped.header)) + wrapped.header + wrapped.data + f"--{BOUNDARY}--\r\n".encode()
