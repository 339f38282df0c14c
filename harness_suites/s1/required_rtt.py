"""S1's verdict on the sweep: the largest RTT that keeps the throughput target, against the one the design needs."""

from __future__ import annotations

from collections.abc import Sequence

from harness.analysis.slo import SloCheck
from harness_suites.s1.table import LatencyStep


def kept_rtt_check(kept: float | None, ratio: float, required_ms: float | None, largest_step_ms: float) -> SloCheck:
    """The sweep's finding judged against the RTT the design must carry (`slo.required_rtt_ms`); without one the
    sweep characterises (its steps below the target are findings, `below_target`)."""
    name = f"largest added RTT keeping {100 * ratio:g} % of the baseline's TPS"
    if required_ms is None:
        return SloCheck(name, kept, ">=", 0, " ms", not_judged="no required inter-site RTT (slo.required_rtt_ms): "
                        "the sweep characterises the link")
    if required_ms > largest_step_ms:
        return SloCheck(name, kept, ">=", required_ms, " ms",
                        not_judged=f"the sweep stops at {largest_step_ms:g} ms, below the required {required_ms:g} ms "
                                   "(--rtt-steps)")
    return SloCheck(name, kept, ">=", required_ms, " ms")  # None: not even the baseline step kept it, a FAIL


def below_target(steps: Sequence[LatencyStep], ratio: float, required_ms: float | None) -> list[str]:
    """A step beyond the required RTT (every step, without one) that does not keep the throughput target, said as a
    finding: there the sweep characterises the link; up to the required RTT the verdict judges it."""
    baseline = min(steps, key=lambda s: s.rtt_ms).tps if steps else 0.0
    return [f"at {s.rtt_ms:g} ms added RTT, TPS is {100 * s.tps / baseline:.1f} % of the baseline's "
            f"(target {100 * ratio:g} %)" for s in steps
            if baseline > 0 and s.tps < ratio * baseline and (required_ms is None or s.rtt_ms > required_ms)]
