"""What the simulator counts and how /metrics says it: vLLM's metric names (Prometheus text), and the
simulator's own beside them (its timing model, late steps, the TPOT it sent, its profiler). Standard
library only."""
from __future__ import annotations

from typing import List, Optional

import sim_timing as tm
import sim_http
from sim_prefix_cache import PrefixCache


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


class ServerMetrics:
    """The counters and histograms, as vLLM's engine keeps them (and the simulator's own)."""

    def __init__(self) -> None:
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

    def text(
        self,
        served_name: str,
        preset_name: str,
        model: tm.TimingModel,
        running: int,
        waiting: int,
        profiling: bool,
        profile_stops: int,
        prefix_cache: Optional[PrefixCache],
    ) -> str:
        """The /metrics page, with `running` and `waiting` requests as the scheduler has them now."""
        labels = f'engine="0",model_name="{served_name}"'
        lines = [
            f"# {sim_http.OWNED_BY}: these metrics come from a SIMULATED vLLM server, not a model.",
            "# HELP inference_bench_simulator_info The simulator's preset and timing model.",
            "# TYPE inference_bench_simulator_info gauge",
            f'inference_bench_simulator_info{{preset="{preset_name}",step_base_ms="{model.step_base_ms}",'
            f'step_per_seq_ms="{model.step_per_seq_ms}",prefill_per_token_ms="{model.prefill_per_token_ms}",'
            f'max_batch="{model.max_batch}"}} 1',
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
            f"inference_bench_simulator_profiling {1 if profiling else 0}",
            "# HELP inference_bench_simulator_profile_stops_total Profiles stopped (by /stop_profile or num_steps).",
            "# TYPE inference_bench_simulator_profile_stops_total counter",
            f"inference_bench_simulator_profile_stops_total {profile_stops}",
            "# HELP vllm:num_requests_running Number of requests in model execution batches.",
            "# TYPE vllm:num_requests_running gauge",
            f"vllm:num_requests_running{{{labels}}} {float(running)}",
            "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.",
            "# TYPE vllm:num_requests_waiting gauge",
            f"vllm:num_requests_waiting{{{labels}}} {float(waiting)}",
            "# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.",
            "# TYPE vllm:kv_cache_usage_perc gauge",
            f"vllm:kv_cache_usage_perc{{{labels}}} {running / max(1, model.max_batch)}",
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
        if prefix_cache is not None:
            lines += [
                "# HELP vllm:prefix_cache_queries Prefix cache queries, in terms of number of queried tokens.",
                "# TYPE vllm:prefix_cache_queries counter",
                f"vllm:prefix_cache_queries_total{{{labels}}} {float(prefix_cache.queries)}",
                "# HELP vllm:prefix_cache_hits Prefix cache hits, in terms of number of cached tokens.",
                "# TYPE vllm:prefix_cache_hits counter",
                f"vllm:prefix_cache_hits_total{{{labels}}} {float(prefix_cache.hits)}",
            ]
        for h in (self.h_ttft, self.h_itl, self.h_e2e):
            lines.extend(h.render(labels))
        return "\n".join(lines) + "\n"
