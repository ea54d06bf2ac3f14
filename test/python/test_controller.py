"""The controller's heartbeat on the agent's stdin: the agent stops itself when it falls silent or closes."""
import json
import os
import subprocess
import sys
import threading
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AGENT = os.path.join(ROOT, "agent")


class Heartbeat(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.sim = subprocess.Popen(
            [
                sys.executable,
                os.path.join(ROOT, "simulator", "vllm_sim.py"),
                "--port",
                "0",
                "--step-base-ms",
                "5",
                "--step-per-seq-ms",
                "0.1",
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        cls.url = json.loads(cls.sim.stdout.readline())["url"]

    @classmethod
    def tearDownClass(cls):
        cls.sim.terminate()
        cls.sim.wait(5)
        cls.sim.stdout.close()

    def start(self, timeout_s):
        # Many short levels: minutes of work unless something stops it. The key comes first on stdin.
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "infbench_agent",
                "--heartbeat-timeout",
                str(timeout_s),
                "macro",
                "--url",
                self.url,
                "--api-key-stdin",
                "--concurrency",
                ",".join(["1"] * 200),
                "--requests",
                "4",
                "--input-len",
                "8",
                "--output-len",
                "8",
                "--warmup",
                "0",
            ],
            cwd=AGENT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        # Read all along, as a controller does: a full pipe would block the agent's writes.
        proc.out = []
        proc.reader = threading.Thread(target=lambda: proc.out.append(proc.stdout.read()), daemon=True)
        proc.reader.start()
        proc.stdin.write(b"sk-test-key\n")
        proc.stdin.flush()
        return proc

    def events(self, proc):
        proc.reader.join(10)
        proc.stdout.close()
        return [json.loads(line) for line in b"".join(proc.out).decode().splitlines() if line.startswith("{")]

    def test_a_silent_controller_stops_the_agent_which_keeps_its_results(self):
        proc = self.start(1.5)
        started = time.monotonic()
        code = proc.wait(30)
        took = time.monotonic() - started
        events = self.events(proc)
        proc.stdin.close()
        self.assertLess(took, 10, "the agent did not notice the silence")
        self.assertEqual(code, 130)
        self.assertTrue(any(e["type"] == "macro.level" and not e["partial"] for e in events), "no level ran: the key line was not read")
        self.assertTrue(any(e["type"] == "result" for e in events), "the results so far were not emitted")
        self.assertEqual(events[-1], {**events[-1], "type": "done", "ok": False})

    def test_heartbeats_keep_it_running_and_closing_stdin_stops_it(self):
        proc = self.start(1.0)
        for _ in range(12):
            time.sleep(0.25)
            proc.stdin.write(b"\n")
            proc.stdin.flush()
        self.assertIsNone(proc.poll(), "stopped although the heartbeat kept coming")
        proc.stdin.close()
        started = time.monotonic()
        code = proc.wait(30)
        self.assertLess(time.monotonic() - started, 10)
        self.assertEqual(code, 130)
        self.events(proc)


if __name__ == "__main__":
    unittest.main()
