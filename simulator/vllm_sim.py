#!/usr/bin/env python3
"""A simulated vLLM server (a SIMULATOR, not a model): vLLM's OpenAI-compatible HTTP API with a known timing model.

Speaks /health, /v1/models, /v1/completions and /v1/chat/completions (streaming with SSE and `usage` in
a final chunk, and non-streaming), /tokenize, /metrics (vLLM's metric names), /version, and
/start_profile + /stop_profile (404 unless --profiler-dir is given, as vLLM without a profiler config).
Tokens come out of a continuous-batching scheduler thread whose step times follow sim_timing.TimingModel,
so a client's measurements can be checked against known answers. Standard library only.

    python3 simulator/vllm_sim.py --port 8000                      # the Kimi-K2.5 TP=8 story (default preset)
    python3 simulator/vllm_sim.py --port 0 --step-base-ms 10 --step-per-seq-ms 0.5 --prefill-per-token-ms 0.01
    python3 simulator/vllm_sim.py --zero-cost                      # tokens as fast as possible (client ceiling)
    python3 simulator/vllm_sim.py --pace-ms 20                     # each stream one token per 20 ms
    python3 simulator/vllm_sim.py --fault error500:every=5 --fault cut:every=7:after=3
See simulator/README.md.
"""
from __future__ import annotations

import argparse
import asyncio
import collections
import heapq
import json
import os
import re
import signal
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Deque, Dict, List, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sim_mimic  # noqa: E402
import sim_timing as tm  # noqa: E402
import sim_trace  # noqa: E402
import sim_nsys  # noqa: E402

# Set by an Nsight Systems stand-in (the tests' fake nsys): at exit the simulator writes there, as SQLite,
# the report nsys would have written of its profiled steps (sim_nsys.py). A real nsys knows nothing of it.
NSYS_REPORT_ENV = "INFBENCH_SIMULATOR_NSYS_REPORT"

# Every label the agent recognises the simulator by (owned_by, the server header, the version suffix).
OWNED_BY = sim_mimic.SIMULATOR_MARK
VOCAB = [
    " the",
    " model",
    " serves",
    " tokens",
    " quickly",
    " and",
    " every",
    " step",
    " is",
    " simulated",
    " by",
    " a",
    " timing",
    " model",
    " of",
    " continuous",
    " batching",
    ".",
    " It",
    " runs",
]
TOKEN_RE = re.compile(r"\w+|[^\w\s]")
FAULT_MARKER = re.compile(r"\[\[sim-fault:([^\]]+)\]\]")
HTTP_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    405: "Method Not Allowed",
    429: "Too Many Requests",
    500: "Internal Server Error",
}
# Sent on every answer under --mimic: "vllm 0.16.0" (the simulator stays labelled in every mode).
MIMIC_LINE = ""


def chat_template_tokens(messages: list) -> List[str]:
    """A chat prompt as a template renders it (ChatML's shape: <|im_start|>role ... <|im_end|> around each message,
    then the assistant's opening): three template tokens a message and two at the end, in the order of the
    messages, so a conversation's next turn starts with this turn's prompt and its answer, as with a real template."""
    out: List[str] = []
    for m in messages:
        if isinstance(m, dict):
            out += ["<|im_start|>", f"<|{m.get('role')}|>"] + TOKEN_RE.findall(str(m.get("content", ""))) + ["<|im_end|>"]
    return out + ["<|im_start|>", "<|assistant|>"]


def count_tokens(text: str) -> int:
    """The simulator's tokenizer: words and punctuation marks are one token each."""
    return len(TOKEN_RE.findall(text))


@dataclass
class Fault:
    kind: str  # error500 | error429 | cut | slow
    every: int = 1  # applies to every N-th generation request (1 = all)
    after: int = 1  # cut: tokens sent before the connection drops
    ms: float = 1000.0  # slow: extra delay before the request joins the batch

    @staticmethod
    def parse(text: str) -> "Fault":
        parts = [p for p in re.split(r"[:;,\s]+", text.strip()) if p]
        if not parts or parts[0] not in ("error500", "error429", "cut", "slow"):
            raise ValueError(
                f"unknown fault {text!r}: use error500, error429, cut or slow, " "with options such as every=5, after=3, ms=500"
            )
        fault = Fault(parts[0])
        for p in parts[1:]:
            key, _, value = p.partition("=")
            if key == "every":
                fault.every = max(1, int(value))
            elif key == "after":
                fault.after = max(0, int(value))
            elif key == "ms":
                fault.ms = float(value)
            else:
                raise ValueError(f"unknown fault option {p!r} in {text!r}")
        return fault


@dataclass
class SimRequest:
    rid: str
    prompt_tokens: int
    max_tokens: int
    arrival: float
    chat: bool
    include_usage: bool
    stream: bool
    model: str
    writer: Optional[asyncio.StreamWriter] = None
    fault: Optional[Fault] = None
    sent: int = 0
    queued_at: float = 0.0
    pace_base: float = 0.0
    first_token_at: Optional[float] = None
    last_token_at: Optional[float] = None
    aborted: bool = False
    done: Optional[asyncio.Future] = None
    text: List[str] = field(default_factory=list)
    # Prompt tokens found in the prefix cache: their prefill is skipped.
    cached_tokens: int = 0
    # The prompt as the prefix cache sees it (template tokens included), for caching its answer's blocks too.
    cache_tokens: List[str] = field(default_factory=list)


