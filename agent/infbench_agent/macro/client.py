"""The load generator's streaming HTTP client: one epoll loop (Poller), raw non-blocking sockets, no threads.

Each in-flight request is a small state machine (connect, send, read headers, read a chunked or
length-delimited body, split SSE events). Every recv() is stamped with time.monotonic() once, so the
cost per token is one syscall plus one small JSON parse. Connections are kept alive and reused.

Why not the kernel's receive time (SO_TIMESTAMPNS)? Tried: it makes E2EL exact when the client falls
behind, but packets that queue up are merged and carry the latest arrival, so TTFT is then late while
E2EL is not, and TPOT read 5-12% low on an overloaded 2-core host, against 0-5% high with read times.
CLOCK_MONOTONIC is shared by all processes on a host, so worker processes' stamps compare directly.

The agent's other requests to the server go through http.py; this client keeps its own sockets because it
is the instrument being measured (what it costs per token is part of every figure), and builds its requests
with http.py's Endpoint.
"""
from __future__ import annotations

import errno
import json
import math
import re
import select
import selectors
import socket
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from infbench_agent.events import printable
from infbench_agent.http import BadResponse, ChunkedDecoder, Endpoint, ascii_digits, status_code
from infbench_agent.macro.metrics import SSEParser, loads_or_none, message_content, usage_count


# Extra non-blocking selects per poll that read sockets which became ready while the first ones were read, each
# only after a round of at least READ_ROUND_MIN reads: reading a few sockets takes microseconds, too short for
# another select (a system call) to find much, and at hundreds of streams most polls read one or two.
READ_ROUNDS = 2
READ_ROUND_MIN = 8
# One poll's reads land one after another in a buffer of this size, parsed where they lie (no copy per read, no
# fixed read size: a read takes whatever the socket holds, up to the room left); a poll stops reading while less
# than READ_ROOM is left, and the sockets it did not read stay ready for the next.
READ_BUFFER = 4 << 20
READ_ROOM = 1 << 20
# Made once, as the module loads: made per Engine, its pages were touched (about 12 ms on a 2-core VM) after a
# level's start time, and the first request at c=1 read that as its client's lag. An Engine that finds it held
# (a poll on another thread, or one entered from a record's callback) reads into a buffer of its own.
_READ_BUF = bytearray(READ_BUFFER)
_READ_VIEW = memoryview(_READ_BUF)
_READ_BUF_HELD = threading.Lock()
# A chunk-size line longer than this is left to ChunkedDecoder (an extension, spaces, or an error to report).
FAST_SIZE_LINE = 8
# In a token message's text, what would end or escape the JSON string (a quote, a backslash, a control character):
# a text without any of them is its bytes as they are.
_NOT_PLAIN = re.compile(rb'["\\\x00-\x1f]')
# How often a stream learns a message template again after one did not fit (a server whose messages vary more than
# their text, a "created" that ticks each second, gets a few tries and then the full parse for good).
TEMPLATE_TRIES = 4
# Where a token message's text begins: completions' "text", chat's "content".
_TEXT_KEYS = (b'"text":', b'"content":')
# Response headers past this size are a broken answer: unbounded, a server that never ends them grows the buffer.
MAX_HEADER_BYTES = 65536
# Tokens a chat template may add to a prompt beyond its own text (a system prompt, role markers): the bound
# on a believable usage.prompt_tokens is the request body's bytes plus this.
PROMPT_TEMPLATE_TOKENS = 4096
# Seconds between checks of the requests in flight for a timeout or a stall.
EXPIRY_CHECK_INTERVAL = 0.1
# poll(2)'s event bits, the same for epoll and select.poll; an error or a hang-up is read (or written) to be seen.
_POLLIN, _POLLOUT, _POLLERR, _POLLHUP = 0x001, 0x004, 0x008, 0x010
_READABLE = _POLLIN | _POLLERR | _POLLHUP
_WRITABLE = _POLLOUT | _POLLERR | _POLLHUP


