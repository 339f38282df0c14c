"""What a live migration does to the lab node inside the VM: a modelled pre-copy, then a real stun.

vMotion copies the VM's memory while it runs (pre-copy), re-sending the pages the guest dirties
meanwhile, and then stuns the VM to copy the last pages and switch hosts. The lab cannot move a
process between hosts, so the pre-copy is a wait whose length the model computes and the stun is
a real freeze of the node's database processes, which the clients feel as a commit gap.

The pre-copy transfer rate is the vMotion network's (`vmotion_mb_s`) until the round trip
limits it: one window of `vmotion_window_mb` in flight per RTT, so rate <= window / RTT. The
guest re-dirties `dirty_mb_s`, so the copy converges at rate - dirty and takes
memory / (rate - dirty); it is capped at `MAX_PRECOPY_S` (the simulator's hook bound) where it
would not converge. The RTT is measured between the lab's sites when the migration starts, so an
added inter-site latency lengthens it as it would a cross-site vMotion.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

from harness_lab.controller import Lab
from harness_lab.latency import probe_rtt_ms

MAX_PRECOPY_S = 45.0  # under the simulator's hook bound (60 s), with room for the stun and the probe


@dataclass(frozen=True)
class PreCopyModel:
    memory_mb: float
    link_mb_s: float
    window_mb: float
    dirty_mb_s: float
    stun_s: float

    @classmethod
    def of(cls, model: Mapping[str, float]) -> PreCopyModel:
        """From the simulator's model parameters (`vm_memory_mb`, `vmotion_mb_s`, ...)."""
        return cls(memory_mb=model["vm_memory_mb"], link_mb_s=model["vmotion_mb_s"],
                   window_mb=model["vmotion_window_mb"], dirty_mb_s=model["dirty_mb_s"], stun_s=model["stun_s"])

    def rate_mb_s(self, rtt_ms: float) -> float:
        if rtt_ms <= 0:
            return self.link_mb_s
        return min(self.link_mb_s, self.window_mb * 1000.0 / rtt_ms)

    def precopy_s(self, rtt_ms: float) -> float:
        converging = self.rate_mb_s(rtt_ms) - self.dirty_mb_s
        if converging <= 0:
            return MAX_PRECOPY_S
        return min(MAX_PRECOPY_S, self.memory_mb / converging)


@dataclass(frozen=True)
class Migration:
    """What one modelled migration did: the RTT it measured, the pre-copy it waited, the stun it applied."""

    rtt_ms: float
    precopy_s: float
    stun_s: float


def migrate(lab: Lab, node: str, *, cross_site: bool, model: PreCopyModel) -> Migration:
    """Wait the pre-copy for the inter-site RTT measured now (0 within a site), then stun the node."""
    rtt = probe_rtt_ms(lab.layout.site_a, lab.layout.site_b.address) if cross_site else 0.0
    precopy = model.precopy_s(rtt)
    time.sleep(precopy)
    return Migration(rtt, precopy, lab.io_pause(node, model.stun_s))
