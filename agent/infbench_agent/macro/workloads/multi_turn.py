"""Multi-turn conversations whose context grows turn by turn, as
vllm/benchmarks/multi_turn/benchmark_serving_multi_turn.py sends them (macro/conversations.py drives them)."""
from __future__ import annotations

import argparse
import math
from typing import Any, Dict, Optional, Tuple

from infbench_agent import events
from infbench_agent.macro.workloads.base import Context, Prepared, Workload
from infbench_agent.options import Option


class MultiTurn(Workload):
    name = "multi_turn"
    title = "multi-turn conversations"
    detail = "each turn sends the whole history so far: the context grows turn by turn (a prefix cache shortens the later turns)"
    options = (
        Option(
            "--multi-turn-turns",
            "int",
            ("macro",),
            "multi_turn: user turns per conversation, each sending the whole history (--input-len tokens more a turn, "
            "the server's --output-len token answers in between)",
            4,
            minimum=1,
        ),
        Option(
            "--multi-turn-conversations",
            "int",
            ("macro",),
            "multi_turn: conversations per level, as many at once as the level's concurrency (default: --requests, "
            "or max(8, 4 x concurrency), divided by the turns; with --duration, new ones until the time is up)",
            minimum=1,
        ),
    )
    modes = ("concurrency",)

    def check(self, args: argparse.Namespace, path: Optional[str]) -> None:
        if args.request_rate:
            raise events.AgentError(
                "bad_arguments",
                "multi-turn conversations run at --concurrency levels, not --request-rate",
                "each conversation sends its next turn when the last one is answered; pass {0}",
                [events.flag("--concurrency", "1,8,32")],
            )
        if args.multi_turn_turns < 1 or (args.multi_turn_conversations is not None and args.multi_turn_conversations < 1):
            raise events.AgentError("bad_arguments", "--multi-turn-turns and --multi-turn-conversations must be at least 1", "")

    def prepare(self, ctx: Context) -> Prepared:
        return Prepared(maker_options={"multi_turn": {"turns": ctx.args.multi_turn_turns}})

    def level_meta(self, args: argparse.Namespace, prepared: Prepared) -> Dict[str, Any]:
        # input_len: the tokens each user turn adds; output_len: each answer's.
        return {"input_len": args.input_len, "turns": args.multi_turn_turns}

    def level_extra(self, args: argparse.Namespace, total: Optional[int]) -> Tuple[Optional[int], Dict[str, Any]]:
        """A level's conversations: --multi-turn-conversations, else its requests divided by the turns (rounded up),
        or None for a level of seconds (new conversations start until the time is up)."""
        if args.duration:
            conversations = None
        elif args.multi_turn_conversations:
            conversations = int(args.multi_turn_conversations)
        else:
            conversations = max(1, math.ceil((total or 1) / args.multi_turn_turns))
        requests = None if conversations is None else conversations * args.multi_turn_turns
        return requests, {"conversations": conversations}


WORKLOAD = MultiTurn
