"""Macro phase: driving one process's share of a level (closed or open loop), the same in the coordinator
and in a worker process, and the cancel state each process owns."""
from __future__ import annotations

import math
import resource
import signal
import time
from typing import Any, Callable, Dict, List, Optional

from infbench_agent.macro.arm import arm
from infbench_agent.macro.client import Engine
from infbench_agent.macro.conversations import drive_conversations
from infbench_agent.macro.intended import SlowClient
from infbench_agent.macro.prompts import PromptMaker

# In a wave of sends, read the sockets that are ready after every this many.
SENDS_BETWEEN_READS = 16


class Cancel:
    """A process's cancel state: SIGTERM or SIGINT set it, and the run ends its level early and still reports."""

    def __init__(self) -> None:
        self.requested = False

    def install(self) -> "Cancel":
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        return self

    def _on_signal(self, signum: int, frame: Any) -> None:
        self.requested = True

    def __call__(self) -> bool:
        return self.requested


def request_bodies(plan: dict, maker: PromptMaker) -> Dict[int, Optional[bytes]]:
    """A plan's request bodies, built before the level's start time so that a wave of sends is only sends (a
    128,000-token prompt takes tens of ms to build); a level of seconds, or of conversations, builds each as it goes."""
    if plan.get("turns") or plan.get("duration"):
        return {}
    return {rid: maker.body(rid) for rid in plan["ids"]}


def drive(
    plan: dict,
    engine: Engine,
    maker: PromptMaker,
    on_record: Callable[[dict], None],
    should_stop: Callable[[], bool],
    on_tick: Optional[Callable[[], None]] = None,
    bodies: Optional[Dict[int, Optional[bytes]]] = None,
) -> None:
    """Closed loop (`concurrency` in flight) or open loop (`arrivals` offsets) until the plan is done; a plan of
    multi-turn conversations (`turns`) goes to conversations.py."""
    if plan.get("turns"):
        drive_conversations(plan, engine, maker, on_record, should_stop, on_tick)
        return
    start_at = plan["start_at"]
    ids = plan["ids"]
    deadline = start_at + plan["duration"] if plan.get("duration") else None
    concurrency = plan.get("concurrency")
    arrivals = plan.get("arrivals")
    cap = plan.get("max_concurrency")
    free_since: List[float] = []
    started = 0
    total = len(ids) if deadline is None else math.inf
    # --slow-client-ms: the client's own work before each send, to see its dispatch delay grow.
    slow = SlowClient(plan["slow_client_s"]) if plan.get("slow_client_s") else None

    def record(rec: dict) -> None:
        free_since.append(rec["finish"])
        on_record(rec)

    bodies = request_bodies(plan, maker) if bodies is None else bodies
    arm(plan, engine, record)
    while True:
        # A frozen server (a stall while no stream had read anything) ends the level: every further
        # request would wait out the stall bound again.
        if should_stop() or engine.server_frozen:
            engine.abort_all()
            return
        now = time.monotonic()
        accepting = deadline is None or now < deadline
        if concurrency is not None:
            while accepting and started < total and engine.in_flight < concurrency:
                intended = free_since.pop(0) if free_since else start_at
                rid = ids[started] if deadline is None else plan["id_base"] + started * plan["id_stride"]
                if slow:
                    slow.hold(intended)
                engine.start(
                    {
                        "id": rid,
                        "intended": intended,
                        "est_prompt_tokens": maker.estimated_prompt_tokens(rid),
                        "max_tokens": maker.max_output_tokens(rid),
                    },
                    bodies.pop(rid, None) or maker.body(rid),
                )
                started += 1
                if started % SENDS_BETWEEN_READS == 0:
                    # A wave of hundreds of sends takes tens of ms: streams already answering are read meanwhile.
                    engine.poll(0)
            timeout = 0.05
        else:
            assert arrivals is not None
            while accepting and started < len(arrivals) and arrivals[started] + start_at <= now and (cap is None or engine.in_flight < cap):
                rid = ids[started]
                if slow:
                    slow.hold(arrivals[started] + start_at)
                engine.start(
                    {
                        "id": rid,
                        "intended": arrivals[started] + start_at,
                        "est_prompt_tokens": maker.estimated_prompt_tokens(rid),
                        "max_tokens": maker.max_output_tokens(rid),
                    },
                    bodies.pop(rid, None) or maker.body(rid),
                )
                started += 1
                if started % SENDS_BETWEEN_READS == 0:
                    engine.poll(0)
            timeout = 0.05
            if started < len(arrivals):
                timeout = max(0.0, min(timeout, arrivals[started] + start_at - time.monotonic()))
        finished_starting = (not accepting) or started >= (total if concurrency is not None else len(arrivals or []))
        if finished_starting and engine.in_flight == 0:
            return
        engine.poll(timeout)
        if on_tick:
            on_tick()


def raise_open_file_limit() -> None:
    """Each stream holds a socket: lift the soft limit on open files (often 1024) to the hard one."""
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = hard if hard != resource.RLIM_INFINITY else 65536
        if soft != resource.RLIM_INFINITY and soft < want:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    except (ValueError, OSError):
        pass


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
