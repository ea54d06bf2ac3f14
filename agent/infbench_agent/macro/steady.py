"""A load level's figures over its steady window: the ramp (every stream starting at once, prefills
piled into the first steps) and the drain (the last requests finishing in ever smaller batches) trimmed.

The window runs from the level's first finished request (by then every stream has started and the
server holds the level's load) to its last send (after it no new work arrives and the batch only
shrinks). Latencies count the requests that lived wholly inside it; throughput counts the tokens that
arrived inside it, from each request's first-token and inter-token times. Standard library only.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence

from infbench_agent.macro.metrics import describe_ms, request_tpot

# Below these the window says too little to stand beside the whole level's figures.
MIN_REQUESTS = 4
MIN_SHARE_OF_LEVEL = 0.2


def token_times(record: dict) -> List[float]:
    """When each output token arrived (monotonic seconds): the first at send + TTFT, the rest after each gap."""
    if record.get("send") is None or record.get("ttft") is None:
        return []
    t = record["send"] + record["ttft"]
    out = [t]
    for gap in record.get("itl") or ():
        t += gap
        out.append(t)
    return out


def steady_window(records: Sequence[dict], percentiles: Sequence[float]) -> Optional[Dict[str, object]]:
    """The level's figures over its steady window, or None where the level is too short to have one
    (then `steady_window_note` says why)."""
    ok = [r for r in records if r.get("ok") and r.get("send") is not None and r.get("finish") is not None]
    sends = [r["send"] for r in records if r.get("send") is not None]
    if len(ok) < MIN_REQUESTS or not sends:
        return None
    level_start = min(sends)
    level_end = max(r["finish"] for r in ok)
    start = min(r["finish"] for r in ok)
    end = max(sends)
    if end - start < MIN_SHARE_OF_LEVEL * (level_end - level_start):
        return None
    inside = [r for r in ok if r["send"] >= start and r["finish"] <= end]
    if len(inside) < MIN_REQUESTS:
        return None
    tokens = sum(1 for r in ok for t in token_times(r) if start <= t <= end)
    out: Dict[str, object] = {
        "start_s": round(start - level_start, 4),
        "end_s": round(end - level_start, 4),
        "requests": len(inside),
        "output_throughput": tokens / (end - start),
    }
    out.update(describe_ms((r["ttft"] for r in inside if r.get("ttft") is not None), "ttft", percentiles))
    out.update(describe_ms([t for t in (request_tpot(r) for r in inside) if t is not None], "tpot", percentiles))
    out.update(describe_ms([x for r in inside for x in r.get("itl", ())], "itl", percentiles))
    return out


def steady_window_note() -> str:
    """Why a level has no steady window, in words a user can act on."""
    return (
        "no steady window: the level ended before its load held steady (its first request finished after "
        "its last was sent, or too few requests lived between); run more requests per level"
    )
