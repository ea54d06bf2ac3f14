"""The hostile-server sweep: the agent's load generator (its streaming Engine, /v1/models discovery and
/tokenize counting) against servers that answer as a broken or hostile one would, each behaviour in seeded
variants (the response cut at random points, paced at random). test/fuzz/hostileServers.fuzz.ts runs it and
tallies the outcomes; run by hand: python3 test/fuzz/hostile_servers.py --seed 35 --variants 3.

Each case prints one JSON line: {"case", "outcome", "what"}, the outcome one of
- ok: the request ended as the behaviour should end it (a failure with its reason, or a measurement
  with the counts the stream holds), every string of its record free of control characters;
- crash: an exception escaped the load generator (it would end the run);
- hang: no record within a bound well past --stall-timeout, or one held until the whole-request timeout
  where the stall bound should have ended it (it would hold the level);
- silent-wrong: a record that says something untrue (a success for a broken answer, counts the stream
  does not hold, a failure for a good answer, raw control characters).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import socket
import sys
import threading
import time
import traceback
from typing import Callable, Dict, List, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "agent"))

from infbench_agent import events  # noqa: E402
from infbench_agent.http import Endpoint  # noqa: E402
from infbench_agent.macro import prompts as macro_prompts, server_side as macro_server  # noqa: E402
from infbench_agent.macro.client import Engine  # noqa: E402
from infbench_agent.macro.prompts import tokenize_count  # noqa: E402
from infbench_agent.macro.server_side import discover  # noqa: E402

# The bounds on a whole /v1/models or /tokenize reply, shortened from 10 s so that a trickled one takes 1 s.
macro_server.MODELS_TIMEOUT_S = macro_prompts.TOKENIZE_TIMEOUT_S = 1.0

STALL_S = 0.5
REQUEST_TIMEOUT_S = 5.0
# A record later than this is a hang: the stall bound and the request timeout both passed.
HANG_S = REQUEST_TIMEOUT_S + 3.0
TERMINAL = "\x1b]0;PWNED-TITLE\x07 the engine died \x1b[2J\x9b31m\u202eevil\x00"
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
NESTED = "[" * 100000 + "]" * 100000

# A behaviour's script: ("send", bytes) written in seeded pieces, ("sleep", s), ("hold",) until the client goes.
Script = List[tuple]


def tok(text: str) -> bytes:
    return json.dumps({"choices": [{"index": 0, "text": text}]}).encode()


def usage(completion: object, prompt: object = 5) -> bytes:
    return b'{"choices":[],"usage":{"prompt_tokens":%s,"completion_tokens":%s}}' % (str(prompt).encode(), str(completion).encode())


def sse(*messages: bytes, done: bool = True) -> bytes:
    body = b"".join(b"data: " + m + b"\n\n" for m in messages) + (b"data: [DONE]\n\n" if done else b"")
    return body


def chunked(body: bytes, end: bool = True) -> bytes:
    return (b"%x\r\n%s\r\n" % (len(body), body) if body else b"") + (b"0\r\n\r\n" if end else b"")


HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
GOOD = [tok(" a"), tok(" b"), tok(" c"), tok(" d")]


def stream(*messages: bytes, done: bool = True, end: bool = True) -> Script:
    return [("send", HEAD + chunked(sse(*messages, done=done), end))]


def plain(status: str, body: bytes, headers: str = "") -> Script:
    head = f"HTTP/1.1 {status}\r\n{headers}Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
    return [("send", head + body)]


def pinged(tokens: List[bytes], last: bytes) -> Script:
    """A stream with an SSE keep-alive comment after every token: comments between tokens are no stall."""
    script: Script = [("send", HEAD)]
    for m in tokens:
        script += [("send", chunked(b"data: " + m + b"\n\n", False)), ("send", chunked(b": ping\n\n", False))]
    return script + [("send", chunked(sse(last), True))]


# Each behaviour: its script (given the case's random source), and what the record must say: "ok:N" a
# measurement of N output tokens as the stream holds them, "usage:N" the same with the server's usage refused,
# "fail" any failure, "fail:REASON" that failure.
Behaviour = Tuple[Callable[[random.Random], Script], str]
STREAMS: Dict[str, Behaviour] = {
    "good": (lambda r: stream(*GOOD, usage(4)), "ok:4"),
    "good_no_usage": (lambda r: stream(*GOOD), "ok:4"),
    "empty_text": (lambda r: stream(tok(" a"), tok(""), tok(" c"), tok(" d"), usage(4)), "ok:4"),
    "choices_string": (lambda r: stream(tok(" a"), b'{"choices":"abc"}'), "fail:bad_response"),
    "choices_object": (lambda r: stream(tok(" a"), b'{"choices":{"text":"x"}}'), "fail:bad_response"),
    "choices_null": (lambda r: stream(tok(" a"), b'{"choices":[null]}'), "fail:bad_response"),
    "delta_string": (lambda r: stream(tok(" a"), b'{"choices":[{"delta":"x"}]}'), "fail:bad_response"),
    "not_json_message": (lambda r: stream(tok(" a"), b"{oops"), "fail:bad_stream"),
    "nested_message": (lambda r: stream(tok(" a"), NESTED.encode()), "fail:bad_response"),
    "usage_string": (lambda r: stream(*GOOD, usage('"4"', '"5"')), "usage:4"),
    "usage_infinite": (lambda r: stream(*GOOD, usage("1e999")), "usage:4"),
    "usage_ten_times": (lambda r: stream(*GOOD, usage(40)), "usage:4"),
    "usage_negative": (lambda r: stream(*GOOD, usage(-15)), "usage:4"),
    "usage_30_digits": (lambda r: stream(*GOOD, usage("123456789012345678901234567890")), "usage:4"),
    "prompt_usage_absurd": (lambda r: stream(*GOOD, usage(4, 999999)), "usage:4"),
    "no_done": (lambda r: stream(*GOOD, usage(4), done=False), "fail:stream_cut"),
    "cut_mid_chunk": (lambda r: [("send", HEAD + b"40\r\ndata: " + tok(" a")[:10])], "fail:stream_cut"),
    "chunk_size_zz": (lambda r: [("send", HEAD + chunked(sse(tok(" a")), False) + b"zz\r\nxx\r\n0\r\n\r\n")], "fail:bad_response"),
    "chunk_size_plus": (lambda r: [("send", HEAD + b"+5\r\nhello\r\n0\r\n\r\n")], "fail:bad_response"),
    "content_length_abc": (
        lambda r: [("send", b"HTTP/1.1 200 OK\r\nContent-Length: abc\r\nConnection: close\r\n\r\n" + sse(*GOOD))],
        "fail:bad_response",
    ),
    "content_length_superscript": (
        lambda r: [("send", "HTTP/1.1 200 OK\r\nContent-Length: \u00b2\r\nConnection: close\r\n\r\n".encode() + sse(*GOOD))],
        "fail:bad_response",
    ),
    "status_plus": (lambda r: [("send", HEAD.replace(b" 200 ", b" +200 ") + chunked(sse(*GOOD)))], "fail:bad_response"),
    "status_garbage": (lambda r: [("send", b"XTTP/9 ok\r\n\r\n")], "fail"),
    "huge_headers": (lambda r: [("send", b"HTTP/1.1 200 OK\r\nX-Pad: " + b"x" * 70000)], "fail:bad_response"),
    "close_at_once": (lambda r: [], "fail"),
    "garbage_bytes": (lambda r: [("send", bytes(r.getrandbits(8) for _ in range(r.randint(1, 4096))))], "fail"),
    "terminal_500": (
        lambda r: plain("500 Internal Server Error", json.dumps({"error": {"message": TERMINAL}}).encode()),
        "fail:http_500",
    ),
    "terminal_500_text": (lambda r: plain("500 Internal Server Error", TERMINAL.encode()), "fail:http_500"),
    "terminal_sse_error": (
        lambda r: stream(tok(" a"), json.dumps({"error": {"message": TERMINAL}}).encode()),
        "fail:server_error_in_stream",
    ),
    "huge_500_body": (lambda r: plain("500 Internal Server Error", b"E" * 3_000_000), "fail:http_500"),
    "endless_500_body": (
        lambda r: [
            ("send", b"HTTP/1.1 500 Internal Server Error\r\nTransfer-Encoding: chunked\r\n\r\n"),
            ("trickle", chunked(b"E" * 60000, False) * 1000, 0.05),
        ],
        "fail:stalled",
    ),
    "big_first_token": (lambda r: stream(tok("x" * 2_000_000), *GOOD[1:], usage(4)), "ok:4"),
    "stalls": (lambda r: [("send", HEAD + chunked(sse(tok(" a"), tok(" b"), done=False), False)), ("hold",)], "fail:stalled"),
    "silent": (lambda r: [("hold",)], "fail:stalled"),
    "trickle_headers": (lambda r: [("trickle", HEAD + b"X-Pad: " + b"x" * 1000, 0.1)], "fail:stalled"),
    "keepalive_pings": (lambda r: [("send", HEAD), ("trickle", chunked(b": ping\n\n", False) * 1000, 0.1)], "fail:stalled"),
    "keepalive_between_tokens": (lambda r: pinged(GOOD, usage(4)), "ok:4"),
}

# /v1/models and /tokenize replies: "model" a model found (its name printable), "refused" an AgentError saying
# why, "none" no count.
REPLIES: Dict[str, Tuple[str, object, str]] = {
    # A reply a few bytes a tenth of a second: bounded as a whole, not per read.
    "models_trickled": ("/v1/models", [("trickle", b"HTTP/1.1 200 OK\r\n\r\n" + b" " * 100000, 0.1)], "refused"),
    "tokenize_trickled": ("/tokenize", [("trickle", b"HTTP/1.1 200 OK\r\n\r\n" + b" " * 100000, 0.1)], "none"),
    "models_nested": ("/v1/models", b'{"data":' + NESTED.encode() + b"}", "refused"),
    "models_not_json": ("/v1/models", b"<html>", "refused"),
    "models_data_number": ("/v1/models", b'{"data": 5}', "refused"),
    "models_id_terminal": ("/v1/models", json.dumps({"data": [{"id": "m" + TERMINAL, "owned_by": TERMINAL}]}).encode(), "model"),
    "models_id_number": ("/v1/models", b'{"data": [{"id": 5}]}', "refused"),
    "tokenize_nested": ("/tokenize", NESTED.encode(), "none"),
    "tokenize_nan": ("/tokenize", b'{"count": NaN}', "none"),
    "tokenize_list": ("/tokenize", b"[1,2,3]", "none"),
}


class Server:
    """A loopback server that plays the script of the case a request names (its body's "prompt")."""

    def __init__(self) -> None:
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.scripts: Dict[str, Script] = {}
        self.rng = random.Random(0)
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self.answer, args=(conn,), daemon=True).start()

    def answer(self, conn: socket.socket) -> None:
        try:
            data = b""
            while b"\r\n\r\n" not in data:
                more = conn.recv(65536)
                if not more:
                    return
                data += more
            head, _, body = data.partition(b"\r\n\r\n")
            length = re.search(rb"content-length: *(\d+)", head, re.I)
            while length and len(body) < int(length.group(1)):
                body += conn.recv(65536)
            path = head.split(b" ")[1].decode()
            name = json.loads(body)["prompt"] if body else path
            self.play(conn, self.scripts.get(name, []))
        except OSError:
            pass
        finally:
            conn.close()

    def play(self, conn: socket.socket, script: Script) -> None:
        for step in script:
            if step[0] == "send":
                data, pos = step[1], 0
                while pos < len(data):
                    # Seeded pieces, so that every parser meets its input cut at other places.
                    n = self.rng.choice((1, 7, 100, 4096, len(data)))
                    conn.sendall(data[pos : pos + n])
                    pos += n
            elif step[0] == "trickle":
                for i in range(0, len(step[1]), 9):
                    conn.sendall(step[1][i : i + 9])
                    time.sleep(step[2])
            elif step[0] == "hold":
                conn.settimeout(HANG_S + 5)
                try:
                    conn.recv(1)
                except OSError:
                    pass


