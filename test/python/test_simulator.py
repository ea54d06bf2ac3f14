"""The simulator (simulator/): its timing model, its HTTP API as vLLM speaks it, faults, and its Kineto traces.

The HTTP tests start the real simulator as a child process and talk to it with the agent's own client.
"""
import glob
import gzip
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "simulator"))
sys.path.insert(0, os.path.join(ROOT, "agent"))

import sim_timing as tm  # noqa: E402
import sim_trace  # noqa: E402
from infbench_agent.http import Endpoint, simple_request  # noqa: E402
from infbench_agent.macro.client import Engine  # noqa: E402
from infbench_agent.macro.metrics import SSEParser  # noqa: E402

FAMILIES = [  # FIELD-FACTS "Kernel families", first match wins
    ("allreduce", r"cross_device_reduce_1stage|cross_device_reduce_2stage|allreduce_fusion"),
    ("nccl", r"^ncclDevKernel|^ncclKernel"),
    ("attention", r"flash|fmha|FlashAttn|flashinfer|paged_attention|_mla_|reshape_and_cache"),
    ("moe_gemm", r"fused_moe_kernel|marlin_moe|_group_gemm|GroupProblemShape"),
    ("moe_routing", r"moe_align|topk|expert"),
    ("quantized_gemm", r"Marlin|gptq_marlin|machete"),
    ("gemm", r"gemm|gemv|nvjet|xmma|cutlass|cublas|splitKreduce|matmul"),
    ("norm", r"rms_norm|layer_norm|Norm"),
    ("activation", r"act_and_mul|silu|gelu"),
    ("rotary", r"rotary_embedding"),
    ("quantize", r"quant|cvt_"),
    ("elementwise", r"elementwise|reduce_kernel"),
    ("triton", r"triton"),
    ("memory", r"Memcpy|Memset"),
    ("index_gather", r"indexSelect"),
]


def family(name):
    for fam, pattern in FAMILIES:
        if re.search(pattern, name):
            return fam
    return "other"


class Simulator:
    def __init__(self, *args):
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(ROOT, "simulator", "vllm_sim.py"), "--port", "0", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        line = self.proc.stdout.readline()
        info = json.loads(line)
        self.url = info["url"]
        self.endpoint = Endpoint(self.url)

    def close(self):
        self.proc.terminate()
        self.proc.wait(5)
        self.proc.stdout.close()
        self.proc.stderr.close()

    def get(self, path):
        return simple_request(self.endpoint, "GET", path)

    def post(self, path, body=None):
        return simple_request(self.endpoint, "POST", path, body)

    def stream(self, path, body, headers=None):
        records = []
        engine = Engine(self.endpoint, path, 10.0, records.append, headers)
        engine.start({"id": 1, "intended": time.monotonic()}, json.dumps(body).encode())
        while not records:
            engine.poll(0.05)
        engine.close()
        return records[0]


class TimingModel(unittest.TestCase):
    def test_kimi_preset_tells_the_seed_story(self):
        model = tm.PRESETS["kimi-k25-tp8"].timing
        self.assertAlmostEqual(model.step_ms(1), 21.7)
        b = tm.expected_breakdown(model, 1)
        self.assertAlmostEqual(b["allreduce_ms"], 11.17, places=3)
        self.assertAlmostEqual(b["allreduce_share"], 0.5147, places=3)
        self.assertAlmostEqual(sum(b["ms"].values()), 21.7, places=6)
        self.assertAlmostEqual(1000 / model.step_ms(1), 46.08, places=2)

    def test_breakdown_adds_up_to_the_step_at_any_batch_and_prefill(self):
        model = tm.PRESETS["kimi-k25-tp8"].timing
        for running, prefill in ((1, 0), (64, 0), (8, 2048)):
            ms = tm.step_breakdown(model, running, prefill)
            self.assertAlmostEqual(sum(ms.values()), model.step_ms(running, prefill), places=9)
            self.assertGreaterEqual(ms[tm.IDLE], 0.0)

    def test_overriding_the_base_step_keeps_the_shares(self):
        base = tm.PRESETS["kimi-k25-tp8"].timing
        half = tm.with_overrides(base, step_base_ms=base.step_base_ms / 2, step_per_seq_ms=0.0)
        share = tm.step_breakdown(half, 1)[tm.ALLREDUCE] / half.step_ms(1)
        self.assertAlmostEqual(share, base.fixed_ms[tm.ALLREDUCE] / base.step_base_ms, places=9)

    def test_single_stream_prediction(self):
        m = tm.TimingModel(10, 0.5, 0.01, 64)
        p = tm.predict_single_stream(m, 100, 32)
        self.assertAlmostEqual(p["ttft_ms"], 11.5)
        self.assertAlmostEqual(p["tpot_ms"], 10.5)
        self.assertAlmostEqual(p["e2el_ms"], 11.5 + 31 * 10.5)

    def test_closed_loop_replay_respects_the_batch_limit(self):
        m = tm.TimingModel(10, 0.5, 0.0, 4)
        p = tm.predict_closed_loop(m, 8, 8, 10, 5, initial_spread_ms=0.0)
        # 8 in flight, 4 at a time: the second four wait a full 5-step generation of the first four
        self.assertAlmostEqual(p["tpot_ms"], 12.0)
        self.assertGreater(p["ttft_ms"], 12.0 * 3)


