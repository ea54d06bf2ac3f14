"""Workloads that exercise the server's cache and request options: prefix_repetition as vllm bench serve
defines it, checked against the prefix-cache hit rate the simulator's own cache computes, and the sampling
parameters, --extra-body and --header as a server receives them."""
import json
import os
import statistics
import subprocess
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "agent"))

from infbench_agent.macro.prompts import PromptMaker  # noqa: E402

from recorder import Recorder, serve_recorder  # noqa: E402
from test_macro_loadgen import run_macro  # noqa: E402

PREFIX = {"prefix_len": 64, "suffix_len": 32, "num_prefixes": 4}


class Prompts(unittest.TestCase):
    def test_a_group_shares_its_prefix_and_each_request_has_its_own_suffix(self):
        maker = PromptMaker("completions", "m", 0, 8, True, seed=3, prefix=PREFIX)
        texts = [maker.text(i).split() for i in range(8)]
        self.assertTrue(all(len(t) == 96 for t in texts))
        self.assertEqual(texts[0][:64], texts[4][:64], "requests 0 and 4 are one group")
        self.assertNotEqual(texts[0][:64], texts[1][:64], "requests 0 and 1 are two groups")
        self.assertNotEqual(texts[0][64:], texts[4][64:], "each request's suffix is its own")
        self.assertEqual(maker.lengths(5), (96, 8))
        # the same seed gives the same prefixes in every worker process and every level
        self.assertEqual(PromptMaker.from_json(maker.to_json()).text(4), maker.text(4))

    def test_sampling_and_extra_body_reach_the_request_body_extra_body_last(self):
        maker = PromptMaker(
            "chat", "m", 10, 8, True, seed=1, sampling={"temperature": 0.7, "top_k": 20}, extra_body={"top_k": 5, "x": {"y": 1}}
        )
        body = json.loads(maker.body(0))
        self.assertEqual((body["temperature"], body["top_k"], body["x"]), (0.7, 5, {"y": 1}))
        self.assertEqual(json.loads(PromptMaker("chat", "m", 10, 8, True, seed=1).body(0))["temperature"], 0.0)


class PrefixCacheAgainstTheSimulator(unittest.TestCase):
    """20 requests in 4 groups, one at a time: each group's first request misses, the other 16 find the 64
    prefix tokens cached (4 blocks of 16; the suffix's blocks are each request's own). The simulator's own
    counters must give 16 x 64 hits of 20 x 96 queried tokens, and the cached prefill must show in TTFT."""

    def test_the_hit_rate_is_the_one_the_workload_implies_and_cached_prompts_start_sooner(self):
        proc = subprocess.Popen(
            [sys.executable, os.path.join(ROOT, "simulator", "vllm_sim.py"), "--port", "0"]
            + ["--step-base-ms", "5", "--step-per-seq-ms", "0", "--prefill-per-token-ms", "0.5"],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            url = json.loads(proc.stdout.readline())["url"]
            args = ["--dataset-name", "prefix_repetition", "--prefix-repetition-prefix-len", "64", "--prefix-repetition-suffix-len", "32"]
            args += [
                "--prefix-repetition-num-prefixes",
                "4",
                "--concurrency",
                "1",
                "--requests",
                "20",
                "--output-len",
                "4",
                "--warmup",
                "0",
            ]
            result, events = run_macro(url, *args)
        finally:
            proc.terminate()
            proc.wait(5)
            proc.stdout.close()
        [level] = result["levels"]
        self.assertEqual(level["completed"], 20)
        self.assertEqual(level["total_input_tokens"], 20 * 96)
        self.assertEqual((level["dataset_name"], level["prefix_len"], level["num_prefixes"]), ("prefix_repetition", 64, 4))
        self.assertAlmostEqual(level["server_state"]["summary"]["prefix_cache_hit_rate"], 16 * 64 / (20 * 96), places=4)
        records = [e["record"] for e in events if e["type"] == "macro.request"]
        cold = [r["ttft_ms"] for r in records if r["id"] < 4]
        warm = [r["ttft_ms"] for r in records if r["id"] >= 4]
        # 96 prompt tokens at 0.5 ms against 32: medians about 32 ms apart; half that leaves a busy host's noise out
        self.assertGreater(statistics.median(cold) - statistics.median(warm), 16, (cold, warm))


class RequestOptions(unittest.TestCase):
    def serve(self):
        return serve_recorder(self)

    def test_headers_sampling_and_extra_body_reach_every_request_in_every_worker(self):
        url = self.serve()
        result, _ = run_macro(
            url,
            *["--concurrency", "2", "--requests", "6", "--output-len", "3", "--input-len", "8", "--warmup", "1", "--workers", "2"],
            *[
                "--temperature",
                "0.6",
                "--top-p",
                "0.9",
                "--top-k",
                "40",
                "--extra-body",
                '{"chat_template_kwargs":{"enable_thinking":false}}',
            ],
            *["--header", "x-tenant=bench", "--header", "x-route=a=b"],
        )
        [level] = result["levels"]
        self.assertEqual(level["completed"], 6, level.get("errors"))
        self.assertEqual(len(Recorder.seen), 7)  # the warm-up too
        for _, headers, body in Recorder.seen:
            self.assertEqual((headers.get("x-tenant"), headers.get("x-route")), ("bench", "a=b"))
            self.assertEqual((body["temperature"], body["top_p"], body["top_k"]), (0.6, 0.9, 40))
            self.assertEqual(body["chat_template_kwargs"], {"enable_thinking": False})
        extras = level["request_extras"]
        self.assertEqual((extras["temperature"], extras["headers"]), (0.6, ["x-route", "x-tenant"]))
        self.assertNotIn("bench", json.dumps(result["config"]), "header values stay out of the result")

    def test_bad_extra_body_and_header_are_refused_with_the_fix(self):
        url = self.serve()
        for args, words in (
            (["--extra-body", "{not json"], "--extra-body is not JSON"),
            (["--extra-body", "[1]"], "--extra-body must be a JSON object"),
            (["--header", "novalue"], "--header takes KEY=VALUE"),
        ):
            out = subprocess.run(
                [sys.executable, "-m", "infbench_agent", "macro", "--url", url, "--requests", "1", *args],
                cwd=os.path.join(ROOT, "agent"),
                capture_output=True,
                text=True,
                timeout=60,
            )
            errors = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{") and '"error"' in line]
            self.assertTrue(any(e.get("type") == "error" and words in e["message"] for e in errors), out.stdout[-800:])
        self.assertEqual(Recorder.seen, [], "nothing was sent")


if __name__ == "__main__":
    unittest.main()
