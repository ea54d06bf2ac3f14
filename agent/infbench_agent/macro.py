"""Macro phase: an end-to-end serving benchmark of a running OpenAI-compatible server (vLLM, SGLang, ...).

Runs next to the server, streams requests at a concurrency sweep or at request rates (gamma arrivals),
and reports vLLM's `bench serve` metrics per load level. High concurrency is spread over several
worker processes (this same agent re-invoked with `macro --worker`) so the client never limits the
numbers; each level reports the client's CPU and its scheduling lag, and cross-checks token counts
against the server's /metrics. SIGTERM ends a run promptly and still emits the results so far.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import resource
import selectors
import signal
import subprocess
import sys
import time
from typing import Callable, Dict, List, Optional

from infbench_agent import auth, events
from infbench_agent.loadgen_http import Endpoint, Engine, simple_request
from infbench_agent.loadgen_metrics import compact_record, parse_prometheus_totals, parse_slos, summarize
from infbench_agent.simulator_mark import SIMULATOR_MARK

WORDS = ("time year people way day man thing woman life child world school state family student group country "
         "problem hand part place case week company system program question work government number night point "
         "home water room mother area money story fact month lot right study book eye job word business issue "
         "side kind head house service friend father power hour game line end member law car city community name "
         "president team minute idea kid body information back parent face others level office door health person "
         "art war history party result change morning reason research girl guy moment air teacher force education "
         "foot boy age policy music market sense nation plan college interest death experience effect class control "
         "care field development role effort rate heart drug show leader light voice wife police mind price report "
         "decision son view relationship town road arm difference value building action model season society tax "
         "director position player record paper space ground form event official matter center couple site project "
         "activity star table need court oil situation cost industry figure street image phone data picture practice "
         "piece land product doctor wall patient worker news test movie north love support technology step baby "
         "computer type attention film tree source organization hair window evidence population site truth").split()

_cancelled = False
# In a wave of sends, read the sockets that are ready after every this many.
SENDS_BETWEEN_READS = 16
# Monotonic time of the run's first level start: per-request events carry times from it (run_s).
_run_start: Optional[float] = None


# Where a field of ours means something else than in `vllm bench serve` (checked against vllm-project/vllm:
# vllm/benchmarks/serve.py at 009e6d4a and vllm/benchmarks/lib/endpoint_request_func.py at 02cfb534).
VLLM_FIELD_NOTES = {
    "checked_against": "vllm/benchmarks/serve.py (009e6d4a), vllm/benchmarks/lib/endpoint_request_func.py (02cfb534)",
    "max_concurrent_requests": "as the newest serve.py: the exact peak of successful requests, each from its send to "
                               "its last token; vLLM up to 0.28 took the maximum over 1-second buckets instead, given "
                               "here as max_concurrent_requests_1s_buckets",
    "peak_in_flight": "ours, not vLLM's: the exact peak of requests in flight, failed ones included, each until its "
                      "response ended",
    "total_input_tokens": "usage.prompt_tokens where the server sends it, as vLLM; otherwise the prompt's length as "
                          "calibrated with /tokenize (vLLM: its dataset's length)",
    "total_output_tokens": "usage.completion_tokens, as vLLM; otherwise the client's count of token messages (vLLM "
                           "re-tokenizes the text with the model's tokenizer)",
    "itl_ms": "chat: the role-only first message carries no token here; vLLM takes TTFT from it and counts its gap "
              "as an ITL sample",
    "scheduling_lag_ms": "ours: send time minus planned time (the arrival; in a closed loop the moment a slot freed); "
                         "vLLM's client_queue_time is the wait for its --max-concurrency semaphore",
    "duration": "from the level's start (the origin of its arrivals) to the last response, as vLLM's benchmark_duration",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--url", default="http://127.0.0.1:8000", help="the server's base URL as seen from this host")
    p.add_argument("--model", default=None, help="model name; default: the first one /v1/models lists")
    auth.add_arguments(p)
    p.add_argument("--api", choices=("completions", "chat"), default="completions")
    p.add_argument("--concurrency", default="1", help="comma-separated levels, e.g. 1,8,32 (closed loop)")
    p.add_argument("--request-rate", default=None,
                   help="comma-separated request rates per second (open loop, gamma arrivals); 'inf' sends all at once")
    p.add_argument("--max-concurrency", type=int, default=None, help="cap on requests in flight in request-rate mode")
    p.add_argument("--burstiness", type=float, default=1.0, help="gamma shape of the arrival gaps; 1 = Poisson")
    p.add_argument("--requests", type=int, default=None,
                   help="requests per level (default: max(8, 4 x concurrency), or 10 s worth in rate mode)")
    p.add_argument("--duration", type=float, default=None, help="seconds per level instead of a request count")
    p.add_argument("--input-len", type=int, default=256, help="prompt tokens (random prompts, calibrated with /tokenize)")
    p.add_argument("--output-len", type=int, default=128, help="max_tokens for each request")
    p.add_argument("--no-ignore-eos", action="store_true", help="let the model stop at EOS instead of output-len")
    p.add_argument("--prompts-file", default=None, help="JSONL of prompts: {\"prompt\": ...} or {\"messages\": [...]}, "
                   "optional \"output_len\"")
    p.add_argument("--warmup", type=int, default=2, help="requests sent and discarded before the first level")
    p.add_argument("--seed", type=int, default=None, help="prompt seed; default random, so runs never share a prefix")
    p.add_argument("--percentiles", default="50,90,99")
    p.add_argument("--goodput", default=None, help="SLOs in ms for goodput, e.g. 'ttft:500 tpot:50'")
    p.add_argument("--request-timeout", type=float, default=600.0,
                   help="seconds a request may take from send to its last token before it counts as failed (timeout)")
    p.add_argument("--workers", default="auto", help="load-generator processes per level: auto or a number")
    p.add_argument("--streams-per-worker", type=int, default=96, help="with --workers auto: in-flight streams per process")
    p.add_argument("--update-interval", type=float, default=1.0, help="seconds between running aggregates")
    p.add_argument("--no-request-events", action="store_true", help="do not emit one event per request")
    p.add_argument("--no-tokenize", action="store_true", help="skip /tokenize calibration (assume 1 token per word)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)


# ---------------- prompts ----------------

class PromptMaker:
    """Random prompts of about `input_len` tokens, different for every request and every run."""

    def __init__(self, api: str, model: str, input_len: int, output_len: int, ignore_eos: bool, seed: int,
                 tokens_per_word: float = 1.0, overhead: float = 0.0, file_prompts: Optional[List[dict]] = None,
                 dropped_fields: Optional[List[str]] = None) -> None:
        self.api, self.model, self.input_len, self.output_len = api, model, input_len, output_len
        self.ignore_eos, self.seed = ignore_eos, seed
        self.tokens_per_word, self.overhead = tokens_per_word, overhead
        self.file_prompts = file_prompts
        # Fields the server refused (HTTP 400 in the warm-up), left out of every request.
        self.dropped_fields = dropped_fields or []

    def to_json(self) -> dict:
        return {"api": self.api, "model": self.model, "input_len": self.input_len, "output_len": self.output_len,
                "ignore_eos": self.ignore_eos, "seed": self.seed, "tokens_per_word": self.tokens_per_word,
                "overhead": self.overhead, "file_prompts": self.file_prompts, "dropped_fields": self.dropped_fields}

    @staticmethod
    def from_json(d: dict) -> "PromptMaker":
        return PromptMaker(**d)

    def words_for(self, tokens: int) -> int:
        return max(1, int(round((tokens - self.overhead) / max(self.tokens_per_word, 1e-6))))

    def text(self, index: int, words: Optional[int] = None) -> str:
        rng = random.Random(f"{self.seed}:{index}")
        n = words if words is not None else self.words_for(self.input_len)
        return " ".join(rng.choice(WORDS) for _ in range(n))

    def estimated_prompt_tokens(self, index: int) -> int:
        """The prompt's length in tokens as calibrated, for when the server reports no usage."""
        if self.file_prompts:
            item = self.file_prompts[index % len(self.file_prompts)]
            text = item.get("prompt") or item.get("text") or " ".join(str(m.get("content", "")) for m in item.get("messages") or [])
            return max(1, int(round(len(str(text).split()) * self.tokens_per_word + self.overhead)))
        return self.input_len

    def body(self, index: int) -> bytes:
        out_len = self.output_len
        messages = None
        prompt = None
        if self.file_prompts:
            item = self.file_prompts[index % len(self.file_prompts)]
            out_len = int(item.get("output_len") or item.get("max_tokens") or out_len)
            messages = item.get("messages")
            prompt = item.get("prompt") or item.get("text")
        else:
            prompt = self.text(index)
        if self.api == "chat":
            payload = {"model": self.model, "messages": messages or [{"role": "user", "content": prompt}],
                       "max_completion_tokens": out_len}
        else:
            if prompt is None and messages:
                prompt = "\n".join(str(m.get("content", "")) for m in messages)
            payload = {"model": self.model, "prompt": prompt, "max_tokens": out_len}
        payload.update({"temperature": 0.0, "stream": True, "stream_options": {"include_usage": True}})
        if self.ignore_eos:
            payload["ignore_eos"] = True
        for name in self.dropped_fields:
            payload.pop(name, None)
        return json.dumps(payload).encode()


