"""Continuous batching as vLLM's scheduler does it, on one thread with absolute deadlines: requests wait,
join the running batch at a step's boundary up to its most, and each step's time is the timing model's.
Standard library only."""
from __future__ import annotations

import asyncio
import collections
import threading
import time
from typing import Deque, List, Optional

import sim_timing as tm
from sim_metrics import ServerMetrics
from sim_request import SimRequest


class BatchScheduler:
    """A part of the server (vllm_sim.Simulator): its waiting and running requests and the thread that
    steps them. A subclass that runs each step for real (bench/gpu_server.py) overrides execute_step.
    Of the server it takes the attributes below, record_step (its profiler's) and emit_token."""

    loop: Optional[asyncio.AbstractEventLoop]
    model: tm.TimingModel
    metrics: ServerMetrics

    def init_scheduler(self) -> None:
        # Shared with the scheduler thread under `cv`.
        self.cv = threading.Condition()
        self.waiting: Deque[SimRequest] = collections.deque()
        self.running: List[SimRequest] = []
        self.stopping = False

    def enqueue(self, r: SimRequest) -> None:
        """On the event loop: the request waits for a step to take it."""
        with self.cv:
            r.queued_at = time.monotonic()
            self.waiting.append(r)
            self.cv.notify()

    def stop_scheduler(self) -> None:
        with self.cv:
            self.stopping = True
            self.cv.notify_all()

    def scheduler_thread(self) -> None:
        next_start: Optional[float] = None
        while True:
            with self.cv:
                while not self.stopping and not self.running and not self.waiting:
                    next_start = None
                    self.cv.wait()
                if self.stopping:
                    return
                next_start = self.step_start(next_start)
                self.running = [r for r in self.running if not r.aborted]
                next_start = self.not_before_a_request(next_start)
                joiners = self.admit(next_start)
                batch = list(self.running)
            if not batch:
                continue
            next_start = self.run_step(batch, joiners, next_start)

    def step_start(self, next_start: Optional[float]) -> float:
        """Under `cv`: when the next step starts, counting it late when this thread got there over half a step late."""
        now = time.monotonic()
        if next_start is None:
            # Idle until now: the step starts when the first waiting request arrived (not when
            # this thread got the CPU). While busy, steps keep their absolute deadlines (a late
            # wake-up is caught up), so the model's times never drift.
            return min([now] + [r.queued_at for r in self.waiting if not r.aborted])
        if now - next_start > 0.5 * self.model.step_ms(len(self.running)) / 1000.0:
            self.metrics.late_steps += 1
        return next_start

    def not_before_a_request(self, next_start: float) -> float:
        """Under `cv`: nothing runs, so the next step cannot start before a request is there to run, even
        when this thread got back here late (after the request had already arrived)."""
        pending = [r.queued_at for r in self.waiting if not r.aborted]
        if not self.running and pending:
            return max(next_start, min(pending))
        return next_start

    def admit(self, next_start: float) -> List[SimRequest]:
        """Under `cv`: the waiting requests that join the running batch at this step, in arrival order, up to its most."""
        joiners: List[SimRequest] = []
        while self.waiting and len(self.running) + len(joiners) < self.model.max_batch:
            r = self.waiting[0]
            if r.aborted:
                self.waiting.popleft()
                continue
            if r.queued_at > next_start:
                break  # it arrived after this step began: it joins at the next boundary
            joiners.append(self.waiting.popleft())
        self.running.extend(joiners)
        return joiners

    def run_step(self, batch: List[SimRequest], joiners: List[SimRequest], start: float) -> float:
        """One step of `batch` (the `joiners` prefilled in it) from `start`: every request one token further,
        the finished ones out of the batch, the tokens handed to the event loop. Returns when it ended."""
        prefill = sum(r.prompt_tokens - r.cached_tokens for r in joiners)
        step_s = self.model.step_ms(len(batch), prefill) / 1000.0
        end = start + step_s
        step = {"start_s": start, "running": len(batch), "prefill_tokens": prefill, "joiners": len(joiners)}
        recorded = self.record_step(step)
        self.metrics.steps_total += 1
        end = self.execute_step(step, end, recorded)
        finished = []
        for r in batch:
            r.sent += 1
            if r.sent >= self.target_len(r) or (r.fault and r.fault.kind == "cut" and r.sent >= r.fault.after):
                finished.append(r)
        with self.cv:
            if finished:
                gone = set(id(r) for r in finished)
                self.running = [r for r in self.running if id(r) not in gone]
        assert self.loop is not None
        self.loop.call_soon_threadsafe(self.deliver, [(r, r.sent) for r in batch])
        return end

    def execute_step(self, step: dict, end: float, recorded: bool) -> float:
        """Runs one scheduler step and returns when it ended (time.monotonic()). The simulator's step is its
        timing model's: it sleeps until `end`. A subclass that runs the step for real (bench/gpu_server.py)
        overrides this; `recorded` says whether the profiler records this step."""
        delay = end - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        return end

    def target_len(self, r: SimRequest) -> int:
        return r.max_tokens

    def deliver(self, tokens: List[tuple]) -> None:
        """On the event loop: one token to every request of the step that just ended."""
        for r, index in tokens:
            if not r.aborted:
                self.emit_token(r, index)
