"""Replay of a timestamped request trace, each request sent at its own time: the Mooncake shape (JSONL of
{"timestamp" ms, "input_length", "output_length", "hash_ids"}, as kvcache-ai/Mooncake's FAST25-release traces and
AIPerf's mooncake_trace loader read it) or BurstGPT's CSV (Timestamp s, Request tokens, Response tokens).

Each hash id stands for a block of --trace-block-size prompt tokens (Mooncake's 512): requests that carry the same
id share that block's text, so a prefix cache sees the reuse the trace had. Without --request-rate the trace
plays at its own pace (times --trace-speed); a --request-rate level plays the same gaps scaled to that mean rate.
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import random
from typing import Any, Dict, List, Optional, Tuple

from infbench_agent import events, options
from infbench_agent.macro.prompts import WORDS, PromptMaker, PromptSource
from infbench_agent.macro.workloads.base import Context, Prepared, Workload
from infbench_agent.options import Option

NAME = "trace_replay"
# kvcache-ai/Mooncake FAST25-release: each hash id is a block of 512 tokens.
MOONCAKE_BLOCK_TOKENS = 512
BURSTGPT_HEADER = "Timestamp,"


class TraceSource(PromptSource):
    """Request n of a level is the trace's request n (the level's numbers start at a multiple of the trace's
    length): its lengths, and a prompt of its shared blocks then its own words."""

    def __init__(self, items: List[list], block_size: int) -> None:
        # [input tokens, output tokens, hash ids] in the order of their times.
        self.items, self.block_size = items, block_size

    def item(self, index: int) -> list:
        return self.items[index % len(self.items)]

    def lengths(self, maker: PromptMaker, index: int) -> Tuple[int, int]:
        prompt, output, _ = self.item(index)
        return prompt, output

    def text(self, maker: PromptMaker, index: int) -> str:
        prompt, _, hashes = self.item(index)
        per_word = max(maker.tokens_per_word, 1e-6)
        parts: List[str] = []
        left = prompt
        for h in hashes:
            if left <= 0:
                break
            tokens = min(self.block_size, left)
            left -= tokens
            # The chat template's tokens come off the prompt's last part, so a shared block keeps its words.
            tokens -= maker.overhead if left <= 0 else 0
            block = random.Random(f"{maker.seed}:block:{h}")
            parts += [block.choice(WORDS) for _ in range(max(1, int(round(tokens / per_word))))]
        if left > 0:
            own = random.Random(f"{maker.seed}:{index}")
            parts += [own.choice(WORDS) for _ in range(maker.words_for(left))]
        return " ".join(parts)

    def to_json(self) -> dict:
        return {"workload": NAME, "items": self.items, "block_size": self.block_size}

    @staticmethod
    def from_json(d: dict) -> "TraceSource":
        return TraceSource(d["items"], d["block_size"])


def read_trace(path: str) -> Tuple[List[float], List[list], Dict[str, Any]]:
    """Send offsets (seconds from the first request), [input, output, hash ids] each, and what was read."""
    bad = events.AgentError
    try:
        rows: List[Tuple[Any, Any, Any, Any]]
        with open(path, encoding="utf-8", newline="") as f:
            head = f.read(4096).lstrip()
            f.seek(0)
            if head.startswith(BURSTGPT_HEADER):
                fmt, unit = "burstgpt", 1.0
                rows = [(r.get("Timestamp"), r.get("Request tokens"), r.get("Response tokens"), []) for r in csv.DictReader(f)]
            else:
                fmt, unit = "mooncake", 1000.0
                rows = []
                for n, line in enumerate(f, 1):
                    if not line.strip():
                        continue
                    try:
                        r = json.loads(line)
                    except ValueError as exc:
                        raise bad("bad_prompts_file", f"{path} line {n} is not JSON: {exc}", TRACE_SHAPE)
                    if not isinstance(r, dict):
                        raise bad("bad_prompts_file", f"{path} line {n} is not an object", TRACE_SHAPE)
                    rows.append((r.get("timestamp"), r.get("input_length"), r.get("output_length"), r.get("hash_ids") or []))
    except OSError as exc:
        raise bad(
            "bad_prompts_file",
            f"cannot read the trace {path}: {exc.strerror}",
            "the path is read on the server's host; copy the file there first",
        )
    kept: List[Tuple[float, list]] = []
    skipped = 0
    for ts, prompt, output, hashes in rows:
        try:
            t, p, o = float(ts), int(float(prompt)), int(float(output))
        except (TypeError, ValueError):
            if ts is None:
                raise bad(
                    "bad_prompts_file",
                    f"a request of the trace {path} has no timestamp",
                    "a replay needs each request's time; " + TRACE_SHAPE,
                )
            skipped += 1
            continue
        # BurstGPT logs failed requests with 0 response tokens: nothing to replay.
        if p < 1 or o < 1 or not math.isfinite(t):
            skipped += 1
            continue
        kept.append((t, [p, o, [h for h in hashes if isinstance(h, int)]]))
    if not kept:
        raise bad(
            "bad_prompts_file", f"the trace {path} holds no request to replay ({len(rows)} rows, {skipped} without lengths)", TRACE_SHAPE
        )
    kept.sort(key=lambda k: k[0])
    t0 = kept[0][0]
    offsets = [(t - t0) / unit for t, _ in kept]
    return offsets, [item for _, item in kept], {"format": fmt, "rows": len(rows), "skipped": skipped}


TRACE_SHAPE = (
    'a trace is JSONL of {"timestamp": ms, "input_length": N, "output_length": N, "hash_ids": [...]} (Mooncake) '
    "or BurstGPT's CSV (Timestamp, Request tokens, Response tokens)"
)


def quantiles(values: List[int]) -> Dict[str, float]:
    s = sorted(values)
    return {"mean": round(sum(s) / len(s), 1), "p50": s[len(s) // 2], "p99": s[min(len(s) - 1, int(0.99 * len(s)))], "max": s[-1]}


class TraceReplay(Workload):
    name = NAME
    title = "replay of a timestamped trace"
    detail = "Mooncake JSONL or BurstGPT CSV: each request at its own time with its own lengths, shared prefixes where its hash ids repeat"
    options = (
        Option(
            "--trace-speed",
            "float",
            ("macro",),
            "trace_replay: how much faster than recorded the trace plays at its own pace (2 = gaps halved); "
            "a --request-rate level scales the gaps to that mean rate instead",
            1.0,
            metavar="X",
        ),
        Option(
            "--trace-block-size",
            "int",
            ("macro",),
            "trace_replay: prompt tokens each hash id of the trace stands for (Mooncake's blocks are 512)",
            MOONCAKE_BLOCK_TOKENS,
            minimum=1,
        ),
    )
    takes_file = True
    modes = ("rate",)
    claim_order = 10

    def __init__(self) -> None:
        self.offsets: List[float] = []
        self.items: List[list] = []
        self.read: Dict[str, Any] = {}

    def claims(self, head: str) -> bool:
        if head.startswith(BURSTGPT_HEADER):
            return True
        try:
            first = json.loads(head.split("\n", 1)[0])
        except ValueError:
            return False
        return isinstance(first, dict) and "input_length" in first

    def check(self, args: argparse.Namespace, path: Optional[str]) -> None:
        if not args.trace_speed > 0 or math.isinf(args.trace_speed):
            raise events.AgentError(
                "bad_arguments", f"--trace-speed must be a positive number, got {args.trace_speed:g}", "1 plays the trace as recorded"
            )
        if args.request_rate and args.trace_speed != 1.0:
            raise events.AgentError(
                "bad_arguments",
                "--trace-speed and --request-rate both set the replay's pace",
                "give one: a speed ({0}), or the mean rates to scale the trace to ({1})",
                [events.flag("--trace-speed"), events.flag("--request-rate")],
            )
        given = str(getattr(args, "concurrency", "") or "")
        default = next(o.default for o in options.options_of("macro") if o.flag == "--concurrency")
        if not args.request_rate and given and given != default:
            raise events.AgentError(
                "bad_arguments",
                "a trace replay sends each request at its time, not at --concurrency levels",
                "leave the load out to play it at its own pace, or pass {0} to scale it to mean rates",
                [events.flag("--request-rate", "2,4")],
            )

    def own_rate(self) -> float:
        """Requests per second of the trace as recorded: the gaps between its first and last request."""
        span = self.offsets[-1] if self.offsets else 0.0
        return (len(self.offsets) - 1) / span if span > 0 else math.inf

    def loads(
        self, args: argparse.Namespace, path: Optional[str], concurrencies: List[int], rates: List[float]
    ) -> Tuple[List[int], List[float]]:
        self.offsets, self.items, self.read = read_trace(str(path))
        return [], rates or [self.own_rate() * args.trace_speed]

    def scale(self, rate: float) -> float:
        """A rate level's factor on the recorded gaps (1 at the trace's own rate)."""
        own = self.own_rate()
        return 0.0 if math.isinf(rate) or math.isinf(own) else own / rate

    def requests(self, args: argparse.Namespace, planned: Optional[int], rate: Optional[float]) -> Optional[int]:
        n = len(self.items)
        if args.duration and rate is not None:
            n = sum(1 for t in self.offsets if t * self.scale(rate) < args.duration) or 1
        return min(n, args.requests) if args.requests else n

    def period(self) -> int:
        return len(self.items)

    def arrivals(self, total: int, rate: float, rng: random.Random) -> Optional[List[float]]:
        k = self.scale(rate)
        return [t * k for t in self.offsets[:total]]

    def prepare(self, ctx: Context) -> Prepared:
        args = ctx.args
        hashes = [h for _, _, ids in self.items for h in ids]
        info = {
            "trace": {
                **self.read,
                "requests": len(self.items),
                "span_s": round(self.offsets[-1], 3),
                "own_rate": None if math.isinf(self.own_rate()) else round(self.own_rate(), 4),
                "block_size": args.trace_block_size,
                "input_tokens": quantiles([i[0] for i in self.items]),
                "output_tokens": quantiles([i[1] for i in self.items]),
                # The most a prefix cache could reuse: blocks seen before in the trace.
                "repeated_block_share": round(1 - len(set(hashes)) / len(hashes), 4) if hashes else None,
            }
        }
        t = info["trace"]
        events.log(
            f"trace {ctx.path} ({t['format']}): {t['requests']} requests over {t['span_s']:g} s"
            + (f" ({t['own_rate']:g} req/s as recorded)" if t["own_rate"] else "")
            + (f"; {t['skipped']} rows without lengths skipped" if t["skipped"] else "")
            + (f"; {100 * t['repeated_block_share']:.0f}% of its prompt blocks repeat an earlier one" if t["repeated_block_share"] else "")
        )
        return Prepared(maker_options={"source": TraceSource(self.items, args.trace_block_size)}, info=info)

    def level_meta(self, args: argparse.Namespace, prepared: Prepared) -> Dict[str, Any]:
        return {
            "input_len": None,
            "output_len": None,
            "trace": {k: prepared.info["trace"][k] for k in ("requests", "span_s", "own_rate", "format")},
        }


def source_from_json(d: dict) -> TraceSource:
    return TraceSource.from_json(d)


WORKLOAD = TraceReplay
