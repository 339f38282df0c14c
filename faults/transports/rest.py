"""What a REST control plane's answers mean to the harness, said once for every client of ours (VPLEX, Prism).

Each client keeps its own paths, models, auth and error bodies; what an HTTP status means (worth one
more attempt, the login refused, forbidden, not there), how a dropped connection reads, how long
retries may go on and how TLS is verified are the same for all of them.
"""

from __future__ import annotations

import ssl
import urllib.error

from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, stop_after_delay, wait_exponential

from harness_kernel.errors import ControlPlaneError, CredentialRejectedError

TRANSIENT_STATUS = frozenset({429, 500, 502, 503, 504})


class NotFoundError(ControlPlaneError):
    """The server answered 404: what was asked for does not exist there."""


class Transient(Exception):
    """Worth one more attempt: the server was busy or the network dropped the request."""


def refused(status: int, asked: str, said: str, *, credential_field: str, forbidden: str) -> Exception:
    """The error an HTTP refusal is: `asked` says where and what ("vplex 192.0.2.150: GET /clusters/"), `said`
    what the server's error body said, `forbidden` what a 403 means for this account."""
    if status in TRANSIENT_STATUS:
        return Transient(f"{asked} -> HTTP {status}{said}")
    if status == 401:
        return CredentialRejectedError(f"{asked} refused the login (HTTP 401{said}): check {credential_field}")
    if status == 403:
        return ControlPlaneError(f"{asked} forbidden (HTTP 403{said}): {forbidden}")
    if status == 404:
        return NotFoundError(f"{asked} -> HTTP 404{said}")
    return ControlPlaneError(f"{asked} -> HTTP {status}{said}")


def unreachable(exc: OSError, where: str, timeout_s: float, ca_hint: str) -> Exception:
    """A request that got no answer: TLS that did not verify is said at once (`ca_hint`: which field to set); no
    connection or no answer in time is worth one more attempt."""
    if isinstance(exc, urllib.error.URLError):
        if isinstance(exc.reason, ssl.SSLError):
            return ControlPlaneError(f"{where}: TLS verification failed ({exc.reason.__class__.__name__}); {ca_hint}")
        return Transient(f"{where}: unreachable ({exc.reason})")
    return Transient(f"{where}: no answer within {timeout_s:g} s ({type(exc).__name__})")


def retrying(attempts: int, window_s: float) -> Retrying:
    """Transient failures asked again, at most `attempts` times within `window_s`, backing off up to 2 s."""
    return Retrying(stop=stop_after_attempt(attempts) | stop_after_delay(window_s),
                    wait=wait_exponential(multiplier=0.25, max=2), retry=retry_if_exception_type(Transient),
                    reraise=True)


def tls_context(origin: str, ca_file: str | None, verify: bool) -> ssl.SSLContext | None:
    """Verified against `ca_file` (the system's CAs when None) unless told not to; none for plain http."""
    if not origin.startswith("https:"):
        return None
    context = ssl.create_default_context(cafile=ca_file)
    if not verify:
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    return context
