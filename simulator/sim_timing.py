"""The simulator's timing model: continuous batching with a known answer.

One scheduler runs steps back to back while any request is running:
  step time = step_base_ms + step_per_seq_ms * running + prefill_per_token_ms * (prompt tokens of joiners)
Requests join at step boundaries (up to max_batch running; the rest wait in arrival order), the step in
which a request joins produces its first token (prefill), and every later step one more token.

The share of each kernel category in a step is written down here too (`step_breakdown`), so the trace
the simulator writes and the trace analyzer's answer can both be checked against the same numbers.
Standard library only; shared by the server, its tests and the benchmark scripts.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Dict, List, Optional

# Kernel categories, named as the trace analyzer's families (notes: FIELD-FACTS "Kernel families").
ALLREDUCE = "allreduce"  # vLLM custom all-reduce (cross_device_reduce_1stage)
NCCL_ALLREDUCE = "nccl_allreduce"
NCCL_ALLGATHER = "nccl_allgather"
ATTENTION = "attention"
MOE_GEMM = "moe_gemm"
MOE_ROUTING = "moe_routing"
QUANT_GEMM = "quantized_gemm"
GEMM = "gemm"
NORM = "norm"
ACTIVATION = "activation"
ROTARY = "rotary"
ELEMENTWISE = "elementwise"
MEMORY = "memory"
# The embedding lookup (PyTorch's index_select), named as the analyzer's index/gather family names it.
INDEX_GATHER = "index_gather"
IDLE = "idle"

CATEGORIES = [
    ALLREDUCE,
    NCCL_ALLREDUCE,
    NCCL_ALLGATHER,
    ATTENTION,
    MOE_GEMM,
    MOE_ROUTING,
    QUANT_GEMM,
    GEMM,
    NORM,
    ACTIVATION,
    ROTARY,
    ELEMENTWISE,
    MEMORY,
    INDEX_GATHER,
]


@dataclass(frozen=True)
class TimingModel:
    step_base_ms: float = 21.5
    step_per_seq_ms: float = 0.2
    prefill_per_token_ms: float = 0.04
    max_batch: int = 256
    # Busy GPU time per category (ms) in the fixed part of a decode step; idle is the rest of step_base_ms.
    fixed_ms: Dict[str, float] = field(default_factory=dict)
    # How the per-sequence and per-prefill-token parts split over categories (fractions summing to 1).
    per_seq_split: Dict[str, float] = field(default_factory=lambda: {ATTENTION: 0.5, MOE_GEMM: 0.4, QUANT_GEMM: 0.1})
    prefill_split: Dict[str, float] = field(default_factory=lambda: {ATTENTION: 0.3, MOE_GEMM: 0.4, QUANT_GEMM: 0.3})

    def step_ms(self, running: int, prefill_tokens: int = 0) -> float:
        """Wall time of one step with `running` sequences, `prefill_tokens` of which are new prompt tokens."""
        return self.step_base_ms + self.step_per_seq_ms * running + self.prefill_per_token_ms * prefill_tokens

    def to_json(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Preset:
    name: str
    served_model_name: str
    world_size: int
    layers: int
    max_model_len: int
    timing: TimingModel
    description: str


# The seed story: a Kimi-K2.5-INT4-like MoE on 8 GPUs at TP=8. A decode step at batch 1 takes 21.7 ms,
# 11.17 ms of it (51.5%) in all-reduce: 122 custom all-reduces (two per layer) plus the embedding's NCCL one.
KIMI_FIXED_MS = {
    ALLREDUCE: 10.919,
    NCCL_ALLREDUCE: 0.251,
    NCCL_ALLGATHER: 0.060,
    MOE_GEMM: 3.900,
    QUANT_GEMM: 2.100,
    GEMM: 0.450,
    ATTENTION: 1.200,
    MOE_ROUTING: 0.400,
    NORM: 0.420,
    ACTIVATION: 0.200,
    ROTARY: 0.120,
    ELEMENTWISE: 0.220,
    MEMORY: 0.050,
    INDEX_GATHER: 0.020,
}

PRESETS: Dict[str, Preset] = {
    "kimi-k25-tp8": Preset(
        name="kimi-k25-tp8",
        served_model_name="moonshotai/Kimi-K2.5-INT4 (simulated)",
        world_size=8,
        layers=61,
        max_model_len=262144,
        timing=TimingModel(step_base_ms=21.5, step_per_seq_ms=0.2, prefill_per_token_ms=0.04, max_batch=256, fixed_ms=dict(KIMI_FIXED_MS)),
        description="Kimi-K2.5-INT4-like MoE, 61 layers, TP=8 on H200s: decode step 21.7 ms at batch 1, "
        "51.5% of it all-reduce (about 46 tok/s single stream)",
    ),
}
DEFAULT_PRESET = "kimi-k25-tp8"


def with_overrides(
    model: TimingModel,
    step_base_ms: Optional[float] = None,
    step_per_seq_ms: Optional[float] = None,
    prefill_per_token_ms: Optional[float] = None,
    max_batch: Optional[int] = None,
) -> TimingModel:
    """The model with some parameters replaced; the fixed busy time scales with step_base_ms so shares hold."""
    out = model
    if step_base_ms is not None and step_base_ms != model.step_base_ms:
        scale = step_base_ms / model.step_base_ms
        out = replace(out, step_base_ms=step_base_ms, fixed_ms={k: v * scale for k, v in model.fixed_ms.items()})
    if step_per_seq_ms is not None:
        out = replace(out, step_per_seq_ms=step_per_seq_ms)
    if prefill_per_token_ms is not None:
        out = replace(out, prefill_per_token_ms=prefill_per_token_ms)
    if max_batch is not None:
        out = replace(out, max_batch=max_batch)
    return out


def step_breakdown(model: TimingModel, running: int, prefill_tokens: int = 0) -> Dict[str, float]:
    """Milliseconds per kernel category in one step, plus `idle`; the values add up to step_ms exactly."""
    out = {c: 0.0 for c in CATEGORIES}
    for c, ms in model.fixed_ms.items():
        out[c] += ms
    for c, share in model.per_seq_split.items():
        out[c] += model.step_per_seq_ms * running * share
    for c, share in model.prefill_split.items():
        out[c] += model.prefill_per_token_ms * prefill_tokens * share
    busy = sum(out.values())
    out[IDLE] = model.step_ms(running, prefill_tokens) - busy
    if out[IDLE] < -1e-9:
        raise ValueError("the model's fixed busy time exceeds step_base_ms")
    out[IDLE] = max(out[IDLE], 0.0)
    return out


def expected_breakdown(model: TimingModel, running: int = 1) -> dict:
    """A decode step's breakdown as the trace analyzer should report it: ms and share per category."""
    ms = step_breakdown(model, running)
    total = model.step_ms(running)
    return {
        "running": running,
        "step_ms": round(total, 6),
        "ms": {k: round(v, 6) for k, v in ms.items()},
        "share": {k: round(v / total, 6) for k, v in ms.items()},
        "allreduce_ms": round(ms[ALLREDUCE] + ms[NCCL_ALLREDUCE], 6),
        "allreduce_share": round((ms[ALLREDUCE] + ms[NCCL_ALLREDUCE]) / total, 6),
    }


