#!/usr/bin/env python3
"""CPU per token of the load generator's read path alone (Engine.poll: select, recv, chunk and SSE split, message
parse, the request's record), without a server: --streams socket pairs, each written one token chunk of the paced
server's shape per round, then the engine polled until it has read them all; only the polls are timed (process
CPU time), so the writes, and most of what a busy host adds, stay out of the figure.

    python3 bench/macro-parse-cost.py                          # this checkout's agent, 512 streams, 150 tokens
    python3 bench/macro-parse-cost.py --agent OLD/agent        # another commit's agent folder, for before/after
    python3 bench/macro-parse-cost.py --tokens-per-write 5     # five tokens a read, as a late client reads them
    python3 bench/macro-parse-cost.py --ready 8                # eight sockets ready a poll (a select's share at 512 paced
                                                               # streams on a quiet 16-core host)

Run from the repository root; standard library only. Every request must end complete with all its tokens.
"""
from __future__ import annotations

import argparse
import os
import selectors
import socket
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--agent", default=os.path.join(ROOT, "agent"), help="the agent folder to measure")
    p.add_argument("--streams", type=int, default=512)
    p.add_argument("--tokens", type=int, default=150)
    p.add_argument("--tokens-per-write", type=int, default=1)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument(
        "--ready",
        type=int,
        default=0,
        help="sockets written before each poll (default all of them): a few lay each poll's own cost (the select) on few "
        "tokens; timed by the wall clock (a CPU clock read costs microseconds itself), so run it on a quiet host",
    )
    a = p.parse_args()
    sys.path.insert(0, os.path.abspath(a.agent))
    try:
        from infbench_agent.http import Endpoint
        from infbench_agent.macro.client import Engine, Stream
    except ImportError:  # the agent before its modules moved into packages
        from infbench_agent.loadgen_http import Endpoint, Engine, Stream  # type: ignore[no-redef]

    usage = b'data: {"id":"x","object":"text_completion","created":1,"model":"m","choices":[],"usage":'
    usage += b'{"prompt_tokens":32,"total_tokens":%d,"completion_tokens":%d}}\n\n' % (32 + a.tokens, a.tokens)
    tail = chunk(usage) + chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n"
    print(
        f"{a.streams} streams, {a.tokens} tokens each, {a.tokens_per_write} a write; Python {sys.version.split()[0]}; "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    for _ in range(a.repeat):
        records: list = []
        engine = Engine(Endpoint("http://127.0.0.1:1"), "/v1/completions", 600, records.append)
        pairs = []
        for i in range(a.streams):
            ours, theirs = socket.socketpair()
            ours.setblocking(False)
            st = Stream({"id": i, "intended": 0.0, "max_tokens": a.tokens}, ours, b"", False, time.monotonic() + 600)
            st.record["send"] = st.quiet_since = time.monotonic()
            engine.active[ours.fileno()] = st
            engine.sel.register(ours, selectors.EVENT_READ, st)
            pairs.append((ours, theirs))
        for _, theirs in pairs:
            theirs.send(HEAD)
        engine.poll(0)
        cpu = 0.0
        reads = 0
        # --ready: the time of each group's polls per token, for a median that a preempted poll does not move.
        per_token: list = []
        group = a.ready or a.streams
        # A CPU clock read is a system call of a few µs: per poll of one socket it would be most of the figure.
        clock = time.perf_counter if a.ready else time.process_time
        for first in range(0, a.tokens, a.tokens_per_write):
            for g in range(0, a.streams, group):
                for i in range(g, min(a.streams, g + group)):
                    data = b"".join(token(i, k == a.tokens - 1) for k in range(first, min(a.tokens, first + a.tokens_per_write)))
                    pairs[i][1].send(data)
                want = min(a.streams, g + group) - g
                c0 = clock()
                # Polled until every socket written was read: one poll each when --ready is small.
                while want > 0:
                    engine.poll(0)
                    if not engine.last_reads:
                        raise SystemExit("a poll read nothing while written sockets waited")
                    reads += engine.last_reads
                    want -= engine.last_reads
                took = clock() - c0
                cpu += took
                per_token.append(took / (min(a.streams, g + group) - g))
        for _, theirs in pairs:
            theirs.send(tail)
        while engine.in_flight:
            engine.poll(0.01)
        engine.close()
        for ours, theirs in pairs:
            ours.close()
            theirs.close()
        bad = [r for r in records if not r["ok"] or r["output_tokens"] != a.tokens or len(r["itl"]) != a.tokens - 1]
        if bad or len(records) != a.streams:
            raise SystemExit(f"{len(bad)} requests read wrong, e.g. {bad[:1]}")
        what = "wall-clock time" if a.ready else "CPU"
        median = f", median {1e6 * sorted(per_token)[len(per_token) // 2]:.2f}" if a.ready else ""
        print(f"  {1e6 * cpu / (a.streams * a.tokens):.2f} µs of {what} per token in Engine.poll{median} ({reads} reads)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
