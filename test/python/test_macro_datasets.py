"""The macro phase's datasets as `vllm bench serve` makes them: random lengths over a range (--random-range-ratio)
and ShareGPT conversations (--dataset-name sharegpt), read from test/fixtures/sharegpt/sharegpt-small.json."""
import argparse
import json
import math
import os
import random
import re
import statistics
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "agent"))

from infbench_agent import events  # noqa: E402
from infbench_agent.macro import workloads  # noqa: E402
from infbench_agent.macro.command import add_arguments  # noqa: E402
from infbench_agent.macro.datasets import is_valid_sequence, load_sharegpt  # noqa: E402
from infbench_agent.macro.prompts import PromptMaker, length_range  # noqa: E402

FIXTURE = os.path.join(ROOT, "test", "fixtures", "sharegpt", "sharegpt-small.json")
# The simulator's tokenizer (simulator/vllm_sim.py count_tokens): a word or a punctuation mark is one token.
TOKEN_RE = re.compile(r"\w+|[^\w\s]")


def sim_tokens(text):
    return len(TOKEN_RE.findall(text))


def cli_said(hint, remedies):
    """The hint as the CLI says it (src/shared/remedy.ts CLI_WORDS): each flag remedy in its slot, with its example."""
    return re.sub(r"\{(\d+)\}", lambda m: " ".join(filter(None, [remedies[int(m[1])]["flag"], remedies[int(m[1])].get("value")])), hint)


def dataset_of(args):
    workload, path = workloads.choose(args)
    return workload.name, path


def macro_args(*argv):
    p = argparse.ArgumentParser()
    add_arguments(p)
    return p.parse_args(list(argv))


class RangeRatio(unittest.TestCase):
    def test_bounds_are_vllms_floor_and_ceil_around_the_length(self):
        # vllm/benchmarks/datasets.py RandomDataset.get_sampling_params: floor(len*(1-r)) .. ceil(len*(1+r)).
        self.assertEqual(length_range(256, 0.25), (192, 320))
        self.assertEqual(length_range(100, 0.33), (67, 133))
        self.assertEqual(length_range(128, 0.0), (128, 128))
        # The output's low bound never reaches 0; nor does a prompt's here.
        self.assertEqual(length_range(1, 0.9), (1, 2))

    def test_each_request_draws_its_own_lengths_within_the_bounds(self):
        maker = PromptMaker("completions", "m", 256, 128, True, seed=11, range_ratio=0.25)
        pairs = [maker.lengths(i) for i in range(3000)]
        ins, outs = [p[0] for p in pairs], [p[1] for p in pairs]
        self.assertEqual((min(ins), max(ins)), (192, 320), "both ends of the range are drawn")
        self.assertEqual((min(outs), max(outs)), (96, 160))
        # Uniform over the integers: mean at the centre, spread (hi - lo + 1) / sqrt(12), every value drawn.
        self.assertAlmostEqual(statistics.mean(ins), 256, delta=2)
        self.assertAlmostEqual(statistics.pstdev(ins), 129 / math.sqrt(12), delta=1.5)
        self.assertEqual(len(set(ins)), 129)
        # Prompt and output lengths are drawn apart, not one from the other.
        mi, mo = statistics.mean(ins), statistics.mean(outs)
        cov = sum((a - mi) * (b - mo) for a, b in pairs) / len(pairs)
        self.assertLess(abs(cov / (statistics.pstdev(ins) * statistics.pstdev(outs))), 0.1)

    def test_the_same_seed_draws_the_same_lengths_in_any_process_and_another_seed_others(self):
        a = PromptMaker("completions", "m", 256, 128, True, seed=11, range_ratio=0.25)
        again = PromptMaker.from_json(json.loads(json.dumps(a.to_json())))  # as a worker process gets it
        other = PromptMaker("completions", "m", 256, 128, True, seed=12, range_ratio=0.25)
        self.assertEqual([a.lengths(i) for i in range(50)], [again.lengths(i) for i in range(50)])
        self.assertNotEqual([a.lengths(i) for i in range(50)], [other.lengths(i) for i in range(50)])

    def test_a_request_asks_for_its_drawn_output_length_with_a_prompt_of_its_drawn_length(self):
        maker = PromptMaker("completions", "m", 64, 32, True, seed=5, range_ratio=0.5)
        for i in range(20):
            want_in, want_out = maker.lengths(i)
            body = json.loads(maker.body(i))
            self.assertEqual(body["max_tokens"], want_out)
            self.assertEqual(len(body["prompt"].split()), want_in)  # 1 token per word uncalibrated
            self.assertEqual(maker.estimated_prompt_tokens(i), want_in)

    def test_no_ratio_keeps_every_request_at_the_given_lengths(self):
        maker = PromptMaker("chat", "m", 64, 32, True, seed=5)
        self.assertEqual({maker.lengths(i) for i in range(100)}, {(64, 32)})
        self.assertEqual(json.loads(maker.body(3))["max_completion_tokens"], 32)