class Traces(unittest.TestCase):
    def test_one_gzip_kineto_file_per_rank_named_like_vllm(self):
        model = tm.PRESETS["kimi-k25-tp8"].timing
        steps = [
            {"start_s": 100.0, "running": 1, "prefill_tokens": 0},
            {"start_s": 100.0 + model.step_ms(1) / 1000, "running": 3, "prefill_tokens": 256},
        ]
        with tempfile.TemporaryDirectory() as d:
            paths = sim_trace.write_traces(d, steps, model, 61, 8, {"simulated": True})
            self.assertEqual(len(paths), 8)
            for r, p in enumerate(paths):
                self.assertRegex(os.path.basename(p), rf"^dp0_pp0_tp0_rank{r}\.\d+\.pt\.trace\.json\.gz$")
                self.assertTrue(os.path.exists(os.path.join(d, f"profiler_out_{r}.txt")))
            with gzip.open(paths[5]) as f:
                trace = json.load(f)
        self.assertEqual(trace["distributedInfo"]["rank"], 5)
        self.assertEqual(trace["distributedInfo"]["world_size"], 8)
        for key in ("schemaVersion", "deviceProperties", "traceEvents", "baseTimeNanoseconds", "displayTimeUnit"):
            self.assertIn(key, trace)
        kernels = [e for e in trace["traceEvents"] if e.get("cat") in ("kernel", "gpu_memcpy")]
        self.assertTrue(all(e["pid"] == 5 and e["args"]["device"] == 5 and e["tid"] == e["args"]["stream"] for e in kernels))
        launches = {e["args"]["correlation"] for e in trace["traceEvents"] if e.get("name") == "cudaGraphLaunch"}
        self.assertEqual({e["args"]["correlation"] for e in kernels}, launches)
        # ts/dur printed with 3 decimals (microseconds)
        self.assertTrue(all(round(e["ts"], 3) == e["ts"] for e in kernels[:200]))
        marks = [e for e in trace["traceEvents"] if e.get("cat") == "gpu_user_annotation" and e["name"] == "execute_model"]
        self.assertEqual(len(marks), 2)
        for step, mark in zip(steps, marks):
            inside = [e for e in kernels if mark["ts"] <= e["ts"] < mark["ts"] + mark["dur"]]
            by_family = {}
            for e in inside:
                by_family[family(e["name"])] = by_family.get(family(e["name"]), 0.0) + e["dur"] / 1000
            expected = tm.step_breakdown(model, step["running"], step["prefill_tokens"])
            # categories + idle = the step's wall time, and each family gets the model's milliseconds
            idle = mark["dur"] / 1000 - sum(by_family.values())
            self.assertAlmostEqual(idle, expected[tm.IDLE], delta=0.01)
            self.assertAlmostEqual(by_family["allreduce"], expected[tm.ALLREDUCE], delta=0.005)
            self.assertAlmostEqual(by_family["nccl"], expected[tm.NCCL_ALLREDUCE] + expected[tm.NCCL_ALLGATHER], delta=0.005)
            self.assertAlmostEqual(by_family["attention"], expected[tm.ATTENTION], delta=0.005)
            self.assertAlmostEqual(by_family["moe_gemm"], expected[tm.MOE_GEMM], delta=0.005)
            self.assertAlmostEqual(by_family["quantized_gemm"], expected[tm.QUANT_GEMM], delta=0.005)
            self.assertNotIn("quantize", by_family)
            # kernels never overlap on the stream
            ends = [(e["ts"], e["ts"] + e["dur"]) for e in sorted(inside, key=lambda e: e["ts"])]
            self.assertTrue(all(a[1] <= b[0] + 1e-3 for a, b in zip(ends, ends[1:])))


