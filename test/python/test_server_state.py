"""The server's state over a level (agent/infbench_agent/macro/server_state.py): parsing each server's metric
names, counters turned into rates, and, against the simulator, a series that matches what the client
itself had in flight at each moment."""
import json
import os
import subprocess
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "agent"))

from infbench_agent.macro.server_state import read_state, sample_row, summarize  # noqa: E402

from test_macro_loadgen import run_macro  # noqa: E402

VLLM_TWO_ENGINES = """
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 3.0
vllm:num_requests_running{engine="1",model_name="m"} 5.0
vllm:num_requests_waiting{engine="0",model_name="m"} 1.0
vllm:num_requests_waiting{engine="1",model_name="m"} 0.0
vllm:gpu_cache_usage_perc{engine="0",model_name="m"} 0.9
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.25
vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.75
vllm:prefix_cache_queries_total{engine="0",model_name="m"} 1000.0
vllm:prefix_cache_hits_total{engine="0",model_name="m"} 250.0
vllm:num_preemptions_total{engine="0",model_name="m"} 2.0
vllm:generation_tokens_total{engine="0",model_name="m"} 500.0
"""

SGLANG = """
sglang:num_running_reqs{model_name="m",tp_rank="0"} 12.0
sglang:num_queue_reqs{model_name="m",tp_rank="0"} 7.0
sglang:token_usage{model_name="m",tp_rank="0"} 0.62
sglang:cache_hit_rate{model_name="m",tp_rank="0"} 0.4
"""


class Parsing(unittest.TestCase):
    def test_vllm_counts_sum_over_engines_and_fractions_average(self):
        gauges, counters = read_state(VLLM_TWO_ENGINES)
        self.assertEqual(gauges["running"], 8.0)
        self.assertEqual(gauges["waiting"], 1.0)
        # the current name wins over the deprecated alias the same server still exports
        self.assertEqual(gauges["kv_cache_usage"], 0.5)
        self.assertEqual(
            counters, {"preemptions": 2.0, "prefix_cache_queries": 1000.0, "prefix_cache_hits": 250.0, "generation_tokens": 500.0}
        )

    def test_sglang_names_map_to_the_same_series(self):
        gauges, counters = read_state(SGLANG)
        self.assertEqual(gauges, {"running": 12.0, "waiting": 7.0, "kv_cache_usage": 0.62, "prefix_cache_hit_rate": 0.4})
        self.assertEqual(counters, {})

    def test_garbage_lines_are_skipped(self):
        gauges, _ = read_state('vllm:num_requests_running{engine="0"} NaN\nvllm:num_requests_waiting oops\nnot a metric\n')
        self.assertEqual(gauges, {})

    def test_counters_become_rates_over_the_interval(self):
        _, c0 = read_state(VLLM_TWO_ENGINES)
        later = (
            VLLM_TWO_ENGINES.replace('queries_total{engine="0",model_name="m"} 1000.0', 'queries_total{engine="0",model_name="m"} 1400.0')
            .replace('hits_total{engine="0",model_name="m"} 250.0', 'hits_total{engine="0",model_name="m"} 550.0')
            .replace('generation_tokens_total{engine="0",model_name="m"} 500.0', 'generation_tokens_total{engine="0",model_name="m"} 900.0')
        )
        g1, c1 = read_state(later)
        row = sample_row(2.0, g1, c1, (0.0, c0))
        self.assertEqual(row["generation_tokens_per_s"], 200.0)
        self.assertEqual(row["preemptions_per_s"], 0.0)
        self.assertEqual(row["prefix_cache_hit_rate"], 0.75)  # 300 hits of 400 queried tokens in the interval
        summary = summarize([sample_row(0.0, g1, c0, None), row], c0, c1)
        self.assertEqual(summary["prefix_cache_hit_rate"], 0.75)
        self.assertEqual(summary["running"], {"mean": 8.0, "max": 8.0})

    def test_the_mean_leaves_out_the_arrival_burst_and_the_drain_but_the_peak_keeps_them(self):
        rows = [{"t": 0.0, "waiting": 8}, {"t": 1.0, "waiting": 2}, {"t": 2.0, "waiting": 2}, {"t": 2.4, "waiting": 0}]
        self.assertEqual(summarize(rows, None, None)["waiting"], {"mean": 2.0, "max": 8})

    def test_a_counter_that_went_back_is_a_restart_not_a_negative_rate(self):
        _, c0 = read_state(VLLM_TWO_ENGINES)
        g1, c1 = read_state(VLLM_TWO_ENGINES.replace("} 500.0", "} 10.0"))
        self.assertNotIn("generation_tokens_per_s", sample_row(1.0, g1, c1, (0.0, c0)))


class AgainstTheSimulator(unittest.TestCase):
    """The simulator batches at most 4 requests; the client keeps 8 in flight. At each sample the server's
    running count must be min(in flight, 4) and its waiting count the rest — counted from the client's own
    send and finish times, not from the simulator's word."""

    def test_running_and_waiting_follow_what_the_client_had_in_flight(self):
        proc = subprocess.Popen(
            [sys.executable, os.path.join(ROOT, "simulator", "vllm_sim.py"), "--port", "0", "--max-batch", "4"]
            + ["--step-base-ms", "20", "--step-per-seq-ms", "0", "--prefill-per-token-ms", "0"],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            url = json.loads(proc.stdout.readline())["url"]
            result, events = run_macro(
                url, "--concurrency", "8", "--requests", "16", "--input-len", "8", "--output-len", "80", "--warmup", "0"
            )
        finally:
            proc.terminate()
            proc.wait(5)
            proc.stdout.close()
        [level] = result["levels"]
        state = level["server_state"]
        spans = [
            (r["run_s"], r["run_s"] + r["e2el_ms"] / 1000.0)
            for r in (e["record"] for e in events if e["type"] == "macro.request")
            if r["ok"]
        ]
        self.assertEqual(len(spans), 16)
        edges = [t for span in spans for t in span]
        checked = 0
        for sample in state["samples"]:
            t = sample["t"]
            if min(abs(t - e) for e in edges) < 0.15:
                continue  # a request starting or finishing within the read: either count is right
            in_flight = sum(1 for a, b in spans if a <= t < b)
            self.assertEqual(sample["running"], min(in_flight, 4), sample)
            self.assertEqual(sample["waiting"], in_flight - min(in_flight, 4), sample)
            self.assertEqual(sample["kv_cache_usage"], sample["running"] / 4)
            checked += 1
        self.assertGreaterEqual(checked, 3, state["samples"])
        self.assertTrue(any(s["waiting"] == 4 for s in state["samples"]), "the queue the client built is in the series")
        self.assertEqual(state["summary"]["running"]["max"], 4)
        self.assertEqual(state["failed_reads"], 0)


if __name__ == "__main__":
    unittest.main()