def judge_stream(name: str, expect: str, rec: dict) -> Tuple[str, str]:
    shown = [v for v in (rec.get("error"), rec.get("usage_problem")) if isinstance(v, str)]
    if any(CONTROL.search(v) for v in shown):
        return "silent-wrong", f"raw control characters in {shown}"
    kind, _, value = expect.partition(":")
    if kind == "fail":
        if rec["ok"]:
            return "silent-wrong", f"measured as a success ({rec.get('output_tokens')} tokens), expected a failure"
        if value == "stalled" and rec["reason"] == "timeout":
            return "hang", f"held until the whole-request timeout ({rec['error']}), not failed at the stall bound"
        if value and rec["reason"] != value:
            return "silent-wrong", f"failed as {rec['reason']} ({rec['error']}), expected {value}"
        return "ok", ""
    if not rec["ok"]:
        return "silent-wrong", f"failed as {rec['reason']} ({rec['error']}), expected a measurement"
    if rec["output_tokens"] != int(value) or rec["ttft"] is None:
        return "silent-wrong", f"{rec['output_tokens']} output tokens, the stream holds {value}"
    if kind == "usage" and not rec.get("usage_problem"):
        return "silent-wrong", "an impossible usage was taken"
    if (rec.get("prompt_tokens") or 0) > 100000:
        return "silent-wrong", f"prompt_tokens {rec['prompt_tokens']} taken"
    return "ok", ""


