"""Every request the agent makes to the inference server, but the load generator's: one module that knows how the
agent speaks HTTP to it (the API key on every request, a bound on the whole exchange, a reply too big or too slow
is an answer that did not come).

Two clients, each where it fits: `Endpoint` and `simple_request` on a raw socket, the same requests the load
generator sends (macro's /v1/models, /tokenize and the /metrics scrapes beside the load); urllib for the probe,
the server's lifecycle and the profiler's control (`get`, `post`, `post_stream`). The load generator's streaming
client (macro/client.py) is the measured instrument and keeps its own sockets, built on `Endpoint`.
Standard library only.
"""
from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.request
from typing import Any, Callable, Dict, List, Optional, Tuple, TypeVar, Union
from urllib.parse import urlsplit

from infbench_agent import auth


class BadResponse(Exception):
    """A response the server should not have sent (a malformed chunk, header or message): it fails that
    request alone, with this message as its error."""


class ChunkedDecoder:
    """Decodes HTTP/1.1 chunked transfer coding incrementally; `done` once the zero-size chunk is read."""

    def __init__(self) -> None:
        self._buf = b""
        self._remaining = -1  # bytes left in the current chunk; -1 = expecting a size line
        self.done = False

    @property
    def between_chunks(self) -> bool:
        """Nothing of a chunk held: the next bytes begin a chunk-size line (or the CRLF that ends a chunk's data)."""
        return self._remaining < 0 and not self._buf

    def feed(self, data: bytes) -> bytes:
        buf = self._buf + data if self._buf else data
        out = []
        pos = 0
        end = len(buf)
        while not self.done:
            if self._remaining < 0:
                nl = buf.find(b"\r\n", pos)
                if nl < 0:
                    break
                size_text = buf[pos:nl]
                pos = nl + 2
                if b";" in size_text:
                    size_text = size_text.split(b";", 1)[0]
                size_text = size_text.strip()
                if not size_text:
                    continue  # the CRLF after a chunk's data
                # int(x, 16) alone would take "-5", "+5" and "0x5" too.
                if size_text.strip(b"0123456789abcdefABCDEF"):
                    raise BadResponse(f"a chunk-size line of the chunked body is not hexadecimal: {size_text[:40]!r}")
                size = int(size_text, 16)
                if size == 0:
                    self.done = True
                    break
                self._remaining = size
            stop = min(end, pos + self._remaining)
            out.append(buf[pos:stop])
            self._remaining -= stop - pos
            pos = stop
            if self._remaining == 0:
                self._remaining = -1
            else:
                break
        self._buf = buf[pos:] if pos else buf
        return out[0] if len(out) == 1 else b"".join(out)


def ascii_digits(text: str) -> bool:
    """1*DIGIT as HTTP's grammar means it (RFC 9110: Content-Length, the status code): str.isdigit() takes
    "\u00b2" and the digits of other scripts too, and int() takes "+5", " 5" and "1_0"."""
    return bool(text) and text.isascii() and text.isdigit()


def status_code(status_line: str) -> Optional[int]:
    """The status of an HTTP/1.x status line ("HTTP/1.1 200 OK"): three ASCII digits, or None."""
    parts = status_line.split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or len(parts[1]) != 3 or not ascii_digits(parts[1]):
        return None
    return int(parts[1])


