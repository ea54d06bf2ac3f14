"""The micro phase's agent side: shapes from configs and presets, the busy-GPU guard, and a whole run
on the CPU (GEMMs, gloo all-reduce across 2 processes, launch overhead) checked event by event.

Runs that need PyTorch use Debian's /usr/bin/python3 (python3-torch, CPU), the way a user names the
server's interpreter in a target; they are skipped with a reason where that interpreter has no torch.
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

from infbench_agent import events
from infbench_agent.micro.allreduce import bus_bandwidth, doubling_sizes
from infbench_agent.models import ModelError, gemm_shapes, hf_cache_config, load_config_file, load_preset, parse_shape, resolve_model

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
AGENT_DIR = os.path.join(ROOT, "agent")
FIXTURES = os.path.join(ROOT, "test", "fixtures", "micro")
FAKE_SMI_DIR = os.path.join(ROOT, "test", "support", "fake-nvidia-smi")
TORCH_PYTHON = os.environ.get("INFBENCH_TORCH_PYTHON", "/usr/bin/python3")


def has_torch(python):
    try:
        return subprocess.run([python, "-c", "import torch"], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def run_agent(python, args, path_prefix=None, timeout=120, extra_env=None):
    """Runs the agent's micro command from its source folder; returns (exit code, events, stderr)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = AGENT_DIR
    env.update(extra_env or {})
    # The real nvidia-smi (if any) must not decide a CPU test; the fake one only where a test asks.
    env["PATH"] = (path_prefix + os.pathsep if path_prefix else "") + "/usr/bin:/bin"
    proc = subprocess.run([python, "-m", "infbench_agent", "micro", *args], capture_output=True, text=True, env=env, timeout=timeout)
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    return proc.returncode, [json.loads(line) for line in lines], proc.stderr


def shape_map(shapes):
    return {s.name: (s.n, s.k) for s in shapes}


