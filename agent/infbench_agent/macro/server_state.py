"""The server's own state while a level runs: its Prometheus /metrics read about once a second.

A row of percentiles cannot say why TPOT p99 is three times the median; the server's queue, batch and
KV cache over the same seconds can. Each sample keeps the gauges as read and turns the counters into
rates over the interval since the previous sample. Standard library only.

Metric names, by server:
- vLLM V1: vllm/v1/metrics/loggers.py (PrometheusStatLogger): vllm:num_requests_running,
  vllm:num_requests_waiting, vllm:kv_cache_usage_perc (vllm:gpu_cache_usage_perc before 0.9, still
  exported as a deprecated alias), counters vllm:num_preemptions, vllm:prefix_cache_queries and
  vllm:prefix_cache_hits (vllm:gpu_prefix_cache_* before 0.9), vllm:generation_tokens, exposed with the
  `_total` suffix prometheus_client gives counters; speculative decoding in vllm/v1/spec_decode/metrics.py
  (SpecDecodingProm): vllm:spec_decode_num_draft_tokens and vllm:spec_decode_num_accepted_tokens.
- SGLang: python/sglang/srt/metrics/collector.py (SchedulerMetricsCollector): gauges
  sglang:num_running_reqs, sglang:num_queue_reqs, sglang:token_usage (the KV pool's used fraction),
  sglang:cache_hit_rate and sglang:spec_accept_length; it exports no preemption or prefix-cache counters.
"""
from __future__ import annotations

import math
import threading
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from infbench_agent.http import Endpoint, simple_request
from infbench_agent.macro.metrics import prometheus_value

