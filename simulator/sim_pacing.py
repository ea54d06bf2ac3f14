"""The two modes without a scheduler, each stream on its own: paced (one token per pace) and zero-cost
(every token at once, the client's ceiling). Standard library only."""
from __future__ import annotations

import asyncio
import heapq
import time
from typing import Callable, List, Optional

from sim_request import SimRequest

# Writes token `index` of a request to its client (the server's emit_token).
Emit = Callable[[SimRequest, int], None]


class PacedStreams:
    """Paced mode: token i of a stream is due at base + (i - 1) x pace, where base is its first token's
    real time (a late first token on a busy host is not caught up by squeezing the rest; later late
    wake-ups are). One timer serves every stream, so 256 streams cost 256 writes per pace, not 256 tasks."""

    def __init__(self, pace_s: float, emit: Emit) -> None:
        self.pace_s = pace_s
        self.emit = emit
        self.heap: List[tuple] = []
        self.seq = 0
        self.handle: Optional[asyncio.TimerHandle] = None
        self.due = 0.0

    def start(self, r: SimRequest) -> None:
        """On the event loop: the stream's first token is due one pace from now."""
        self.seq += 1
        heapq.heappush(self.heap, (time.monotonic() + self.pace_s, self.seq, r, 1))
        self.arm()

    def arm(self) -> None:
        if not self.heap:
            return
        due = self.heap[0][0]
        if self.handle is not None:
            if self.due <= due:
                return
            self.handle.cancel()
        self.due = due
        # loop.time() is time.monotonic(), so deadlines carry over as they are.
        self.handle = asyncio.get_running_loop().call_at(due, self.tick)

    def tick(self) -> None:
        self.handle = None
        now = time.monotonic()
        heap = self.heap
        while heap and heap[0][0] <= now:
            due, _, r, i = heapq.heappop(heap)
            if r.aborted:
                continue
            if i == 1:
                r.pace_base = max(due, now)
            r.sent = i
            self.emit(r, i)
            if r.aborted or (r.done is not None and r.done.done()):
                continue
            self.seq += 1
            heapq.heappush(heap, (r.pace_base + i * self.pace_s, self.seq, r, i + 1))
        self.arm()


async def emit_all_at_once(r: SimRequest, emit: Emit) -> None:
    """Zero-cost mode: every token at once, one SSE message each."""
    for i in range(1, r.max_tokens + 1):
        r.sent = i
        emit(r, i)
        if r.aborted or (r.done is not None and r.done.done()):
            return
        if r.writer is not None and i % 32 == 0:
            await r.writer.drain()
