"""The agent on the oldest Python it supports (version.MIN_PYTHON): probe and macro run end to end against
the simulator, and an older Python is refused in words. Each test runs where such an interpreter is found
(INFBENCH_MIN_PYTHON / INFBENCH_OLD_PYTHON, python3.N on PATH, or pyenv's versions) and is skipped, saying
so, where none is.
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import unittest

from infbench_agent import events

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AGENT = os.path.join(ROOT, "agent")


def find_python(env_name, minor):
    """An interpreter of exactly 3.<minor>, or None."""
    candidates = [os.environ.get(env_name), shutil.which(f"python3.{minor}")]
    candidates += sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/3.{minor}.*/bin/python3")))
    for python in filter(None, candidates):
        try:
            out = subprocess.run(
                [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True, text=True, timeout=30
            )
        except OSError:
            continue
        if out.stdout.strip() == f"3.{minor}":
            return python
    return None


MIN = events.MIN_PYTHON
MIN_PY = find_python("INFBENCH_MIN_PYTHON", MIN[1])
OLD_PY = find_python("INFBENCH_OLD_PYTHON", MIN[1] - 1)


def run_agent(python, *args):
    out = subprocess.run([python, "-m", "infbench_agent", *args], cwd=AGENT, capture_output=True, text=True, timeout=120)
    return out, [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


@unittest.skipIf(MIN_PY is None, f"no Python {MIN[0]}.{MIN[1]} here (set INFBENCH_MIN_PYTHON to one)")
class OnTheMinimumPython(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.sim = subprocess.Popen(
            [
                sys.executable,
                os.path.join(ROOT, "simulator", "vllm_sim.py"),
                "--port",
                "0",
                "--step-base-ms",
                "2",
                "--step-per-seq-ms",
                "0.1",
                "--prefill-per-token-ms",
                "0.001",
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

    def check_events(self, out, found):
        self.assertEqual(out.returncode, 0, out.stderr[-2000:])
        for e in found:
            self.assertEqual(events.problems(e), [], e)
        self.assertEqual(found[0]["python"].split(".")[:2], [str(MIN[0]), str(MIN[1])])
        self.assertEqual(found[-1], {**found[-1], "type": "done", "ok": True})

    def test_probe_runs(self):
        out, found = run_agent(MIN_PY, "probe", "--url", self.url, "--timeout", "5")
        self.check_events(out, found)
        result = next(e["result"] for e in found if e["type"] == "result")
        self.assertTrue(result["server"]["reachable"] and result["server"]["simulated"])

    def test_macro_runs_in_one_process_and_over_workers(self):
        for workers in ("1", "2"):
            out, found = run_agent(
                MIN_PY,
                "macro",
                "--url",
                self.url,
                "--concurrency",
                "4",
                "--requests",
                "8",
                "--input-len",
                "16",
                "--output-len",
                "4",
                "--warmup",
                "1",
                "--workers",
                workers,
            )
            self.check_events(out, found)
            [level] = next(e["result"] for e in found if e["type"] == "result")["levels"]
            self.assertEqual((level["completed"], level["total_output_tokens"]), (8, 32))

    def test_macro_runs_with_a_length_range_and_a_sharegpt_file(self):
        sharegpt = os.path.join(ROOT, "test", "fixtures", "sharegpt", "sharegpt-small.json")
        for dataset in (["--range-ratio", "0.5", "--input-len", "16"], ["--dataset-path", sharegpt]):
            out, found = run_agent(
                MIN_PY,
                "macro",
                "--url",
                self.url,
                "--concurrency",
                "2",
                "--requests",
                "4",
                "--output-len",
                "4",
                "--warmup",
                "0",
                "--workers",
                "2",
                *dataset,
            )
            self.check_events(out, found)
            [level] = next(e["result"] for e in found if e["type"] == "result")["levels"]
            self.assertEqual(level["completed"], 4)


@unittest.skipIf(OLD_PY is None, f"no Python {MIN[0]}.{MIN[1] - 1} here (set INFBENCH_OLD_PYTHON to one)")
class OnAnOlderPython(unittest.TestCase):
    def test_is_refused_in_words_after_a_hello(self):
        out, found = run_agent(OLD_PY, "--heartbeat-timeout", "5", "macro", "--url", "http://127.0.0.1:9")
        self.assertEqual(out.returncode, 2, out.stderr)
        self.assertEqual([e["type"] for e in found], ["hello", "error", "done"])
        self.assertEqual((found[0]["command"], found[1]["code"]), ("macro", "python_too_old"))
        self.assertIn(f"needs Python {MIN[0]}.{MIN[1]} or newer", found[1]["message"])
        for e in found:
            self.assertEqual(events.problems(e), [], e)


if __name__ == "__main__":
    unittest.main()
