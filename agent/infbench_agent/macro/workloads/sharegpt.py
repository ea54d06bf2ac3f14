"""ShareGPT conversations as vllm bench serve --dataset-name sharegpt reads them (macro/datasets.py)."""
from __future__ import annotations

import argparse
from typing import Any, Dict

from infbench_agent import events
from infbench_agent.macro.datasets import SHAREGPT_DEFAULT_SEED, load_sharegpt
from infbench_agent.macro.prompts import token_counter
from infbench_agent.macro.workloads.base import Context, Prepared, Workload
from infbench_agent.options import Option


class ShareGpt(Workload):
    name = "sharegpt"
    title = "ShareGPT conversations"
    detail = (
        "as vllm bench serve --dataset-name sharegpt reads them: the first turn is the prompt, the second turn's length the output length"
    )
    options = (
        Option(
            "--sharegpt-output-len",
            "int",
            ("macro",),
            "ShareGPT: output tokens of every request instead of each conversation's second turn",
            minimum=1,
        ),
    )
    takes_file = True
    claim_order = 20

    def claims(self, head: str) -> bool:
        # ShareGPT is one JSON list.
        return head.startswith("[")

    def prepare(self, ctx: Context) -> Prepared:
        args, path = ctx.args, ctx.path
        totals = [ctx.requests_of(m.get("max_concurrency"), m.get("request_rate")) for m in ctx.levels]
        # As many conversations as the largest level sends, each level drawing from the same ones as vLLM's runs
        # with one --seed do (its --num-prompts per run); 1000, vLLM's default --num-prompts, for a level of seconds.
        wanted = max(1000 if t is None else t for t in totals)
        count, lengths_by = token_counter(ctx.endpoint, ctx.model, not args.no_tokenize)
        events.emit(events.PROGRESS, done=0, total=0, message=f"reading ShareGPT conversations from {path}")
        loaded = load_sharegpt(
            str(path), args.seed if args.seed is not None else SHAREGPT_DEFAULT_SEED, wanted, count, args.sharegpt_output_len
        )
        stats = loaded["stats"]
        events.log(
            f"ShareGPT {path}: {stats['kept']} conversations kept of {stats['tokenized']} read "
            f"({stats['entries']} entries; lengths by {'/tokenize' if lengths_by == 'tokenize' else 'words'})"
            + (f"; fewer than the {wanted} requests of a level, so they repeat" if stats["kept"] < wanted else "")
        )
        info = {"sharegpt": {**stats, "wanted": wanted, "lengths_by": lengths_by, "output_len": args.sharegpt_output_len}}
        return Prepared(file_prompts=loaded["samples"], info=info)

    def level_meta(self, args: argparse.Namespace, prepared: Prepared) -> Dict[str, Any]:
        return {"input_len": None, "output_len": args.sharegpt_output_len}


WORKLOAD = ShareGpt