class Poller:
    """The engine's sockets in one epoll (select.poll where there is none), registered as with selectors (a socket,
    EVENT_READ and EVENT_WRITE, any data) and polled to epoll's own (fd, event bits) pairs: selectors.select's key
    look-up and tuple per event and its list per call cost 0.5-0.9 µs a token where each select finds a few."""

    def __init__(self) -> None:
        # fd -> the data registered with it, and fd -> its socket.
        self.data: Dict[int, Any] = {}
        self.files: Dict[int, socket.socket] = {}
        self._epoll = select.epoll() if hasattr(select, "epoll") else None
        self._poll = select.poll() if self._epoll is None else None

    def register(self, sock: socket.socket, events: int, data: Any = None) -> None:
        """Watches sock for events (selectors.EVENT_READ, EVENT_WRITE), or changes what it is watched for."""
        fd = sock.fileno()
        bits = (_POLLIN if events & selectors.EVENT_READ else 0) | (_POLLOUT if events & selectors.EVENT_WRITE else 0)
        if self._epoll is None:
            self._poll.register(fd, bits)  # type: ignore[union-attr]  # select.poll's register also modifies
        elif fd in self.files:
            try:
                self._epoll.modify(fd, bits)
            except FileNotFoundError:  # closed without unregistering, and its number taken again
                self._epoll.register(fd, bits)
        else:
            self._epoll.register(fd, bits)
        self.data[fd] = data
        self.files[fd] = sock

    modify = register

    def unregister(self, sock: socket.socket) -> None:
        """Stops watching sock; KeyError when it is not watched."""
        fd = sock.fileno()
        if fd < 0:  # closed: found by the object
            fd = next((f for f, s in self.files.items() if s is sock), -1)
        if self.files.get(fd) is not sock:
            raise KeyError(f"{sock!r} is not registered")
        del self.files[fd]
        del self.data[fd]
        try:
            (self._epoll or self._poll).unregister(fd)  # type: ignore[union-attr]
        except (OSError, KeyError):  # already closed: epoll forgot it
            pass

    def poll(self, timeout: float) -> List[Tuple[int, int]]:
        """The (fd, event bits) of the sockets ready within timeout seconds (0: now; None: no limit)."""
        if timeout is not None and timeout < 0:
            timeout = 0
        if self._epoll is not None:
            # Room for every socket's event: epoll's default (1023) would leave the rest of 8,192 to another call.
            return self._epoll.poll(timeout, len(self.files) or 1)
        return self._poll.poll(None if timeout is None else math.ceil(timeout * 1000))  # type: ignore[union-attr]

    def close(self) -> None:
        if self._epoll is not None:
            self._epoll.close()
        self.data.clear()
        self.files.clear()


class Stream:
    """One streaming request on one connection."""

    __slots__ = (
        "job",
        "sock",
        "out",
        "reused",
        "state",
        "status",
        "headers",
        "buf",
        "decoder",
        "remaining",
        "sse",
        "record",
        "last_token_at",
        "quiet_since",
        "bytes_since_token",
        "body",
        "close_after",
        "timeout_at",
        "retried",
        "fast",
        "template",
        "template_tries",
        "itl",
        "keep_text",
    )

    def __init__(self, job: dict, sock: socket.socket, payload: bytes, reused: bool, timeout_at: float) -> None:
        self.job = job
        self.sock = sock
        self.out = payload
        self.reused = reused
        self.state = "send"
        self.status = 0
        self.headers: Dict[str, str] = {}
        self.buf = b""
        self.decoder: Optional[ChunkedDecoder] = None
        self.remaining = -1  # content-length left; -1 = until close
        self.sse = SSEParser()
        self.body = b""
        self.close_after = False
        self.timeout_at = timeout_at
        self.retried = False
        # A chunked 200 body whose parsers hold nothing: a read of whole chunks, one `data:` event each, is parsed
        # in place (Engine._fast) instead of through ChunkedDecoder and SSEParser.
        self.fast = False
        # (head, tail, their lengths, empty_is_token): the bytes of this stream's token chunks around their text
        # (`data: ` and the message's start; its end, the blank line and the chunk's CRLF), learned from one message
        # parsed in full (Engine._learn); a chunk that has them, its text plain, is that message with that text.
        self.template: Optional[Tuple[bytes, bytes, int, int, bool]] = None
        self.template_tries = TEMPLATE_TRIES
        self.record: dict = {
            "id": job["id"],
            "ok": False,
            "intended": job.get("intended"),
            "send": None,
            "finish": None,
            "ttft": None,
            "e2el": None,
            "itl": [],
            "client_tokens": 0,
            "output_tokens": None,
            "prompt_tokens": None,
            "est_prompt_tokens": job.get("est_prompt_tokens"),
            "usage_missing": False,
            # Why the server's usage was not taken (then the counts are the client's), or None.
            "usage_problem": None,
            "prompt_estimated": False,
            "done_marker": False,
            "reason": None,
            "error": None,
        }
        self.last_token_at: Optional[float] = None
        # The record's ITL list and the job's keep_text, a look-up less per token.
        self.itl: List[float] = self.record["itl"]
        self.keep_text = bool(job.get("keep_text"))
        # Its send, then its last token message: a stall counts from it. Bytes that bring no token (headers a
        # byte a second, SSE keep-alive comments, a usage-only message) do not reset it, or a server trickling
        # them would hold the request until --request-timeout.
        self.quiet_since = 0.0
        # What arrived since then, for the stall's message.
        self.bytes_since_token = 0