class PrefixCache:
    """vLLM's automatic prefix caching, as its V1 KV-cache manager does it (vllm/v1/core/kv_cache_utils.py,
    hash_block_tokens; vllm/v1/core/kv_cache_manager.py, get_computed_blocks): a prompt's full blocks of
    `block_size` tokens are hashed in a chain (each block's hash covers every token before it); a request's
    hits are its leading blocks already cached, never the whole prompt (the last token is always computed);
    its blocks are cached as it is scheduled, so a later request with the same prefix hits them. Least
    recently used blocks go first when the cache is full. Counted as vLLM counts them: queries are prompt
    tokens, hits cached tokens (vllm:prefix_cache_queries / vllm:prefix_cache_hits)."""

    def __init__(self, capacity_blocks: int, block_size: int = 16) -> None:
        self.capacity, self.block_size = capacity_blocks, block_size
        self.blocks: "collections.OrderedDict[int, None]" = collections.OrderedDict()
        self.queries = 0
        self.hits = 0

    def lookup_and_insert(self, tokens: List[str], prompt_tokens: int) -> int:
        """The request's cached tokens; its full blocks are cached from now on."""
        hashes = self.block_hashes(tokens, max(0, min(len(tokens), prompt_tokens - 1)))
        hit_blocks = 0
        for h in hashes:
            if h not in self.blocks:
                break
            hit_blocks += 1
        self.insert_hashes(hashes)
        cached = hit_blocks * self.block_size
        self.queries += prompt_tokens
        self.hits += cached
        return cached

    def insert(self, tokens: List[str]) -> None:
        """Caches the full blocks of a finished request's tokens, prompt and answer: vLLM's KV-cache manager caches
        a block once its tokens are computed (kv_cache_manager.py, allocate_slots -> cache_blocks), decoded
        tokens too, so the next turn of a conversation, whose prompt is this one's and its answer, hits them."""
        self.insert_hashes(self.block_hashes(tokens, len(tokens)))

    def block_hashes(self, tokens: List[str], usable: int) -> List[int]:
        hashes: List[int] = []
        h = 0
        for start in range(0, usable - usable % self.block_size, self.block_size):
            h = hash((h, tuple(tokens[start : start + self.block_size])))
            hashes.append(h)
        return hashes

    def insert_hashes(self, hashes: List[int]) -> None:
        for h in hashes:
            self.blocks[h] = None
            self.blocks.move_to_end(h)
        while len(self.blocks) > self.capacity:
            self.blocks.popitem(last=False)


class Histogram:
    def __init__(self, name: str, doc: str, buckets: List[float]) -> None:
        self.name, self.doc, self.buckets = name, doc, buckets
        self.counts = [0] * len(buckets)
        self.total = 0.0
        self.n = 0

    def observe(self, value: float) -> None:
        self.total += value
        self.n += 1
        for i, b in enumerate(self.buckets):
            if value <= b:
                self.counts[i] += 1

    def render(self, labels: str) -> List[str]:
        out = [f"# HELP {self.name} {self.doc}", f"# TYPE {self.name} histogram"]
        for b, c in zip(self.buckets, self.counts):
            out.append(f'{self.name}_bucket{{{labels},le="{b}"}} {c}')
        out.append(f'{self.name}_bucket{{{labels},le="+Inf"}} {self.n}')
        out.append(f"{self.name}_count{{{labels}}} {self.n}")
        out.append(f"{self.name}_sum{{{labels}}} {self.total}")
        return out


