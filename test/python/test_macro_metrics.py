"""Metric math and stream parsing of the macro load generator (agent/infbench_agent/macro/metrics.py)."""
import json
import unittest

from infbench_agent.http import ChunkedDecoder
from infbench_agent.macro.metrics import (
    SSEParser,
    describe_ms,
    message_content,
    parse_prometheus_totals,
    parse_slos,
    peak_in_flight,
    percentile,
    summarize,
)
from infbench_agent.macro.levels import vllm_arrivals


def record(send, ttft, tokens, gap, ok=True, prompt=10, intended=None, **extra):
    """A request that got its first token `ttft` s after `send`, then one token every `gap` s."""
    itl = [gap] * (tokens - 1)
    e2el = ttft + gap * (tokens - 1)
    r = {
        "id": 0,
        "ok": ok,
        "send": send,
        "intended": send if intended is None else intended,
        "finish": send + e2el + 0.001,
        "ttft": ttft,
        "e2el": e2el,
        "itl": itl,
        "output_tokens": tokens,
        "prompt_tokens": prompt,
        "client_tokens": tokens,
        "usage_missing": False,
    }
    r.update(extra)
    return r


class SSEParsing(unittest.TestCase):
    def test_events_split_across_arbitrary_chunks(self):
        body = (
            b'data: {"choices":[{"text":"a"}]}\n\n'
            b'data: {"choices":[{"text":"b"}]}\r\n\r\n'
            b": keep-alive comment\n\n"
            b"data: [DONE]\n\n"
        )
        for size in (1, 2, 3, 7, 64, len(body)):
            parser = SSEParser()
            out = []
            for i in range(0, len(body), size):
                out.extend(parser.feed(body[i : i + size]))
            self.assertEqual(out, ['{"choices":[{"text":"a"}]}', '{"choices":[{"text":"b"}]}', "[DONE]"], f"chunk size {size}")

    def test_multi_line_data_fields_join_with_newlines(self):
        self.assertEqual(SSEParser().feed(b"data: one\ndata:two\n\n"), ["one\ntwo"])

    def test_chunked_transfer_coding_decodes_across_splits(self):
        payloads = [b'data: {"x":1}\n\n', b"data: [DONE]\n\n"]
        wire = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in payloads) + b"0\r\n\r\n"
        for size in (1, 5, 1000):
            dec = ChunkedDecoder()
            got = b"".join(dec.feed(wire[i : i + size]) for i in range(0, len(wire), size))
            self.assertEqual(got, b"".join(payloads))
            self.assertTrue(dec.done)

    def test_chat_role_preamble_carries_no_token(self):
        self.assertIsNone(message_content({"choices": [{"delta": {"role": "assistant", "content": ""}}]}))
        self.assertEqual(message_content({"choices": [{"delta": {"content": " hi"}}]}), " hi")
        self.assertEqual(message_content({"choices": [{"text": " hi", "finish_reason": None}]}), " hi")
        self.assertIsNone(message_content({"choices": [], "usage": {"completion_tokens": 3}}))