class HttpApi(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.sim = Simulator(
            "--step-base-ms",
            "5",
            "--step-per-seq-ms",
            "0.5",
            "--prefill-per-token-ms",
            "0.01",
            "--profiler-dir",
            cls.tmp.name,
            "--profile-max-steps",
            "3",
            "--layers",
            "2",
        )
        cls.model = json.loads(cls.sim.get("/v1/models")[1])["data"][0]["id"]

    @classmethod
    def tearDownClass(cls):
        cls.sim.close()
        cls.tmp.cleanup()

    def test_models_and_metrics_say_simulator_with_vllm_metric_names(self):
        data = json.loads(self.sim.get("/v1/models")[1])["data"][0]
        self.assertEqual(data["owned_by"], "inference-bench-simulator")
        self.assertIn("(simulated)", data["id"])
        status, text = self.sim.get("/metrics")
        text = text.decode()
        self.assertEqual(status, 200)
        for name in (
            "vllm:num_requests_running",
            "vllm:num_requests_waiting",
            "vllm:generation_tokens_total",
            "vllm:prompt_tokens_total",
            "vllm:time_to_first_token_seconds_bucket",
            "vllm:inter_token_latency_seconds_count",
            "inference_bench_simulator_info",
        ):
            self.assertIn(name, text)
        self.assertEqual(self.sim.get("/health")[0], 200)

    def test_streamed_completion_ends_with_a_usage_chunk_and_done(self):
        body = {
            "model": self.model,
            "prompt": "one two three four",
            "max_tokens": 5,
            "stream": True,
            "stream_options": {"include_usage": True},
            "ignore_eos": True,
        }
        status, raw = self.sim.post("/v1/completions", body)
        self.assertEqual(status, 200)
        messages = SSEParser().feed(raw)
        self.assertEqual(messages[-1], "[DONE]")
        chunks = [json.loads(m) for m in messages[:-1]]
        self.assertEqual(len(chunks), 6)
        self.assertTrue(all(len(c["choices"]) == 1 and c["choices"][0]["text"] for c in chunks[:5]))
        self.assertEqual(chunks[4]["choices"][0]["finish_reason"], "length")
        self.assertEqual(chunks[5]["choices"], [])
        self.assertEqual(chunks[5]["usage"]["completion_tokens"], 5)
        self.assertEqual(chunks[5]["usage"]["prompt_tokens"], 4)

    def test_chat_stream_starts_with_the_role_and_non_streaming_returns_usage(self):
        body = {"model": self.model, "messages": [{"role": "user", "content": "hello"}], "max_tokens": 3, "stream": True}
        messages = SSEParser().feed(self.sim.post("/v1/chat/completions", body)[1])
        first = json.loads(messages[0])
        self.assertEqual(first["choices"][0]["delta"], {"role": "assistant", "content": ""})
        self.assertEqual(first["object"], "chat.completion.chunk")
        self.assertEqual(len(messages), 1 + 3 + 1)  # role, 3 tokens, [DONE] (no usage unless asked)
        full = json.loads(self.sim.post("/v1/completions", {"model": self.model, "prompt": "x", "max_tokens": 4})[1])
        self.assertEqual(full["usage"]["completion_tokens"], 4)
        self.assertEqual(len(full["choices"][0]["text"].split()), 4)

    def test_tokenize_counts_like_the_server_charges(self):
        count = json.loads(self.sim.post("/tokenize", {"model": self.model, "prompt": "a b c, d"})[1])["count"]
        self.assertEqual(count, 5)

    def test_the_agent_client_measures_one_stream_as_the_model_says(self):
        def body(i):
            # Each its own prompt: a prompt sent before would find its blocks in the prefix cache and skip their prefill.
            return {
                "model": self.model,
                "prompt": " ".join([f"w{i}"] * 100),
                "max_tokens": 20,
                "stream": True,
                "stream_options": {"include_usage": True},
                "ignore_eos": True,
            }

        recs = [self.sim.stream("/v1/completions", body(i)) for i in range(3)]
        for rec in recs:
            self.assertTrue(rec["ok"], rec.get("error"))
            self.assertEqual(rec["output_tokens"], 20)
            self.assertEqual(rec["prompt_tokens"], 100)
            self.assertEqual(len(rec["itl"]), 19)
            self.assertGreaterEqual(rec["ttft"] * 1000, 5.5 + 1.0 - 0.3)
        # The median of three keeps one request stalled by a busy host from deciding; the integration
        # tests hold TPOT to the model more tightly.
        tpot = statistics.median((r["e2el"] - r["ttft"]) / 19 for r in recs)
        self.assertAlmostEqual(tpot * 1000, 5.5, delta=0.5)

    def test_faults_on_request_become_failures_with_reasons(self):
        body = {"model": self.model, "prompt": "x", "max_tokens": 10, "stream": True, "stream_options": {"include_usage": True}}
        cut = self.sim.stream("/v1/completions", body, {"X-Sim-Fault": "cut after=3"})
        self.assertFalse(cut["ok"])
        self.assertEqual(cut["reason"], "stream_cut")
        self.assertEqual(cut["client_tokens"], 3)
        busy = self.sim.stream("/v1/completions", body, {"X-Sim-Fault": "error429"})
        self.assertEqual(busy["reason"], "http_429")
        self.assertIn("HTTP 429", busy["error"])
        marked = dict(body, prompt="hello [[sim-fault:slow ms=200]]")
        slow = self.sim.stream("/v1/completions", marked)
        self.assertTrue(slow["ok"])
        self.assertGreater(slow["ttft"], 0.2)

    def test_profile_endpoints_write_traces_of_the_steps_run(self):
        self.assertEqual(self.sim.post("/start_profile")[0], 200)
        self.sim.stream("/v1/completions", {"model": self.model, "prompt": "x", "max_tokens": 6, "stream": True})
        self.assertEqual(self.sim.post("/stop_profile")[0], 200)
        files = sorted(glob.glob(os.path.join(self.tmp.name, "*.pt.trace.json.gz")))
        self.assertEqual(len(files), 8)
        with gzip.open(files[0]) as f:
            trace = json.load(f)
        marks = [e for e in trace["traceEvents"] if e.get("cat") == "gpu_user_annotation" and e["name"] == "execute_model"]
        self.assertEqual(len(marks), 3)  # --profile-max-steps
        self.assertEqual(trace["inference_bench_simulator"]["simulated"], True)


class ProfilerOff(unittest.TestCase):
    def test_profile_endpoints_answer_404_without_a_profiler_dir_as_vllm_does(self):
        sim = Simulator("--zero-cost")
        try:
            self.assertEqual(sim.post("/start_profile")[0], 404)
            self.assertEqual(sim.post("/stop_profile")[0], 404)
            model = json.loads(sim.get("/v1/models")[1])["data"][0]["id"]
            rec = sim.stream(
                "/v1/completions",
                {"model": model, "prompt": "x", "max_tokens": 50, "stream": True, "stream_options": {"include_usage": True}},
            )
            self.assertTrue(rec["ok"])
            self.assertEqual(rec["output_tokens"], 50)
            self.assertLess(rec["e2el"], 0.5)
        finally:
            sim.close()

    def test_paced_mode_sends_one_token_per_pace(self):
        sim = Simulator("--pace-ms", "10")
        try:
            model = json.loads(sim.get("/v1/models")[1])["data"][0]["id"]
            body = {"model": model, "prompt": "x", "max_tokens": 21, "stream": True, "stream_options": {"include_usage": True}}
            recs = [sim.stream("/v1/completions", body) for _ in range(3)]
            tpot = statistics.median((r["e2el"] - r["ttft"]) / 20 for r in recs)
            self.assertAlmostEqual(tpot * 1000, 10.0, delta=0.6)
        finally:
            sim.close()


if __name__ == "__main__":
    unittest.main()