def load_prompts_file(path: str) -> List[dict]:
    out = []
    try:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    item = json.loads(line)
                except ValueError as exc:
                    raise events.AgentError("bad_prompts_file", f"{path} line {n} is not JSON: {exc}",
                                            "each line must be an object such as {\"prompt\": \"...\"}")
                if isinstance(item, str):
                    item = {"prompt": item}
                if not isinstance(item, dict) or not (item.get("prompt") or item.get("text") or item.get("messages")):
                    raise events.AgentError("bad_prompts_file", f"{path} line {n} has no prompt",
                                            "each line needs \"prompt\" (or \"text\", or \"messages\")")
                out.append(item)
    except OSError as exc:
        raise events.AgentError("bad_prompts_file", f"cannot read the prompts file {path}: {exc.strerror}",
                                "the path is read on the server's host; copy the file there first")
    if not out:
        raise events.AgentError("bad_prompts_file", f"the prompts file {path} holds no prompts", "")
    return out


def calibrate(endpoint: Endpoint, maker: PromptMaker) -> dict:
    """Measures tokens per word (and the chat template's overhead) with the server's /tokenize."""
    def count(words: int) -> Optional[int]:
        text = maker.text(-1, words)
        body = ({"model": maker.model, "messages": [{"role": "user", "content": text}]} if maker.api == "chat"
                else {"model": maker.model, "prompt": text})
        try:
            status, raw = simple_request(endpoint, "POST", "/tokenize", body)
        except OSError:
            return None
        if status != 200:
            return None
        try:
            return int(json.loads(raw)["count"])
        except (ValueError, KeyError, TypeError):
            return None

    small, large = count(50), count(250)
    if small is None or large is None or large <= small:
        return {"calibrated": False, "tokens_per_word": maker.tokens_per_word, "overhead": maker.overhead,
                "note": "the server has no usable /tokenize; prompt lengths are estimates (usage.prompt_tokens is exact)"}
    per_word = (large - small) / 200.0
    overhead = small - 50 * per_word
    return {"calibrated": True, "tokens_per_word": per_word, "overhead": overhead}


