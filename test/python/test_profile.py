"""The profile subcommand against the real simulator (vllm_sim), run as the agent runs: a subprocess whose stdout is the event stream."""
from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
AGENT = os.path.join(ROOT, "agent")
sys.path.insert(0, AGENT)

from infbench_agent import events  # noqa: E402
from infbench_agent.profile import command as profile  # noqa: E402


def run_agent(*args: str, timeout: float = 120) -> list:
    proc = subprocess.run(
        [sys.executable, "-m", "infbench_agent", "profile", *args], cwd=AGENT, capture_output=True, text=True, timeout=timeout
    )
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


class Simulator:
    """The project's simulated vLLM server, started on a free port."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-u", os.path.join(ROOT, "simulator", "vllm_sim.py"), "--port", "0", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        line = self.proc.stdout.readline()
        self.url = json.loads(line)["url"]

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)
        self.proc.stdout.close()


class EnableInstructionsTest(unittest.TestCase):
    def test_vllm_013_and_later_get_profiler_config_on_their_own_command_line(self) -> None:
        text = profile.enable_instructions({"command_line": ["vllm", "serve", "m", "-tp", "8"], "version": "0.15.1"}, "/data/traces")
        self.assertIn("""vllm serve m -tp 8 --profiler-config '{"profiler":"torch","torch_profiler_dir":"/data/traces"}'""", text)

    def test_older_vllm_gets_the_environment_variable(self) -> None:
        text = profile.enable_instructions({"command_line": ["vllm", "serve", "m"], "version": "0.11.0"}, "/data/traces")
        self.assertIn("VLLM_TORCH_PROFILER_DIR=/data/traces vllm serve m", text)

    def test_an_existing_profiler_flag_is_replaced_not_doubled(self) -> None:
        argv = ["vllm", "serve", "m", "--profiler-config", '{"profiler":"cuda"}']
        text = profile.enable_instructions({"command_line": argv, "version": "0.14.0"}, "/t")
        self.assertEqual(text.count("--profiler-config"), 2)  # once in the advice, once in the command
        self.assertNotIn('"cuda"', text)

    def test_without_a_readable_command_line_it_still_gives_the_flag(self) -> None:
        text = profile.enable_instructions({"command_line": None, "version": None}, "/t")
        self.assertIn("--profiler-config", text)
        self.assertIn("VLLM_TORCH_PROFILER_DIR", text)

    def test_reads_the_trace_folder_and_rank_count_from_a_command_line(self) -> None:
        argv = [
            "vllm",
            "serve",
            "m",
            "--tensor-parallel-size",
            "4",
            "--pipeline-parallel-size=2",
            "--profiler-config",
            '{"profiler":"torch","torch_profiler_dir":"/x/y"}',
        ]
        self.assertEqual(profile.profiler_dir_from_argv(argv), "/x/y")
        self.assertEqual(profile.ranks_from_argv(argv), 8)
        self.assertEqual(profile.rank_of("/d/dp0_pp0_tp0_rank5.123.pt.trace.json.gz"), 5)
        self.assertEqual(profile.rank_of("/d/abc-TP-3-DP-0.trace.json.gz"), 3)


class ProfileAgainstSimulatorTest(unittest.TestCase):
    def test_profiler_off_says_404_and_how_to_enable_it(self) -> None:
        sim = Simulator()
        try:
            evs = run_agent("--url", sim.url)
        finally:
            sim.close()
        errors = [e for e in evs if e["type"] == "error"]
        self.assertEqual(errors[0]["code"], "profiler_disabled")
        self.assertIn("answered 404 on /start_profile", errors[0]["message"])
        self.assertIn("--profiler-dir", errors[0]["hint"])
        self.assertEqual(evs[-1], {**evs[-1], "type": "done", "ok": False})

    def test_captures_one_settled_trace_per_rank(self) -> None:
        d = tempfile.mkdtemp(prefix="ib-prof-")
        sim = Simulator("--profiler-dir", d, "--world-size", "2", "--layers", "2")
        try:
            evs = run_agent("--url", sim.url, "--concurrency", "2", "--output-len", "6", "--settle-seconds", "0.5")
        finally:
            sim.close()
        try:
            traces = [e for e in evs if e["type"] == "profile.trace"]
            self.assertEqual(sorted(t["rank"] for t in traces), [0, 1], evs[-3:])
            for t in traces:
                self.assertEqual(t["bytes"], os.path.getsize(t["path"]))
                with gzip.open(t["path"]) as f:
                    self.assertIn(b'"traceEvents"', f.read())
            stages = [e["stage"] for e in evs if e["type"] == "profile.status"]
            self.assertEqual(stages[:3], ["start", "workload", "stop"])
            result = [e for e in evs if e["type"] == "result"][0]["result"]
            self.assertEqual(result["workload"]["failed"], 0)
            self.assertEqual(result["expected_ranks"], 2)
            self.assertTrue(result["server"]["simulated"])
        finally:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()


class SglangBoundedCaptureTest(unittest.TestCase):
    """SGLang's /start_profile takes the capture's bounds in its body (ProfileReqInput,
    python/sglang/srt/managers/io_struct.py); the simulator mimics SGLang 0.5's num_steps and step names.
    """

    def args(self, **given: object) -> argparse.Namespace:
        base = {
            "output_len": 48,
            "delay_steps": 0,
            "num_steps": 0,
            "record_shapes": False,
            "with_stack": False,
        }
        return argparse.Namespace(**{**base, **given})

    def test_the_body_names_sglangs_fields_and_sends_shapes_and_stacks_only_on_request(
        self,
    ) -> None:
        self.assertEqual(
            profile.sglang_profile_body(self.args(), None),
            {"num_steps": 44, "activities": ["CPU", "GPU"]},
        )
        self.assertEqual(
            profile.sglang_profile_body(
                self.args(delay_steps=10, num_steps=16, record_shapes=True, with_stack=True),
                "/t",
            ),
            {
                "num_steps": 16,
                "activities": ["CPU", "GPU"],
                "record_shapes": True,
                "with_stack": True,
                "output_dir": "/t",
            },
        )
        # A capture that would outlast the requests is refused before anything runs, with the length that fits.
        with self.assertRaises(events.AgentError) as caught:
            profile.sglang_profile_body(self.args(output_len=20, delay_steps=10, num_steps=16), None)
        self.assertEqual(caught.exception.code, "bad_option")
        self.assertIn("at least 30", caught.exception.hint)

    def steps_captured(self, *flags: str) -> list:
        d = tempfile.mkdtemp(prefix="ib-sgl-")
        sim = Simulator("--mimic", "sglang-0.5")
        try:
            evs = run_agent(
                "--url",
                sim.url,
                "--trace-dir",
                d,
                "--concurrency",
                "3",
                "--output-len",
                "30",
                "--settle-seconds",
                "0.5",
                *flags,
            )
            traces = [e["path"] for e in evs if e["type"] == "profile.trace"]
            self.assertTrue(traces, evs[-3:])
            with gzip.open(traces[0]) as f:
                found = json.load(f)["traceEvents"]
            # One CPU-side annotation per forward step (its GPU twin is the same step).
            return [e["name"] for e in found if e.get("cat") == "user_annotation" and e.get("name", "").startswith("step[")]
        finally:
            sim.close()
            shutil.rmtree(d, ignore_errors=True)

    def test_delay_steps_leaves_the_prefill_out_and_num_steps_bounds_the_capture(
        self,
    ) -> None:
        # Without a delay the capture begins with the prefills, the batch still filling.
        self.assertTrue(self.steps_captured()[0].startswith("step[EXTEND bs=1"))
        steady = self.steps_captured("--delay-steps", "8", "--num-steps", "12")
        self.assertEqual(steady, ["step[DECODE bs=3]"] * 12)


class CollectOnAnotherHostTest(unittest.TestCase):
    """`profile --collect-since`: another host of a multi-node server reports its own ranks' new trace files."""

    def test_reports_the_files_written_since_the_capture_began_and_not_older_ones(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            old = os.path.join(d, "dp0_pp0_tp0_dcp0_ep0_rank0.1700000000000.pt.trace.json.gz")
            with gzip.open(old, "wt") as f:
                f.write("{}")
            os.utime(old, (1_700_000_000, 1_700_000_000))
            since = 1_700_000_100.0
            new = [os.path.join(d, f"dp0_pp0_tp{r}_dcp0_ep0_rank{r}.1700000200000.pt.trace.json.gz") for r in (2, 3)]
            for path in new:
                with gzip.open(path, "wt") as f:
                    f.write('{"traceEvents": []}')
            found = run_agent("--collect-since", str(since), "--trace-dir", d, "--expect-ranks", "2", "--settle-seconds", "0.5")
            traces = [e for e in found if e["type"] == "profile.trace"]
            self.assertEqual(sorted((t["path"], t["rank"]) for t in traces), [(new[0], 2), (new[1], 3)])
            self.assertTrue(found[-1]["ok"])

    def test_needs_the_folder(self) -> None:
        found = run_agent("--collect-since", "1")
        self.assertEqual(next(e for e in found if e["type"] == "error")["code"], "trace_dir_unknown")
