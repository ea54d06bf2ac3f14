"""The load generator's in-place parse of token messages (Engine._fast, templates) reads every stream as the general
parsers (ChunkedDecoder, SSEParser, a JSON parse per message) do: the same records, byte splits and shapes of all kinds."""

import itertools
import json
import os
import random
import select
import selectors
import socket
import sys
import time
import tracemalloc
import types
import unittest
from unittest import mock

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "agent"))

from infbench_agent.http import Endpoint  # noqa: E402
from infbench_agent.macro import client  # noqa: E402
from infbench_agent.macro.client import Engine, Stream  # noqa: E402

HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
# The fields a parse decides, and the stamps: run() reads its clock from a counter, so that two engines doing the same
# reads in the same order stamp them alike.
FIELDS = ("ok", "reason", "error", "client_tokens", "output_tokens", "prompt_tokens", "usage_problem", "done_marker", "answer")
STAMPS = ("send", "ttft", "itl", "e2el", "finish")


class General(Engine):
    """Every read through ChunkedDecoder and SSEParser, every message through a JSON parse: the reference."""

    def _fast(self, st, buf, pos, end, now):  # type: ignore[no-untyped-def]
        return pos


def poller_without_epoll() -> client.Poller:
    """A Poller as made on a platform without epoll (macOS, the BSDs): on select.poll."""
    with mock.patch.object(client, "select", types.SimpleNamespace(poll=select.poll)):
        return client.Poller()


class WithoutEpoll(Engine):
    def __init__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.sel.close()
        self.sel = poller_without_epoll()


def chunk(data: bytes, ext: bytes = b"") -> bytes:
    return b"%x%s\r\n" % (len(data), ext) + data + b"\r\n"


def completion(i: int, text: str, last: bool = False, spaces: bool = False) -> bytes:
    msg = {
        "id": "cmpl-7",
        "object": "text_completion",
        "created": 1764800000,
        "model": "m",
        "choices": [{"index": 0, "text": text, "logprobs": None, "finish_reason": "length" if last else None}],
        "usage": None,
    }
    sep = (", ", ": ") if spaces else (",", ":")
    return b"data: " + json.dumps(msg, separators=sep, ensure_ascii=False).encode() + b"\n\n"


def chat(delta: dict) -> bytes:
    msg = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [{"index": 0, "delta": delta}]}
    return b"data: " + json.dumps(msg, separators=(",", ":")).encode() + b"\n\n"


USAGE = b'data: {"id":"cmpl-7","choices":[],"usage":{"prompt_tokens":3,"total_tokens":9,"completion_tokens":%d}}\n\n'
END = chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n"


def run(engine_class: type, writes: list, keep_text: bool = False) -> dict:
    records: list = []
    engine = engine_class(Endpoint("http://127.0.0.1:1"), "/v1/completions", 60, records.append)
    a, b = socket.socketpair()
    ticks = itertools.count()
    with mock.patch("time.monotonic", lambda: 1000.0 + 0.001 * next(ticks)):
        return read(engine, records, a, b, writes, keep_text)


def read(engine: Engine, records: list, a: socket.socket, b: socket.socket, writes: list, keep_text: bool) -> dict:
    try:
        a.setblocking(False)
        job = {"id": 1, "intended": 0.0, "max_tokens": 1000, "keep_text": keep_text}
        st = Stream(job, a, b"", False, time.monotonic() + 60)
        st.record["send"] = st.quiet_since = time.monotonic()
        engine.active[a.fileno()] = st
        engine.sel.register(a, selectors.EVENT_READ, st)
        for data in writes:
            if records:
                break  # the request ended (failed): the engine closed its end
            b.sendall(data)
            engine.poll(0.5)
            while engine.last_reads and engine.in_flight:
                engine.poll(0)
        deadline = time.monotonic() + 5
        if engine.in_flight:
            b.shutdown(socket.SHUT_WR)
        while engine.in_flight and time.monotonic() < deadline:
            engine.poll(0.05)
    finally:
        engine.close()
        a.close()
        b.close()
    [rec] = records
    out = {k: rec.get(k) for k in FIELDS + STAMPS}
    out["itl_samples"] = len(rec["itl"])
    out["ttft_set"] = rec["ttft"] is not None
    return out


def splits(body: bytes, rng: random.Random, mode: str) -> list:
    if mode == "whole":
        return [body]
    cuts = sorted(rng.sample(range(1, len(body)), min(len(body) - 1, rng.randint(1, 40))))
    return [body[i:j] for i, j in zip([0] + cuts, cuts + [len(body)])]


