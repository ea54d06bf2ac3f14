"""A workload is a unit: a module planted in a copy of the agent's macro/workloads/ package — and nothing else
changed — is offered by --dataset-name, takes its own flag, refuses it for another workload and sends its prompts."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from recorder import Recorder, serve_recorder  # noqa: E402

PLANTED = """
from infbench_agent.macro.prompts import PromptSource
from infbench_agent.macro.workloads.base import Context, Prepared, Workload
from infbench_agent.options import Option


class Echo(PromptSource):
    def __init__(self, words):
        self.words = words

    def lengths(self, maker, index):
        return self.words, maker.output_len

    def text(self, maker, index):
        return " ".join(["echo"] * self.words)

    def to_json(self):
        return {"workload": "planted", "words": self.words}


class Planted(Workload):
    name = "planted"
    title = "a planted workload"
    options = (Option("--planted-words", "int", ("macro",), "planted: words a prompt", 3, minimum=1),)

    def prepare(self, ctx: Context) -> Prepared:
        return Prepared(maker_options={"source": Echo(ctx.args.planted_words)}, info={"planted": True})


def source_from_json(d):
    return Echo(d["words"])


WORKLOAD = Planted
"""


class PlantedWorkload(unittest.TestCase):
    def setUp(self):
        self.agent = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.agent)
        shutil.copytree(
            os.path.join(ROOT, "agent", "infbench_agent"),
            os.path.join(self.agent, "infbench_agent"),
            ignore=shutil.ignore_patterns("__pycache__"),
        )
        with open(os.path.join(self.agent, "infbench_agent", "macro", "workloads", "planted.py"), "w") as f:
            f.write(PLANTED)
        self.url = serve_recorder(self)

    def macro(self, *args):
        out = subprocess.run(
            [sys.executable, "-m", "infbench_agent", "macro", "--url", self.url, "--warmup", "0", *args],
            cwd=self.agent,
            capture_output=True,
            text=True,
            timeout=60,
        )
        return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")], out

    def test_its_module_alone_makes_it_a_workload_of_the_run(self):
        events, out = self.macro(
            "--dataset-name", "planted", "--planted-words", "5", "--concurrency", "2", "--requests", "4", "--workers", "2"
        )
        [result] = [e["result"] for e in events if e["type"] == "result"] or [None]
        self.assertIsNotNone(result, out.stdout[-800:] + out.stderr[-800:])
        [level] = result["levels"]
        self.assertEqual((level["dataset_name"], level["completed"]), ("planted", 4))
        self.assertTrue(result["prompts"]["planted"])
        # Both worker processes rebuilt its prompts from JSON.
        self.assertEqual([body["prompt"] for _, _, body in Recorder.seen], ["echo echo echo echo echo"] * 4)

    def test_its_flag_is_refused_for_another_workload(self):
        events, _ = self.macro("--planted-words", "5", "--concurrency", "1", "--requests", "1")
        [error] = [e for e in events if e["type"] == "error"]
        self.assertIn("--planted-words applies to --dataset-name planted only", error["message"])


if __name__ == "__main__":
    unittest.main()