class MetricMath(unittest.TestCase):
    def test_percentiles_interpolate_like_numpy(self):
        vals = [1.0, 2.0, 3.0, 4.0]
        self.assertAlmostEqual(percentile(vals, 50), 2.5)
        self.assertAlmostEqual(percentile(vals, 99), 3.97)
        self.assertAlmostEqual(percentile(vals, 0), 1.0)
        self.assertAlmostEqual(percentile([5.0], 99), 5.0)

    def test_stats_use_vllm_field_names_and_population_std(self):
        out = describe_ms([0.001, 0.003], "ttft", [50, 99.9])
        self.assertEqual(set(out), {"mean_ttft_ms", "median_ttft_ms", "std_ttft_ms", "p50_ttft_ms", "p99.9_ttft_ms"})
        self.assertAlmostEqual(out["mean_ttft_ms"], 2.0)
        self.assertAlmostEqual(out["std_ttft_ms"], 1.0)

    def test_tpot_excludes_the_first_token_and_one_token_requests(self):
        recs = [record(0.0, 0.100, 11, 0.020), record(0.0, 0.050, 1, 0.0)]
        s = summarize(recs, [99], {})
        self.assertAlmostEqual(s["mean_tpot_ms"], 20.0)  # (e2el - ttft) / (11 - 1), the 1-token request left out
        self.assertAlmostEqual(s["mean_ttft_ms"], 75.0)
        self.assertAlmostEqual(s["mean_itl_ms"], 20.0)
        self.assertAlmostEqual(s["mean_e2el_ms"], (0.3 + 0.05) / 2 * 1000)

    def test_throughput_divides_by_first_send_to_last_finish(self):
        recs = [record(0.0, 0.1, 10, 0.01, prompt=100), record(0.5, 0.1, 30, 0.01, prompt=50)]
        s = summarize(recs, [99], {})
        duration = (0.5 + 0.1 + 0.29 + 0.001) - 0.0
        self.assertAlmostEqual(s["duration"], duration)
        self.assertEqual(s["total_output_tokens"], 40)
        self.assertEqual(s["total_input_tokens"], 150)
        self.assertAlmostEqual(s["output_throughput"], 40 / duration)
        self.assertAlmostEqual(s["total_token_throughput"], 190 / duration)
        self.assertAlmostEqual(s["request_throughput"], 2 / duration)

    def test_failed_requests_are_counted_with_reasons_and_left_out_of_latencies(self):
        recs = [
            record(0.0, 0.1, 10, 0.01),
            {
                "id": 1,
                "ok": False,
                "send": 0.0,
                "finish": 0.02,
                "reason": "http_500",
                "error": "HTTP 500: boom",
                "ttft": 0.001,
                "itl": [0.5],
                "output_tokens": None,
                "intended": 0.0,
            },
            {
                "id": 2,
                "ok": False,
                "send": 0.0,
                "finish": 0.05,
                "reason": "stream_cut",
                "error": "cut",
                "ttft": 0.002,
                "itl": [9.0],
                "intended": 0.0,
            },
        ]
        s = summarize(recs, [99], {})
        self.assertEqual((s["completed"], s["failed"]), (1, 2))
        self.assertEqual(s["failures"], {"http_500": 1, "stream_cut": 1})
        self.assertAlmostEqual(s["mean_ttft_ms"], 100.0)
        self.assertAlmostEqual(s["p99_itl_ms"], 10.0)
        self.assertIn("HTTP 500: boom", s["errors"])

    def test_goodput_counts_requests_meeting_every_slo(self):
        recs = [record(0.0, 0.1, 11, 0.02), record(0.0, 0.6, 11, 0.02), record(0.0, 0.1, 11, 0.06)]
        s = summarize(recs, [99], parse_slos("ttft:500 tpot:50"))
        self.assertAlmostEqual(s["request_goodput"], 1 / s["duration"])

    def test_slo_text_is_validated(self):
        self.assertEqual(parse_slos("ttft:500,tpot:50"), {"ttft": 500.0, "tpot": 50.0})
        with self.assertRaises(ValueError):
            parse_slos("itl:5")
        with self.assertRaises(ValueError):
            parse_slos("ttft:-1")

    def test_scheduling_lag_and_peak_concurrency(self):
        recs = [record(1.0, 0.1, 2, 0.1, intended=0.998), record(1.05, 0.1, 2, 0.1, intended=1.05), record(5.0, 0.1, 2, 0.1)]
        s = summarize(recs, [99], {})
        self.assertAlmostEqual(s["scheduling_lag_ms"]["max"], 2.0, places=6)
        self.assertEqual(peak_in_flight(recs), 2)

    def test_token_count_falls_back_to_the_client_and_reports_discrepancy(self):
        recs = [record(0.0, 0.1, 10, 0.01, usage_missing=True), record(0.0, 0.1, 10, 0.01, client_tokens=9)]
        s = summarize(recs, [99], {})
        self.assertEqual(s["token_count"]["source"], "mixed")
        self.assertEqual(s["token_count"]["client_vs_usage_abs_diff"], 1)

    def test_prometheus_counters_are_summed_over_label_sets(self):
        text = (
            "# HELP vllm:generation_tokens_total x\n"
            'vllm:generation_tokens_total{engine="0",model_name="a"} 100.0\n'
            'vllm:generation_tokens_total{engine="1",model_name="a"} 20.0\n'
            'vllm:generation_tokens_total_created{engine="0"} 1.7e9\n'
            'vllm:prompt_tokens_total{model_name="a b"} 7\n'
        )
        totals = parse_prometheus_totals(text, ["vllm:generation_tokens_total", "vllm:prompt_tokens_total"])
        self.assertEqual(totals, {"vllm:generation_tokens_total": 120.0, "vllm:prompt_tokens_total": 7.0})

    # The expected values below are what vllm/benchmarks/serve.py computes for the same requests: its newest
    # calculate_metrics (009e6d4a) sweeps [start, start + latency) for max_concurrent_requests; the one of
    # vLLM up to 0.28 (def9ce85) took the maximum over 1-second buckets, both bucket ends included.
    def test_max_concurrent_requests_is_vllms_exact_peak_beside_its_older_one_second_buckets(self):
        # Five requests one after another within one second: never two at once.
        sequential = [record(0.2 * i, 0.02, 5, 0.01) for i in range(5)]
        s = summarize(sequential, [99], {})
        self.assertEqual(s["max_concurrent_requests"], 1)
        self.assertEqual(s["max_concurrent_requests_1s_buckets"], 5)
        self.assertEqual(s["peak_in_flight"], 1)
        # One ends at 1.0 s as the next starts: half-open intervals do not overlap; the old buckets say 2.
        adjacent = [record(0.0, 0.5, 2, 0.5), record(1.0, 0.5, 2, 0.5)]
        s = summarize(adjacent, [99], {})
        self.assertEqual((s["max_concurrent_requests"], s["max_concurrent_requests_1s_buckets"]), (1, 2))

    def test_failed_requests_count_in_flight_but_not_in_vllms_peak(self):
        recs = [
            record(0.0, 0.1, 10, 0.01),
            {"id": 1, "ok": False, "send": 0.01, "finish": 0.05, "reason": "http_500", "error": "x", "intended": 0.01},
        ]
        s = summarize(recs, [99], {})
        self.assertEqual(s["max_concurrent_requests"], 1)  # serve.py counts successful outputs only
        self.assertEqual(s["peak_in_flight"], 2)

    def test_peak_output_tokens_per_second_counts_token_messages_in_one_second_buckets(self):
        # 0.5 s to the first token, then 30 tokens 0.05 s apart: tokens at 0.5 .. 1.95 s; bucket [1, 2) holds 20.
        s = summarize([record(0.0, 0.5, 31, 0.05)], [99], {})
        self.assertEqual(s["max_output_tokens_per_s"], 20.0)

    def test_duration_runs_from_the_levels_start_as_vllms_benchmark_duration(self):
        recs = [record(0.4, 0.1, 10, 0.01), record(0.9, 0.1, 10, 0.01)]
        s = summarize(recs, [99], {}, started_at=0.0)
        self.assertAlmostEqual(s["duration"], 0.9 + 0.1 + 0.09 + 0.001)

    def test_prompt_tokens_from_usage_and_the_estimate_are_told_apart(self):
        recs = [record(0.0, 0.1, 10, 0.01, prompt=7), record(0.0, 0.1, 10, 0.01, prompt=5, prompt_estimated=True)]
        self.assertEqual(summarize(recs, [99], {})["token_count"]["input_source"], "mixed")
        self.assertEqual(summarize(recs[:1], [99], {})["token_count"]["input_source"], "usage")

    def test_request_arrivals_span_n_over_r_as_vllm_scales_them(self):
        import random

        for burstiness in (1.0, 0.25, 4.0):
            arrivals = vllm_arrivals(100, 10.0, burstiness, random.Random(3))
            self.assertAlmostEqual(arrivals[-1], 100 / 10.0, places=9)  # serve.py get_request: target_total_delay_s
            self.assertGreater(arrivals[0], 0.0)  # a gap before the first request too
            self.assertEqual(arrivals, sorted(arrivals))
        even = vllm_arrivals(4, 2.0, float("inf"), random.Random(1))
        self.assertEqual([round(a, 9) for a in even], [0.5, 1.0, 1.5, 2.0])
        self.assertEqual(vllm_arrivals(3, float("inf"), 1.0, random.Random(1)), [0.0, 0.0, 0.0])

    def test_summary_is_valid_json_without_nan(self):
        s = summarize([], [99], {})
        json.dumps(s, allow_nan=False)
        self.assertEqual(s["completed"], 0)


if __name__ == "__main__":
    unittest.main()