def run_stream(server: Server, name: str, expect: str) -> Tuple[str, str]:
    records: List[dict] = []
    engine = Engine(Endpoint(server.url), "/v1/completions", REQUEST_TIMEOUT_S, records.append, stall_timeout=STALL_S)
    try:
        engine.start({"id": 0, "max_tokens": 8, "est_prompt_tokens": 5}, json.dumps({"prompt": name}).encode())
        deadline = time.monotonic() + HANG_S
        while not records and time.monotonic() < deadline:
            engine.poll(0.02)
    except Exception:  # noqa: BLE001 - what escapes the load generator is what the sweep counts
        return "crash", traceback.format_exc(limit=3)
    finally:
        engine.close()
    if not records:
        return "hang", f"no record after {HANG_S:g} s"
    return judge_stream(name, expect, records[0])


def run_reply(server: Server, name: str, path: str, expect: str) -> Tuple[str, str]:
    # In a thread of its own, so that a reply read without end counts as a hang instead of holding the sweep.
    outcome: List[Tuple[str, str]] = []
    worker = threading.Thread(target=lambda: outcome.append(ask(server, name, path, expect)), daemon=True)
    worker.start()
    worker.join(HANG_S)
    return outcome[0] if outcome else ("hang", f"no answer after {HANG_S:g} s")


