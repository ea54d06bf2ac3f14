#!/usr/bin/env python3
"""Engine.poll of two load-generator clients in one process, turn by turn: the time per token of each poll of
--ready sockets, another agent folder's macro/client.py (--agent, "before") against this checkout's ("after").

On a shared host the speed of the machine moves by tens of percent within a minute, more than a change to the
client does; polled in turn, both clients meet the same moments and their medians compare. Each keeps --streams
socket pairs, and every round writes one token chunk of the paced server's shape to --ready of them, then polls
until it has read them; the medians of each poll's wall-clock time per token are printed (a CPU clock read is
itself a system call of microseconds).

    python3 bench/macro-poll-ab.py --agent OLD/agent             # 512 streams, 8 sockets a poll
    python3 bench/macro-poll-ab.py --agent OLD/agent --ready 1   # one socket a poll: the poll's own cost per token

Run from the repository root; standard library only. The other modules (http, metrics) are this checkout's, so
the older client must import what they still have. Every request must end complete with all its tokens.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import selectors
import socket
import sys
import time
from types import ModuleType

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "agent"))

from infbench_agent.http import Endpoint  # noqa: E402
from infbench_agent.macro.drive import raise_open_file_limit  # noqa: E402


def chunk(data: bytes) -> bytes:
    return b"%x\r\n" % len(data) + data + b"\r\n"


def token(stream: int, last: bool) -> bytes:
    # bench/paced-server.mjs's token message, byte for byte but the numbers.
    return chunk(
        b'data: {"id":"cmpl-%d","object":"text_completion","created":1764800000,"model":"paced-test-server","choices":'
        b'[{"index":0,"text":" tok","logprobs":null,"finish_reason":%s,"stop_reason":null}],"usage":null}\n\n'
        % (stream, b'"length"' if last else b"null")
    )


HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ncache-control: no-cache\r\n"
    b"connection: keep-alive\r\nkeep-alive: timeout=60\r\ntransfer-encoding: chunked\r\n\r\n"
)


def load(path: str, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Side:
    """One client's engine, its socket pairs and its poll times."""

    def __init__(self, client: ModuleType, streams: int, tokens: int) -> None:
        self.records: list = []
        self.engine = client.Engine(Endpoint("http://127.0.0.1:1"), "/v1/completions", 600, self.records.append)
        self.pairs = []
        self.per_token: list = []
        for i in range(streams):
            ours, theirs = socket.socketpair()
            ours.setblocking(False)
            st = client.Stream({"id": i, "intended": 0.0, "max_tokens": tokens}, ours, b"", False, time.monotonic() + 600)
            st.record["send"] = st.quiet_since = time.monotonic()
            self.engine.active[ours.fileno()] = st
            self.engine.sel.register(ours, selectors.EVENT_READ, st)
            self.pairs.append((ours, theirs))
            theirs.send(HEAD)
        self.engine.poll(0)

    def round(self, messages: list, first: int, count: int) -> None:
        for i in range(first, first + count):
            self.pairs[i][1].send(messages[i])
        want = count
        t0 = time.perf_counter()
        while want > 0:
            self.engine.poll(0)
            if not self.engine.last_reads:
                raise SystemExit("a poll read nothing while written sockets waited")
            want -= self.engine.last_reads
        self.per_token.append((time.perf_counter() - t0) / count)

    def finish(self, tokens: int) -> None:
        usage = b'data: {"id":"x","object":"text_completion","created":1,"model":"m","choices":[],"usage":'
        usage += b'{"prompt_tokens":32,"total_tokens":%d,"completion_tokens":%d}}\n\n' % (32 + tokens, tokens)
        tail = chunk(usage) + chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n"
        for _, theirs in self.pairs:
            theirs.send(tail)
        while self.engine.in_flight:
            self.engine.poll(0.01)
        self.engine.close()
        for ours, theirs in self.pairs:
            ours.close()
            theirs.close()
        bad = [r for r in self.records if not r["ok"] or r["output_tokens"] != tokens or len(r["itl"]) != tokens - 1]
        if bad or len(self.records) != len(self.pairs):
            raise SystemExit(f"{len(bad)} requests read wrong, e.g. {bad[:1]}")

    def quantile(self, q: float) -> float:
        ordered = sorted(self.per_token)
        return 1e6 * ordered[int(q * (len(ordered) - 1))]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--agent", required=True, help="the other agent folder (its infbench_agent/macro/client.py is 'before')")
    p.add_argument("--streams", type=int, default=512)
    p.add_argument("--tokens", type=int, default=60)
    p.add_argument("--ready", type=int, default=8, help="sockets written before each poll")
    p.add_argument("--repeat", type=int, default=3)
    a = p.parse_args()
    if a.streams % a.ready:
        raise SystemExit("--streams must be a multiple of --ready")
    # Four sockets a stream, the two clients' pairs.
    raise_open_file_limit()
    before = load(os.path.join(os.path.abspath(a.agent), "infbench_agent", "macro", "client.py"), "client_before")
    after = load(os.path.join(ROOT, "agent", "infbench_agent", "macro", "client.py"), "client_after")
    print(
        f"{a.streams} streams, {a.tokens} tokens each, {a.ready} socket{'s' if a.ready > 1 else ''} a poll; "
        f"Python {sys.version.split()[0]}; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    print("  µs per token, median (p25) of each poll:   before          after    after - before")
    messages = [[token(i, k == a.tokens - 1) for i in range(a.streams)] for k in range(a.tokens)]
    for _ in range(a.repeat):
        sides = [Side(before, a.streams, a.tokens), Side(after, a.streams, a.tokens)]
        for k in range(a.tokens):
            for first in range(0, a.streams, a.ready):
                for side in sides:
                    side.round(messages[k], first, a.ready)
        for side in sides:
            side.finish(a.tokens)
        b, f = sides
        print(
            f"  {'':40} {b.quantile(0.5):6.2f} ({b.quantile(0.25):5.2f})  {f.quantile(0.5):6.2f} ({f.quantile(0.25):5.2f})"
            f"  {f.quantile(0.5) - b.quantile(0.5):+6.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