# Each gauge: the series' name here, then the server's names in order of preference (a name earlier in
# the list wins where a server exports both, as vLLM 0.9+ does with the deprecated alias), and how label
# sets combine: a count sums over engines (data parallel), a fraction is their mean.
GAUGES: Sequence[Tuple[str, Sequence[str], str]] = (
    ("running", ("vllm:num_requests_running", "sglang:num_running_reqs"), "sum"),
    ("waiting", ("vllm:num_requests_waiting", "sglang:num_queue_reqs"), "sum"),
    ("kv_cache_usage", ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage"), "mean"),
    ("prefix_cache_hit_rate", ("sglang:cache_hit_rate",), "mean"),
    ("spec_accept_length", ("sglang:spec_accept_length",), "mean"),
)

# Each counter: its total is read every sample; the series holds its rate (per second) or, for a ratio,
# the change of one over the change of the other in the same interval.
COUNTERS: Sequence[Tuple[str, Sequence[str]]] = (
    ("preemptions", ("vllm:num_preemptions_total",)),
    ("prefix_cache_queries", ("vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total")),
    ("prefix_cache_hits", ("vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total")),
    ("spec_draft_tokens", ("vllm:spec_decode_num_draft_tokens_total",)),
    ("spec_accepted_tokens", ("vllm:spec_decode_num_accepted_tokens_total",)),
    ("generation_tokens", ("vllm:generation_tokens_total", "sglang:generation_tokens_total")),
)


def metric_values(text: str) -> Dict[str, List[float]]:
    """Every sample of a Prometheus text exposition, by metric name (one value per label set)."""
    values: Dict[str, List[float]] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name, _, rest = line.partition("{")
        if rest:
            _, _, tail = rest.rpartition("}")
        else:
            name, _, tail = line.partition(" ")
        parts = tail.split()
        if not parts:
            continue
        value = prometheus_value(parts[0])
        if value is None or not math.isfinite(value):
            continue
        values.setdefault(name.strip(), []).append(value)
    return values


def read_state(text: str) -> Tuple[Dict[str, float], Dict[str, float]]:
    """The gauges and the counter totals this exposition carries, by the names in GAUGES and COUNTERS."""
    values = metric_values(text)
    gauges: Dict[str, float] = {}
    for key, names, combine in GAUGES:
        for name in names:
            if name in values:
                vs = values[name]
                gauges[key] = sum(vs) if combine == "sum" else sum(vs) / len(vs)
                break
    counters: Dict[str, float] = {}
    for key, names in COUNTERS:
        for name in names:
            if name in values:
                counters[key] = sum(values[name])
                break
    return gauges, counters


def sample_row(t: float, gauges: Dict[str, float], counters: Dict[str, float], previous: Optional[Tuple[float, Dict[str, float]]]) -> dict:
    """One point of the series: the gauges, and the counters as rates since the previous point."""
    row: dict = {"t": round(t, 3), **{k: round(v, 4) for k, v in gauges.items()}}
    if previous is None:
        return row
    t0, before = previous
    dt = t - t0
    delta = {k: counters[k] - before[k] for k in counters if k in before and counters[k] >= before[k]}
    if dt > 0:
        for key in ("preemptions", "generation_tokens"):
            if key in delta:
                row[f"{key}_per_s"] = round(delta[key] / dt, 3)
    if delta.get("prefix_cache_queries"):
        row["prefix_cache_hit_rate"] = round(delta.get("prefix_cache_hits", 0.0) / delta["prefix_cache_queries"], 4)
    if delta.get("spec_draft_tokens"):
        row["spec_acceptance_rate"] = round(delta.get("spec_accepted_tokens", 0.0) / delta["spec_draft_tokens"], 4)
    return row


class ServerStateSampler:
    """Reads /metrics every `interval` seconds on a thread of its own until stopped. A read that fails
    is skipped (the level goes on); the result says how many were."""

    def __init__(
        self,
        endpoint: Endpoint,
        interval: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        origin: Optional[float] = None,
    ) -> None:
        self.endpoint = endpoint
        self.interval = interval
        self.clock = clock
        self.origin = clock() if origin is None else origin
        self.samples: List[dict] = []
        self.failed_reads = 0
        self.first_counters: Optional[Dict[str, float]] = None
        self.last_counters: Optional[Dict[str, float]] = None
        self._previous: Optional[Tuple[float, Dict[str, float]]] = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="server-state", daemon=True)

    def start(self) -> "ServerStateSampler":
        """Takes the first read now, before the level sends anything, so that the level's counters are
        counted from a baseline none of its requests has touched; then reads on a thread."""
        self.read_once()
        self._thread.start()
        return self

    def read_once(self) -> None:
        try:
            status, raw = simple_request(self.endpoint, "GET", "/metrics", timeout=min(5.0, max(1.0, self.interval * 2)))
        except OSError:
            self.failed_reads += 1
            return
        if status != 200:
            self.failed_reads += 1
            return
        now = self.clock() - self.origin
        gauges, counters = read_state(raw.decode("utf-8", "replace"))
        if not gauges and not counters:
            self.failed_reads += 1
            return
        self.samples.append(sample_row(now, gauges, counters, self._previous))
        self._previous = (now, counters)
        if self.first_counters is None:
            self.first_counters = counters
        self.last_counters = counters

    def _loop(self) -> None:
        next_at = self.clock() + self.interval
        while not self._stop.wait(max(0.0, next_at - self.clock())):
            self.read_once()
            next_at += self.interval

    def stop(self) -> dict:
        """Ends the sampling (after one last read, so the level's end is in the series) and returns it."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10.0)
        self.read_once()
        return self.result()

    def result(self) -> dict:
        out: dict = {"interval_s": self.interval, "samples": self.samples, "failed_reads": self.failed_reads}
        out["summary"] = summarize(self.samples, self.first_counters, self.last_counters)
        return out


def summarize(samples: List[dict], first: Optional[Dict[str, float]], last: Optional[Dict[str, float]]) -> dict:
    """Each gauge's mean over the level's steady part and its peak over all of it, and the level's totals
    from the counters' change. The first read lands as the level's requests arrive (queued until the
    scheduler's next step) and the last after they drained: the mean leaves both out when it can."""
    out: dict = {"samples": len(samples)}
    steady = samples[1:-1] if len(samples) >= 3 else samples
    for key in ("running", "waiting", "kv_cache_usage"):
        vs = [s[key] for s in samples if isinstance(s.get(key), (int, float))]
        steady_vs = [s[key] for s in steady if isinstance(s.get(key), (int, float))] or vs
        if vs:
            out[key] = {"mean": round(sum(steady_vs) / len(steady_vs), 4), "max": max(vs)}
    if first is not None and last is not None:
        delta = {k: last[k] - first[k] for k in last if k in first}
        if "preemptions" in delta:
            out["preemptions"] = delta["preemptions"]
        if delta.get("prefix_cache_queries"):
            out["prefix_cache_hit_rate"] = round(delta.get("prefix_cache_hits", 0.0) / delta["prefix_cache_queries"], 4)
        if delta.get("spec_draft_tokens"):
            out["spec_acceptance_rate"] = round(delta.get("spec_accepted_tokens", 0.0) / delta["spec_draft_tokens"], 4)
    if "prefix_cache_hit_rate" not in out:
        # SGLang publishes the rate itself, not the counters behind it.
        rates = [s["prefix_cache_hit_rate"] for s in samples if isinstance(s.get("prefix_cache_hit_rate"), (int, float))]
        if rates:
            out["prefix_cache_hit_rate"] = round(sum(rates) / len(rates), 4)
    return out
