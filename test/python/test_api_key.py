"""A server started with --api-key: every agent command that talks to it takes the key the same way
(--api-key-stdin, as the controller gives it) and sends it; the probe says what it found.

The server is the simulator mimicking vLLM 0.16 with --api-key, which answers 401 on /v1/* without
the key as vLLM's authentication middleware does (simulator/sim_mimic.py cites it); its model is served
under the path of a config.json on this host, as `vllm serve /models/x` reports its `root`.
"""
import argparse
import json
import os
import subprocess
import sys
import unittest

from infbench_agent.micro import command as micro

from test_probe import Simulator

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TINY_MOE = os.path.join(ROOT, "test", "fixtures", "micro", "tiny-moe")
KEY = "sk-test-key-0123456789"


def agent(*args, stdin=""):
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "INFBENCH_API_KEY")}
    env["PYTHONPATH"] = os.path.join(ROOT, "agent")
    # No GPU decides these runs: the real nvidia-smi stays out of PATH.
    env["PATH"] = "/usr/bin:/bin"
    proc = subprocess.run([sys.executable, "-m", "infbench_agent", *args], input=stdin, capture_output=True, text=True, env=env, timeout=60)
    return proc, [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def keyed_server():
    return Simulator("--mimic", "vllm-0.16", "--api-key", KEY, "--served-model-name", TINY_MOE)


class ApiKeyTest(unittest.TestCase):
    def test_the_collective_plan_finds_the_model_through_a_keyed_server(self):
        with keyed_server() as sim:
            proc, found = agent(
                "collective", "--plan", "--server-url", sim.url, "--world-size", "2", "--device", "cpu", "--api-key-stdin", stdin=KEY + "\n"
            )
        self.assertEqual(proc.returncode, 0, proc.stderr + proc.stdout)
        plan = next(e["result"]["plan"] for e in found if e["type"] == "result")
        self.assertEqual((plan["hidden"], plan["top_k"]), (256, 4), "the sizes come from the served model's config.json")
        self.assertNotIn(KEY, proc.stdout)

    def test_without_the_key_the_model_lookup_says_the_server_wants_one_as_any_phase_does(self):
        with keyed_server() as sim:
            proc, found = agent("collective", "--plan", "--server-url", sim.url, "--world-size", "2", "--device", "cpu")
        error = next(e for e in found if e["type"] == "error")
        # unauthorized, as from any other phase: a front end then offers its own way to give the key.
        self.assertEqual(error["code"], "unauthorized")
        self.assertIn("this server wants an API key", error["message"])
        self.assertEqual(error["remedies"], [{"kind": "flag", "flag": "--api-key", "value": "KEY"}])

    def test_micro_finds_its_shapes_through_a_keyed_server(self):
        parser = argparse.ArgumentParser()
        micro.add_arguments(parser)
        with keyed_server() as sim:
            args = parser.parse_args(["--server-url", sim.url, "--api-key", KEY])
            args.skip_parts = []
            model, shapes = micro.select_shapes(args)
        self.assertEqual(model.hidden if model else None, 256)
        self.assertTrue(shapes)

    def test_the_probe_reports_that_the_server_requires_the_key_it_accepted(self):
        for mimic in ("vllm-0.16", "sglang-0.5"):
            with self.subTest(mimic=mimic), Simulator("--mimic", mimic, "--api-key", KEY) as sim:
                proc, found = agent("probe", "--url", sim.url, "--timeout", "2", "--api-key-stdin", stdin=KEY + "\n")
                server = next(e["result"] for e in found if e["type"] == "probe")["server"]
                self.assertEqual(server["auth"]["required"], True, "a request without the key is refused")
                self.assertEqual(server["auth"]["key_accepted"], True)
                self.assertIsNone(server["error"], "the key given works: nothing to fix")

    def test_the_probe_of_a_server_without_a_key_finds_none_required(self):
        with Simulator("--mimic", "vllm-0.16") as sim:
            proc, found = agent("probe", "--url", sim.url, "--timeout", "2", "--api-key-stdin", stdin=KEY + "\n")
        server = next(e["result"] for e in found if e["type"] == "probe")["server"]
        self.assertEqual(server["auth"]["required"], False)


if __name__ == "__main__":
    unittest.main()