class Simulator:
    # A subclass that serves for real (bench/gpu_server.py) says so: no header then names a mimicked version.
    simulated = True

    def __init__(self, args: argparse.Namespace) -> None:
        preset = tm.PRESETS[args.preset]
        self.preset = preset
        self.model = tm.with_overrides(preset.timing, args.step_base_ms, args.step_per_seq_ms, args.prefill_per_token_ms, args.max_batch)
        self.served_name = args.served_model_name or preset.served_model_name
        self.world_size = args.world_size or preset.world_size
        self.layers = args.layers or preset.layers
        self.zero_cost = args.zero_cost
        self.pace_s = args.pace_ms / 1000.0 if args.pace_ms else None
        self.profiler_dir = args.profiler_dir
        self.profile_max_steps = args.profile_max_steps
        # vLLM's delay_iterations: engine steps after /start_profile that are not recorded.
        self.profile_delay_steps = getattr(args, "profile_delay_steps", 0)
        self.profile_skipped = 0
        self.mimic: Optional[sim_mimic.Mimic] = sim_mimic.PROFILES[args.mimic] if args.mimic else None
        self.flags: Optional[sim_mimic.ServerFlags] = getattr(args, "server_flags", None)
        self.cuda_profiler = False
        if self.mimic and self.flags:
            self.profiler_dir = self.flags.trace_dir if self.flags.profiler == "torch" else None
            self.cuda_profiler = self.flags.profiler == "cuda"
            if not args.world_size:
                self.world_size = self.flags.world_size
        self.instance_id = uuid.uuid4().hex[:5]
        self.profile_dir_current: Optional[str] = None
        self.profile_target_steps: Optional[int] = None
        self.profile_id = ""
        self.profile_done: Optional[asyncio.Future] = None
        self.faults = [Fault.parse(f) for f in args.fault or []]
        self.natural_len = args.natural_output_len
        self.unbatched: set = set()  # requests in flight in the zero-cost and paced modes (no scheduler)
        self.pace_heap: List[tuple] = []
        self.pace_seq = 0
        self.pacer_handle: Optional[asyncio.TimerHandle] = None
        self.pacer_due = 0.0
        self.loop: Optional[asyncio.AbstractEventLoop] = None
        # Scheduler state, shared with the scheduler thread under `cv`.
        self.cv = threading.Condition()
        self.waiting: Deque[SimRequest] = collections.deque()
        self.running: List[SimRequest] = []
        self.generation_count = 0
        self.stopping = False
        # Profiling: steps recorded between /start_profile and /stop_profile.
        self.profiling = False
        self.profiled_steps: List[dict] = []
        self.profile_starts = 0
        self.profile_stops = 0
        # Steps between the CUDA profiler's start and stop, for an Nsight Systems report at exit (NSYS_REPORT_ENV).
        self.nsys_steps: List[dict] = []
        # Metrics.
        self.prompt_tokens_total = 0
        self.generation_tokens_total = 0
        self.success_total = 0
        self.late_steps = 0
        self.sent_tpot_sum = 0.0
        self.sent_tpot_count = 0
        self.steps_total = 0
        self.h_ttft = Histogram(
            "vllm:time_to_first_token_seconds",
            "Histogram of time to first token in seconds.",
            [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0],
        )
        self.h_itl = Histogram(
            "vllm:inter_token_latency_seconds",
            "Histogram of inter-token latency in seconds.",
            [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5],
        )
        self.h_e2e = Histogram(
            "vllm:e2e_request_latency_seconds",
            "Histogram of end to end request latency in seconds.",
            [0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0],
        )
        self.created = int(time.time())
        # On by default, as in vLLM V1 (--no-enable-prefix-caching turns it off).
        self.prefix_cache = PrefixCache(args.kv_cache_tokens // 16) if args.enable_prefix_caching else None

    # ---------------- scheduler (one thread, absolute deadlines) ----------------

    def scheduler_thread(self) -> None:
        model = self.model
        next_start: Optional[float] = None
        while True:
            with self.cv:
                while not self.stopping and not self.running and not self.waiting:
                    next_start = None
                    self.cv.wait()
                if self.stopping:
                    return
                now = time.monotonic()
                if next_start is None:
                    # Idle until now: the step starts when the first waiting request arrived (not when
                    # this thread got the CPU). While busy, steps keep their absolute deadlines (a late
                    # wake-up is caught up), so the model's times never drift.
                    next_start = min([now] + [r.queued_at for r in self.waiting if not r.aborted])
                elif now - next_start > 0.5 * model.step_ms(len(self.running)) / 1000.0:
                    self.late_steps += 1
                self.running = [r for r in self.running if not r.aborted]
                pending = [r.queued_at for r in self.waiting if not r.aborted]
                if not self.running and pending:
                    # Nothing runs: the next step cannot start before a request is there to run, even
                    # when this thread got back here late (after the request had already arrived).
                    next_start = max(next_start, min(pending))
                joiners = []
                while self.waiting and len(self.running) + len(joiners) < model.max_batch:
                    r = self.waiting[0]
                    if r.aborted:
                        self.waiting.popleft()
                        continue
                    if r.queued_at > next_start:
                        break  # it arrived after this step began: it joins at the next boundary
                    joiners.append(self.waiting.popleft())
                self.running.extend(joiners)
                batch = list(self.running)
            if not batch:
                continue
            prefill = sum(r.prompt_tokens - r.cached_tokens for r in joiners)
            step_s = model.step_ms(len(batch), prefill) / 1000.0
            end = next_start + step_s
            step = {"start_s": next_start, "running": len(batch), "prefill_tokens": prefill, "joiners": len(joiners)}
            recorded = False
            if self.profiling and self.profile_skipped < self.profile_delay_steps:
                self.profile_skipped += 1
            elif self.profiling and len(self.profiled_steps) < self.profile_max_steps:
                self.profiled_steps.append(step)
                recorded = True
                if self.profile_target_steps and len(self.profiled_steps) >= self.profile_target_steps:
                    # SGLang's num_steps: the profile stops by itself (scheduler_profiler_mixin.py).
                    self.profiling = False
                    assert self.loop is not None
                    self.loop.call_soon_threadsafe(lambda: asyncio.ensure_future(self.auto_stop()))
            self.steps_total += 1
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
            next_start = end

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

    # ---------------- token emission (event loop) ----------------

    def emit_token(self, r: SimRequest, index: int) -> None:
        now = time.monotonic()
        if r.first_token_at is None:
            r.first_token_at = now
            self.h_ttft.observe(now - r.arrival)
        else:
            self.h_itl.observe(now - (r.last_token_at or now))
        r.last_token_at = now
        self.generation_tokens_total += 1
        token = VOCAB[(index - 1) % len(VOCAB)]
        r.text.append(token)
        n = r.max_tokens
        last = index >= n
        cut = r.fault is not None and r.fault.kind == "cut" and index >= r.fault.after and not last
        if r.stream and r.writer is not None:
            w = r.writer
            if w.is_closing():
                r.aborted = True
                self.finish(r, ok=False)
                return
            finish = "length" if last else None
            if r.chat:
                if index == 1:
                    send_event(w, self.chunk_chat(r, {"role": "assistant", "content": ""}, None))
                send_event(w, self.chunk_chat(r, {"content": token}, finish))
            else:
                send_event(
                    w,
                    {
                        "id": r.rid,
                        "object": "text_completion",
                        "created": self.created,
                        "model": r.model,
                        "choices": [{"index": 0, "text": token, "logprobs": None, "finish_reason": finish, "stop_reason": None}],
                    },
                )
            if cut:
                # A stream cut mid-way: the connection drops with no final chunk, as when a worker dies.
                r.aborted = True
                w.transport.abort()
                self.finish(r, ok=False)
                return
            if last:
                if r.include_usage:
                    obj = "chat.completion.chunk" if r.chat else "text_completion"
                    send_event(
                        w, {"id": r.rid, "object": obj, "created": self.created, "model": r.model, "choices": [], "usage": self.usage(r)}
                    )
                send_raw(w, b"data: [DONE]\n\n")
                w.write(b"0\r\n\r\n")
        elif cut:
            r.aborted = True
            if r.writer is not None:
                r.writer.transport.abort()
            self.finish(r, ok=False)
            return
        if last:
            self.finish(r, ok=True)

    def finish(self, r: SimRequest, ok: bool) -> None:
        self.unbatched.discard(r.rid)
        if ok and self.prefix_cache is not None and r.cache_tokens:
            # The last token sampled was never fed back: its KV was not computed, so it is not cached.
            self.prefix_cache.insert(r.cache_tokens + TOKEN_RE.findall("".join(r.text))[: max(0, r.sent - 1)])
        if ok:
            self.success_total += 1
            self.h_e2e.observe(time.monotonic() - r.arrival)
            if r.sent > 1 and r.first_token_at is not None and r.last_token_at is not None:
                # TPOT as the server sent it, so a benchmark can tell the client's error from the server's lag.
                self.sent_tpot_sum += (r.last_token_at - r.first_token_at) / (r.sent - 1)
                self.sent_tpot_count += 1
        if r.done is not None and not r.done.done():
            r.done.set_result(ok)

    def usage(self, r: SimRequest) -> dict:
        return {
            "prompt_tokens": r.prompt_tokens,
            "total_tokens": r.prompt_tokens + r.sent,
            "completion_tokens": r.sent,
            "prompt_tokens_details": None,
        }

    def chunk_chat(self, r: SimRequest, delta: dict, finish: Optional[str]) -> dict:
        return {
            "id": r.rid,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": r.model,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }

    # ---------------- generation requests ----------------

    def pick_fault(self, body: dict, header: Optional[str], prompt_text: str) -> Optional[Fault]:
        if header:
            return Fault.parse(header)
        marker = FAULT_MARKER.search(prompt_text)
        if marker:
            return Fault.parse(marker.group(1))
        for f in self.faults:
            if self.generation_count % f.every == 0:
                return f
        return None

    async def generate(self, body: dict, chat: bool, writer: asyncio.StreamWriter, fault_header: Optional[str]) -> None:
        model = body.get("model") or self.served_name
        if model != self.served_name:
            missing = {"message": f"The model `{model}` does not exist.", "type": "NotFoundError", "param": "model", "code": 404}
            await respond_json(writer, 404, {"error": missing})
            return
        if chat:
            messages = body.get("messages")
            if not isinstance(messages, list) or not messages:
                await respond_json(writer, 400, error_body("'messages' must be a non-empty list", 400))
                return
            text = " ".join(str(m.get("content", "")) for m in messages if isinstance(m, dict))
            prompt_tokens = count_tokens(text) + 3 * len(messages) + 2  # a chat template's few extra tokens
        else:
            prompt = body.get("prompt")
            if isinstance(prompt, list) and prompt and all(isinstance(t, int) for t in prompt):
                text, prompt_tokens = "", len(prompt)
            elif isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
                text = prompt[0]
                prompt_tokens = count_tokens(text)
            elif isinstance(prompt, str):
                text, prompt_tokens = prompt, count_tokens(prompt)
            else:
                await respond_json(writer, 400, error_body("'prompt' must be a string or a list of token ids", 400))
                return
        max_tokens = body.get("max_tokens", body.get("max_completion_tokens", 16))
        if not isinstance(max_tokens, int) or max_tokens < 1:
            await respond_json(writer, 400, error_body("max_tokens must be a positive integer", 400))
            return
        if not body.get("ignore_eos") and self.natural_len:
            max_tokens = min(max_tokens, self.natural_len)
        self.generation_count += 1
        try:
            fault = self.pick_fault(body, fault_header, text)
        except ValueError as exc:
            await respond_json(writer, 400, error_body(str(exc), 400))
            return
        if fault and fault.kind in ("error500", "error429"):
            code = 500 if fault.kind == "error500" else 429
            msg = (
                "simulated internal server error (fault injection)"
                if code == 500
                else "simulated overload: too many requests (fault injection)"
            )
            await respond_json(writer, code, error_body(msg, code))
            return
        stream = bool(body.get("stream"))
        opts = body.get("stream_options") or {}
        r = SimRequest(
            rid=("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex,
            prompt_tokens=prompt_tokens,
            max_tokens=max_tokens,
            arrival=time.monotonic(),
            chat=chat,
            include_usage=bool(opts.get("include_usage")),
            stream=stream,
            model=model,
            writer=writer,
            fault=fault,
        )
        assert self.loop is not None
        r.done = self.loop.create_future()
        self.prompt_tokens_total += prompt_tokens
        if self.prefix_cache is not None:
            r.cache_tokens = chat_template_tokens(body["messages"]) if chat else TOKEN_RE.findall(text)
            r.cached_tokens = self.prefix_cache.lookup_and_insert(r.cache_tokens, prompt_tokens)
        if stream:
            writer.write(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n"
                f"transfer-encoding: chunked\r\nserver: {OWNED_BY}\r\n\r\n".encode()
            )
        if fault and fault.kind == "slow":
            await asyncio.sleep(fault.ms / 1000.0)
        if self.pace_s:
            self.unbatched.add(r.rid)
            self.start_paced(r)
        elif self.zero_cost:
            self.unbatched.add(r.rid)
            await self.generate_unbatched(r)
        else:
            with self.cv:
                r.queued_at = time.monotonic()
                self.waiting.append(r)
                self.cv.notify()
        try:
            ok = await r.done
        except asyncio.CancelledError:
            r.aborted = True
            raise
        if not stream and ok:
            payload = self.full_response(r)
            await respond_json(writer, 200, payload)
        elif stream and ok:
            await writer.drain()

    async def generate_unbatched(self, r: SimRequest) -> None:
        """Zero-cost mode: every token at once, one SSE message each."""
        for i in range(1, r.max_tokens + 1):
            r.sent = i
            self.emit_token(r, i)
            if r.aborted or (r.done is not None and r.done.done()):
                return
            if r.writer is not None and i % 32 == 0:
                await r.writer.drain()

    def start_paced(self, r: SimRequest) -> None:
        """Paced mode: token i of a stream is due at base + (i - 1) x pace, where base is its first token's
        real time (a late first token on a busy host is not caught up by squeezing the rest; later late
        wake-ups are). One timer serves every stream, so 256 streams cost 256 writes per pace, not 256 tasks."""
        assert self.pace_s is not None
        self.pace_seq += 1
        heapq.heappush(self.pace_heap, (time.monotonic() + self.pace_s, self.pace_seq, r, 1))
        self.arm_pacer()

    def arm_pacer(self) -> None:
        assert self.loop is not None
        if not self.pace_heap:
            return
        due = self.pace_heap[0][0]
        if self.pacer_handle is not None:
            if self.pacer_due <= due:
                return
            self.pacer_handle.cancel()
        self.pacer_due = due
        # loop.time() is time.monotonic(), so deadlines carry over as they are.
        self.pacer_handle = self.loop.call_at(due, self.pace_tick)

    def pace_tick(self) -> None:
        assert self.pace_s is not None
        self.pacer_handle = None
        now = time.monotonic()
        heap = self.pace_heap
        while heap and heap[0][0] <= now:
            due, _, r, i = heapq.heappop(heap)
            if r.aborted:
                continue
            if i == 1:
                r.pace_base = max(due, now)
            r.sent = i
            self.emit_token(r, i)
            if r.aborted or (r.done is not None and r.done.done()):
                continue
            self.pace_seq += 1
            heapq.heappush(heap, (r.pace_base + i * self.pace_s, self.pace_seq, r, i + 1))
        self.arm_pacer()

    def full_response(self, r: SimRequest) -> dict:
        text = "".join(r.text)
        if r.chat:
            return {
                "id": r.rid,
                "object": "chat.completion",
                "created": self.created,
                "model": r.model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "logprobs": None,
                        "finish_reason": "length",
                        "stop_reason": None,
                    }
                ],
                "usage": self.usage(r),
            }
        return {
            "id": r.rid,
            "object": "text_completion",
            "created": self.created,
            "model": r.model,
            "choices": [{"index": 0, "text": text, "logprobs": None, "finish_reason": "length", "stop_reason": None}],
            "usage": self.usage(r),
        }

    # ---------------- other endpoints ----------------

    def models_body(self) -> dict:
        return {
            "object": "list",
            "data": [
                {
                    "id": self.served_name,
                    "object": "model",
                    "created": self.created,
                    "owned_by": OWNED_BY,
                    "root": self.served_name,
                    "parent": None,
                    "max_model_len": self.preset.max_model_len,
                    "permission": [],
                    "simulator": {"preset": self.preset.name, "timing": self.model.to_json(), "world_size": self.world_size},
                }
            ],
        }

    def metrics_text(self) -> str:
        labels = f'engine="0",model_name="{self.served_name}"'
        with self.cv:
            running, waiting = len(self.running) + len(self.unbatched), len(self.waiting)
        lines = [
            f"# {OWNED_BY}: these metrics come from a SIMULATED vLLM server, not a model.",
            "# HELP inference_bench_simulator_info The simulator's preset and timing model.",
            "# TYPE inference_bench_simulator_info gauge",
            f'inference_bench_simulator_info{{preset="{self.preset.name}",step_base_ms="{self.model.step_base_ms}",'
            f'step_per_seq_ms="{self.model.step_per_seq_ms}",prefill_per_token_ms="{self.model.prefill_per_token_ms}",'
            f'max_batch="{self.model.max_batch}"}} 1',
            "# HELP inference_bench_simulator_late_steps_total Steps that began over half a step late (host too busy); "
            "their tokens were caught up.",
            "# TYPE inference_bench_simulator_late_steps_total counter",
            f"inference_bench_simulator_late_steps_total {self.late_steps}",
            "# HELP inference_bench_simulator_sent_tpot_seconds TPOT of finished requests as the simulator wrote their tokens.",
            "# TYPE inference_bench_simulator_sent_tpot_seconds summary",
            f"inference_bench_simulator_sent_tpot_seconds_sum {self.sent_tpot_sum}",
            f"inference_bench_simulator_sent_tpot_seconds_count {self.sent_tpot_count}",
            "# HELP inference_bench_simulator_profiling 1 while the server's profiler records (between start and stop).",
            "# TYPE inference_bench_simulator_profiling gauge",
            f"inference_bench_simulator_profiling {1 if self.profiling else 0}",
            "# HELP inference_bench_simulator_profile_stops_total Profiles stopped (by /stop_profile or num_steps).",
            "# TYPE inference_bench_simulator_profile_stops_total counter",
            f"inference_bench_simulator_profile_stops_total {self.profile_stops}",
            "# HELP vllm:num_requests_running Number of requests in model execution batches.",
            "# TYPE vllm:num_requests_running gauge",
            f"vllm:num_requests_running{{{labels}}} {float(running)}",
            "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.",
            "# TYPE vllm:num_requests_waiting gauge",
            f"vllm:num_requests_waiting{{{labels}}} {float(waiting)}",
            "# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.",
            "# TYPE vllm:kv_cache_usage_perc gauge",
            f"vllm:kv_cache_usage_perc{{{labels}}} {running / max(1, self.model.max_batch)}",
            "# HELP vllm:prompt_tokens_total Number of prefill tokens processed.",
            "# TYPE vllm:prompt_tokens_total counter",
            f"vllm:prompt_tokens_total{{{labels}}} {float(self.prompt_tokens_total)}",
            "# HELP vllm:generation_tokens_total Number of generation tokens processed.",
            "# TYPE vllm:generation_tokens_total counter",
            f"vllm:generation_tokens_total{{{labels}}} {float(self.generation_tokens_total)}",
            "# HELP vllm:request_success_total Count of successfully processed requests.",
            "# TYPE vllm:request_success_total counter",
            f'vllm:request_success_total{{{labels},finished_reason="length"}} {float(self.success_total)}',
        ]
        if self.prefix_cache is not None:
            lines += [
                "# HELP vllm:prefix_cache_queries Prefix cache queries, in terms of number of queried tokens.",
                "# TYPE vllm:prefix_cache_queries counter",
                f"vllm:prefix_cache_queries_total{{{labels}}} {float(self.prefix_cache.queries)}",
                "# HELP vllm:prefix_cache_hits Prefix cache hits, in terms of number of cached tokens.",
                "# TYPE vllm:prefix_cache_hits counter",
                f"vllm:prefix_cache_hits_total{{{labels}}} {float(self.prefix_cache.hits)}",
            ]
        for h in (self.h_ttft, self.h_itl, self.h_e2e):
            lines.extend(h.render(labels))
        text = "\n".join(lines) + "\n"
        if self.mimic and self.mimic.server == "sglang":
            # SGLang's own prefix; only the token counters are meant to match its names.
            text = text.replace("vllm:", "sglang:")
        return text

    async def stop_profile(self) -> List[str]:
        self.profiling = False
        self.profile_target_steps = None
        self.profile_stops += 1
        steps = list(self.profiled_steps)
        self.profiled_steps = []
        meta = {
            "simulated": True,
            "preset": self.preset.name,
            "timing": self.model.to_json(),
            "layers": self.layers,
            "expected_decode_breakdown_batch1": tm.expected_breakdown(self.model, 1),
            "mimics": MIMIC_LINE or None,
        }
        directory = self.profile_dir_current or self.profiler_dir
        assert self.loop is not None and directory
        m, flags = self.mimic, self.flags
        kwargs = {}
        if m and flags:
            host, pid, pid_ = os.uname().nodename, os.getpid(), self.profile_id
            kwargs = {
                "file_name": lambda rank, ns: sim_mimic.trace_file_name(m, flags, rank, ns, self.instance_id, host, pid, pid_),
                "step_label": lambda step: sim_mimic.step_name(m, step),
                "frontend_name": (lambda ns: sim_mimic.frontend_file_name(host, pid, ns)) if m.frontend_trace else None,
                "profiler_out": m.server == "vllm",
            }
        # Written off the event loop so streams keep flowing while the traces are flushed.
        return await self.loop.run_in_executor(
            None, lambda: sim_trace.write_traces(directory, steps, self.model, self.layers, self.world_size, meta, **kwargs)
        )

    async def auto_stop(self) -> None:
        await self.stop_profile()
        if self.profile_done is not None and not self.profile_done.done():
            self.profile_done.set_result(True)

    async def start_profile_mimic(self, raw: bytes, writer: asyncio.StreamWriter) -> None:
        """/start_profile as the mimicked version answers it."""
        m = self.mimic
        assert m is not None
        if m.server == "vllm":
            if not self.profiler_dir and not self.cuda_profiler:
                await respond_json(writer, 404, {"detail": "Not Found"})
                return
            self.profile_starts += 1
            if self.cuda_profiler:
                # profiler "cuda": cudaProfilerStart() for nsys, no torch trace (vllm/profiler/gpu_profiler.py).
                # The steps are kept for the Nsight Systems report written at exit (sim_nsys.py) under the test's nsys stand-in.
                self.profiled_steps, self.profiling, self.profile_skipped = [], True, 0
                await respond(writer, 200, b"", "application/json")
                return
            self.profiled_steps, self.profiling, self.profile_skipped = [], True, 0
            await respond(writer, 200, b"", "application/json")
            return
        body = json.loads(raw) if raw else {}
        if self.profiling:
            await respond(writer, 500, b"Internal Server Error", "text/plain")
            return
        self.profile_starts += 1
        out = body.get("output_dir") or self.profiler_dir or "/tmp"
        self.profile_dir_current = os.path.abspath(out)
        self.profile_id = str(time.time())
        self.profile_target_steps = int(body["num_steps"]) if body.get("num_steps") else None
        self.profiled_steps, self.profiling = [], True
        if m.start_answers_after_steps and self.profile_target_steps:
            assert self.loop is not None
            self.profile_done = self.loop.create_future()
            await self.profile_done
        await respond(writer, 200, b"Start profiling.\n", "text/plain")

    async def stop_profile_mimic(self, writer: asyncio.StreamWriter) -> None:
        m = self.mimic
        assert m is not None
        if m.server == "vllm":
            if not self.profiler_dir and not self.cuda_profiler:
                await respond_json(writer, 404, {"detail": "Not Found"})
                return
            if self.profiler_dir and self.profiling:
                await self.stop_profile()
            elif self.cuda_profiler:
                self.profile_stops += 1
                self.profiling = False
                self.nsys_steps += self.profiled_steps
                self.profiled_steps = []
            await respond(writer, 200, b"", "application/json")
            return
        if not self.profiling:
            # "Profiling is not in progress" raised in the tokenizer manager: FastAPI's plain 500.
            await respond(writer, 500, b"Internal Server Error", "text/plain")
            return
        await self.stop_profile()
        await respond(writer, 200, b"Stop profiling. This will take some time.\n", "text/plain")

    # ---------------- HTTP ----------------

    async def handle_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                try:
                    method, target, _version = lines[0].split(" ", 2)
                except ValueError:
                    await respond_json(writer, 400, error_body("malformed request line", 400))
                    return
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        k, _, v = line.partition(":")
                        headers[k.strip().lower()] = v.strip()
                length = int(headers.get("content-length") or 0)
                raw = await reader.readexactly(length) if length else b""
                path = target.split("?", 1)[0]
                keep = await self.route(method, path, raw, headers, writer)
                if not keep or headers.get("connection", "").lower() == "close" or writer.is_closing():
                    break
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            pass  # shutting down with streams open: they end with the connection
        finally:
            try:
                writer.close()
            except Exception:  # noqa: BLE001 - the peer may be gone already
                pass

    async def route(self, method: str, path: str, raw: bytes, headers: Dict[str, str], writer: asyncio.StreamWriter) -> bool:
        """Answers one request; returns whether the connection can carry another."""

        def body() -> dict:
            if not raw:
                return {}
            value = json.loads(raw)
            if not isinstance(value, dict):
                raise ValueError("the body must be a JSON object")
            return value

        m = self.mimic
        if path == f"/{OWNED_BY}/state":
            # The simulator's own (not a server's): whether a profile is left running, for tests.
            await respond_json(
                writer, 200, {"profiling": self.profiling, "profile_starts": self.profile_starts, "profile_stops": self.profile_stops}
            )
            return True
        if (
            m
            and self.flags
            and self.flags.api_key
            and sim_mimic.needs_key(m, path)
            and method != "OPTIONS"
            and headers.get("authorization") != "Bearer " + self.flags.api_key
        ):
            await respond_json(writer, 401, {"error": "Unauthorized"})
            return True
        try:
            if m and path in ("/start_profile", "/stop_profile") and method == "POST":
                await (self.start_profile_mimic(raw, writer) if path == "/start_profile" else self.stop_profile_mimic(writer))
            elif m and path == "/version" and m.server == "sglang":
                await respond_json(writer, 404, {"detail": "Not Found"})  # SGLang has no /version
            elif m and path in m.server_info_paths:
                await respond_json(
                    writer,
                    200,
                    {"version": f"{m.version}+{OWNED_BY}", "tp_size": self.flags.tp if self.flags else 1, "simulator": OWNED_BY},
                )
            elif m and path == "/metrics" and m.metrics_need_flag and not (self.flags and self.flags.enable_metrics):
                await respond_json(writer, 404, {"detail": "Not Found"})
            elif path == "/health":
                await respond(writer, 200, b"", "application/json")
            elif path in ("/v1/models", "/models"):
                await respond_json(writer, 200, self.models_body())
            elif path == "/version":
                await respond_json(writer, 200, {"version": f"{m.version if m else '0.0.0'}+{OWNED_BY}"})
            elif path == "/metrics":
                await respond(writer, 200, self.metrics_text().encode(), "text/plain; version=0.0.4; charset=utf-8")
            elif path == "/tokenize" and method == "POST":
                b = body()
                if "messages" in b:
                    msgs = b["messages"]
                    n = count_tokens(" ".join(str(m.get("content", "")) for m in msgs)) + 3 * len(msgs) + 2
                else:
                    n = count_tokens(str(b.get("prompt", "")))
                await respond_json(
                    writer,
                    200,
                    {"count": n, "max_model_len": self.preset.max_model_len, "tokens": list(range(1000, 1000 + n)), "token_strs": None},
                )
            elif path in ("/v1/completions", "/v1/chat/completions") and method == "POST":
                await self.generate(body(), path.endswith("chat/completions"), writer, headers.get("x-sim-fault"))
                return not writer.is_closing()
            elif path in ("/start_profile", "/stop_profile") and method == "POST":
                if not self.profiler_dir:
                    await respond_json(writer, 404, {"detail": "Not Found"})
                elif path == "/start_profile":
                    self.profiled_steps = []
                    self.profiling = True
                    self.profile_skipped = 0
                    await respond(writer, 200, b"", "application/json")
                else:
                    await self.stop_profile()
                    await respond(writer, 200, b"", "application/json")
            else:
                await respond_json(writer, 404, {"detail": "Not Found"})
        except (ValueError, json.JSONDecodeError) as exc:
            await respond_json(writer, 400, error_body(f"bad request body: {exc}", 400))
        return True


def error_body(message: str, code: int) -> dict:
    kind = {400: "BadRequestError", 404: "NotFoundError", 429: "RateLimitError", 500: "InternalServerError"}.get(code, "Error")
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def send_event(writer: asyncio.StreamWriter, obj: dict) -> None:
    send_raw(writer, b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n")


def send_raw(writer: asyncio.StreamWriter, data: bytes) -> None:
    """One HTTP chunk, as uvicorn sends each SSE message."""
    writer.write(b"%x\r\n%s\r\n" % (len(data), data))


async def respond(writer: asyncio.StreamWriter, code: int, body: bytes, ctype: str) -> None:
    mimic = f"{sim_mimic.MIMIC_HEADER}: {MIMIC_LINE}\r\n" if MIMIC_LINE else ""
    writer.write(
        f"HTTP/1.1 {code} {HTTP_REASONS.get(code, 'Error')}\r\ncontent-type: {ctype}\r\n"
        f"content-length: {len(body)}\r\nserver: {OWNED_BY}\r\n{mimic}\r\n".encode() + body
    )
    await writer.drain()


async def respond_json(writer: asyncio.StreamWriter, code: int, obj: dict) -> None:
    await respond(writer, code, json.dumps(obj).encode(), "application/json")


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="vllm_sim",
        description="A SIMULATED vLLM server with a known timing model "
        "(inference-bench-simulator). Not a model: its numbers are known answers for tests and demos.",
    )
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000, help="0 picks a free port (printed on the ready line)")
    p.add_argument("--preset", default=tm.DEFAULT_PRESET, choices=sorted(tm.PRESETS))
    p.add_argument("--served-model-name", default=None)
    p.add_argument("--step-base-ms", type=float, default=None, help="a in step = a + b x running (ms)")
    p.add_argument("--step-per-seq-ms", type=float, default=None, help="b in step = a + b x running (ms)")
    p.add_argument("--prefill-per-token-ms", type=float, default=None, help="added to the step a request joins, per prompt token")
    p.add_argument("--max-batch", type=int, default=None, help="most running requests; the rest wait")
    p.add_argument("--world-size", type=int, default=None, help="ranks written by /stop_profile")
    p.add_argument("--layers", type=int, default=None, help="layers per step in the traces")
    p.add_argument("--natural-output-len", type=int, default=None, help="without ignore_eos, stop (EOS) after this many tokens")
    p.add_argument("--zero-cost", action="store_true", help="no timing model: every token at once (client-ceiling benchmark)")
    p.add_argument("--pace-ms", type=float, default=None, help="no batching: each stream one token per PACE ms")
    p.add_argument("--profiler-dir", default=None, help="enables /start_profile and /stop_profile; traces go here")
    p.add_argument("--profile-max-steps", type=int, default=32, help="steps recorded per profile (vLLM's max_iterations)")
    p.add_argument("--fault", action="append", help="e.g. error500:every=5, error429:every=3, cut:every=7:after=3, slow:every=4:ms=500")
    p.add_argument(
        "--startup-seconds",
        type=float,
        default=0.0,
        help="take this long to start (weights, CUDA graphs), writing a start-up log like vLLM's on stderr",
    )
    p.add_argument(
        "--enable-prefix-caching",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="vLLM's automatic prefix caching (on by default, as in vLLM V1): cached prompt blocks skip their prefill",
    )
    p.add_argument(
        "--enable-layerwise-nvtx-tracing",
        action="store_true",
        help="vLLM's layerwise NVTX ranges: the Nsight Systems report written under the tests' nsys stand-in names each kernel's module",
    )
    p.add_argument(
        "--slow-layer",
        type=slow_layer_arg,
        default=None,
        metavar="N:FACTOR",
        help="in the Nsight Systems report only: layer N's kernels run FACTOR times longer (a straggler layer, to show the skew)",
    )
    p.add_argument("--kv-cache-tokens", type=int, default=1_000_000, help="prefix-cache capacity in tokens (blocks of 16)")
    p.add_argument("--describe", action="store_true", help="print the timing model and expected breakdown as JSON and exit")
    p.add_argument(
        "--mimic",
        default=None,
        choices=sorted(sim_mimic.PROFILES),
        help="behave as this server version where versions differ (endpoints, profiler flags and variables, "
        "--api-key, trace names); the rest of the command line is that server's own flags, e.g. "
        '--mimic vllm-0.16 --profiler-config \'{"profiler":"torch","torch_profiler_dir":"./t"}\' -tp 8',
    )
    if argv is None:
        argv = sys.argv[1:]
    if "--mimic" not in argv and not any(a.startswith("--mimic=") for a in argv):
        return p.parse_args(argv)
    args, rest = p.parse_known_args(argv)
    args.server_flags = sim_mimic.parse_server_flags(sim_mimic.PROFILES[args.mimic], rest, dict(os.environ))
    # A bounded capture as vLLM's profiler config states it (delay_iterations, max_iterations in
    # vllm/config/profiler.py): steps skipped after /start_profile, then at most that many recorded.
    config = bounded_capture(rest)
    if config.get("max_iterations"):
        args.profile_max_steps = int(config["max_iterations"])
    args.profile_delay_steps = int(config.get("delay_iterations") or 0)
    return args


