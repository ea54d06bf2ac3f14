"""Groups of prompts that share a prefix, as vllm/benchmarks/datasets.py's PrefixRepetitionRandomDataset makes them
(its defaults): the server's prefix cache at work."""
from __future__ import annotations

import argparse
from typing import Any, Dict

from infbench_agent.macro.workloads.base import Context, Prepared, Workload
from infbench_agent.options import Option


class PrefixRepetition(Workload):
    name = "prefix_repetition"
    title = "prefix repetition"
    detail = (
        "groups of prompts that share a prefix, as vllm bench serve --dataset-name prefix_repetition: the server's prefix cache at work"
    )
    options = (
        Option(
            "--prefix-repetition-prefix-len", "int", ("macro",), "prefix_repetition: tokens of the prefix a group shares", 256, minimum=1
        ),
        Option(
            "--prefix-repetition-suffix-len", "int", ("macro",), "prefix_repetition: tokens of each request's own suffix", 256, minimum=1
        ),
        Option("--prefix-repetition-num-prefixes", "int", ("macro",), "prefix_repetition: groups, each with its own prefix", 10, minimum=1),
    )

    def prepare(self, ctx: Context) -> Prepared:
        a = ctx.args
        prefix = {
            "prefix_len": a.prefix_repetition_prefix_len,
            "suffix_len": a.prefix_repetition_suffix_len,
            "num_prefixes": a.prefix_repetition_num_prefixes,
        }
        return Prepared(maker_options={"prefix": prefix})

    def level_meta(self, args: argparse.Namespace, prepared: Prepared) -> Dict[str, Any]:
        return {
            "input_len": args.prefix_repetition_prefix_len + args.prefix_repetition_suffix_len,
            "prefix_len": args.prefix_repetition_prefix_len,
            "suffix_len": args.prefix_repetition_suffix_len,
            "num_prefixes": args.prefix_repetition_num_prefixes,
        }


WORKLOAD = PrefixRepetition
