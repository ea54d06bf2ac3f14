"""The Nsight Systems profile on the host, end to end through the agent: `server status --nsys` gives the
server's recipe under nsys (the CUDA profiler switch and the layerwise NVTX flag its --help lists), the
server runs under it, `profile --profiler nsys` bounds the capture with /start_profile and /stop_profile,
the stop makes nsys write its report, and `profile --nsys-report` exports and reads it here.

No nsys runs here: test/support/fake-nsys/nsys is a labelled stand-in that runs the server as nsys would
and has the simulator write, at exit, the SQLite report of its profiled steps (simulator/sim_nsys.py).
The known answer is the simulator's own: each module's kernel time per step from its timing model."""
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "agent"))
sys.path.insert(0, os.path.join(ROOT, "simulator"))

from infbench_agent.server import nsys as nsys_host  # noqa: E402
from infbench_agent.server import command as server  # noqa: E402
from test_server_control import SIM, free_port, quietly  # noqa: E402

import sim_nsys  # noqa: E402
import sim_timing as tm  # noqa: E402

FAKE_NSYS = os.path.join(ROOT, "test", "support", "fake-nsys")
LAYERS = 3


def agent(*args):
    done = subprocess.run([sys.executable, "-m", "infbench_agent", *args], capture_output=True, text=True, timeout=120)
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


class NsysProfileTest(unittest.TestCase):
    def setUp(self):
        self.cache = tempfile.mkdtemp(prefix="ib-nsys-cache-")
        self.env = {k: os.environ.get(k) for k in ("XDG_CACHE_HOME", "PATH", "PYTHONPATH")}
        os.environ["XDG_CACHE_HOME"] = self.cache
        os.environ["PATH"] = FAKE_NSYS + os.pathsep + os.environ.get("PATH", "")
        os.environ["PYTHONPATH"] = os.path.join(ROOT, "agent")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        # Every step the same length whatever its batch and prompt: the per-step answer is exact.
        self.timing = ["--layers", str(LAYERS), "--step-per-seq-ms", "0", "--prefill-per-token-ms", "0"]
        with open(os.path.join(self.cache, "server.log"), "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, SIM, "--mimic", "vllm-0.16", "--port", str(self.port), *self.timing], stdout=log, stderr=subprocess.STDOUT
            )
        self.pids = [self.proc.pid]

    def tearDown(self):
        for pid in self.pids:
            if server._alive(pid):
                os.kill(pid, 9)
        self.proc.wait(5)
        for k, v in self.env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    def status(self):
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            result, _ = quietly(server.status, self.url, 3, None, None, 0, 0, "auto")
            if result["recipe"]:
                return result
            time.sleep(0.1)
        self.fail("the simulator did not listen")

    def test_restarts_under_nsys_bounds_the_capture_and_reads_every_kernels_module_on_the_host(self):
        status = self.status()
        changed = status["nsys_recipe"]
        self.assertEqual(changed["argv"][:2], [os.path.join(FAKE_NSYS, "nsys"), "profile"])
        for flag in nsys_host.PROFILE_FLAGS:
            self.assertIn(flag, changed["argv"])
        self.assertIn("--enable-layerwise-nvtx-tracing", changed["argv"], "the simulator's --help lists the flag")
        self.assertIn("""--profiler-config '{"profiler":"cuda"}'""", status["nsys_change"])
        self.assertTrue(status["nsys_change"][-1].startswith("command: "))

        original = status["recipe"]
        quietly(server.stop, self.url, original["identity"]["pid"], original["identity"]["start_ticks"], original["argv"], 10)
        started, _ = quietly(server.start, changed, 30, 2, None)
        running = started["recipe"]
        self.pids.append(running["identity"]["pid"])

        capture = agent("profile", "--url", self.url, "--profiler", "nsys", "--concurrency", "4", "--output-len", "12")
        result = next(e["result"] for e in capture if e["type"] == "result")
        self.assertEqual(result["profiler"], "nsys")
        self.assertEqual(result["traces"], [], "no torch trace is waited for")

        # The stop of the server under nsys (by the identity it started with) is what writes the report.
        quietly(server.stop, self.url, running["identity"]["pid"], running["identity"]["start_ticks"], running["argv"], 20)
        collected = agent("profile", "--nsys-report", changed["nsys_report"], "--settle-seconds", "0.3")
        said = [e["message"] for e in collected if e["type"] == "profile.status"]
        self.assertTrue(any("the Nsight Systems report is written" in m and " MB)" in m for m in said), said)
        nsys = next(e["result"] for e in collected if e["type"] == "result")["nsys"]
        # 12 tokens each: 13 steps when the 4 requests join in one step, one more for each step a late one joins after.
        steps = nsys["summary"]["steps"]
        self.assertTrue(13 <= steps <= 16, steps)
        self.assertEqual(nsys["summary"]["unattributed"], steps, "one kernel per step (the token copy) in no module range")
        self.assertEqual(len(nsys["kineto"]), 1)

        per_step = {}
        with open(nsys["records"]["path"]) as f:
            for line in f:
                r = json.loads(line)
                if r["type"] in ("kernel", "memcpy") and r["step"] is not None:
                    key = r["module"] or "(no NVTX range)"
                    per_step[key] = per_step.get(key, 0.0) + (r["end"] - r["start"]) / 1e6 / steps
        model = tm.with_overrides(tm.PRESETS[tm.DEFAULT_PRESET].timing, None, 0.0, 0.0, None)
        expected = sim_nsys.expected_modules(model, LAYERS, 4)
        self.assertEqual(sorted(per_step), sorted(expected))
        for module, ms in expected.items():
            self.assertAlmostEqual(per_step[module], ms, delta=max(0.001, ms * 0.01), msg=module)

    def test_a_host_without_nsys_gets_the_way_to_get_it(self):
        out = nsys_host.status_fields({"argv": ["vllm", "serve", "m"], "kind": "vllm"}, "/no/such/nsys", self.cache)
        self.assertNotIn("nsys_recipe", out)
        self.assertIn("is not an executable file here", out["nsys_advice"])
        self.assertIn("apt-get install nsight-systems-cli", out["nsys_advice"])


if __name__ == "__main__":
    unittest.main()