# ---------------- driving one process's share of a level ----------------

def drive(plan: dict, engine: Engine, maker: PromptMaker, on_record: Callable[[dict], None],
          should_stop: Callable[[], bool], on_tick: Optional[Callable[[], None]] = None) -> None:
    """Closed loop (`concurrency` in flight) or open loop (`arrivals` offsets) until the plan is done."""
    start_at = plan["start_at"]
    ids = plan["ids"]
    deadline = start_at + plan["duration"] if plan.get("duration") else None
    concurrency = plan.get("concurrency")
    arrivals = plan.get("arrivals")
    cap = plan.get("max_concurrency")
    free_since: List[float] = []
    started = 0
    total = len(ids) if deadline is None else math.inf

    def record(rec: dict) -> None:
        free_since.append(rec["finish"])
        on_record(rec)

    engine.on_record = record
    # Request bodies built before the start, so that a wave of sends is only sends (ours and the reads between).
    bodies = {rid: maker.body(rid) for rid in ids} if deadline is None else {}
    while time.monotonic() < start_at:
        time.sleep(min(0.01, max(0.0, start_at - time.monotonic())))
    while True:
        if should_stop():
            engine.abort_all()
            return
        now = time.monotonic()
        accepting = deadline is None or now < deadline
        if concurrency is not None:
            while accepting and started < total and engine.in_flight < concurrency:
                intended = free_since.pop(0) if free_since else start_at
                rid = ids[started] if deadline is None else plan["id_base"] + started * plan["id_stride"]
                engine.start({"id": rid, "intended": intended, "est_prompt_tokens": maker.estimated_prompt_tokens(rid)},
                             bodies.pop(rid, None) or maker.body(rid))
                started += 1
                if started % SENDS_BETWEEN_READS == 0:
                    # A wave of hundreds of sends takes tens of ms: streams already answering are read meanwhile.
                    engine.poll(0)
            timeout = 0.05
        else:
            assert arrivals is not None
            while accepting and started < len(arrivals) and arrivals[started] + start_at <= now \
                    and (cap is None or engine.in_flight < cap):
                rid = ids[started]
                engine.start({"id": rid, "intended": arrivals[started] + start_at,
                              "est_prompt_tokens": maker.estimated_prompt_tokens(rid)}, bodies.pop(rid, None) or maker.body(rid))
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