def ask(server: Server, name: str, path: str, expect: str) -> Tuple[str, str]:
    endpoint = Endpoint(server.url)
    try:
        if path == "/tokenize":
            count = tokenize_count(endpoint, {"model": "m", "prompt": name})
            return ("ok", "") if count is None else ("silent-wrong", f"a count of {count} taken")
        info = discover(endpoint, server.url, None)
    except events.AgentError as exc:
        if expect != "refused":
            return "silent-wrong", f"refused: {exc}"
        return ("silent-wrong", f"raw control characters: {exc}") if CONTROL.search(str(exc)) else ("ok", "")
    except Exception:  # noqa: BLE001
        return "crash", traceback.format_exc(limit=3)
    if expect != "model":
        return "silent-wrong", f"took a model from it: {info}"
    if any(CONTROL.search(str(v)) for k, v in info.items() if k != "request_model"):
        return "silent-wrong", f"raw control characters in {info}"
    return "ok", ""


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--seed", type=int, default=35)
    p.add_argument("--variants", type=int, default=3)
    args = p.parse_args()
    server = Server()
    # The agent's own warnings (an unreadable /tokenize) go to stderr: stdout is the tally's.
    sys.stdout, out = sys.stderr, sys.stdout
    for variant in range(args.variants):
        for name, (make, expect) in STREAMS.items():
            rng = random.Random(f"{args.seed}:{name}:{variant}")
            server.rng = random.Random(rng.random())
            server.scripts[name] = make(rng)
            outcome, what = run_stream(server, name, expect)
            out.write(json.dumps({"case": f"{name}#{variant}", "outcome": outcome, "what": what}) + "\n")
            out.flush()
        for name, (path, body, expect) in REPLIES.items():
            # /tokenize is asked with the case's name as its prompt; /v1/models by its path.
            script = body if isinstance(body, list) else plain("200 OK", body)  # type: ignore[arg-type]
            server.scripts[name if path == "/tokenize" else path] = script
            outcome, what = run_reply(server, name, path, expect)
            out.write(json.dumps({"case": f"{name}#{variant}", "outcome": outcome, "what": what}) + "\n")
            out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
