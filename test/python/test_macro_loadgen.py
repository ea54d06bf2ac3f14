"""The macro load generator end to end against the simulator: workloads, prompts, worker processes, events."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AGENT = os.path.join(ROOT, "agent")
sys.path.insert(0, AGENT)

from infbench_agent.macro import PromptMaker, build_plans  # noqa: E402


def run_macro(url, *args):
    out = subprocess.run([sys.executable, "-m", "infbench_agent", "macro", "--url", url, *args], cwd=AGENT,
                         capture_output=True, text=True, timeout=120)
    events = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    results = [e["result"] for e in events if e["type"] == "result"]
    if not results:
        raise AssertionError(f"no result event: {out.stdout[-1500:]} {out.stderr[-1500:]}")
    return results[0], events


class Prompts(unittest.TestCase):
    def test_prompts_differ_between_requests_and_runs_and_repeat_with_a_seed(self):
        a = PromptMaker("completions", "m", 64, 8, True, seed=1)
        b = PromptMaker("completions", "m", 64, 8, True, seed=2)
        self.assertNotEqual(a.text(0), a.text(1))
        self.assertNotEqual(a.text(0).split()[:4], b.text(0).split()[:4])
        self.assertEqual(a.text(5), PromptMaker("completions", "m", 64, 8, True, seed=1).text(5))
        self.assertEqual(len(a.text(3).split()), 64)

    def test_request_bodies_ask_for_streaming_usage_and_ignore_eos(self):
        body = json.loads(PromptMaker("chat", "m", 10, 7, True, seed=1).body(0))
        self.assertEqual(body["messages"][0]["role"], "user")
        self.assertEqual(body["max_completion_tokens"], 7)
        self.assertTrue(body["stream"] and body["stream_options"]["include_usage"] and body["ignore_eos"])

    def test_gamma_arrivals_follow_the_rate(self):
        import argparse
        import random
        args = argparse.Namespace(workers="1", streams_per_worker=96, burstiness=1.0, max_concurrency=None, duration=None)
        [plan] = build_plans(args, {"max_concurrency": None, "request_rate": 50.0}, 2000, 0, random.Random(7))
        gaps = [b - a for a, b in zip(plan["arrivals"], plan["arrivals"][1:])]
        self.assertAlmostEqual(sum(gaps) / len(gaps), 1 / 50, delta=0.002)
        bursty = build_plans(argparse.Namespace(**{**vars(args), "burstiness": 0.25}),
                             {"max_concurrency": None, "request_rate": 50.0}, 2000, 0, random.Random(7))[0]
        bgaps = [b - a for a, b in zip(bursty["arrivals"], bursty["arrivals"][1:])]
        var = lambda xs: sum((x - sum(xs) / len(xs)) ** 2 for x in xs) / len(xs)  # noqa: E731
        self.assertGreater(var(bgaps), 2.5 * var(gaps))  # gamma shape 0.25: four times the variance of Poisson

    def test_levels_split_over_workers_keep_the_totals(self):
        import argparse
        import random
        args = argparse.Namespace(workers="3", streams_per_worker=96, burstiness=1.0, max_concurrency=None, duration=None)
        plans = build_plans(args, {"max_concurrency": 10, "request_rate": None}, 25, 100, random.Random(1))
        self.assertEqual([p["concurrency"] for p in plans], [4, 3, 3])
        ids = sorted(i for p in plans for i in p["ids"])
        self.assertEqual(ids, list(range(100, 125)))


class AgainstTheSimulator(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "simulator", "vllm_sim.py"), "--port", "0",
                                     "--step-base-ms", "4", "--step-per-seq-ms", "0.1", "--prefill-per-token-ms", "0.001"],
                                    stdout=subprocess.PIPE, text=True)
        cls.url = json.loads(cls.proc.stdout.readline())["url"]

    @classmethod
    def tearDownClass(cls):
        cls.proc.terminate()
        cls.proc.wait(5)
        cls.proc.stdout.close()

    def test_chat_over_two_worker_processes_counts_exact_tokens(self):
        result, events = run_macro(self.url, "--api", "chat", "--concurrency", "6", "--requests", "12", "--input-len", "40",
                                   "--output-len", "5", "--workers", "2", "--warmup", "0")
        [level] = result["levels"]
        self.assertEqual(level["completed"], 12)
        self.assertEqual(level["client_cpu"]["workers"], 2)
        self.assertEqual(level["total_output_tokens"], 60)
        # calibrated with /tokenize, the chat template's overhead included
        self.assertEqual(level["total_input_tokens"], 12 * 40)
        self.assertEqual(level["token_count"]["client_vs_usage_abs_diff"], 0, "the role-only chunk is no token")
        self.assertTrue(level["server_metrics"]["generation_tokens_match"])
        self.assertEqual(sum(1 for e in events if e["type"] == "macro.request"), 12)
        self.assertEqual(len({e["record"]["id"] for e in events if e["type"] == "macro.request"}), 12)

    def test_request_rate_sends_on_schedule(self):
        result, _ = run_macro(self.url, "--request-rate", "80", "--requests", "40", "--input-len", "8", "--output-len", "2",
                              "--seed", "3", "--warmup", "0")
        [level] = result["levels"]
        self.assertEqual(level["request_rate"], 80.0)
        self.assertEqual(level["completed"], 40)
        lag = level["scheduling_lag_ms"]
        self.assertLess(lag["mean"], 5.0, f"requests left late: {lag}")
        self.assertGreater(level["duration"], 0.2)

    def test_prompts_file_sets_each_requests_output_length(self):
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
            f.write(json.dumps({"prompt": "one two three", "output_len": 3}) + "\n")
            f.write(json.dumps({"messages": [{"role": "user", "content": "four five"}], "output_len": 6}) + "\n")
        try:
            result, _ = run_macro(self.url, "--prompts-file", f.name, "--concurrency", "1", "--requests", "4", "--warmup", "0")
        finally:
            os.unlink(f.name)
        [level] = result["levels"]
        self.assertEqual(level["total_output_tokens"], 3 + 6 + 3 + 6)
        self.assertEqual(result["prompts"]["source"], f.name)

    def test_an_unreachable_server_is_an_actionable_error(self):
        out = subprocess.run([sys.executable, "-m", "infbench_agent", "macro", "--url", "http://127.0.0.1:9"], cwd=AGENT,
                             capture_output=True, text=True, timeout=60)
        errors = [json.loads(line) for line in out.stdout.splitlines() if '"type":"error"' in line]
        self.assertEqual(errors[0]["code"], "server_unreachable")
        self.assertIn("curl http://127.0.0.1:9/v1/models", errors[0]["hint"])


if __name__ == "__main__":
    unittest.main()