class FastParseTest(unittest.TestCase):
    def same(self, writes: list, keep_text: bool = False) -> dict:
        general = run(General, writes, keep_text)
        fast = run(Engine, writes, keep_text)
        self.assertEqual(fast, general)
        self.assertEqual(run(WithoutEpoll, writes, keep_text), general)
        return fast

    def test_a_plain_stream_one_chunk_a_read(self) -> None:
        body = [chunk(completion(i, f" t{i}", i == 19)) for i in range(20)]
        rec = self.same([HEAD] + body + [chunk(USAGE % 20) + END])
        self.assertTrue(rec["ok"])
        self.assertEqual((rec["client_tokens"], rec["output_tokens"], rec["itl_samples"]), (20, 20, 19))

    def test_texts_that_escape_or_are_empty_or_not_ascii(self) -> None:
        texts = [" a", "", ' q"uote', " back\\slash", " new\nline", " é", " 日本", "\t", " x", "", " y", " \u2028"]
        for spaces in (False, True):
            body = [chunk(completion(i, t, spaces=spaces)) for i, t in enumerate(texts)]
            rec = self.same([HEAD] + body + [chunk(USAGE % len(texts)) + END], keep_text=True)
            self.assertTrue(rec["ok"])
            self.assertEqual("".join(rec["answer"]), "".join(texts))
            self.assertEqual(rec["client_tokens"], sum(1 for t in texts if t))

    def test_a_raw_control_character_in_a_text_fails_the_request_as_before(self) -> None:
        body = [chunk(completion(i, " ok")) for i in range(3)] + [chunk(completion(3, " ok").replace(b" ok", b"\x01ok"))]
        rec = self.same([HEAD] + body + [chunk(USAGE % 4) + END])
        self.assertFalse(rec["ok"])
        self.assertEqual(rec["reason"], "bad_stream")

    def test_an_error_message_after_tokens(self) -> None:
        body = [chunk(completion(i, " ok")) for i in range(5)]
        err = chunk(b'data: {"error":{"message":"out of memory"}}\n\n')
        rec = self.same([HEAD] + body + [err, END])
        self.assertEqual(rec["reason"], "server_error_in_stream")

    def test_a_message_shaped_otherwise_with_the_same_text_key(self) -> None:
        # After the template: a message with usage, one with an error beside its choices, one with two choices.
        body = [chunk(completion(i, " ok")) for i in range(4)]
        odd = [
            chunk(completion(4, " ok").replace(b'"usage":null', b'"usage":{"completion_tokens":5}')),
            chunk(completion(5, " ok").replace(b'"usage":null', b'"usage":null,"error":"x"')),
            chunk(completion(6, " ok")),
        ]
        rec = self.same([HEAD] + body + odd + [END])
        self.assertTrue(rec["ok"])
        self.assertEqual(rec["client_tokens"], 7)

    def test_two_events_in_a_chunk_several_chunks_in_a_read_and_extensions(self) -> None:
        b1 = chunk(completion(0, " a") + completion(1, " b"))
        b2 = chunk(completion(2, " c"), b";ext=1") + chunk(completion(3, " d")) + chunk(completion(4, " e"))
        b3 = chunk(b"data: " + completion(5, " f")[6:-2] + b"\r\n\r\n") + chunk(b": keep-alive\n\n") + chunk(completion(6, " g"))
        rec = self.same([HEAD, b1, b2, b3, chunk(USAGE % 7) + END])
        self.assertEqual(rec["client_tokens"], 7)

    def test_a_chat_stream_with_a_role_only_opening_and_reasoning(self) -> None:
        msgs = [chat({"role": "assistant", "content": ""})]
        msgs += [chat({"reasoning_content": f" r{i}"}) for i in range(3)]
        msgs += [chat({"content": f" c{i}"}) for i in range(5)] + [chat({"content": ""}), chat({"content": " z"})]
        for first_alone in (True, False):
            body = [chunk(m) for m in msgs]
            writes = [HEAD] + body if first_alone else [HEAD + b"".join(body[:2])] + body[2:]
            rec = self.same(writes + [END], keep_text=True)
            self.assertTrue(rec["ok"])
            self.assertEqual("".join(rec["answer"]), " r0 r1 r2 c0 c1 c2 c3 c4 z")

    def test_a_template_from_a_role_only_opening_stamps_the_first_token(self) -> None:
        # The opening and the tokens differ only in the text: a template learned from the opening.
        msgs = [chat({"role": "assistant", "content": ""})] + [chat({"role": "assistant", "content": f" w{i}"}) for i in range(4)]
        rec = self.same([HEAD] + [chunk(m) for m in msgs] + [END])
        self.assertTrue(rec["ok"] and rec["ttft_set"])
        self.assertEqual((rec["client_tokens"], rec["itl_samples"]), (4, 3))

    def test_random_splits_and_merges_of_streams(self) -> None:
        rng = random.Random(7)
        pool = [" a", " bb", "", ' "', " \\", " é", " ok", "\n", " 1", " x" * 30]
        for case in range(60):
            n = rng.randint(1, 40)
            parts = [completion(i, rng.choice(pool), i == n - 1, spaces=case % 2 == 1) for i in range(n)]
            if rng.random() < 0.3:
                parts.insert(rng.randrange(len(parts) + 1), b": comment\n\n")
            body = b"".join(chunk(p) for p in parts) + chunk(USAGE % n) + END
            writes = [HEAD] + splits(body, rng, "whole" if case % 5 == 0 else "cut")
            if rng.random() < 0.5:
                # Chunks one per write, as a paced server sends them, their first bytes with the headers.
                writes = [HEAD + chunk(parts[0])] + [chunk(p) for p in parts[1:]] + [chunk(USAGE % n) + END]
            self.same(writes, keep_text=True)

    def test_the_body_cut_in_the_middle_of_a_chunk(self) -> None:
        body = b"".join(chunk(completion(i, " t")) for i in range(6))
        rec = self.same([HEAD, body[: len(body) // 2]])
        self.assertEqual(rec["reason"], "stream_cut")


class PollerTest(unittest.TestCase):
    def test_registering_again_changes_what_a_socket_is_watched_for(self) -> None:
        for poller in (client.Poller(), poller_without_epoll()):
            a, b = socket.socketpair()
            try:
                poller.register(a, selectors.EVENT_READ | selectors.EVENT_WRITE, "x")
                [(fd, bits)] = poller.poll(0)
                self.assertEqual((fd, bits & client._WRITABLE != 0, bits & client._READABLE != 0), (a.fileno(), True, False))
                poller.register(a, selectors.EVENT_READ, "y")
                self.assertEqual(poller.poll(0), [])
                b.send(b"1")
                [(fd, bits)] = poller.poll(1)
                self.assertTrue(bits & client._READABLE)
                self.assertEqual(poller.data[fd], "y")
            finally:
                poller.close()
                a.close()
                b.close()

    def test_a_socket_closed_before_it_is_unregistered_is_found_by_the_object(self) -> None:
        poller = client.Poller()
        a, b = socket.socketpair()
        poller.register(a, selectors.EVENT_READ, None)
        a.close()
        poller.unregister(a)
        self.assertEqual((poller.data, poller.files), ({}, {}))
        with self.assertRaises(KeyError):
            poller.unregister(a)
        # No socket at all: a poll waits out its timeout and finds nothing.
        self.assertEqual(poller.poll(0.001), [])
        poller.close()
        b.close()


class ReadBufferTest(unittest.TestCase):
    def test_an_engine_allocates_no_read_buffer_when_made(self) -> None:
        # A level makes its Engine after its start time: a 4 MiB buffer made then read as 12 ms of client lag at c=1.
        tracemalloc.start()
        try:
            engine = Engine(Endpoint("http://127.0.0.1:1"), "/v1/completions", 60, lambda r: None)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        engine.close()
        self.assertLess(peak, 64 << 10)

    def test_a_poll_that_finds_the_shared_buffer_held_reads_into_its_own(self) -> None:
        body = [chunk(completion(i, f" t{i}", i == 9)) for i in range(10)]
        writes = [HEAD] + body + [chunk(USAGE % 10) + END]
        alone = run(Engine, writes, keep_text=True)
        before = bytes(client._READ_BUF[:4096])
        with client._READ_BUF_HELD:
            beside = run(Engine, writes, keep_text=True)
        self.assertEqual(beside, alone)
        self.assertTrue(beside["ok"])
        # The holder's bytes are as it left them.
        self.assertEqual(bytes(client._READ_BUF[:4096]), before)


if __name__ == "__main__":
    unittest.main()