def bounded_capture(rest: List[str]) -> dict:
    """delay_iterations and max_iterations from --profiler-config JSON (also `=JSON`) or its dotted form."""
    out: dict = {}
    for i, a in enumerate(rest):
        value = rest[i + 1] if a == "--profiler-config" and i + 1 < len(rest) else None
        if a.startswith("--profiler-config="):
            value = a.split("=", 1)[1]
        if value:
            try:
                parsed = json.loads(value)
            except ValueError:
                continue
            out.update({k: v for k, v in parsed.items() if k in ("delay_iterations", "max_iterations")} if isinstance(parsed, dict) else {})
        for key in ("delay_iterations", "max_iterations"):
            if a == f"--profiler-config.{key}" and i + 1 < len(rest):
                out[key] = rest[i + 1]
            elif a.startswith(f"--profiler-config.{key}="):
                out[key] = a.split("=", 1)[1]
    return out


def describe(sim: Simulator) -> dict:
    return {
        "simulator": OWNED_BY,
        "preset": sim.preset.name,
        "served_model_name": sim.served_name,
        "world_size": sim.world_size,
        "layers": sim.layers,
        "timing": sim.model.to_json(),
        "expected_breakdown": {str(b): tm.expected_breakdown(sim.model, b) for b in (1, 8, 32, 64)},
        "single_stream_tok_s": 1000.0 / sim.model.step_ms(1),
    }