class ShapesTest(unittest.TestCase):
    def test_kimi_experts_under_tp8_match_the_published_split(self):
        shapes = shape_map(gemm_shapes(load_preset("kimi-k2.5"), 8))
        self.assertEqual(shapes["moe.gate_up"], (512, 7168))
        self.assertEqual(shapes["moe.down"], (7168, 256))
        # Attention (MLA, 64 heads -> 8 per GPU) and the one dense layer are there too.
        self.assertEqual(shapes["attn.o_proj"], (7168, 8 * 128))
        self.assertEqual(shapes["attn.kv_b_proj"], (8 * (128 + 128), 512))
        self.assertEqual(shapes["dense_mlp.gate_up"], (2 * 18432 // 8, 7168))
        self.assertEqual(shapes["lm_head"], (163840 // 8, 7168))

    def test_kimi_knows_it_is_int4_and_deepseek_fp8(self):
        self.assertEqual(load_preset("kimi-k2.5").quant, "int4")
        self.assertEqual(load_preset("deepseek-v3").quant, "fp8")

    def test_llama_70b_tp8_attention_and_mlp(self):
        shapes = shape_map(gemm_shapes(load_preset("llama-3-70b"), 8))
        # 64 query heads and 8 KV heads of 128 split over 8 GPUs: 8 + 2 x 1 heads per GPU.
        self.assertEqual(shapes["attn.qkv_proj"], (10 * 128, 8192))
        self.assertEqual(shapes["attn.o_proj"], (8192, 1024))
        self.assertEqual(shapes["mlp.gate_up"], (7168, 8192))
        self.assertEqual(shapes["mlp.down"], (8192, 3584))

    def test_qwen_moe_has_no_dense_layers_and_splits_its_experts(self):
        shapes = shape_map(gemm_shapes(load_preset("qwen3-235b-a22b"), 4))
        self.assertEqual(shapes["moe.gate_up"], (2 * 1536 // 4, 4096))
        self.assertEqual(shapes["moe.down"], (4096, 384))
        self.assertNotIn("dense_mlp.gate_up", shapes)

    def test_reads_a_multimodal_config_with_text_config_and_compressed_tensors(self):
        model = load_config_file(os.path.join(FIXTURES, "tiny-moe"))
        self.assertEqual((model.hidden, model.layers, model.quant), (256, 4, "int4"))
        self.assertEqual(model.config["_group_size"], 32)
        shapes = shape_map(gemm_shapes(model, 2))
        self.assertEqual(shapes["moe.gate_up"], (64, 256))
        self.assertEqual(shapes["moe.down"], (256, 32))
        self.assertEqual(shapes["attn.q_b_proj"], (4 * 48, 96))

    def test_finds_a_model_in_the_hugging_face_cache(self):
        with tempfile.TemporaryDirectory() as home:
            snap = os.path.join(home, "hub", "models--acme--tiny-moe", "snapshots", "abc123")
            os.makedirs(snap)
            with open(os.path.join(FIXTURES, "tiny-moe", "config.json")) as src, open(os.path.join(snap, "config.json"), "w") as dst:
                dst.write(src.read())
            old = os.environ.get("HF_HOME")
            os.environ["HF_HOME"] = home
            try:
                self.assertEqual(hf_cache_config("acme/tiny-moe"), os.path.join(snap, "config.json"))
            finally:
                if old is None:
                    del os.environ["HF_HOME"]
                else:
                    os.environ["HF_HOME"] = old

    def test_finds_the_served_model_through_v1_models_root(self):
        # vLLM and SGLang report the loaded model's path as `root` in /v1/models.
        import http.server
        import threading

        roots = [os.path.join(FIXTURES, "tiny-moe"), "acme/not-on-this-host"]

        class Models(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                body = json.dumps({"object": "list", "data": [{"id": "served", "root": roots[0]}]}).encode()
                self.send_response(200 if self.path == "/v1/models" else 404)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        server = http.server.HTTPServer(("127.0.0.1", 0), Models)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_address[1]}"
        try:
            model = resolve_model(None, None, url)
            self.assertEqual((model.hidden, model.quant), (256, "int4"))
            roots.pop(0)
            with self.assertRaisesRegex(ModelError, "serves 'acme/not-on-this-host'") as caught:
                resolve_model(None, None, url)
            self.assertEqual(caught.exception.hint, "Pass {0}, or a preset with {1}.")
            self.assertEqual([r["flag"] for r in caught.exception.remedies], ["--config", "--model"])
        finally:
            server.shutdown()
            server.server_close()

    def test_a_split_that_does_not_divide_says_so(self):
        with self.assertRaisesRegex(ModelError, "does not divide"):
            gemm_shapes(load_preset("llama-3-70b"), 3)

    def test_shape_option(self):
        s = parse_shape("gate_up=512x7168")
        self.assertEqual((s.name, s.n, s.k), ("gate_up", 512, 7168))
        with self.assertRaises(ModelError):
            parse_shape("gate_up=512")


class BusBandwidthTest(unittest.TestCase):
    def test_matches_nccl_tests(self):
        # all_reduce_perf: busbw = algbw * 2(n-1)/n.
        self.assertAlmostEqual(bus_bandwidth(100.0, 8), 175.0)
        self.assertAlmostEqual(bus_bandwidth(100.0, 2), 100.0)
        self.assertEqual(bus_bandwidth(100.0, 1), 0.0)

    def test_doubling_sweep(self):
        self.assertEqual(doubling_sizes(1024, 8192), [1024, 2048, 4096, 8192])


class BusyGpuTest(unittest.TestCase):
    def test_refuses_busy_gpus_naming_the_numbers_and_the_server(self):
        # No torch needed: the guard decides before PyTorch is imported.
        code, evs, _ = run_agent(sys.executable, ["--model", "kimi-k2.5", "--tp", "8"], path_prefix=FAKE_SMI_DIR)
        self.assertEqual(code, 2)
        errors = [e for e in evs if e["type"] == "error"]
        self.assertEqual(len(errors), 1)
        self.assertEqual(errors[0]["code"], "gpus_busy")
        self.assertIn("GPU 0: 127.0 of 140.4 GiB used (90%)", errors[0]["message"])
        self.assertIn("pid 424242 VLLM::Worker_TP0", errors[0]["message"])
        # The remedies as data, each in a slot of the hint; a front end says them in its own words.
        self.assertEqual(
            errors[0]["remedies"],
            [{"kind": "command", "command": "micro", "flags": ["--stop-server"]}, {"kind": "flag", "flag": "--allow-busy"}],
        )
        self.assertIn("{1}", errors[0]["hint"])
        self.assertFalse([e for e in evs if e["type"] == "micro.point"])
        self.assertEqual(evs[-1], {**evs[-1], "type": "done", "ok": False})

    def test_idle_gpus_pass_the_guard(self):
        code, evs, _ = run_agent(
            sys.executable,
            ["--model", "kimi-k2.5", "--tp", "8", "--skip", "allreduce"],
            path_prefix=FAKE_SMI_DIR,
            extra_env={"FAKE_GPU_USED_MIB": "500"},
        )
        codes = [e["code"] for e in evs if e["type"] == "error"]
        self.assertNotIn("gpus_busy", codes)
        if not has_torch(sys.executable):
            # Past the guard, this interpreter then needs PyTorch, and says so.
            self.assertEqual(codes, ["no_torch"])
            self.assertEqual(code, 2)


@unittest.skipUnless(has_torch(TORCH_PYTHON), f"{TORCH_PYTHON} has no PyTorch (scripts/setup-test-env.sh installs python3-torch)")
class CpuRunTest(unittest.TestCase):
    """One whole micro run on the CPU: the code paths a GPU run takes, minus CUDA graphs."""

    @classmethod
    def setUpClass(cls):
        cls.code, cls.events, cls.stderr = run_agent(
            TORCH_PYTHON,
            [
                "--config",
                os.path.join(FIXTURES, "tiny-moe"),
                "--tp",
                "2",
                "--m",
                "1,4",
                "--only",
                "moe",
                "--only",
                "shared",
                "--device",
                "cpu",
                "--repeats",
                "2",
                "--launch-kernels",
                "50",
                "--ar-max-bytes",
                "4096",
            ],
        )

    def points(self, kind):
        return [e["point"] for e in self.events if e["type"] == "micro.point" and e["kind"] == kind]

    def test_finishes_with_every_event_in_the_schema(self):
        self.assertEqual(self.code, 0, self.stderr[-2000:])
        for e in self.events:
            self.assertEqual(events.problems(e), [], e)
            self.assertIsInstance(e["t"], float)
        self.assertEqual(self.events[0]["type"], "hello")
        self.assertEqual(self.events[-1]["type"], "done")
        self.assertTrue(self.events[-1]["ok"])
        for e in self.events:
            if e["type"] == "micro.point":
                self.assertIn(e["kind"], ("gemm", "allreduce", "launch", "peak"))
                self.assertEqual(e["point"]["kind"], e["kind"])

    def test_result_keeps_every_streamed_point(self):
        result = [e for e in self.events if e["type"] == "result"][0]["result"]
        streamed = [e["point"] for e in self.events if e["type"] == "micro.point"]
        self.assertEqual(result["points"], streamed)
        self.assertEqual(result["device"]["kind"], "cpu")
        self.assertIn("CPU wall-clock", result["timing"])
        progress = [e for e in self.events if e["type"] == "progress"]
        self.assertEqual(progress[-1]["done"], progress[-1]["total"])

    def test_gemms_run_at_the_model_shapes_and_say_which_kernel(self):
        gemms = self.points("gemm")
        got = sorted((p["shape"], p["m"], p["n"], p["k"]) for p in gemms)
        shapes = [
            ("moe.gate_up", 64, 256),
            ("moe.down", 256, 32),
            ("shared_expert.gate_up", 64, 256),
            ("shared_expert.down", 256, 32),
            ("moe.router", 16, 256),
        ]
        want = sorted((name, m, n, k) for name, n, k in shapes for m in (1, 4))
        self.assertEqual(got, want)
        peak_bw = self.points("peak")[0]["tbps"]
        for p in gemms:
            # An int4 model on a CPU: torch in fp32, and the point says why it is not Marlin.
            self.assertEqual(p["kernel"], "torch.matmul fp32 (CPU)")
            self.assertIn("Marlin", p["fallback_reason"])
            self.assertIn("CPU wall-clock loop", p["timing"])
            self.assertGreater(p["us"], 0)
            self.assertEqual(p["flops"], 2 * p["m"] * p["n"] * p["k"])
            self.assertEqual(p["bytes"], 4 * (p["k"] * p["n"] + p["m"] * p["k"] + p["m"] * p["n"]))
            self.assertAlmostEqual(p["tbps"], p["bytes"] / p["us"] / 1e6)
            self.assertAlmostEqual(p["pct_peak_bw"], 100 * p["tbps"] / peak_bw)

    def test_peak_points_measure_copy_and_matmul(self):
        peaks = {p["what"]: p for p in self.points("peak")}
        self.assertEqual(set(peaks), {"copy", "matmul"})
        self.assertAlmostEqual(peaks["copy"]["tbps"], peaks["copy"]["bytes"] / peaks["copy"]["us"] / 1e6)
        self.assertAlmostEqual(peaks["matmul"]["tflops"], peaks["matmul"]["flops"] / peaks["matmul"]["us"] / 1e6)

    def test_gloo_all_reduce_across_two_processes_reports_busbw_like_nccl_tests(self):
        ar = self.points("allreduce")
        sizes = [p["bytes"] for p in ar]
        # Decode messages: M tokens x hidden 256 x 2 bytes, for M = 1 and 4, beside the doubling sweep.
        self.assertIn(512, sizes)
        self.assertIn(2048, sizes)
        self.assertEqual([p["m"] for p in ar if p["bytes"] == 512], [1])
        self.assertTrue({1024, 2048, 4096} <= set(sizes))
        for p in ar:
            self.assertEqual((p["backend"], p["world_size"], p["mode"]), ("gloo", 2, "eager"))
            self.assertTrue(p["correct"])
            self.assertAlmostEqual(p["algbw_gbps"], p["bytes"] / p["us"] / 1e3)
            self.assertAlmostEqual(p["busbw_gbps"], p["algbw_gbps"] * 2 * (2 - 1) / 2)

    def test_launch_overhead_is_labelled_as_cpu_dispatch(self):
        launch = self.points("launch")
        self.assertEqual(len(launch), 1)
        self.assertEqual(launch[0]["mode"], "eager")
        self.assertGreater(launch[0]["cpu_us_per_launch"], 0)
        self.assertIn("no kernel launch", launch[0]["note"])


@unittest.skipUnless(has_torch(TORCH_PYTHON), f"{TORCH_PYTHON} has no PyTorch")
class AllowBusyTest(unittest.TestCase):
    def test_runs_on_busy_gpus_when_allowed_and_warns_with_the_numbers(self):
        code, evs, stderr = run_agent(
            TORCH_PYTHON,
            ["--shape", "t=32x64", "--m", "1", "--allow-busy", "--skip", "allreduce,launch,peak", "--repeats", "1"],
            path_prefix=FAKE_SMI_DIR,
        )
        self.assertEqual(code, 0, stderr[-2000:])
        warnings = [e["message"] for e in evs if e["type"] == "log" and e["level"] == "warn"]
        self.assertTrue(any("running anyway" in w and "GPU 1: 127.0 of 140.4 GiB" in w for w in warnings), warnings)
        result = [e for e in evs if e["type"] == "result"][0]["result"]
        self.assertTrue(result["allow_busy"])
        self.assertEqual(len(result["occupancy"]["processes"]), 2)
        self.assertEqual(len([p for p in result["points"] if p["kind"] == "gemm"]), 1)


if __name__ == "__main__":
    unittest.main()
