"""Latency from the intended send time (coordinated omission): each request has a time it should have
gone out, the arrival its schedule drew (request-rate levels) or the moment a slot of the closed loop
freed (concurrency levels: the wait is queueing inside the client). A client that falls behind sends
late, and latency from its actual send hides that wait; from the intended time it counts, as a user
arriving on schedule would see it (GuideLLM and AIPerf report it so). Standard library only.
"""
from __future__ import annotations

import math
import time
from typing import Callable, Dict, Optional, Sequence

from infbench_agent.macro.metrics import percentile, percentile_key

# A dispatch delay that grows by this much from the level's first quarter of sends to its last is a
# client falling behind its schedule (a backlog), not jitter; with the p99 above the agent's lag limit.
GROWTH_MS = 5.0
DELAY_LIMIT_MS = 10.0


def delay_figures(delays_ms: Sequence[float]) -> Dict[str, Optional[float]]:
    """p50, p99, max and mean of dispatch delays (ms), each None without a delay."""
    ordered = sorted(delays_ms)
    if not ordered:
        return {"p50": None, "p99": None, "max": None, "mean": None}
    return {
        "p50": round(percentile(ordered, 50), 3),
        "p99": round(percentile(ordered, 99), 3),
        "max": round(ordered[-1], 3),
        "mean": round(sum(ordered) / len(ordered), 3),
    }


def latency_figures(values_ms: Sequence[float], percentiles: Sequence[float]) -> Dict[str, Optional[float]]:
    ordered = sorted(values_ms)
    out: Dict[str, Optional[float]] = {"mean": round(sum(ordered) / len(ordered), 3) if ordered else None}
    for p in percentiles:
        out[percentile_key(p)] = round(percentile(ordered, p), 3) if ordered else None
    return out


def growth(delays_in_send_order: Sequence[float]) -> Optional[dict]:
    """The mean delay of the first and of the last quarter of sends (at least 8 sends), in ms."""
    n = len(delays_in_send_order)
    if n < 8:
        return None
    q = n // 4
    first = sum(delays_in_send_order[:q]) / q
    last = sum(delays_in_send_order[-q:]) / q
    return {"first_quarter_ms": round(first, 3), "last_quarter_ms": round(last, 3)}


def from_intended(records: Sequence[dict], percentiles: Sequence[float], basis: str) -> dict:
    """A level's dispatch delay (actual minus intended send) and its TTFT and E2EL from the intended time.
    `basis` names what the intended time is: "arrival" (request rate) or "slot" (concurrency)."""
    timed = sorted((r for r in records if r.get("intended") is not None and r.get("send") is not None), key=lambda r: r["intended"])
    delays = [max(0.0, r["send"] - r["intended"]) * 1000.0 for r in timed]
    ok = [r for r in timed if r.get("ok")]
    ttft = [(r["ttft"] + max(0.0, r["send"] - r["intended"])) * 1000.0 for r in ok if r.get("ttft") is not None]
    e2el = [(r["e2el"] + max(0.0, r["send"] - r["intended"])) * 1000.0 for r in ok if r.get("e2el") is not None]
    out: dict = {
        "basis": basis,
        "requests": len(timed),
        "dispatch_delay_ms": delay_figures(delays),
        "ttft_ms": latency_figures(ttft, percentiles),
        "e2el_ms": latency_figures(e2el, percentiles),
    }
    trend = growth(delays)
    if trend:
        out["dispatch_delay_trend"] = trend
    p99 = out["dispatch_delay_ms"]["p99"]
    # The client is the limit when it sends late and later: its delay past the limit and growing over the level.
    out["client_limited"] = bool(
        p99 is not None and p99 > DELAY_LIMIT_MS and trend and trend["last_quarter_ms"] - trend["first_quarter_ms"] > GROWTH_MS
    )
    return out


class SlowClient:
    """--slow-client-ms: a client whose own work before each send takes `seconds`, one request at a time. A
    request's work starts when it is due (its intended send time) or when the previous one's work ended,
    whichever is later, and its send follows: send = max(intended, previous send) + seconds. Each hold
    ends on that schedule, so a hold woken late on a busy host does not push the later ones back, and a
    client slower than its arrivals falls behind by `seconds` minus their gap at every send, exactly."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> None:
        self.seconds, self.clock, self.sleep = seconds, clock, sleep
        self.free_at = -math.inf

    def hold(self, due: float) -> None:
        self.free_at = max(due, self.free_at) + self.seconds
        # Sleeps all but the last millisecond and spins that one on the clock: the end is exact where the
        # host wakes the process within a millisecond, and a sleep leaves the CPU to the rest meanwhile.
        left = self.free_at - self.clock()
        if left > 0.001:
            self.sleep(left - 0.001)
        while self.clock() < self.free_at:
            pass