# ---- known answers for a client that measures the server ----


def predict_single_stream(model: TimingModel, input_len: int, output_len: int) -> dict:
    """Concurrency 1 on an idle server: the request joins at once and runs alone.

    TTFT = one step with the prefill (plus network), TPOT = ITL = one batch-1 decode step.
    """
    ttft = model.step_ms(1, input_len)
    tpot = model.step_ms(1)
    e2el = ttft + tpot * (output_len - 1)
    return {"ttft_ms": ttft, "tpot_ms": tpot, "itl_ms": tpot, "e2el_ms": e2el, "output_throughput": output_len / (e2el / 1000.0)}


def predict_closed_loop(
    model: TimingModel,
    concurrency: int,
    num_requests: int,
    input_len: int,
    output_len: int,
    turnaround_ms: float = 0.3,
    initial_spread_ms: float = 0.5,
) -> dict:
    """Replays the scheduler for a closed-loop client (`concurrency` requests in flight, `num_requests` in all).

    The first wave arrives spread over `initial_spread_ms` (a client opens its streams one after the
    other), so the first request starts a step alone and the others join the next one, as on the real
    server. A finished request's slot sends its next request `turnaround_ms` after the step that finished
    it, so the new one joins the step after next. Returns per-request means (TTFT, TPOT, E2EL), the
    duration (first send to last finish) and the throughputs.
    """
    t = 0.0
    waiting: List[tuple] = []  # (arrival_ms, request id)
    running: Dict[int, dict] = {}
    pending = []  # (arrival_ms, id) not yet arrived
    nxt = 0
    first_wave = min(concurrency, num_requests)
    for k in range(first_wave):
        pending.append((initial_spread_ms * k / first_wave, nxt))
        nxt += 1
    done: List[dict] = []
    starts: Dict[int, float] = {}
    while len(done) < num_requests:
        pending.sort()
        if not running and not waiting:
            t = max(t, pending[0][0])
        while pending and pending[0][0] <= t:
            arrival, rid = pending.pop(0)
            waiting.append((arrival, rid))
            starts[rid] = arrival
        joiners = []
        while waiting and len(running) + len(joiners) < model.max_batch:
            joiners.append(waiting.pop(0)[1])
        for rid in joiners:
            running[rid] = {"tokens": 0, "first": None, "last": None}
        step = model.step_ms(len(running), input_len * len(joiners))
        t += step
        for rid in list(running):
            r = running[rid]
            r["tokens"] += 1
            if r["first"] is None:
                r["first"] = t
            r["last"] = t
            if r["tokens"] >= output_len:
                del running[rid]
                done.append(
                    {
                        "ttft": r["first"] - starts[rid],
                        "e2el": t - starts[rid],
                        "tpot": (t - r["first"]) / (output_len - 1) if output_len > 1 else None,
                    }
                )
                if nxt < num_requests:
                    pending.append((t + turnaround_ms, nxt))
                    nxt += 1
    duration_s = t / 1000.0
    tpots = [d["tpot"] for d in done if d["tpot"] is not None]
    return {
        "ttft_ms": sum(d["ttft"] for d in done) / len(done),
        "tpot_ms": sum(tpots) / len(tpots) if tpots else None,
        "e2el_ms": sum(d["e2el"] for d in done) / len(done),
        "duration": duration_s,
        "output_throughput": num_requests * output_len / duration_s,
        "request_throughput": num_requests / duration_s,
    }
