"""The trace_replay workload (agent/infbench_agent/macro/workloads/trace_replay.py): a Mooncake or BurstGPT trace
played at its own times, each request with its own lengths, and the prompt blocks its hash ids share shared in
text, so that a server's prefix cache finds what the trace implies."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "agent"))

from infbench_agent import events  # noqa: E402
from infbench_agent.macro import workloads  # noqa: E402
from infbench_agent.macro.prompts import PromptMaker  # noqa: E402
from infbench_agent.macro.workloads.trace_replay import TraceSource, read_trace  # noqa: E402

from recorder import Recorder, serve_recorder  # noqa: E402
from test_macro_loadgen import run_macro  # noqa: E402

BLOCK = 16
# (ms, input tokens, output tokens, hash ids): three users, two of whom come back with a longer context.
MOONCAKE = [
    (1000, 48, 3, [1, 2, 3]),
    (1150, 32, 2, [7, 8]),
    (1400, 64, 4, [1, 2, 3, 4]),
    (1420, 16, 5, [20]),
    (1700, 48, 2, [7, 8, 9]),
    (2000, 80, 3, [1, 2, 3, 4, 5]),
    (2050, 32, 1, [30, 31]),
    (2300, 32, 2, [7, 40]),
]


def mooncake_file(rows=MOONCAKE):
    f = tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False)
    for ts, i, o, h in rows:
        f.write(json.dumps({"timestamp": ts, "input_length": i, "output_length": o, "hash_ids": h}) + "\n")
    f.close()
    return f.name


def cached_tokens(rows, block=BLOCK):
    """The prompt tokens a prefix cache of `block`-token blocks finds, request by request in time order: the longest
    run of leading hash ids some earlier request began with (Mooncake's ids chain, as vLLM's block hashes do)."""
    seen, hits = set(), 0
    for _, _, _, ids in sorted(rows):
        k = 0
        while k < len(ids) and tuple(ids[: k + 1]) in seen:
            k += 1
        hits += k * block
        seen.update(tuple(ids[: j + 1]) for j in range(len(ids)))
    return hits


class TraceFiles(unittest.TestCase):
    def test_mooncake_and_burstgpt_are_read_in_time_order_with_their_lengths(self):
        path = mooncake_file(list(reversed(MOONCAKE)))
        self.addCleanup(os.unlink, path)
        offsets, items, read = read_trace(path)
        self.assertEqual(offsets, [(ts - 1000) / 1000 for ts, *_ in MOONCAKE])
        self.assertEqual(items, [[i, o, h] for _, i, o, h in MOONCAKE])
        self.assertEqual(read["format"], "mooncake")
        with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
            f.write("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n")
            f.write("5,ChatGPT,100,20,120,Conversation log\n7.5,GPT-4,50,0,50,Conversation log\n6.25,ChatGPT,30,9,39,API log\n")
        self.addCleanup(os.unlink, f.name)
        offsets, items, read = read_trace(f.name)
        # BurstGPT logs a failed request with no response tokens: nothing to replay.
        self.assertEqual((offsets, items, read["skipped"]), ([0.0, 1.25], [[100, 20, []], [30, 9, []]], 1))
        self.assertEqual(workloads.told_from_file(f.name), "trace_replay")
        self.assertEqual(workloads.told_from_file(path), "trace_replay")

    def test_a_trace_without_times_or_lengths_is_refused_with_the_shape_it_needs(self):
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
            f.write('{"input_length": 10, "output_length": 3}\n')
        self.addCleanup(os.unlink, f.name)
        with self.assertRaises(events.AgentError) as caught:
            read_trace(f.name)
        self.assertIn("no timestamp", caught.exception.message)
        self.assertIn('"timestamp": ms', caught.exception.hint)

    def test_shared_hash_ids_share_their_blocks_and_nothing_else(self):
        maker = PromptMaker("completions", "m", 0, 0, True, seed=5, source=TraceSource([[i, o, h] for _, i, o, h in MOONCAKE], BLOCK))
        words = [maker.text(n).split() for n in range(len(MOONCAKE))]
        self.assertEqual([len(w) for w in words], [i for _, i, _, _ in MOONCAKE])
        self.assertEqual(words[0], words[2][:48], "[1, 2, 3] is [1, 2, 3, 4]'s start")
        self.assertEqual(words[2], words[5][:64])
        self.assertEqual(words[1][:16], words[7][:16], "7 is shared")
        self.assertNotEqual(words[1][16:32], words[7][16:32], "8 and 40 are not")
        self.assertEqual([maker.max_output_tokens(n) for n in range(8)], [o for _, _, o, _ in MOONCAKE])
        # A worker process rebuilds the same prompts from the maker's JSON.
        again = PromptMaker.from_json(json.loads(json.dumps(maker.to_json())), workloads.source_from_json)
        self.assertEqual(again.text(6), maker.text(6))


class Replay(unittest.TestCase):
    def serve(self):
        return serve_recorder(self)

    def replay(self, *more):
        path = mooncake_file()
        self.addCleanup(os.unlink, path)
        url = self.serve()
        result, _ = run_macro(url, "--dataset-path", path, "--trace-block-size", str(BLOCK), "--warmup", "0", *more)
        arrived = sorted(Recorder.seen, key=lambda s: s[0])
        return result, [a - arrived[0][0] for a, _, _ in arrived], [b for _, _, b in arrived]

    def test_each_request_arrives_at_its_time_with_its_lengths(self):
        result, times, bodies = self.replay()
        [level] = result["levels"]
        self.assertEqual((level["dataset_name"], level["completed"]), ("trace_replay", 8))
        want = [(ts - 1000) / 1000 for ts, *_ in MOONCAKE]
        # The trace's own pace: 7 gaps over 1.3 s.
        self.assertAlmostEqual(level["request_rate"], 7 / 1.3, places=3)
        for got, expected in zip(times, want):
            # Tens of ms on a busy 2-core host; the trace's nearest gaps are 20 ms, so order and spacing still show.
            self.assertAlmostEqual(got, expected, delta=0.04, msg=(times, want))
        self.assertEqual([b["max_tokens"] for b in bodies], [o for _, _, o, _ in MOONCAKE])
        self.assertEqual([len(b["prompt"].split()) for b in bodies], [i for _, i, _, _ in MOONCAKE])
        self.assertEqual(result["prompts"]["trace"]["requests"], 8)

    def test_a_request_rate_scales_the_traces_gaps(self):
        result, times, _ = self.replay("--request-rate", str(2 * 7 / 1.3))
        want = [(ts - 1000) / 2000 for ts, *_ in MOONCAKE]
        for got, expected in zip(times, want):
            self.assertAlmostEqual(got, expected, delta=0.04, msg=(times, want))

    def test_concurrency_levels_are_refused_with_the_way_to_pace_it(self):
        path = mooncake_file()
        self.addCleanup(os.unlink, path)
        out = subprocess.run(
            [sys.executable, "-m", "infbench_agent", "macro", "--url", self.serve(), "--dataset-path", path, "--concurrency", "8"],
            cwd=os.path.join(ROOT, "agent"),
            capture_output=True,
            text=True,
            timeout=60,
        )
        [error] = [json.loads(line) for line in out.stdout.splitlines() if '"type":"error"' in line]
        self.assertIn("not at --concurrency levels", error["message"])
        self.assertEqual(error["remedies"][0]["flag"], "--request-rate", error)


class PrefixCacheAgainstTheSimulator(unittest.TestCase):
    def test_the_hit_rate_is_the_one_the_traces_hash_ids_imply(self):
        path = mooncake_file()
        self.addCleanup(os.unlink, path)
        proc = subprocess.Popen(
            [
                sys.executable,
                os.path.join(ROOT, "simulator", "vllm_sim.py"),
                "--port",
                "0",
                "--step-base-ms",
                "2",
                "--step-per-seq-ms",
                "0",
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            url = json.loads(proc.stdout.readline())["url"]
            result, _ = run_macro(url, "--dataset-path", path, "--trace-block-size", str(BLOCK), "--warmup", "0")
        finally:
            proc.terminate()
            proc.wait(5)
            proc.stdout.close()
        [level] = result["levels"]
        self.assertEqual(level["completed"], 8)
        queried = sum(i for _, i, _, _ in MOONCAKE)
        self.assertEqual(level["total_input_tokens"], queried)
        self.assertAlmostEqual(level["server_state"]["summary"]["prefix_cache_hit_rate"], cached_tokens(MOONCAKE) / queried, places=4)


if __name__ == "__main__":
    unittest.main()
