"""`python -m harness_lab.toxics URL...`: delete the lab's latency toxics from a process of its own.

What the latency fault's dead man's switch runs in the router namespace when the harness is
gone: every DELETE is bounded in time and bypasses proxies; an absent toxic is fine.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from harness_kernel.errors import ControlPlaneError
from harness_lab.latency import api_call


def main(urls: Sequence[str]) -> int:
    failed = 0
    for url in urls:
        scheme, _, rest = url.partition("://")
        host, _, path = rest.partition("/")
        try:
            api_call(f"{scheme}://{host}", "DELETE", "/" + path)
        except ControlPlaneError as exc:
            print(exc, file=sys.stderr)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