class Engine:
    """Runs streaming requests to one endpoint; `on_record` receives each finished request's record."""

    def __init__(
        self,
        endpoint: Endpoint,
        path: str,
        request_timeout: float,
        on_record: Callable[[dict], None],
        extra_headers: Optional[Dict[str, str]] = None,
        stall_timeout: Optional[float] = None,
    ) -> None:
        self.endpoint = endpoint
        self.path = path
        self.request_timeout = request_timeout
        # Seconds a stream may stay silent before it fails as stalled (None: only request_timeout applies).
        self.stall_timeout = stall_timeout
        # The last token of any stream: a request still waiting for its first token counts as stalled only
        # when the whole server has sent no token for the bound, as a queue at high load is not a stall.
        self.last_any_token_at = time.monotonic()
        # Requests that stalled while no stream had a token for the bound, since the last request that completed.
        self.stall_streak = 0
        # Set once a second such stall came with no request completed since the first: the server is frozen,
        # and a driver stops sending (each further request would only wait out the bound again). One stall
        # alone says nothing of the next request: a server may stall some requests and answer the rest.
        self.server_frozen = False
        self._next_expiry_check = 0.0
        self.on_record = on_record
        self.extra_headers = extra_headers or {}
        self.sel = Poller()
        self.idle: List[socket.socket] = []
        self.active: Dict[int, Stream] = {}
        # A buffer of its own, made only when the module's one (_READ_BUF) is held by another poll.
        self._own_view: Optional[memoryview] = None
        # Reads in the last poll: 0 means nothing was waiting, a moment for work that can wait.
        self.last_reads = 0

    @property
    def in_flight(self) -> int:
        return len(self.active)

    def start(self, job: dict, body: bytes) -> None:
        """Sends one request now. `job` has id and intended (the planned send time, monotonic seconds)."""
        payload = self.endpoint.request_bytes("POST", self.path, body, self.extra_headers)
        job["payload"] = payload
        # No tokenizer makes more tokens of a text than it has bytes (each token is at least one byte, a byte
        # fallback one byte): the body holds the prompt, escaped, so its length bounds usage.prompt_tokens.
        job["prompt_bound"] = len(body) + PROMPT_TEMPLATE_TOKENS
        sock, reused = self._socket()
        now = time.monotonic()
        # With no socket the stream is made only to be failed at once (connect_error) below.
        st = Stream(job, sock, payload, reused, now + self.request_timeout)  # type: ignore[arg-type]
        st.record["send"] = st.quiet_since = now
        if sock is None:
            self._fail(st, "connect_error", f"could not open a connection to {self.endpoint.host}:{self.endpoint.port}", now)
            return
        self.active[sock.fileno()] = st
        self._try_send(st)

    def _socket(self) -> Tuple[Optional[socket.socket], bool]:
        while self.idle:
            s = self.idle.pop()
            try:
                self.sel.unregister(s)
            except (KeyError, ValueError):
                pass
            return s, True
        try:
            s = socket.socket(socket.AF_INET6 if ":" in self.endpoint.host else socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            s.setblocking(False)
            err = s.connect_ex((self.endpoint.host, self.endpoint.port))
            if err not in (0, errno.EINPROGRESS, errno.EWOULDBLOCK):
                s.close()
                return None, False
            return s, False
        except OSError:
            return None, False

    def _try_send(self, st: Stream) -> None:
        try:
            n = st.sock.send(st.out)
            # A view: a 50,000-token prompt sent in parts is not copied again at each part.
            st.out = memoryview(st.out)[n:]
        except (BlockingIOError, InterruptedError):
            pass
        except OSError as exc:
            if exc.errno != errno.ENOTCONN:  # still connecting: send when writable
                self._conn_error(st, exc)
                return
        self.sel.register(st.sock, selectors.EVENT_READ | (selectors.EVENT_WRITE if st.out else 0), st)

    def poll(self, timeout: float) -> None:
        """Waits up to `timeout` seconds for socket events and handles them; also expires timed-out requests.

        Reads first, parses after: every ready socket is read and its read stamped before any of them is
        parsed, and sockets that became ready meanwhile are read too (up to READ_ROUNDS more selects).
        Reading and parsing in turn, the last socket of a burst was stamped only after every earlier one
        was parsed, and a burst of streams finishing together (their records built) stamped the last
        tokens of the later ones late: TPOT read up to 5% high at 512 streams on a 2-core host.

        The reads land one after another in one buffer and are parsed where they lie; a read of whole chunks of
        token messages shaped like the stream's last one takes Engine._fast, the rest ChunkedDecoder and SSEParser.
        """
        if _READ_BUF_HELD.acquire(False):
            try:
                self._poll(_READ_BUF, _READ_VIEW, timeout)
            finally:
                _READ_BUF_HELD.release()
            return
        if self._own_view is None:
            self._own_view = memoryview(bytearray(READ_BUFFER))
        self._poll(self._own_view.obj, self._own_view, timeout)  # type: ignore[arg-type]

    def _poll(self, buf: bytearray, view: memoryview, timeout: float) -> None:
        """poll's reads into buf (view a memoryview of it), then their parse."""
        room = len(buf) - READ_ROOM
        # (stream, its socket's fd, where its bytes begin and end in buf, the read's stamp)
        reads: List[Tuple[Stream, int, int, int, float]] = []
        at = 0
        monotonic = time.monotonic
        sel = self.sel
        registered = sel.data
        readable, writable = _READABLE, _WRITABLE
        events = sel.poll(timeout)
        rounds = 0
        while events:
            for fd, mask in events:
                st = registered.get(fd)
                if st is None:
                    # An idle keep-alive connection became readable: the server closed it.
                    sock = sel.files.get(fd)
                    if sock is not None:
                        self._drop_idle(sock)
                    continue
                if mask & writable and st.out:
                    try:
                        n = st.sock.send(st.out)
                        st.out = memoryview(st.out)[n:]
                    except (BlockingIOError, InterruptedError):
                        pass
                    except OSError as exc:
                        self._conn_error(st, exc)
                        continue
                    if not st.out:
                        self.sel.modify(st.sock, selectors.EVENT_READ, st)
                if mask & readable:
                    if at > room:
                        # The buffer is full for this poll: this socket stays ready and is read in the next.
                        break
                    try:
                        n = st.sock.recv_into(view[at:])
                    except (BlockingIOError, InterruptedError):
                        continue
                    except OSError as exc:
                        self._conn_error(st, exc)
                        continue
                    # One monotonic stamp per read, taken as the read returns (as vLLM's client stamps).
                    reads.append((st, fd, at, at + n, monotonic()))
                    at += n
                    st.bytes_since_token += n
            rounds += 1
            if rounds > READ_ROUNDS or at > room or len(events) < READ_ROUND_MIN:
                break
            events = sel.poll(0)
        self.last_reads = len(reads)
        active = self.active
        for st, fd, begin, stop, now in reads:
            # A stream that failed or finished on an earlier read of this batch takes no more.
            if active.get(fd) is not st:
                continue
            try:
                if st.fast and begin < stop:
                    begin = self._fast(st, buf, begin, stop, now)
                    if begin == stop:
                        continue
                    if begin < 0:
                        continue  # the request ended on a message of this read
                self._readable(st, view[begin:stop].tobytes(), now)
                # Back to the fast path once the general parsers hold nothing of a chunked 200 body.
                dec = st.decoder
                st.fast = (
                    st.state == "body"
                    and st.status == 200
                    and dec is not None
                    and not dec.done
                    and dec.between_chunks
                    and st.sse.idle
                    and active.get(fd) is st
                )
            except BadResponse as exc:
                self._fail(st, "bad_response", f"{exc} (after {st.record['client_tokens']} tokens)", now)
            except (ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError, RecursionError) as exc:
                # A response shaped in a way no check above foresaw: this request fails, the run goes on.
                self._fail(st, "bad_response", f"could not read the response: {type(exc).__name__}: {exc}", now)
        if self.active:
            now = monotonic()
            if now >= self._next_expiry_check:
                self._next_expiry_check = now + EXPIRY_CHECK_INTERVAL
                self._expire(now)

    def _fast(self, st: Stream, buf: bytearray, pos: int, end: int, now: float) -> int:
        """Parses the whole chunks of buf[pos:end] that hold one `data: ` event each, in place; returns where it
        stopped (end when it took them all, -1 when the request ended on one of them). What it leaves (a part
        of a chunk, several events in one, a chunk extension, the last chunk) goes to ChunkedDecoder and
        SSEParser with the parsers' state as it would have been.

        A message with the bytes of the stream's template around a plain text is counted without a JSON parse:
        those bytes parsed in full once (Engine._learn), and a text with no quote, backslash or control
        character cannot change how the rest parses. Others take _message, as every message did before.
        """
        find = buf.find
        rec = st.record
        tpl = st.template
        while pos < end:
            nl = find(b"\r\n", pos, end)
            if nl <= pos or nl - pos > FAST_SIZE_LINE:
                break
            size_text = buf[pos:nl]
            if size_text.strip(b"0123456789abcdefABCDEF"):
                break
            first = nl + 2
            stop = first + int(size_text, 16) + 2  # past the CRLF that ends the chunk's data
            if stop > end:
                break
            if tpl is not None:
                # The template holds the framing too (`data: ` and the blank line and CRLF after the message).
                head, tail, head_len, tail_len, empty_ok = tpl
                text_at = first + head_len
                text_end = stop - tail_len
                if (
                    text_end >= text_at
                    and buf.startswith(head, first)
                    and buf.endswith(tail, first, stop)
                    and _NOT_PLAIN.search(buf, text_at, text_end) is None
                    and (empty_ok or text_end > text_at)
                ):
                    pos = stop
                    prev = st.last_token_at
                    st.last_token_at = st.quiet_since = self.last_any_token_at = now
                    st.bytes_since_token = 0
                    # No token yet (no TTFT): a template learned from a chat stream's role-only opening.
                    if prev is None:
                        rec["ttft"] = now - rec["send"]
                    else:
                        st.itl.append(now - prev)
                    if text_end > text_at:
                        rec["client_tokens"] += 1
                        if st.keep_text:
                            rec.setdefault("answer", []).append(buf[text_at:text_end].decode("utf-8", "replace"))
                    continue
            # One whole chunk that is one event: `data: `, no line break, a blank line, the chunk's CRLF.
            last = stop - 4
            if last < first + 6 or buf[last:stop] != b"\n\n\r\n" or not buf.startswith(b"data: ", first) or find(b"\n", first, last) >= 0:
                break
            pos = stop
            raw = bytes(buf[first + 6 : last])
            if self._message(st, raw.decode("utf-8", "replace"), now):
                return -1
            if tpl is None or st.template_tries > 0:
                self._learn(st, raw)
                tpl = st.template
        return pos

    def _learn(self, st: Stream, raw: bytes) -> None:
        """Takes a token message just parsed in full as the stream's template when one plain text stands in it
        that could be any other: the bytes before and after it with the text "x" (and "") parse to the same
        token message with that text, no usage, no error."""
        st.template = None
        if st.template_tries <= 0:
            return
        st.template_tries -= 1
        for key in _TEXT_KEYS:
            at = raw.find(key)
            if at < 0 or raw.find(key, at + 1) >= 0:
                continue
            at += len(key)
            while raw[at : at + 1] == b" ":
                at += 1
            if raw[at : at + 1] != b'"':
                continue
            at += 1
            close = raw.find(b'"', at)
            if close < 0 or _NOT_PLAIN.search(raw, at, close) is not None:
                continue
            prefix, suffix = raw[:at], raw[close:]
            probes = []
            for text in ("x", ""):
                msg = loads_or_none((prefix + text.encode() + suffix).decode("utf-8", "replace"))
                try:
                    ok = msg is not None and msg.get("usage") is None and "error" not in msg and message_content(msg) == text
                except BadResponse:
                    ok = False
                probes.append(ok)
            if probes[0]:
                head, tail = b"data: " + prefix, suffix + b"\n\n\r\n"
                st.template = (head, tail, len(head), len(tail), probes[1])
            return

    def _expire(self, now: float) -> None:
        """Fails the requests past the whole-request timeout, and the streams with no token past the stall bound."""
        stall = self.stall_timeout
        server_silent = stall is not None and now - self.last_any_token_at > stall
        for st in list(self.active.values()):
            tokens = st.record["client_tokens"]
            if st.timeout_at < now:
                self._fail(st, "timeout", f"no complete response within {self.request_timeout:g} s ({tokens} tokens received)", now)
            elif stall is not None and now - st.quiet_since > stall and (st.record["ttft"] is not None or server_silent):
                where = "after its last token" if st.record["ttft"] is not None else "waiting for its first token"
                trickle = f", though {st.bytes_since_token} bytes without one arrived" if st.bytes_since_token else ""
                self._fail(
                    st,
                    "stalled",
                    f"the stream sent no token for {now - st.quiet_since:.0f} s {where} ({tokens} tokens received{trickle}); "
                    f"--stall-timeout sets this bound ({stall:g} s)",
                    now,
                )
                if server_silent:
                    self.stall_streak += 1
                    self.server_frozen = self.server_frozen or self.stall_streak >= 2
        if self.server_frozen:
            # The requests sent too recently to have stalled on their own go with the ones that did.
            for st in list(self.active.values()):
                self._fail(
                    st,
                    "stalled",
                    f"given up {now - st.record['send']:.0f} s after its send ({st.record['client_tokens']} tokens "
                    f"received): {self.stall_streak} requests stalled in a row, none completing between them, and no "
                    f"stream had a token for {now - self.last_any_token_at:.0f} s, so the level stopped",
                    now,
                )

    def _readable(self, st: Stream, data: bytes, now: float) -> None:
        if not data:
            self._eof(st, now)
            return
        if st.state == "send":
            st.state = "headers"
        if st.state == "headers":
            st.buf += data
            end = st.buf.find(b"\r\n\r\n")
            if end < 0:
                if len(st.buf) > MAX_HEADER_BYTES:
                    raise BadResponse(f"the response headers run past {MAX_HEADER_BYTES} bytes without an end: {bytes(st.buf[:60])!r}")
                return
            head, data = st.buf[:end].decode("latin-1"), st.buf[end + 4 :]
            st.buf = b""
            lines = head.split("\r\n")
            status = status_code(lines[0])
            if status is None:
                self._fail(st, "bad_response", f"not an HTTP response: {lines[0][:80]!r}", now)
                return
            st.status = status
            for line in lines[1:]:
                k, _, v = line.partition(":")
                st.headers[k.strip().lower()] = v.strip()
            if "chunked" in st.headers.get("transfer-encoding", "").lower():
                st.decoder = ChunkedDecoder()
            elif "content-length" in st.headers:
                length = st.headers["content-length"]
                if not ascii_digits(length):
                    raise BadResponse(f"HTTP {st.status} with Content-Length {length[:40]!r}, not a byte count")
                st.remaining = int(length)
            st.close_after = st.headers.get("connection", "").lower() == "close"
            st.state = "body"
        payload = data
        complete = False
        if st.decoder is not None:
            payload = st.decoder.feed(data)
            complete = st.decoder.done
        elif st.remaining >= 0:
            payload = data[: st.remaining]
            st.remaining -= len(payload)
            complete = st.remaining == 0
        if st.status != 200:
            # The error's first bytes say what it is; kept whole, a server's endless error page grows without bound.
            if len(st.body) < MAX_HEADER_BYTES:
                st.body += payload[: MAX_HEADER_BYTES - len(st.body)]
            if complete:
                self._http_error(st, now)
            return
        for message in st.sse.feed(payload):
            if self._message(st, message, now):
                return
        if complete:
            self._complete(st, now, reusable=not st.close_after)

    def _message(self, st: Stream, text: str, now: float) -> bool:
        """Handles one SSE data payload; returns True if the request ended with it."""
        rec = st.record
        if text.strip() == "[DONE]":
            rec["done_marker"] = True
            return False
        msg = loads_or_none(text)
        if msg is None:
            self._fail(st, "bad_stream", f"an SSE message is not JSON: {text[:120]!r}", now)
            return True
        if "error" in msg and not msg.get("choices"):
            err = msg["error"]
            detail = err.get("message") if isinstance(err, dict) else str(err)
            self._fail(st, "server_error_in_stream", f"the server reported an error mid-stream: {detail}", now)
            return True
        content = message_content(msg)
        if content is not None:
            # A message with choices is a token message, empty text too (vllm/benchmarks/lib/
            # endpoint_request_func.py, at 02cfb534; a chat role-only opening is not: message_content says
            # why); the client's token count takes only those with text.
            if rec["ttft"] is None:
                rec["ttft"] = now - rec["send"]
            else:
                rec["itl"].append(now - st.last_token_at)  # type: ignore[operator]  # set with the first token
            st.last_token_at = st.quiet_since = self.last_any_token_at = now
            st.bytes_since_token = 0
            if content:
                rec["client_tokens"] += 1
                if st.job.get("keep_text"):
                    # A conversation's next turn carries this answer (macro/conversations.py).
                    rec.setdefault("answer", []).append(content)
        usage = msg.get("usage")
        if isinstance(usage, dict):
            # lib/endpoint_request_func.py: output_tokens = usage.completion_tokens; prompt_len = usage.prompt_tokens
            # when it is there, each on its own (a server may send one without the other).
            for key, field in (("completion_tokens", "output_tokens"), ("prompt_tokens", "prompt_tokens")):
                count, problem = usage_count(usage, key)
                if problem:
                    rec["usage_problem"] = problem
                elif count is not None:
                    rec[field] = count
        elif usage is not None:
            rec["usage_problem"] = f"usage is {json.dumps(usage)[:40]}, not an object"
        return False

    def _complete(self, st: Stream, now: float, reusable: bool) -> None:
        rec = st.record
        self._forget(st)
        if reusable:
            self.idle.append(st.sock)
            self.sel.register(st.sock, selectors.EVENT_READ, None)
        else:
            st.sock.close()
        if not rec["done_marker"]:
            self._finish_failed(st, "stream_cut", f"the stream ended without [DONE] after {rec['client_tokens']} tokens", now)
            return
        if rec["ttft"] is None:
            self._finish_failed(st, "no_tokens", "the stream finished without any generated token", now)
            return
        out, client, asked = rec["output_tokens"], rec["client_tokens"], st.job.get("max_tokens")
        # Each message with text holds at least one token, and no server generates more than max_tokens.
        if out is not None and out < client:
            rec["usage_problem"] = f"usage.completion_tokens is {out}, fewer than the {client} token messages streamed"
        elif out is not None and asked and out > asked:
            rec["usage_problem"] = f"usage.completion_tokens is {out}, more than the {asked} the request allowed (max_tokens)"
        elif rec["prompt_tokens"] is not None and rec["prompt_tokens"] > st.job.get("prompt_bound", math.inf):
            rec["usage_problem"] = (
                f"usage.prompt_tokens is {rec['prompt_tokens']}, more than a prompt sent in a "
                f"{st.job['prompt_bound'] - PROMPT_TEMPLATE_TOKENS}-byte request can hold (a token is at least a byte; "
                f"{PROMPT_TEMPLATE_TOKENS} more allowed for a chat template)"
            )
        if rec["usage_problem"]:
            # A count that cannot be true is not used at all: the client's counts stand in for both.
            rec["output_tokens"] = rec["prompt_tokens"] = None
        if rec["output_tokens"] is None:
            rec["usage_missing"] = not rec["usage_problem"]
            rec["output_tokens"] = rec["client_tokens"]
        if rec["prompt_tokens"] is None:
            rec["prompt_estimated"] = True
            rec["prompt_tokens"] = rec.get("est_prompt_tokens")
        rec["e2el"] = st.last_token_at - rec["send"]
        rec["finish"] = now
        rec["ok"] = True
        self.stall_streak = 0
        self.on_record(rec)

    def _eof(self, st: Stream, now: float) -> None:
        if st.state in ("send", "headers") and st.reused and not st.retried and not st.buf:
            self._retry_fresh(st)
            return
        if st.state == "body" and st.decoder is None and st.remaining < 0:
            # A body delimited by the connection's close.
            if st.status != 200:
                self._http_error(st, now)
            else:
                st.close_after = True
                self._complete(st, now, reusable=False)
            return
        self._fail(
            st,
            "stream_cut",
            f"the server closed the connection after {st.record['client_tokens']} tokens, " "before the response ended",
            now,
        )

    def _conn_error(self, st: Stream, exc: OSError) -> None:
        if st.state in ("send", "headers") and st.reused and not st.retried:
            self._retry_fresh(st)
            return
        now = time.monotonic()
        if st.state == "send" and not st.reused:
            self._fail(st, "connect_error", f"cannot reach {self.endpoint.host}:{self.endpoint.port}: {exc.strerror or exc}", now)
        else:
            self._fail(st, "stream_cut", f"connection error after {st.record['client_tokens']} tokens: {exc.strerror or exc}", now)

    def _retry_fresh(self, st: Stream) -> None:
        """A kept-alive connection the server had already closed: send again on a new one (not a failure)."""
        self._forget(st)
        st.sock.close()
        sock, _ = self._socket()
        if sock is None or (sock.fileno() in self.active):
            self._fail(st, "connect_error", f"could not open a connection to {self.endpoint.host}:{self.endpoint.port}", time.monotonic())
            return
        st.sock = sock
        st.reused = False
        st.retried = True
        st.state = "send"
        st.out = st.job["payload"]
        st.fast = False
        st.template = None
        self.active[sock.fileno()] = st
        self._try_send(st)

    def _http_error(self, st: Stream, now: float) -> None:
        body = st.body.decode("utf-8", "replace")
        msg = loads_or_none(body)
        detail = body.strip()[:200]
        if msg is not None:
            err = msg.get("error", msg.get("detail", msg.get("message")))
            if isinstance(err, dict):
                detail = str(err.get("message", err))
            elif err is not None:
                detail = str(err)
        self._fail(st, f"http_{st.status}", f"HTTP {st.status}: {detail}", now, keep_socket=not st.close_after)

    def _fail(self, st: Stream, reason: str, message: str, now: float, keep_socket: bool = False) -> None:
        self._forget(st)
        if st.sock is not None:
            if keep_socket and st.state == "body":
                self.idle.append(st.sock)
                self.sel.register(st.sock, selectors.EVENT_READ, None)
            else:
                st.sock.close()
        self._finish_failed(st, reason, message, now)

    def _finish_failed(self, st: Stream, reason: str, message: str, now: float) -> None:
        rec = st.record
        rec["ok"] = False
        rec["reason"] = reason
        # The message quotes what the server sent (an error body, an SSE error): shown raw, its control
        # characters would drive the user's terminal.
        rec["error"] = printable(message)
        rec["finish"] = now
        self.on_record(rec)

    def _forget(self, st: Stream) -> None:
        if st.sock is None:
            return
        try:
            fd = st.sock.fileno()
        except OSError:
            fd = -1
        if self.active.get(fd) is st:
            del self.active[fd]
        try:
            self.sel.unregister(st.sock)
        except (KeyError, ValueError):
            pass

    def _drop_idle(self, sock: socket.socket) -> None:
        try:
            self.sel.unregister(sock)
        except (KeyError, ValueError):
            pass
        if sock in self.idle:
            self.idle.remove(sock)
        sock.close()

    def abort_all(self) -> None:
        """Drops every request in flight without a record: a cancelled run reports only what finished."""
        for st in list(self.active.values()):
            self._forget(st)
            try:
                st.sock.close()
            except OSError:
                pass

    def close(self) -> None:
        for s in self.idle:
            try:
                s.close()
            except OSError:
                pass
        self.idle.clear()
        self.sel.close()