def worker_main() -> int:
    """`macro --worker`: reads a job on stdin, waits for the start time, prints records as JSON lines."""
    global _cancelled
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    raise_open_file_limit()
    job = json.loads(sys.stdin.readline())
    maker = PromptMaker.from_json(job["prompt"])
    endpoint = Endpoint(job["url"], job.get("api_key"))
    out = sys.stdout

    def write(obj: dict) -> None:
        out.write(json.dumps(obj, separators=(",", ":")) + "\n")

    engine = Engine(endpoint, job["path"], job["request_timeout"], lambda r: None)
    write({"kind": "ready"})
    out.flush()
    go = sys.stdin.readline()
    if not go:
        return 0
    job["plan"]["start_at"] = json.loads(go)["start_at"]
    cpu0 = cpu_seconds()
    last_flush = [time.monotonic()]

    pending: List[dict] = []

    def on_record(rec: dict) -> None:
        rec.pop("payload", None)
        pending.append(rec)

    def tick() -> None:
        # Records are written when no read is waiting (or every 0.25 s at the most): streams that finish
        # together must not have their last tokens stamped behind the serializing of the earlier ones.
        now = time.monotonic()
        if pending and (engine.last_reads == 0 or now - last_flush[0] > 0.25):
            for rec in pending:
                write({"kind": "record", "record": rec})
            pending.clear()
            out.flush()
            last_flush[0] = now

    try:
        drive(job["plan"], engine, maker, on_record, lambda: _cancelled, tick)
    finally:
        engine.close()
        for rec in pending:
            write({"kind": "record", "record": rec})
        write({"kind": "end", "cpu_s": cpu_seconds() - cpu0, "cancelled": _cancelled})
        out.flush()
    return 0


def _on_signal(signum, frame) -> None:  # noqa: ANN001 - signal handler signature
    global _cancelled
    _cancelled = True


# ---------------- the coordinator ----------------

def parse_levels(text: Optional[str], kind: type, what: str) -> List:
    if not text:
        return []
    out = []
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        try:
            value = float("inf") if (kind is float and part.lower() == "inf") else kind(part)
        except ValueError:
            raise events.AgentError("bad_arguments", f"--{what} must be a comma-separated list of numbers, got {text!r}",
                                    f"for example --{what} 1,8,32")
        if value <= 0:
            raise events.AgentError("bad_arguments", f"--{what} values must be positive, got {part}", "")
        out.append(value)
    return out


def agent_root() -> str:
    """The folder or zipapp this package was imported from, to start workers with the same code."""
    import infbench_agent
    return os.path.dirname(os.path.dirname(os.path.abspath(infbench_agent.__file__)))


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


class LevelRun:
    """Collects one level's records, emitting per-request events and periodic running aggregates."""

    def __init__(self, index: int, meta: dict, total: Optional[int], args: argparse.Namespace,
                 percentiles: List[float], slos: Dict[str, float]) -> None:
        self.index, self.meta, self.total, self.args = index, meta, total, args
        self.percentiles, self.slos = percentiles, slos
        self.records: List[dict] = []
        self.last_update = time.monotonic()
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
            c["run_s"] = round(rec["send"] - _run_start, 6) if rec.get("send") is not None and _run_start else None
            events.emit(events.MACRO_REQUEST, level=self.index, record=c)
        self.tick()

    def tick(self) -> None:
        now = time.monotonic()
        if now - self.last_update >= self.args.update_interval and self.records:
            self.last_update = now
            events.emit(events.MACRO_LEVEL, level=self.index, partial=True, summary=self.summary(partial=True))
            done = len(self.records)
            events.emit(events.PROGRESS, done=done, total=self.total or 0,
                        message=f"{self.label()}: {done}{'/' + str(self.total) if self.total else ''} requests")

    def label(self) -> str:
        m = self.meta
        if m.get("request_rate") is not None:
            return f"rate {m['request_rate']:g}/s"
        return f"c={m['max_concurrency']}"

    def summary(self, partial: bool) -> dict:
        s = dict(self.meta)
        s.update(summarize(self.records, self.percentiles, self.slos, self.started_at))
        s["partial"] = partial
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


def run_level_in_process(plan: dict, endpoint: Endpoint, path: str, maker: PromptMaker, level: LevelRun,
                         timeout: float) -> float:
    engine = Engine(endpoint, path, timeout, lambda r: None)
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
        drive(plan, engine, maker, pending.append, lambda: _cancelled, tick)
    finally:
        engine.close()
        for rec in pending:
            level.add(rec)
    return cpu_seconds() - cpu0


