"""Where each fact the WS-Management stand-in serves comes from (read through `FACTS.value`).

One row per header name, MIME type, protocol string or status the stand-in sends or insists
on: the HTTP authentication it asks for ([MS-WSMV] 2.2.9.1.1, [MS-N2HT]), the channel binding
it checks ([MS-NLMP], RFC 5929), the message encryption it reads and writes ([MS-WSMV]
2.2.9.1.1.2) and the Receive states it streams output with ([MS-WSMV] 2.2.4.9, 3.1.4.14).
"""

from __future__ import annotations

from tests.support.provenance import Fact, Facts

MS_WSMV = "https://learn.microsoft.com/en-us/openspecs/windows_protocols/ms-wsmv/"
HTTP_HEADERS = f"[MS-WSMV] 2.2.9.1.1.1 HTTP Headers (SPNEGO encryption), {MS_WSMV}3d957d6c-d5cf-4b7e-8bbe-4e7c68a089de"
ENCRYPTED_DATA = f"[MS-WSMV] 2.2.9.1.1.2.2 Encrypted Data, {MS_WSMV}3fc54d8b-b087-486e-9f50-8253e9e30b43"
METADATA = (f"[MS-WSMV] 2.2.9.1.2.2.1 Metadata Fields (its list names application/HTTP-SPNEGO-session-encrypted), "
            f"{MS_WSMV}ac325c56-d39d-49d6-a834-ff7f3a9bea3c")
RECEIVE = f"[MS-WSMV] 3.1.4.14 Receive, {MS_WSMV}50cc2c38-e094-4d59-aec2-39e09f314862"
COMMAND_STATE = f"[MS-WSMV] 2.2.4.9 CommandStateType, {MS_WSMV}5d106d9b-a5ae-4048-834f-e90ee80c28fc"
MS_NLMP_AV_PAIR = "[MS-NLMP] 2.2.2.1 AV_PAIR, https://learn.microsoft.com/en-us/openspecs/windows_protocols/ms-nlmp/83f5e789-660d-4781-8491-5f8c6641f75e"
N2HT = "[MS-N2HT] 2.2.1 The WWW-Authenticate Response Header, https://learn.microsoft.com/en-us/openspecs/windows_protocols/ms-n2ht/02be79f3-e360-475f-b468-b96c878c70c7"
PACKER_6205 = ("hashicorp/packer#6205, jborean93 (pywinrm and pyspnego maintainer) reading a Wireshark capture of NTLM "
               "over http against a Windows host's WinRM listener, https://github.com/hashicorp/packer/issues/6205")

PYWINRM_CAPTURE = ("pywinrm tests/conftest.py (get_cmd_output_response, a Receive reply kept from a Windows host), "
                   "https://github.com/diyan/pywinrm/blob/master/tests/conftest.py")
PYWINRM_TIMEOUT = ("pywinrm tests/test_protocol.py (the OperationTimeout fault of a Windows Server 2022 host, "
                   "Machine=\"server2022.domain.test\"), https://github.com/diyan/pywinrm/blob/master/tests/test_protocol.py")

