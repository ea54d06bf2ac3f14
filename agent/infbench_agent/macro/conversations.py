"""Macro phase: multi-turn conversations whose context grows turn by turn (--dataset-name multi_turn).

Each conversation's turn k sends the whole history (its user turns and the server's actual answers so far) and
goes only once turn k-1 was answered; up to the level's concurrency conversations run at once, each with one
request in flight, and a finished conversation's slot takes the next one. So vLLM's
benchmarks/multi_turn/benchmark_serving_multi_turn.py (client_main: active conversations, one turn each, the
answer saved as the next turn's context) and SGLang's benchmark/hicache/bench_multiturn.py (num_clients
conversations of num_rounds rounds, history += answer + the next question) drive a server; both send a turn
right after the previous answer when no request rate is given, as here.

A conversation's turns are ordinary per-request records, with `conversation` and `turn` added: a later turn's
TTFT is what a prefix cache shortens. turn_summary() gives a level's mean context length and TTFT by turn.
"""
from __future__ import annotations

import collections
import itertools
import time
from typing import Callable, Deque, Dict, Iterator, List, Optional, Tuple

from infbench_agent.macro.client import Engine
from infbench_agent.macro.arm import arm
from infbench_agent.macro.prompts import PromptMaker


def conversation_key(plan: dict, conversation: int) -> int:
    """The number a conversation's words are drawn from: its first turn's request id, so each level has its own."""
    return plan["id_base"] + conversation * plan["turns"]


def drive_conversations(
    plan: dict,
    engine: Engine,
    maker: PromptMaker,
    on_record: Callable[[dict], None],
    should_stop: Callable[[], bool],
    on_tick: Optional[Callable[[], None]] = None,
) -> None:
    """Runs the plan's conversations, `concurrency` at a time, each turn after the answer to the one before.

    The plan: turns, concurrency, id_base, and either `conversations` (the level's conversation numbers this
    process runs) or, for a level of `duration` seconds, conv_start and conv_stride (new conversations start
    until the time is up; a conversation still going then ends after its turn in flight)."""
    start_at = plan["start_at"]
    turns = plan["turns"]
    concurrency = plan["concurrency"]
    deadline = start_at + plan["duration"] if plan.get("duration") else None
    source: Iterator[int] = (
        iter(plan["conversations"])
        if plan.get("conversations") is not None
        else itertools.count(plan.get("conv_start", 0), plan.get("conv_stride", 1))
    )
    exhausted = False
    # Each running conversation's answers so far; those whose next turn may go now, with when it could.
    answers: Dict[int, List[str]] = {}
    ready: Deque[Tuple[int, float]] = collections.deque()
    free_since: List[float] = []
    by_id: Dict[int, Tuple[int, int]] = {}

    def record(rec: dict) -> None:
        answer = "".join(rec.pop("answer", None) or ())
        conversation, turn = by_id.pop(rec["id"])
        rec["conversation"], rec["turn"] = conversation, turn
        on_record(rec)
        at = rec.get("finish") or time.monotonic()
        if rec.get("ok") and turn < turns:
            answers[conversation].append(answer)
            ready.append((conversation, at))
        else:
            # Its last turn, or a failed one (a conversation does not go on without its answer, as in vLLM's
            # client): its slot takes the next conversation.
            answers.pop(conversation, None)
            free_since.append(at)

    def send(conversation: int, intended: float) -> None:
        history = answers[conversation]
        turn = len(history) + 1
        rid = conversation_key(plan, conversation) + turn - 1
        by_id[rid] = (conversation, turn)
        engine.start(
            {
                "id": rid,
                "intended": intended,
                "est_prompt_tokens": maker.estimated_turn_tokens(turn),
                "max_tokens": maker.output_len,
                "keep_text": True,
            },
            maker.conversation_body(conversation_key(plan, conversation), history),
        )

    arm(plan, engine, record)
    while True:
        if should_stop() or engine.server_frozen:
            engine.abort_all()
            return
        accepting = deadline is None or time.monotonic() < deadline
        # The next turns of running conversations first: each already holds its slot.
        while ready:
            conversation, intended = ready.popleft()
            if accepting:
                send(conversation, intended)
            else:
                answers.pop(conversation, None)
        while accepting and not exhausted and len(answers) < concurrency:
            conversation = next(source, -1)
            if conversation < 0:
                exhausted = True
                break
            answers[conversation] = []
            send(conversation, free_since.pop(0) if free_since else start_at)
        if not answers and (exhausted or not accepting) and engine.in_flight == 0:
            return
        engine.poll(0.05)
        if on_tick:
            on_tick()


def turn_summary(records: List[dict], conversations: Optional[int], turns: int) -> dict:
    """A multi-turn level in figures: the mean context (prompt tokens as the server counted them) and, turn by
    turn, how many were answered, their mean context and their mean TTFT in ms (a prefix cache shortens the
    later turns' TTFT: their context is mostly the turn before)."""
    ok = [r for r in records if r.get("ok") and r.get("turn")]
    by_turn = []
    for k in range(1, turns + 1):
        mine = [r for r in ok if r["turn"] == k]
        contexts = [r["prompt_tokens"] for r in mine if r.get("prompt_tokens") is not None]
        ttfts = [r["ttft"] for r in mine if r.get("ttft") is not None]
        by_turn.append(
            {
                "turn": k,
                "completed": len(mine),
                "mean_context_tokens": sum(contexts) / len(contexts) if contexts else None,
                "mean_ttft_ms": 1000.0 * sum(ttfts) / len(ttfts) if ttfts else None,
            }
        )
    contexts = [r["prompt_tokens"] for r in ok if r.get("prompt_tokens") is not None]
    return {
        "conversations": conversations,
        "conversations_started": len({r.get("conversation") for r in records if r.get("turn")}),
        "turns": turns,
        "mean_context_tokens": sum(contexts) / len(contexts) if contexts else None,
        "max_context_tokens": max(contexts) if contexts else None,
        "by_turn": by_turn,
    }
