"""Prompts from a JSONL file of the user's, one request a line ({"prompt"} or {"messages"}, optional "output_len")."""
from __future__ import annotations

import argparse
from typing import Any, Dict

from infbench_agent.macro.prompts import load_prompts_file
from infbench_agent.macro.workloads.base import Context, Prepared, Workload
from infbench_agent.options import Option


class JsonlPrompts(Workload):
    name = "jsonl"
    title = "a JSONL file of prompts"
    detail = 'one request a line: {"prompt": ...} or {"messages": [...]}, optional "output_len"'
    options = (
        Option(
            "--prompts-file",
            "str",
            ("macro",),
            'JSONL of prompts: {"prompt": ...} or {"messages": [...]}, optional "output_len" '
            "(the same as --dataset-name jsonl --dataset-path FILE), on the server's host",
            metavar="PATH",
        ),
    )
    takes_file = True
    # The file any other file workload does not claim.
    claim_order = 100

    def claims(self, head: str) -> bool:
        return True

    def prepare(self, ctx: Context) -> Prepared:
        return Prepared(file_prompts=load_prompts_file(str(ctx.path)))

    def level_meta(self, args: argparse.Namespace, prepared: Prepared) -> Dict[str, Any]:
        return {"input_len": None}


WORKLOAD = JsonlPrompts