class ShareGPT(unittest.TestCase):
    def test_keeps_first_two_turns_that_pass_vllms_length_rules(self):
        loaded = load_sharegpt(FIXTURE, 0, 100, sim_tokens)
        stats = loaded["stats"]
        self.assertEqual((stats["entries"], stats["with_two_turns"], stats["kept"]), (11, 9, 5))
        self.assertEqual(stats["dropped"], {"prompt_too_short": 1, "output_too_short": 1, "prompt_too_long": 1, "total_too_long": 1})
        with open(FIXTURE, encoding="utf-8") as f:
            entries = json.load(f)
        by_prompt = {e["conversations"][0]["value"]: e for e in entries if len(e["conversations"]) >= 2}
        for s in loaded["samples"]:
            conv = by_prompt[s["prompt"]]["conversations"]
            self.assertEqual(s["prompt_len"], sim_tokens(conv[0]["value"]))
            self.assertEqual(s["output_len"], sim_tokens(conv[1]["value"]), "the second turn's length, later turns unread")
            self.assertIsNone(is_valid_sequence(s["prompt_len"], s["output_len"]))
        kept_ids = {by_prompt[s["prompt"]]["id"] for s in loaded["samples"]}
        self.assertEqual(kept_ids, {"QWJhYvA_0", "i6IyJda_0", "A5AbcES_0", "Zf3kWcu_1", "uN6tEoY_0"})

    def test_the_filter_is_vllms_is_valid_sequence(self):
        # vllm/benchmarks/dataset_utils.py is_valid_sequence: min 4, prompt at most 1024, both at most 2048.
        self.assertEqual(is_valid_sequence(3, 100), "prompt_too_short")
        self.assertEqual(is_valid_sequence(4, 3), "output_too_short")
        self.assertIsNone(is_valid_sequence(4, 3, skip_min_output_len_check=True))
        self.assertIsNone(is_valid_sequence(4, 4))
        self.assertIsNone(is_valid_sequence(1024, 1024))
        self.assertEqual(is_valid_sequence(1025, 10), "prompt_too_long")
        self.assertEqual(is_valid_sequence(1024, 1025), "total_too_long")

    def test_an_output_length_replaces_the_second_turns_and_lifts_its_minimum(self):
        loaded = load_sharegpt(FIXTURE, 0, 100, sim_tokens, output_len=5)
        self.assertEqual({s["output_len"] for s in loaded["samples"]}, {5})
        # The one-word answer now passes, and so does the long story whose answer no longer counts.
        self.assertEqual(loaded["stats"]["kept"], 7)
        self.assertEqual(loaded["stats"]["dropped"], {"prompt_too_short": 1, "prompt_too_long": 1})

    def test_order_is_vllms_shuffle_for_the_seed_and_stops_once_enough_are_kept(self):
        with open(FIXTURE, encoding="utf-8") as f:
            data = [e for e in json.load(f) if "conversations" in e and len(e["conversations"]) >= 2]
        # What vllm/benchmarks/datasets.py ShareGPTDataset.load_data does with --seed 7.
        random.seed(7)
        random.shuffle(data)
        vllm_order = [
            e["conversations"][0]["value"]
            for e in data
            if is_valid_sequence(sim_tokens(e["conversations"][0]["value"]), sim_tokens(e["conversations"][1]["value"])) is None
        ]
        ours = load_sharegpt(FIXTURE, 7, 100, sim_tokens)["samples"]
        self.assertEqual([s["prompt"] for s in ours], vllm_order)
        self.assertEqual(load_sharegpt(FIXTURE, 7, 100, sim_tokens), load_sharegpt(FIXTURE, 7, 100, sim_tokens))
        self.assertNotEqual([s["prompt"] for s in load_sharegpt(FIXTURE, 8, 100, sim_tokens)["samples"]], vllm_order)
        counted = []
        two = load_sharegpt(FIXTURE, 7, 2, lambda t: counted.append(t) or sim_tokens(t))
        self.assertEqual([s["prompt"] for s in two["samples"]], vllm_order[:2])
        self.assertLess(len(counted), 2 * 9, "conversations past the ones wanted are not tokenized")

    def test_a_file_that_is_not_sharegpt_says_what_sharegpt_is(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "x.json")
            with open(path, "w") as f:
                json.dump({"conversations": []}, f)
            with self.assertRaises(events.AgentError) as caught:
                load_sharegpt(path, 0, 10, sim_tokens)
            self.assertIn("not a JSON list", caught.exception.message)
            with open(path, "w") as f:
                json.dump([{"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "yo"}]}], f)
            with self.assertRaises(events.AgentError) as caught:
                load_sharegpt(path, 0, 10, sim_tokens)
            self.assertIn("passed vLLM's filter", caught.exception.message)
            self.assertIn("prompt_too_short 1", caught.exception.message)


class DatasetArguments(unittest.TestCase):
    def test_the_file_tells_sharegpt_from_jsonl(self):
        self.assertEqual(workloads.told_from_file(FIXTURE), "sharegpt")
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as f:
            f.write('{"prompt": "a b c"}\n')
            f.flush()
            self.assertEqual(workloads.told_from_file(f.name), "jsonl")
            self.assertEqual(dataset_of(macro_args("--dataset-path", f.name)), ("jsonl", f.name))
            self.assertEqual(dataset_of(macro_args("--prompts-file", f.name)), ("jsonl", f.name))
        self.assertEqual(dataset_of(macro_args("--dataset-path", FIXTURE)), ("sharegpt", FIXTURE))
        self.assertEqual(dataset_of(macro_args("--random-range-ratio", "0.5")), ("random", None))

    def test_combinations_vllm_refuses_are_refused_with_the_flag_to_use(self):
        for argv, words in [
            (("--dataset-name", "random", "--dataset-path", FIXTURE), "pass --dataset-name jsonl with --dataset-path FILE"),
            (("--dataset-name", "sharegpt"), "needs --dataset-path"),
            (("--dataset-path", FIXTURE, "--range-ratio", "0.2"), "--dataset-name random only"),
            (("--sharegpt-output-len", "8"), "sharegpt only"),
            (("--prompts-file", FIXTURE, "--dataset-name", "sharegpt"), "pass --dataset-name sharegpt with --dataset-path FILE"),
        ]:
            with self.assertRaises(events.AgentError, msg=argv) as caught:
                dataset_of(macro_args(*argv))
            e = caught.exception
            self.assertIn(words, e.message + " " + cli_said(e.hint, e.remedies or []), argv)


if __name__ == "__main__":
    unittest.main()