def startup_log(text: str, where: str) -> None:
    """One line as vLLM's logger writes it: `INFO 10-06 12:00:31 [default_loader.py:272] ...`."""
    print(f"INFO {time.strftime('%m-%d %H:%M:%S')} [{where}] {text} (SIMULATED)", file=sys.stderr, flush=True)


async def simulate_startup(sim: "Simulator", seconds: float) -> None:
    """The milestones of a vLLM start, spread over `seconds`, before the port is bound (as /health
    refusing until then). The words are vLLM's: "Loading weights took %.2f seconds"
    (vllm/model_executor/model_loader/default_loader.py), the "Capturing CUDA graphs" progress bar and
    "Graph capturing finished in %.0f secs, took %.2f GiB" (vllm/v1/worker/gpu_model_runner.py)."""
    startup_log(f"Starting to load model {sim.served_name}...", "gpu_model_runner.py:2602")
    await asyncio.sleep(0.6 * seconds)
    startup_log(f"Loading weights took {0.6 * seconds:.2f} seconds", "default_loader.py:272")
    print("Capturing CUDA graphs (decode, FULL): 100%|##########| 11/11", file=sys.stderr, flush=True)
    await asyncio.sleep(0.35 * seconds)
    startup_log(f"Graph capturing finished in {0.35 * seconds:.0f} secs, took 0.31 GiB", "gpu_model_runner.py:3480")
    await asyncio.sleep(0.05 * seconds)