FACTS = Facts("wsman", [
    # -- HTTP authentication (Negotiate carrying NTLM) ----------------------------------------
    Fact("auth.challenge_status", 401, "documented", N2HT,
         'the server responds with a "401 Unauthorized" status code (for more information, see [RFC2616], section '
         '10.4.2) and a "WWW-Authenticate" header'),
    Fact("auth.challenge_header", "WWW-Authenticate", "documented", N2HT,
         'the server responds with a "401 Unauthorized" status code ... and a "WWW-Authenticate" header'),
    Fact("auth.scheme", "Negotiate", "documented", HTTP_HEADERS, 'credentials    = "Negotiate" auth-data2'),
    Fact("auth.request_header", "Authorization", "documented", HTTP_HEADERS,
         'Authorization = "Authorization" ":" credentials'),
    Fact("auth.complete_status", "200 OK", "documented", HTTP_HEADERS,
         "The client MUST include the Authorization field in the request until the Web Services Management Protocol "
         'Extensions for Windows Vista service responds with a "200 OK" response, indicating that the security context '
         "is complete."),
    Fact("auth.token", "NTLMSSP", "captured", PACKER_6205,
         "You can see it is sending a negotiate message with the value `TlRMTVNTUAABAAAABYIAAA==`. In hex this message "
         "is 4E 54 4C 4D 53 53 50 00 (NTLMSSP\\0) ... The NTLM authentication process is fine"),
    # -- channel binding (HTTPS) -------------------------------------------------------------
    Fact("cbt.prefix", "tls-server-end-point:", "documented",
         "requests_ntlm 1.3.0 requests_ntlm/requests_ntlm.py (pywinrm's NTLM client; the type is RFC 5929 section 4's)",
         'application_data=b"tls-server-end-point:" + server_certificate_hash'),
    Fact("cbt.hash", "the hash function associated with the certificate's signatureAlgorithm", "documented",
         "RFC 5929 section 4.1, https://www.rfc-editor.org/rfc/rfc5929#section-4.1",
         "if the certificate's signatureAlgorithm uses a single hash function and that hash function neither MD5 nor "
         "SHA-1, then use the hash function associated with the certificate's signatureAlgorithm"),
    Fact("cbt.hash_of_md5_or_sha1", "SHA-256", "documented",
         "RFC 5929 section 4.1, https://www.rfc-editor.org/rfc/rfc5929#section-4.1",
         "if the certificate's signatureAlgorithm uses a single hash function, and that hash function is either MD5 "
         "[RFC1321] or SHA-1 [RFC3174], then use SHA-256 [FIPS-180-3]"),
    Fact("cbt.av_id", "0x000A", "documented", MS_NLMP_AV_PAIR,
         "MsvAvChannelBindings 0x000A A channel bindings hash. The Value field contains an MD5 hash ([RFC4121] section "
         "4.1.1.2) of a gss_channel_bindings_struct ([RFC2744] section 3.11)."),
    Fact("cbt.none", "all-zero", "documented", MS_NLMP_AV_PAIR,
         "An all-zero value of the hash is used to indicate absence of channel bindings."),
    Fact("cbt.hardening", "Strict", "stricter",
         "[MS-WSMV] 2.2.4.34 ServiceAuthType gives CbtHardeningLevel default=\"Relaxed\" "
         "(https://msdn.microsoft.com/en-us/library/cc251568.aspx); the stand-in serves Strict, as http.sys documents it "
         "(https://learn.microsoft.com/windows/win32/api/http/ne-http-http_authentication_hardening_levels), so a "
         "transport that stopped sending the binding fails here instead of passing against a relaxed listener",
         "HttpAuthenticationHardeningStrict Server is hardened. Only clients that supported CBT are serviced."),
    # -- message encryption (http) -----------------------------------------------------------
    Fact("encryption.content_type", "multipart/encrypted", "documented", HTTP_HEADERS,
         'contenttype:  Contains the message content type. It MUST be set to "multipart/encrypted".'),
    Fact("encryption.protocol", "application/HTTP-SPNEGO-session-encrypted", "documented", HTTP_HEADERS,
         'protocolvalue:  Contains the authentication mechanism that is used to establish the encryption context. It '
         'MUST be set to "application/HTTP-SPNEGO-session-encrypted"'),
    Fact("encryption.boundary", "Encrypted Boundary", "documented", HTTP_HEADERS,
         'boundaryvalue: Contains the boundary that is used as the delimiter line for the multipart media content. It '
         'MUST be set to "Encrypted Boundary".'),
    Fact("encryption.original_content", "application/soap+xml", "documented", METADATA,
         "contenttype: Contains the message content type of the original message and it MUST be set to "
         "application/soap+xml."),
    Fact("encryption.part_header_prefix", "horizontal tab", "documented", METADATA,
         'HT: The horizontal tab character. It MUST precede the literal "OriginalContent".'),
    Fact("encryption.data_type", "application/octet-stream", "documented", ENCRYPTED_DATA,
         "contenttype: Contains the encrypted message content type, and MUST be set to the following: "
         "application/octet-stream"),
    Fact("encryption.length_field", "32-bit unsigned integer", "documented", ENCRYPTED_DATA,
         "Length-Field: The Length-Field MUST follow immediately after the previous token. It MUST be a 32-bit "
         "unsigned integer that specifies the length of the encryption header portion of the Message field"),
    Fact("encryption.length_byte_order", "<i", "documented", "pywinrm 0.5.0 winrm/encryption.py (_build_ntlm_message)",
         'signature_length = struct.pack("<i", len(signature))'),
    Fact("encryption.ntlm_header", "Message Signature", "documented", ENCRYPTED_DATA,
         "For NTLM, it MUST be its Message Signature."),
    Fact("encryption.allow_unencrypted", "false", "documented",
         "[MS-WSMV] 2.2.4.36 ServiceType, http://msdn.microsoft.com/en-us/library/bbaeecdf-7540-4fd6-8ce1-bff0cb5be776",
         '<xs:element name="AllowUnencrypted" type="xs:boolean" default="false"/>'),
    Fact("encryption.unencrypted_status", 401, "captured", PACKER_6205,
         "Unless the Windows host is configured to allow un-encrypted messages then it will constantly send a 401 error"),
    # -- Receive -----------------------------------------------------------------------------
    Fact("command.action", "http://schemas.microsoft.com/wbem/wsman/1/windows/shell/Command", "documented",
         f"[MS-WSMV] 3.1.4.11 Command, {MS_WSMV}c793e333-c409-43c6-a2eb-6ae2489c7ef4",
         "MUST support the Command operation, using the following Action URIs. "
         "http://schemas.microsoft.com/wbem/wsman/1/windows/shell/Command"),
    Fact("receive.action", "http://schemas.microsoft.com/wbem/wsman/1/windows/shell/Receive", "documented",
         RECEIVE,
         "MUST support the Receive operation, using the following Action URIs. "
         "http://schemas.microsoft.com/wbem/wsman/1/windows/shell/Receive"),
    Fact("receive.collects", "collect output from a running command", "documented",
         RECEIVE,
         "In the Text-based Command Shell scenario, the Receive message is used to collect output from a running "
         "command"),
    *(Fact(f"receive.state.{state}", f"http://schemas.microsoft.com/wbem/wsman/1/windows/shell/CommandState/{state}",
           "documented", COMMAND_STATE,
           "State: This required attribute MUST contain the specific state of the command for which status is being "
           "reported and it MUST be one of the following values: "
           "http://schemas.microsoft.com/wbem/wsman/1/windows/shell/CommandState/Done "
           "http://schemas.microsoft.com/wbem/wsman/1/windows/shell/CommandState/Pending "
           "http://schemas.microsoft.com/wbem/wsman/1/windows/shell/CommandState/Running")
      for state in ("Running", "Done")),
    Fact("receive.exit_code", "ExitCode", "documented", COMMAND_STATE,
         '<xs:element name="ExitCode" type="ExitCodeType" minOccurs="0"/> ... Exit Code: This optional element '
         "contains a Shell processor-specific exit code."),
    Fact("receive.command_id", "CommandId", "documented", COMMAND_STATE,
         "CommandId: Attribute indicating the identity of the command for which status is being reported. This "
         "attribute MUST be present when status is being reported for a command"),
    # -- what a Windows listener adds or varies (served under the liberal mode's variations) ---------------
    Fact("receive.stream_end", "true", "documented", f"[MS-WSMV] 2.2.4.40 StreamType, {MS_WSMV}",
         'End: This optional attribute MUST be set to "true" to indicate that the stream is ending and that no more '
         "content will occur for this stream for the currently executing command."),
    Fact("receive.stream_order", "implementation-dependent", "documented",
         RECEIVE,
         "The order in which these elements appear in the ReceiveResponse message is determined by the data written "
         "by the Command and is implementation-dependent."),
    Fact("receive.other_headers", "...other WS-Addressing & WS-Management headers...", "documented",
         RECEIVE,
         "</wsman:SelectorSet> ...other WS-Addressing & WS-Management headers... </s:Header>"),
    Fact("reply.to", "http://schemas.xmlsoap.org/ws/2004/08/addressing/role/anonymous", "captured", PYWINRM_CAPTURE,
         "<a:To>http://schemas.xmlsoap.org/ws/2004/08/addressing/role/anonymous</a:To>"),
    Fact("reply.lang", "en-US", "captured", PYWINRM_CAPTURE, '<s:Envelope xml:lang="en-US"'),
    Fact("timeout.code", 2150858793, "documented",
         RECEIVE,
         "If no output is available before the wsman:OperationTimeout expires, the server MUST return a WSManFault "
         'with the Code attribute equal to "2150858793". When the client receives this fault, it SHOULD issue another '
         "Receive request."),
    Fact("timeout.status", 500, "captured", PYWINRM_TIMEOUT,
         'protocol_fake.transport.send_message = lambda m: raise_exc(WinRMTransportError("http", 500, xml_text))'),
    Fact("timeout.subcode", "w:TimedOut", "captured", PYWINRM_TIMEOUT, "<s:Value>w:TimedOut</s:Value>"),
    Fact("timeout.reason", "The WS-Management service cannot complete the operation within the time specified in "
         "OperationTimeout.", "captured", PYWINRM_TIMEOUT,
         '<s:Text xml:lang="en-US">The WS-Management service cannot complete the operation within the time specified '
         "in OperationTimeout.  </s:Text>"),
    Fact("fault.action", "http://schemas.dmtf.org/wbem/wsman/1/wsman/fault", "captured", PYWINRM_TIMEOUT,
         "<a:Action>http://schemas.dmtf.org/wbem/wsman/1/wsman/fault</a:Action>"),
])


def text(fact_id: str) -> str:
    """A fact's value as the text it is served as."""
    return str(FACTS.value(fact_id))
