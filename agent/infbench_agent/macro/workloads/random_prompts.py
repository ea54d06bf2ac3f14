"""Random prompts of --input-len tokens (vllm bench serve's --dataset-name random), each its own length within a
range with --range-ratio."""
from __future__ import annotations

import argparse
from typing import Any, Dict, Optional

from infbench_agent import events
from infbench_agent.macro.prompts import length_range
from infbench_agent.macro.workloads.base import Context, Prepared, Workload
from infbench_agent.options import Option


class RandomPrompts(Workload):
    name = "random"
    title = "random prompts"
    detail = "of a given length, or each its own within a range, as vllm bench serve --dataset-name random"
    options = (
        Option(
            "--range-ratio",
            "float",
            ("macro",),
            "random prompts: each request's prompt and output lengths drawn uniformly from "
            "[len x (1 - R), len x (1 + R)], 0 <= R < 1 (vllm bench serve's --random-range-ratio)",
            0.0,
            metavar="R",
            aliases=("--random-range-ratio",),
            minimum=0,
        ),
    )

    def check(self, args: argparse.Namespace, path: Optional[str]) -> None:
        if not 0 <= args.range_ratio < 1:
            raise events.AgentError(
                "bad_arguments",
                f"--range-ratio must be at least 0 and below 1, got {args.range_ratio:g}",
                "0.25 draws each length from 75% to 125% of {0} and {1}",
                [events.flag("--input-len"), events.flag("--output-len")],
            )

    def prepare(self, ctx: Context) -> Prepared:
        a = ctx.args
        info = {
            "range_ratio": a.range_ratio,
            "input_len_range": list(length_range(a.input_len, a.range_ratio)),
            "output_len_range": list(length_range(a.output_len, a.range_ratio)),
        }
        return Prepared(maker_options={"range_ratio": a.range_ratio}, info=info)

    def level_meta(self, args: argparse.Namespace, prepared: Prepared) -> Dict[str, Any]:
        meta: Dict[str, Any] = {"input_len": args.input_len, "range_ratio": args.range_ratio}
        if args.range_ratio:
            meta.update({k: prepared.info[k] for k in ("input_len_range", "output_len_range")})
        return meta


WORKLOAD = RandomPrompts