def run_level_workers(plans: List[dict], args: argparse.Namespace, path: str, maker: PromptMaker,
                      level: LevelRun) -> float:
    """Runs each plan in its own worker process; returns the CPU seconds of all of them and of this process."""
    cmd = [sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); from infbench_agent.cli import main; "
           "sys.exit(main(sys.argv[2:]))", agent_root(), "macro", "--worker"]
    procs = []
    cpu0 = cpu_seconds()
    sel = selectors.DefaultSelector()
    try:
        for plan in plans:
            proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
            # The API key travels on stdin, not on a command line other users can read.
            job = {"plan": plan, "url": args.url, "path": path, "prompt": maker.to_json(),
                   "request_timeout": args.request_timeout, "api_key": args.api_key}
            assert proc.stdin is not None
            proc.stdin.write((json.dumps(job) + "\n").encode())
            procs.append(proc)
        buffers = {}
        for proc in procs:
            assert proc.stdout is not None
            os.set_blocking(proc.stdout.fileno(), False)
            sel.register(proc.stdout, selectors.EVENT_READ, proc)
            buffers[proc.pid] = b""
        ready = set()
        ended = set()
        worker_cpu = 0.0
        deadline_ready = time.monotonic() + 30.0

        def pump(timeout: float) -> None:
            nonlocal worker_cpu
            for key, _ in sel.select(timeout):
                proc = key.data
                try:
                    chunk = os.read(key.fileobj.fileno(), 1 << 20)  # type: ignore[union-attr]
                except BlockingIOError:
                    continue
                if not chunk:
                    sel.unregister(key.fileobj)
                    ended.add(proc.pid)
                    continue
                buffers[proc.pid] += chunk
                *lines, buffers[proc.pid] = buffers[proc.pid].split(b"\n")
                for line in lines:
                    try:
                        msg = json.loads(line)
                    except ValueError:
                        continue
                    kind = msg.get("kind")
                    if kind == "record":
                        level.add(msg["record"])
                    elif kind == "ready":
                        ready.add(proc.pid)
                    elif kind == "end":
                        worker_cpu += float(msg.get("cpu_s") or 0.0)

        while len(ready) < len(procs):
            if time.monotonic() > deadline_ready or _cancelled or len(ended) > 0:
                raise events.AgentError("workers_failed", "the load-generator worker processes did not start",
                                        f"run '{sys.executable} -c \"import selectors\"' on the host; see the agent's stderr")
            pump(0.1)
        start_at = level.started_at = time.monotonic() + 0.05
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write((json.dumps({"start_at": start_at}) + "\n").encode())
            proc.stdin.flush()
        cancel_sent = None
        while len(ended) < len(procs):
            if _cancelled and cancel_sent is None:
                cancel_sent = time.monotonic()
                for proc in procs:
                    if proc.poll() is None:
                        proc.send_signal(signal.SIGTERM)
            if cancel_sent is not None and time.monotonic() - cancel_sent > 1.5:
                break
            pump(0.05)
            level.tick()
        return worker_cpu + (cpu_seconds() - cpu0)
    finally:
        sel.close()
        for proc in procs:
            if proc.poll() is None:
                try:
                    proc.wait(timeout=0.5 if _cancelled else 5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


# The status of the last /metrics read, for the cross-check's note when there is nothing to compare.
_metrics_status: Dict[str, Optional[int]] = {"status": None}


def read_server_metrics(endpoint: Endpoint) -> Optional[Dict[str, float]]:
    try:
        status, raw = simple_request(endpoint, "GET", "/metrics", timeout=5.0)
    except OSError:
        _metrics_status["status"] = None
        return None
    _metrics_status["status"] = status
    if status != 200:
        return None
    totals = parse_prometheus_totals(raw.decode("utf-8", "replace"),
                                     ["vllm:generation_tokens_total", "vllm:prompt_tokens_total",
                                      "sglang:generation_tokens_total", "sglang:prompt_tokens_total"])
    return totals or None


def metrics_note(status: Optional[int]) -> str:
    """Why the server-side cross-check has nothing to read, and how to get it."""
    if status == 404:
        # SGLang mounts /metrics only with --enable-metrics (python/sglang/srt/entrypoints/http_server.py);
        # vLLM always serves it.
        return ("/metrics answered 404: SGLang serves it only when started with --enable-metrics (vLLM always does), "
                "so the token counts could not be cross-checked against the server's")
    if status in (401, 403):
        return f"/metrics answered {status}: the server wants an API key there too (pass --api-key)"
    if status is None:
        return "/metrics did not answer"
    return "the server has no Prometheus /metrics with generation token counters"


def metrics_cross_check(before: Optional[dict], after: Optional[dict], records: List[dict],
                        status: Optional[int] = 200) -> dict:
    client_out = sum((r.get("output_tokens") or 0) if r.get("ok") else (r.get("client_tokens") or 0) for r in records)
    client_in = sum(r.get("prompt_tokens") or 0 for r in records if r.get("ok"))
    if not before or not after:
        return {"available": False, "note": metrics_note(status), "metrics_status": status}
    gen_key = "vllm:generation_tokens_total" if "vllm:generation_tokens_total" in after else "sglang:generation_tokens_total"
    prompt_key = gen_key.replace("generation", "prompt")
    gen = after.get(gen_key, 0.0) - before.get(gen_key, 0.0)
    prompt = after.get(prompt_key, 0.0) - before.get(prompt_key, 0.0)
    return {"available": True, "server_generation_tokens": gen, "server_prompt_tokens": prompt,
            "client_output_tokens": client_out, "client_input_tokens": client_in,
            "generation_tokens_match": abs(gen - client_out) <= max(1.0, 0.001 * client_out)}


def discover(endpoint: Endpoint, url: str, model: Optional[str]) -> dict:
    try:
        status, raw = simple_request(endpoint, "GET", "/v1/models", timeout=10.0)
    except OSError as exc:
        raise events.AgentError("server_unreachable", f"Cannot reach the inference server at {url}: {exc}",
                                f"Is it running and listening there? Try: curl {url}/v1/models on the host, or pass --url")
    if status in (401, 403):
        raise events.AgentError("unauthorized", auth.unauthorized_message(f"{url}/v1/models", status, bool(endpoint.api_key)),
                                auth.HOW_TO_GIVE_KEY[0].upper() + auth.HOW_TO_GIVE_KEY[1:])
    if status != 200 and model is None:
        raise events.AgentError("server_error", f"{url}/v1/models answered HTTP {status}",
                                "Is this an OpenAI-compatible server (vLLM, SGLang)? Check --url, or name the model with --model")
    try:
        data = (json.loads(raw).get("data") or []) if status == 200 else []
    except (ValueError, AttributeError):
        data = []
    entry = next((m for m in data if isinstance(m, dict) and (model is None or m.get("id") == model)), None)
    if model is None:
        if entry is None:
            raise events.AgentError("no_model", f"{url}/v1/models lists no model", "Pass --model NAME")
        model = entry.get("id")
    owned = entry.get("owned_by") if entry else None
    simulated = owned == SIMULATOR_MARK
    # /v1/models says no version; its owned_by names vLLM and SGLang (the simulator speaks vLLM's API).
    kind = "vllm" if owned == "vllm" or simulated else "sglang" if owned == "sglang" else "unknown"
    return {"url": url, "kind": kind, "version": None, "model": model, "owned_by": owned, "simulated": simulated,
            "max_model_len": entry.get("max_model_len") if entry else None}


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


def build_plans(args: argparse.Namespace, level_meta: dict, total: Optional[int], id_base: int, rng: random.Random) -> List[dict]:
    c = level_meta.get("max_concurrency")
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
            plans.append({"concurrency": conc[w], "ids": ids, "duration": args.duration,
                          "id_base": id_base + w, "id_stride": workers, "start_at": 0.0})
        return plans
    assert total is not None
    arrivals = vllm_arrivals(total, rate, args.burstiness, rng)
    cap = args.max_concurrency
    expected_in_flight = cap or max(1, int(min(total, (rate if not math.isinf(rate) else total) * 2)))
    workers = worker_count(args, expected_in_flight)
    plans = []
    for w in range(workers):
        mine = list(range(w, total, workers))
        plans.append({"arrivals": [arrivals[i] for i in mine], "ids": [id_base + i for i in mine],
                      "max_concurrency": (split(cap, workers)[w] or 1) if cap else None, "duration": args.duration,
                      "start_at": 0.0})
    return plans


def run(args: argparse.Namespace) -> int:
    if args.worker:
        return worker_main()
    global _cancelled, _run_start
    _cancelled = False
    _run_start = None
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    raise_open_file_limit()
    auth.resolve_api_key(args)
    try:
        endpoint = Endpoint(args.url, args.api_key)
        slos = parse_slos(args.goodput)
        percentiles = [float(p) for p in str(args.percentiles).split(",") if p.strip()]
    except ValueError as exc:
        raise events.AgentError("bad_arguments", str(exc), "")
    rates = parse_levels(args.request_rate, float, "request-rate")
    concurrencies = parse_levels(args.concurrency, int, "concurrency") if not rates else []
    if not rates and not concurrencies:
        raise events.AgentError("bad_arguments", "no load level given", "pass --concurrency 1,8,32 or --request-rate 2,4")
    if not args.burstiness > 0:
        raise events.AgentError("bad_arguments", f"--burstiness must be above 0, got {args.burstiness:g}",
                                "1 is Poisson arrivals; below 1 burstier, above 1 more even")
    if args.input_len < 1 or args.output_len < 1:
        raise events.AgentError("bad_arguments", "--input-len and --output-len must be at least 1", "")
    server = discover(endpoint, args.url, args.model)
    path = "/v1/chat/completions" if args.api == "chat" else "/v1/completions"
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "big")
    file_prompts = load_prompts_file(args.prompts_file) if args.prompts_file else None
    maker = PromptMaker(args.api, server["model"], args.input_len, args.output_len, not args.no_ignore_eos, seed,
                        file_prompts=file_prompts)
    calibration = {"calibrated": False, "note": "prompts from a file"} if file_prompts else (
        {"calibrated": False, "tokens_per_word": 1.0, "overhead": 0.0, "note": "--no-tokenize"} if args.no_tokenize
        else calibrate(endpoint, maker))
    maker.tokens_per_word = float(calibration.get("tokens_per_word", 1.0))
    maker.overhead = float(calibration.get("overhead", 0.0))
    events.emit(events.SERVER, server=server)
    events.log(f"server {args.url}: model {server['model']}"
               f"{' (SIMULATOR: ' + SIMULATOR_MARK + ')' if server['simulated'] else ''}; "
               f"prompts {'calibrated with /tokenize' if calibration.get('calibrated') else 'not calibrated'}")

    result: dict = {"levels": [], "server": server, "cancelled": False,
                    "config": {k: v for k, v in vars(args).items() if k not in ("worker", "api_key")},
                    "prompts": {"seed": seed, "calibration": calibration, "source": args.prompts_file or "random",
                                "dropped_fields": maker.dropped_fields},
                    "client": {"python": sys.version.split()[0], "cpu_count": os.cpu_count(), "host": os.uname().nodename,
                               "timestamps": "time.monotonic() when each read returns, as vLLM's client stamps"},
                    "vllm_bench_serve": VLLM_FIELD_NOTES}
    id_base = 0
    if args.warmup > 0 and not _cancelled:
        warm_c = min(args.warmup, concurrencies[0] if concurrencies else (args.max_concurrency or args.warmup))
        warm = LevelRun(-1, {}, args.warmup, argparse.Namespace(**{**vars(args), "no_request_events": True,
                                                                     "update_interval": 1e9}), percentiles, slos)
        plan = {"concurrency": warm_c, "ids": [10_000_000 + i for i in range(args.warmup)], "duration": None,
                "start_at": time.monotonic()}
        run_level_in_process(plan, endpoint, path, maker, warm, args.request_timeout)
        refused = [r for r in warm.records if r.get("reason") in ("http_400", "http_422")]
        if warm.records and len(refused) == len(warm.records):
            # Some OpenAI-compatible servers refuse vLLM's extra fields: try once without them.
            maker.dropped_fields = ["stream_options", "ignore_eos"]
            warm.records = []
            plan["start_at"] = time.monotonic()
            run_level_in_process(plan, endpoint, path, maker, warm, args.request_timeout)
            if any(r.get("ok") for r in warm.records):
                events.log(f"the server refused stream_options and ignore_eos ({refused[0].get('error')}); requests go "
                           "without them: output lengths follow the model's EOS and token counts are the client's own",
                           "warn")
            else:
                maker.dropped_fields = []
        result["prompts"]["dropped_fields"] = maker.dropped_fields
        bad = [r for r in warm.records if not r.get("ok")]
        events.log(f"warm-up: {len(warm.records) - len(bad)} of {args.warmup} requests completed")
        if bad and len(bad) == len(warm.records):
            first = bad[0]
            raise events.AgentError("warmup_failed", f"every warm-up request failed: {first.get('error')}",
                                    f"check the server at {args.url} (model {server['model']}, {path})")
        id_base = 0
    rng = random.Random(seed)
    levels = [{"max_concurrency": c, "request_rate": None} for c in concurrencies] or \
             [{"max_concurrency": args.max_concurrency, "request_rate": r, "burstiness": args.burstiness} for r in rates]
    for index, meta in enumerate(levels):
        if _cancelled:
            break
        c, rate = meta.get("max_concurrency"), meta.get("request_rate")
        if args.duration:
            total = None if rate is None else max(1, int((rate if not math.isinf(rate) else 1000) * args.duration))
        elif args.requests:
            total = args.requests
        else:
            total = max(8, 4 * c) if rate is None else max(8, int(10 * rate) if not math.isinf(rate) else 100)
        meta = {**meta, "level": index, "api": args.api, "input_len": args.input_len, "output_len": args.output_len,
                "num_prompts": total, "duration_target_s": args.duration, "simulated": server["simulated"]}
        level = LevelRun(index, meta, total, args, percentiles, slos)
        plans = build_plans(args, meta, total, id_base, rng)
        id_base += (total or 0) + 1_000_000
        before = read_server_metrics(endpoint)
        events.emit(events.PROGRESS, done=0, total=total or 0, message=f"{level.label()}: starting "
                    f"({len(plans)} load-generator process{'es' if len(plans) > 1 else ''})")
        wall0 = time.monotonic()
        if _run_start is None:
            _run_start = wall0
        if len(plans) == 1:
            plans[0]["start_at"] = level.started_at = time.monotonic()
            cpu = run_level_in_process(plans[0], endpoint, path, maker, level, args.request_timeout)
        else:
            cpu = run_level_workers(plans, args, path, maker, level)
        wall = time.monotonic() - wall0
        after = read_server_metrics(endpoint)
        summary = level.summary(partial=False)
        out_tokens = summary.get("total_output_tokens") or 0
        summary["client_cpu"] = {"workers": len(plans), "cpu_s": round(cpu, 4),
                                 "cpu_percent_of_one_core": round(100.0 * cpu / wall, 1) if wall > 0 else None,
                                 "us_per_output_token": round(1e6 * cpu / out_tokens, 2) if out_tokens else None}
        summary["server_metrics"] = metrics_cross_check(before, after, level.records, _metrics_status["status"])
        summary["cancelled"] = _cancelled
        summary = clean(summary)
        lag = (summary.get("scheduling_lag_ms") or {}).get("p99")
        if isinstance(lag, (int, float)) and lag > 10 and rate is not None:
            events.log(f"{level.label()}: p99 scheduling lag {lag:.1f} ms: the client sent late; "
                       "consider --workers or fewer levels at once", "warn")
        token_count = summary.get("token_count") or {}
        if token_count.get("source") not in (None, "usage"):
            events.log(f"{level.label()}: the server sent no usage for {token_count.get('usage_missing')} request(s): their "
                       "output tokens are the client's count of streamed chunks and their prompt tokens the prompt "
                       "maker's estimate (ask the server for stream_options.include_usage to get exact counts)", "warn")
        per_core = summary["client_cpu"]["cpu_percent_of_one_core"]
        if per_core is not None and per_core / max(1, len(plans)) > 85:
            events.log(f"{level.label()}: the load generator used {per_core:.0f}% of a core per process: "
                       "it may be limiting the numbers; raise --workers", "warn")
        events.emit(events.MACRO_LEVEL, level=index, partial=False, summary=summary)
        result["levels"].append(summary)
        failures = summary.get("failures") or {}
        if summary.get("completed") == 0 and failures and set(failures) <= {"connect_error"}:
            # The server went away: every further level would only count refused connections.
            result["stopped"] = f"no request of {level.label()} could connect to {args.url}"
            break
        if summary.get("completed") == 0 and failures and set(failures) <= {"timeout"} and not _cancelled:
            # Connected, yet nothing came back in time: a frozen server would stall every further level the same way.
            result["stopped"] = f"every request of {level.label()} stalled: none answered within {args.request_timeout:g} s"
            result["stalled"] = True
            break
    result["cancelled"] = _cancelled
    events.emit(events.RESULT, result=clean(result))
    if _cancelled:
        events.error("cancelled", f"cancelled after {len(result['levels'])} level(s); the results so far are kept", "")
        return 130
    if result.get("stalled"):
        events.error("server_stalled", f"The server accepted the requests but answered none in time: {result['stopped']}; "
                     "the levels before are kept",
                     f"Check the server on the host (its log; curl {args.url}/v1/models); if it is only slow under this "
                     "load, raise --request-timeout (seconds)")
        return 2
    if result.get("stopped"):
        events.error("server_down", f"The server stopped answering: {result['stopped']}; the levels before are kept",
                     f"Check that it still runs (curl {args.url}/v1/models on the host), then run the phase again")
        return 2
    return 0
