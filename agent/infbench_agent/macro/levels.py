"""Macro phase: load levels — how a level's requests are planned over processes (vLLM's arrivals), and one
level's run in this process, its per-request events and running aggregates."""
from __future__ import annotations

import argparse
import math
import os
import random
import time
from typing import Any, Callable, Dict, List, Optional

from infbench_agent import events
from infbench_agent.http import Endpoint
from infbench_agent.macro.client import Engine
from infbench_agent.macro.intended import from_intended
from infbench_agent.macro.metrics import compact_record, summarize
from infbench_agent.macro.conversations import turn_summary
from infbench_agent.macro.steady import steady_window, steady_window_note
from infbench_agent.macro.drive import cpu_seconds, drive
from infbench_agent.macro.prompts import PromptMaker


def split(n: int, parts: int) -> List[int]:
    return [n // parts + (1 if i < n % parts else 0) for i in range(parts)]


def vllm_arrivals(total: int, rate: float, burstiness: float, rng: random.Random) -> List[float]:
    """Send times (seconds from the level's start) as vllm/benchmarks/serve.py's get_request draws them: one
    gamma gap (shape = burstiness, mean 1/rate) before every request, the first included, summed, then
    scaled so the last request goes at total / rate (N requests at rate r span N/r); constant gaps for an
    infinite burstiness, all at once for an infinite rate."""
    if math.isinf(rate):
        return [0.0] * total
    t = 0.0
    arrivals = []
    for _ in range(total):
        t += 1.0 / rate if math.isinf(burstiness) else rng.gammavariate(burstiness, 1.0 / (rate * burstiness))
        arrivals.append(t)
    if arrivals and arrivals[-1] > 0:
        scale = (total / rate) / arrivals[-1]
        arrivals = [a * scale for a in arrivals]
    return arrivals


def worker_count(args: argparse.Namespace, in_flight: int) -> int:
    if str(args.workers) != "auto":
        try:
            return max(1, int(args.workers))
        except ValueError:
            raise events.AgentError("bad_arguments", f"--workers must be 'auto' or a number, got {args.workers!r}", "")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    # One core is left to the server beside us: on a 2-core host two workers (and their coordinator) took the
    # server's CPU, which then sent late. One process reads 512 streams at 50 tokens/s in about half a core.
    return max(1, min(max(1, cores - 1), math.ceil(in_flight / max(1, args.streams_per_worker))))


def build_plans(
    args: argparse.Namespace,
    level_meta: dict,
    total: Optional[int],
    id_base: int,
    rng: random.Random,
    own_arrivals: Optional[Callable[[int, float, random.Random], Optional[List[float]]]] = None,
) -> List[dict]:
    """A level's plan for each load-generator process; a rate level's send times are the workload's own where it
    has them (a trace's), else vLLM's gamma arrivals."""
    if level_meta.get("turns"):
        return conversation_plans(args, level_meta, id_base)
    # A concurrency level when there is no rate.
    c: Any = level_meta.get("max_concurrency")
    rate = level_meta.get("request_rate")
    if rate is None:
        workers = min(worker_count(args, c), c)
        plans = []
        counts = split(total or 0, workers)
        conc = split(c, workers)
        offset = 0
        for w in range(workers):
            ids = [id_base + offset + k for k in range(counts[w])] if total is not None else []
            offset += counts[w]
            plans.append(
                {
                    "concurrency": conc[w],
                    "ids": ids,
                    "duration": args.duration,
                    "id_base": id_base + w,
                    "id_stride": workers,
                    "start_at": 0.0,
                    "stall_timeout": getattr(args, "stall_timeout", None),
                }
            )
        return plans
    assert total is not None
    own = own_arrivals(total, rate, rng) if own_arrivals else None
    arrivals = own if own is not None else vllm_arrivals(total, rate, args.burstiness, rng)
    cap = args.max_concurrency
    expected_in_flight = cap or max(1, int(min(total, (rate if not math.isinf(rate) else total) * 2)))
    workers = worker_count(args, expected_in_flight)
    plans = []
    for w in range(workers):
        mine = list(range(w, total, workers))
        plans.append(
            {
                "arrivals": [arrivals[i] for i in mine],
                "ids": [id_base + i for i in mine],
                "max_concurrency": (split(cap, workers)[w] or 1) if cap else None,
                "duration": args.duration,
                "start_at": 0.0,
                "stall_timeout": getattr(args, "stall_timeout", None),
            }
        )
    return plans


def conversation_plans(args: argparse.Namespace, level_meta: dict, id_base: int) -> List[dict]:
    """A multi-turn level over processes: each its share of the concurrency and its own conversations (a
    conversation's history stays in the process that holds it); for a level of seconds, every process takes
    every workers-th conversation number until the time is up."""
    c = level_meta["max_concurrency"]
    conversations = level_meta.get("conversations")
    workers = max(1, min(worker_count(args, c), c, conversations or c))
    conc = split(c, workers)
    counts = split(conversations or 0, workers)
    plans = []
    offset = 0
    for w in range(workers):
        plan = {
            "turns": level_meta["turns"],
            "concurrency": conc[w],
            "id_base": id_base,
            "duration": args.duration,
            "start_at": 0.0,
            "stall_timeout": getattr(args, "stall_timeout", None),
        }
        if conversations is None:
            plan.update({"conversations": None, "conv_start": w, "conv_stride": workers})
        else:
            plan["conversations"] = list(range(offset, offset + counts[w]))
            offset += counts[w]
        plans.append(plan)
    return plans


class LevelRun:
    """Collects one level's records, emitting per-request events and periodic running aggregates."""

    def __init__(
        self,
        index: int,
        meta: dict,
        total: Optional[int],
        args: argparse.Namespace,
        percentiles: List[float],
        slos: Dict[str, float],
        run_start: Callable[[], Optional[float]] = lambda: None,
    ) -> None:
        self.index, self.meta, self.total, self.args = index, meta, total, args
        # The monotonic time of the run's first level start: per-request events carry times from it (run_s).
        self.run_start = run_start
        self.percentiles, self.slos = percentiles, slos
        self.records: List[dict] = []
        self.last_update = self.created = time.monotonic()
        self.level_start: Optional[float] = None
        # When the level's plan started (the origin of its arrivals), for vLLM's duration.
        self.started_at: Optional[float] = None

    def add(self, rec: dict) -> None:
        rec.pop("payload", None)
        self.records.append(rec)
        if self.level_start is None or (rec.get("send") is not None and rec["send"] < self.level_start):
            self.level_start = rec.get("send")
        if not self.args.no_request_events:
            c = compact_record(rec)
            c["start_s"] = round(rec["send"] - self.level_start, 6) if rec.get("send") is not None and self.level_start else None
            run_start = self.run_start()
            c["run_s"] = round(rec["send"] - run_start, 6) if rec.get("send") is not None and run_start else None
            events.emit(events.MACRO_REQUEST, level=self.index, record=c)
        self.tick()

    def tick(self) -> None:
        now = time.monotonic()
        if now - self.last_update < self.args.update_interval:
            return
        self.last_update = now
        # The warm-up (index -1) is no level: it says how far it is, with no aggregates.
        if self.records and self.index >= 0:
            events.emit(events.MACRO_LEVEL, level=self.index, partial=True, summary=self.summary(partial=True))
        # Progress goes out while nothing finishes too: a level whose streams stall still says how far it is.
        done = len(self.records)
        failed = sum(1 for r in self.records if not r.get("ok"))
        began = self.started_at or self.created
        events.emit(
            events.PROGRESS,
            done=done,
            total=self.total or 0,
            label=self.label(),
            message=f"{self.label()}: {done}{' of ' + str(self.total) if self.total else ''} requests done"
            f"{f' ({failed} failed)' if failed else ''} after {now - began:.0f} s",
        )

    def label(self) -> str:
        m = self.meta
        if self.index < 0:
            return "warm-up"
        if m.get("request_rate") is not None:
            return f"rate {m['request_rate']:g}/s"
        return f"c={m['max_concurrency']}"

    def summary(self, partial: bool) -> dict:
        s = dict(self.meta)
        s.update(summarize(self.records, self.percentiles, self.slos, self.started_at))
        s["partial"] = partial
        s["from_intended"] = from_intended(self.records, self.percentiles, "slot" if self.meta.get("request_rate") is None else "arrival")
        if self.meta.get("turns"):
            s["multi_turn"] = turn_summary(self.records, self.meta.get("conversations"), self.meta["turns"])
        if not partial:
            s["steady"] = steady_window(self.records, self.percentiles) or {"note": steady_window_note()}
        return clean(s)


def clean(value):
    """JSON without NaN or infinity (the event schema forbids them): such numbers become null or a string."""
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if math.isinf(value):
            return "inf"
        return value
    if isinstance(value, dict):
        return {k: clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    return value


def run_level_in_process(
    plan: dict,
    endpoint: Endpoint,
    path: str,
    maker: PromptMaker,
    level: LevelRun,
    timeout: float,
    cancelled: Callable[[], bool],
    bodies: Optional[Dict[int, Optional[bytes]]] = None,
) -> float:
    """One process's whole level; `bodies` built before its start time (drive.request_bodies), else by drive."""
    engine = Engine(endpoint, path, timeout, lambda r: None, stall_timeout=plan.get("stall_timeout"))
    cpu0 = cpu_seconds()
    pending: List[dict] = []
    last = [time.monotonic()]

    def tick() -> None:
        # Per-request events and running aggregates wait for a moment when no read is waiting (0.25 s at the
        # most), as in a worker process: they must not delay the stamps of streams still reading.
        now = time.monotonic()
        if engine.last_reads == 0 or now - last[0] > 0.25:
            last[0] = now
            for rec in pending:
                level.add(rec)
            pending.clear()
            level.tick()

    try:
        drive(plan, engine, maker, pending.append, cancelled, tick, bodies)
    finally:
        engine.close()
        for rec in pending:
            level.add(rec)
    return cpu_seconds() - cpu0