class Endpoint:
    def __init__(self, base_url: str, api_key: Optional[str] = None, headers: Optional[Dict[str, str]] = None) -> None:
        self.api_key = api_key
        # --header KEY=VALUE pairs, sent with every request (a gateway's routing or tenant headers).
        self.headers = dict(headers or {})
        parts = urlsplit(base_url)
        if parts.scheme != "http":
            raise ValueError(
                f"only http:// server URLs are supported (got {base_url!r}); the load generator runs on the "
                "server's host and talks to it over loopback"
            )
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 80
        self.prefix = parts.path.rstrip("/")
        self.host_header = parts.netloc

    def request_bytes(self, method: str, path: str, body: Optional[bytes], extra_headers: Dict[str, str]) -> bytes:
        lines = [
            f"{method} {self.prefix}{path} HTTP/1.1",
            f"Host: {self.host_header}",
            "User-Agent: inference-bench-agent",
            "Accept: text/event-stream, application/json",
        ]
        if self.api_key:
            lines.append(f"Authorization: Bearer {self.api_key}")
        for k, v in {**self.headers, **extra_headers}.items():
            lines.append(f"{k}: {v}")
        if body is not None:
            lines.append("Content-Type: application/json")
            lines.append(f"Content-Length: {len(body)}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b"")


# The most of a reply to /v1/models, /tokenize or /metrics that is read: a server that never ends one grows no buffer.
MAX_SIMPLE_REPLY_BYTES = 32 << 20


def simple_request(endpoint: Endpoint, method: str, path: str, body: Optional[dict] = None, timeout: float = 10.0) -> Tuple[int, bytes]:
    """One blocking request (for /v1/models, /tokenize, /metrics): (status, body). `timeout` bounds the whole
    exchange: a server trickling its reply a byte a second would pass any bound on a single read."""
    data = json.dumps(body).encode() if body is not None else None
    deadline = time.monotonic() + timeout
    with socket.create_connection((endpoint.host, endpoint.port), timeout=timeout) as s:
        s.sendall(endpoint.request_bytes(method, path, data, {"Connection": "close"}))
        chunks = []
        size = 0
        while True:
            try:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise socket.timeout()
                s.settimeout(left)
                b = s.recv(65536)
            except socket.timeout:
                raise socket.timeout(f"{endpoint.host}:{endpoint.port}{path} did not finish its reply within {timeout:g} s")
            if not b:
                break
            chunks.append(b)
            size += len(b)
            if size > MAX_SIMPLE_REPLY_BYTES:
                raise ConnectionError(f"{endpoint.host}:{endpoint.port}{path} sent a reply over {MAX_SIMPLE_REPLY_BYTES >> 20} MiB")
    raw = b"".join(chunks)
    head, _, rest = raw.partition(b"\r\n\r\n")
    status_line = head.split(b"\r\n", 1)[0].decode("latin-1")
    status = status_code(status_line)
    if status is None:
        raise ConnectionError(f"not an HTTP response from {endpoint.host}:{endpoint.port}: {status_line[:80]!r}")
    if b"transfer-encoding: chunked" in head.lower():
        try:
            rest = ChunkedDecoder().feed(rest)
        except BadResponse as exc:
            # Callers treat a response they cannot read as one that did not come.
            raise ConnectionError(f"a malformed response from {endpoint.host}:{endpoint.port}{path}: {exc}")
    return status, rest


# -------------------------------------------------------------------------------------------- urllib


HttpAnswer = Tuple[Optional[int], Optional[bytes], Dict[str, str], Optional[str]]


def request(url: str, timeout: float, method: str = "GET", api_key: Optional[str] = None) -> HttpAnswer:
    """(status, body, headers, error): HTTP errors are answers too; only no answer at all is an error.

    `timeout` bounds the whole exchange: urllib's bounds each read alone, and a server trickling its headers
    or body a byte a second passes every one of them. The read goes on in a daemon thread, given up at the
    bound (the probe is one short process)."""
    answer: List[HttpAnswer] = []
    reader = threading.Thread(target=lambda: answer.append(request_once(url, timeout, method, api_key)), daemon=True)
    reader.start()
    reader.join(timeout * 2)
    if answer:
        return answer[0]
    return None, None, {}, f"no complete answer within {timeout * 2:g} s: the server sends its reply too slowly"


def request_once(url: str, timeout: float, method: str, api_key: Optional[str]) -> HttpAnswer:
    req = urllib.request.Request(url, method=method, headers={"User-Agent": "inference-bench-probe", **auth.auth_headers(api_key)})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - the user's own server URL
            return resp.status, resp.read(2_000_000), {k.lower(): v for k, v in resp.headers.items()}, None
    except urllib.error.HTTPError as exc:
        try:
            body = exc.read(200_000)
        except Exception:  # noqa: BLE001 - the body of an error page is optional
            body = b""
        return exc.code, body, {k.lower(): v for k, v in (exc.headers or {}).items()}, None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return None, None, {}, str(reason)


def post(url: str, body: Optional[dict], timeout: float, api_key: Optional[str] = None) -> Tuple[Optional[int], str]:
    """(status, text); status None when no answer came (refused, reset, timed out), the text says why."""
    return _post_json(url, body, timeout, api_key, lambda r: r.read().decode("utf-8", "replace"))


def post_stream(
    url: str, body: dict, timeout: float, api_key: Optional[str], on_line: Callable[[str], None]
) -> Tuple[Optional[int], Optional[str]]:
    """A streamed POST: each line of the reply, stripped, to `on_line` as it comes. (status, None) once the reply
    has ended; (status, its text) for an HTTP error; (None, why) when no answer came or it broke off."""

    def read_lines(r: Any) -> None:
        for raw in r:
            on_line(raw.decode("utf-8", "replace").strip())

    return _post_json(url, body, timeout, api_key, read_lines)


T = TypeVar("T")


def _post_json(
    url: str, body: Optional[dict], timeout: float, api_key: Optional[str], read: Callable[[Any], T]
) -> Tuple[Optional[int], Union[T, str]]:
    """POSTs `body` as JSON and hands the reply to `read`: (status, what it returns); (status, the error page's
    text) for an HTTP error; (None, why) when no answer came, or it broke off while `read` read it."""
    data = json.dumps(body).encode() if body is not None else b""
    req = urllib.request.Request(url, data=data, method="POST", headers={"Content-Type": "application/json", **auth.auth_headers(api_key)})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, read(r)
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")
    except socket.timeout:
        return None, f"no answer within {timeout:.0f} s"
    except (urllib.error.URLError, OSError) as e:
        return None, str(getattr(e, "reason", e))