async def serve(args: argparse.Namespace, make: type = Simulator) -> None:
    global MIMIC_LINE
    sim = make(args)
    if sim.mimic and sim.simulated:
        MIMIC_LINE = f"{sim.mimic.server} {sim.mimic.version}"
    sim.loop = asyncio.get_running_loop()
    if args.startup_seconds > 0:
        await simulate_startup(sim, args.startup_seconds)
    server = await asyncio.start_server(sim.handle_connection, args.host, args.port, backlog=2048, limit=1 << 20)
    port = server.sockets[0].getsockname()[1]
    if args.startup_seconds > 0:
        # vllm/entrypoints/openai/api_server.py, then uvicorn's own line.
        startup_log(f"Starting vLLM API server 0 on http://{args.host}:{port}", "api_server.py:1971")
        print("INFO:     Application startup complete.", file=sys.stderr, flush=True)
    thread = threading.Thread(target=sim.scheduler_thread, name="scheduler", daemon=True)
    thread.start()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        sim.loop.add_signal_handler(sig, stop.set)
    timed = f"step = {sim.model.step_base_ms} + {sim.model.step_per_seq_ms} x batch ms"
    mode = "zero-cost" if sim.zero_cost else (f"paced {args.pace_ms} ms/token" if sim.pace_s else timed)
    # The ready line: tests and `infbench simulate` wait for it and read the port from it.
    print(
        json.dumps(
            {
                "ready": True,
                "url": f"http://{args.host}:{port}",
                "port": port,
                "model": sim.served_name,
                **({"simulator": OWNED_BY, "mode": mode} if sim.simulated else {"serving_loop": type(sim).__name__}),
            }
        ),
        flush=True,
    )
    async with server:
        await stop.wait()
    with sim.cv:
        sim.stopping = True
        sim.cv.notify_all()
    report = os.environ.get(NSYS_REPORT_ENV)
    if report:
        size = sim_nsys.write_report(
            report, sim.nsys_steps, sim.model, sim.layers, modules=args.enable_layerwise_nvtx_tracing, slow_layer=args.slow_layer
        )
        print(f"SIMULATED nsys report: {report} ({size} bytes, {len(sim.nsys_steps)} profiled steps)", file=sys.stderr, flush=True)


def slow_layer_arg(text: str) -> Tuple[int, float]:
    """--slow-layer N:FACTOR (a layer number and how many times longer its kernels run)."""
    layer, _, factor = text.partition(":")
    try:
        parsed = (int(layer), float(factor or "2"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--slow-layer takes N:FACTOR such as 2:1.5, not {text}") from None
    if parsed[0] < 0 or parsed[1] <= 0:
        raise argparse.ArgumentTypeError(f"--slow-layer takes a layer 0 or above and a factor above 0, not {text}")
    return parsed


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    try:
        for f in args.fault or []:
            Fault.parse(f)
    except ValueError as exc:
        print(f"vllm_sim: {exc}", file=sys.stderr)
        return 2
    if args.describe:
        print(json.dumps(describe(Simulator(args)), indent=2))
        return 0
    asyncio.run(serve(args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
