"""Multi-turn conversations (--dataset-name multi_turn): each turn sends the whole history with the server's
actual answers, only after the previous turn was answered, and the prefix-cache hit rate the simulator's
own cache computes is the one the conversations imply."""
import json
import os
import subprocess
import sys
import unittest
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "agent"))

from infbench_agent.macro.prompts import PromptMaker  # noqa: E402

from test_macro_loadgen import run_macro  # noqa: E402

# The simulator's prefix cache: blocks of 16 tokens (simulator/vllm_sim.py, PrefixCache).
BLOCK = 16


def maker(api):
    return PromptMaker(api, "m", 12, 5, True, seed=7, multi_turn={"turns": 3})


class Bodies(unittest.TestCase):
    def test_a_chat_turn_carries_every_earlier_turn_and_the_servers_own_answers(self):
        body = json.loads(maker("chat").conversation_body(3, [" first answer", " second answer"]))
        roles = [m["role"] for m in body["messages"]]
        self.assertEqual(roles, ["user", "assistant", "user", "assistant", "user"])
        self.assertEqual([m["content"] for m in body["messages"][1::2]], [" first answer", " second answer"])
        self.assertEqual(len(body["messages"][4]["content"].split()), 12, "each user turn adds input_len tokens")
        self.assertEqual(body["max_completion_tokens"], 5)
        first = json.loads(maker("chat").conversation_body(3, []))
        self.assertEqual(first["messages"], body["messages"][:1], "the first turn is the same in every later one")

    def test_a_completions_turn_starts_with_the_previous_turns_prompt_and_answer(self):
        m = maker("completions")
        one = json.loads(m.conversation_body(5, []))["prompt"]
        two = json.loads(m.conversation_body(5, [" It runs"]))["prompt"]
        self.assertTrue(two.startswith(one + " It runs"), (one, two))
        self.assertNotEqual(json.loads(m.conversation_body(6, []))["prompt"], one, "each conversation is its own")
        # the same seed gives the same words in every worker process
        self.assertEqual(PromptMaker.from_json(m.to_json()).conversation_body(5, [" It runs"]), m.conversation_body(5, [" It runs"]))


def expected_hits(turns):
    """The simulator caches a finished turn's prompt and answer in full blocks (the last sampled token never
    computed), and the next turn's prompt starts with both: its hits are those blocks."""
    hits = 0
    for before, after in zip(turns, turns[1:]):
        shared = min(before["prompt_tokens"] + before["output_tokens"] - 1, after["prompt_tokens"] - 1)
        hits += shared // BLOCK * BLOCK
    return hits


class AgainstTheSimulator(unittest.TestCase):
    def setUp(self):
        self.proc = subprocess.Popen(
            [
                sys.executable,
                os.path.join(ROOT, "simulator", "vllm_sim.py"),
                "--port",
                "0",
                "--step-base-ms",
                "3",
                "--step-per-seq-ms",
                "0",
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        self.url = json.loads(self.proc.stdout.readline())["url"]

    def tearDown(self):
        self.proc.terminate()
        self.proc.wait(5)
        self.proc.stdout.close()

    def test_turns_wait_for_their_answers_and_the_hit_rate_is_the_one_the_history_implies(self):
        args = ["--dataset-name", "multi_turn", "--multi-turn-turns", "4", "--multi-turn-conversations", "6", "--api", "chat"]
        args += ["--concurrency", "4", "--workers", "2", "--input-len", "40", "--output-len", "20", "--warmup", "0"]
        result, events = run_macro(self.url, *args)
        [level] = result["levels"]
        self.assertEqual((level["completed"], level["failed"]), (24, 0))
        self.assertEqual((level["dataset_name"], level["turns"], level["conversations"]), ("multi_turn", 4, 6))
        by_conversation = defaultdict(list)
        for e in events:
            if e["type"] == "macro.request":
                by_conversation[e["record"]["conversation"]].append(e["record"])
        self.assertEqual(sorted(by_conversation), list(range(6)))
        queried = hits = 0
        for turns in by_conversation.values():
            turns.sort(key=lambda r: r["turn"])
            self.assertEqual([r["turn"] for r in turns], [1, 2, 3, 4])
            for before, after in zip(turns, turns[1:]):
                # sent only once the turn before had its last token, with that turn's prompt and answer in its context
                self.assertGreaterEqual(after["run_s"], before["run_s"] + before["e2el_ms"] / 1000 - 1e-3)
                self.assertGreaterEqual(after["prompt_tokens"], before["prompt_tokens"] + before["output_tokens"] + 40)
            queried += sum(r["prompt_tokens"] for r in turns)
            hits += expected_hits(turns)
        self.assertAlmostEqual(level["server_state"]["summary"]["prefix_cache_hit_rate"], hits / queried, places=3)
        summary = level["multi_turn"]
        self.assertAlmostEqual(summary["mean_context_tokens"], queried / 24)
        self.assertEqual([t["completed"] for t in summary["by_turn"]], [6, 6, 6, 6])

    def test_rates_and_files_are_refused_with_the_fix(self):
        for args, words in (
            (["--request-rate", "4"], "multi-turn conversations run at --concurrency levels"),
            (["--multi-turn-turns", "0"], "--multi-turn-turns and --multi-turn-conversations must be at least 1"),
            (["--dataset-path", "x.json"], "multi_turn prompts take no file"),
        ):
            out = subprocess.run(
                [sys.executable, "-m", "infbench_agent", "macro", "--url", self.url, "--dataset-name", "multi_turn", *args],
                cwd=os.path.join(ROOT, "agent"),
                capture_output=True,
                text=True,
                timeout=60,
            )
            errors = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{") and '"error"' in line]
            self.assertTrue(any(e.get("type") == "error" and words in e["message"] for e in errors), out.stdout[-800:])


if __name__ == "__main__":
    unittest.main()
