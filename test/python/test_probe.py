"""The probe subcommand, run as the agent runs on a host: a subprocess whose stdout is the event stream."""
import http.server
import json
import os
import stat
import subprocess
import sys
import tempfile
import threading
import unittest

from infbench_agent import events as agent_events

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(ROOT, "test", "fixtures", "probe")


def run_probe(url, path_prefix=None, extra_env=None):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "agent"), **(extra_env or {}))
    if path_prefix:
        env["PATH"] = path_prefix + os.pathsep + env["PATH"]
    proc = subprocess.run(
        [sys.executable, "-m", "infbench_agent", "probe", "--url", url, "--timeout", "2"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    return proc, events


def probe_result(events):
    return next(e["result"] for e in events if e["type"] == "probe")


class FakeNvidiaSmi:
    """A stand-in `nvidia-smi` that prints real output captured on an H200 (see test/fixtures/probe/README.md)."""

    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="ib-smi-")
        script = os.path.join(self.dir, "nvidia-smi")
        with open(script, "w") as f:
            f.write(
                f"""#!/bin/sh
case "$*" in
  *--query-gpu=*) cat '{FIXTURES}/h200-query-gpu.csv' ;;
  *--query-compute-apps=*) cat '{FIXTURES}/h200-query-compute-apps.csv' ;;
  "topo -m") cat '{FIXTURES}/h200-topo.txt' ;;
  *) echo "unexpected: $*" >&2; exit 2 ;;
esac
"""
            )
        os.chmod(script, os.stat(script).st_mode | stat.S_IEXEC)
        return self.dir

    def __exit__(self, *exc):
        return False


class Simulator:
    def __init__(self, *args):
        self.args = args

    def __enter__(self):
        self.proc = subprocess.Popen(
            [sys.executable, "-u", os.path.join(ROOT, "simulator", "vllm_sim.py"), "--port", "0", *self.args],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        for line in self.proc.stdout:
            if line.startswith("{") and '"ready"' in line:
                self.url = json.loads(line)["url"]
                return self
        raise RuntimeError("the simulator did not start")

    def __exit__(self, *exc):
        self.proc.terminate()
        self.proc.wait(10)
        return False


class LookalikeServer:
    """Answers like vLLM's or SGLang's FastAPI app on the endpoints the probe reads. Real vLLM and SGLang
    need GPUs and gigabytes of weights, so their answers are reproduced here; it records every request
    so that a test can prove no profile was started."""

    def __init__(self, kind):
        self.kind = kind
        self.requests = []

    def __enter__(self):
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def answer(self, code, body=b"", ctype="application/json"):
                self.send_response(code)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def route(self):
                outer.requests.append((self.command, self.path))
                profile = self.path in ("/start_profile", "/stop_profile")
                if profile:
                    # FastAPI: a POST-only route answers other methods with 405.
                    return self.answer(200 if self.command == "POST" else 405)
                if self.command != "GET":
                    return self.answer(405)
                if self.path == "/health":
                    return self.answer(200)
                if self.path == "/v1/models":
                    return self.answer(
                        200,
                        json.dumps(
                            {
                                "object": "list",
                                "data": [{"id": "Qwen/Qwen3-8B", "object": "model", "owned_by": outer.kind, "max_model_len": 40960}],
                            }
                        ).encode(),
                    )
                if self.path == "/metrics":
                    metrics = f"# TYPE {outer.kind}:num_requests_running gauge\n{outer.kind}:num_requests_running 0\n"
                    return self.answer(200, metrics.encode(), "text/plain")
                if self.path == "/version" and outer.kind == "vllm":
                    return self.answer(200, b'{"version": "0.13.0"}')
                if self.path == "/get_server_info" and outer.kind == "sglang":
                    return self.answer(200, b'{"version": "0.5.6", "tp_size": 8}')
                return self.answer(404, b'{"detail": "Not Found"}')

            do_GET = do_POST = do_OPTIONS = route

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
        return False


class ProbeTest(unittest.TestCase):
    def test_reports_gpus_their_processes_and_topology_from_nvidia_smi(self):
        with FakeNvidiaSmi() as path:
            proc, events = run_probe("http://127.0.0.1:9", path)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual([e["type"] for e in events], ["hello", "probe", "result", "done"])
        for e in events:
            self.assertEqual(agent_events.problems(e), [], e)
        gpus = probe_result(events)["gpus"]
        self.assertTrue(gpus["available"])
        self.assertEqual(gpus["devices"][0]["name"], "NVIDIA H200")
        self.assertEqual(gpus["devices"][0]["memory_total_mib"], 143771)
        self.assertEqual(gpus["devices"][0]["memory_used_mib"], 0)
        self.assertEqual(
            gpus["processes"],
            [
                {
                    "gpu_uuid": "GPU-efc86ab5-69d3-792e-168e-5fc850cc65a4",
                    "gpu_index": 0,
                    "pid": 422,
                    "process_name": "python3",
                    "used_memory_mib": 1634,
                }
            ],
        )
        self.assertTrue(gpus["topology"].startswith("\tGPU0\tCPU Affinity"))
        self.assertNotIn("\x1b", gpus["topology"])

    def test_says_so_when_there_is_no_nvidia_smi(self):
        empty = tempfile.mkdtemp(prefix="ib-nosmi-")
        env_path = os.environ["PATH"]
        try:
            os.environ["PATH"] = os.pathsep.join(p for p in env_path.split(os.pathsep) if not os.path.exists(os.path.join(p, "nvidia-smi")))
            _, events = run_probe("http://127.0.0.1:9", empty)
        finally:
            os.environ["PATH"] = env_path
        gpus = probe_result(events)["gpus"]
        self.assertFalse(gpus["available"])
        self.assertIn("nvidia-smi", gpus["error"])

    def test_names_the_url_when_nothing_answers(self):
        _, events = run_probe("http://127.0.0.1:9")
        server = probe_result(events)["server"]
        self.assertFalse(server["reachable"])
        self.assertIn("http://127.0.0.1:9", server["error"])
        self.assertEqual(events[-1], {**events[-1], "type": "done", "ok": True})

    def test_recognises_the_simulator_its_model_and_its_enabled_profiler(self):
        with Simulator("--profiler-dir", tempfile.mkdtemp(prefix="ib-prof-")) as sim:
            _, events = run_probe(sim.url)
            server = probe_result(events)["server"]
            self.assertEqual(server["pid"], sim.proc.pid)
        self.assertTrue(server["reachable"] and server["healthy"])
        self.assertTrue(server["simulated"])
        self.assertEqual(server["kind"], "vllm")
        self.assertEqual(server["models"][0]["max_model_len"], 262144)
        self.assertIn("--profiler-dir", server["command_line"])
        self.assertEqual(server["profiler"]["enabled"], True)

    def test_sees_the_profiler_off_when_the_endpoint_answers_404(self):
        with Simulator() as sim:
            _, events = run_probe(sim.url)
        profiler = probe_result(events)["server"]["profiler"]
        self.assertEqual(profiler["enabled"], False)
        self.assertIn("404", profiler["evidence"])

    def test_recognises_vllm_and_finds_its_profiler_without_starting_a_profile(self):
        with LookalikeServer("vllm") as server:
            _, events = run_probe(server.url)
            seen = list(server.requests)
        result = probe_result(events)["server"]
        self.assertEqual((result["kind"], result["version"], result["simulated"]), ("vllm", "0.13.0", False))
        self.assertEqual(result["models"][0]["id"], "Qwen/Qwen3-8B")
        self.assertEqual(result["profiler"]["enabled"], True)
        self.assertNotIn(("POST", "/start_profile"), seen)
        self.assertNotIn(("GET", "/start_profile"), seen)
        self.assertIn(("OPTIONS", "/start_profile"), seen)

    def test_reports_the_served_models_structure_from_the_hugging_face_cache(self):
        with tempfile.TemporaryDirectory() as hf_home:
            snapshot = os.path.join(hf_home, "hub", "models--Qwen--Qwen3-8B", "snapshots", "0123abc")
            os.makedirs(snapshot)
            with open(os.path.join(snapshot, "config.json"), "w", encoding="utf-8") as f:
                json.dump({"model_type": "qwen3", "hidden_size": 4096, "num_hidden_layers": 36, "num_attention_heads": 32}, f)
            with LookalikeServer("vllm") as server:
                _, events = run_probe(server.url, extra_env={"HF_HOME": hf_home, "HF_HUB_CACHE": ""})
        config = probe_result(events)["server"]["model_config"]
        self.assertEqual(
            (config["model"], config["model_type"], config["num_hidden_layers"], config["hidden_size"]),
            ("Qwen/Qwen3-8B", "qwen3", 36, 4096),
        )
        self.assertEqual(config["found_by"], "/v1/models id, in the Hugging Face cache")
        with LookalikeServer("vllm") as server:
            _, events = run_probe(server.url, extra_env={"HF_HOME": os.path.join(ROOT, "no-such-dir"), "HF_HUB_CACHE": ""})
        self.assertNotIn("model_config", probe_result(events)["server"])

    def test_recognises_sglang(self):
        with LookalikeServer("sglang") as server:
            _, events = run_probe(server.url)
            seen = list(server.requests)
        result = probe_result(events)["server"]
        self.assertEqual((result["kind"], result["version"]), ("sglang", "0.5.6"))
        self.assertFalse(any(path == "/start_profile" for _, path in seen), "SGLang's GET /start_profile would start a profile")


if __name__ == "__main__":
    unittest.main()
