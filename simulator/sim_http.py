"""The HTTP/1.1 wire the simulator speaks, as vLLM's server (uvicorn) writes it: requests read off a
connection, answers with their length, each SSE message one chunk of a chunked stream, vLLM's error JSON.
Standard library only."""
from __future__ import annotations

import asyncio
import json
from typing import Dict, NamedTuple, Optional

import sim_mimic

# Every label the agent recognises the simulator by (owned_by, the server header, the version suffix).
OWNED_BY = sim_mimic.SIMULATOR_MARK
HTTP_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    405: "Method Not Allowed",
    429: "Too Many Requests",
    500: "Internal Server Error",
}
# Sent on every answer under --mimic: "vllm 0.16.0" (the simulator stays labelled in every mode).
MIMIC_LINE = ""


class Request(NamedTuple):
    method: str
    path: str
    headers: Dict[str, str]
    raw: bytes


class MalformedRequestLine(Exception):
    pass


async def read_request(reader: asyncio.StreamReader) -> Optional[Request]:
    """The connection's next request; None once the peer has gone. A request line that is not
    `METHOD TARGET VERSION` raises MalformedRequestLine."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
        return None
    lines = head.decode("latin-1").split("\r\n")
    try:
        method, target, _version = lines[0].split(" ", 2)
    except ValueError:
        raise MalformedRequestLine() from None
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
    length = int(headers.get("content-length") or 0)
    raw = await reader.readexactly(length) if length else b""
    return Request(method, target.split("?", 1)[0], headers, raw)


def error_body(message: str, code: int) -> dict:
    kind = {400: "BadRequestError", 404: "NotFoundError", 429: "RateLimitError", 500: "InternalServerError"}.get(code, "Error")
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def send_event(writer: asyncio.StreamWriter, obj: dict) -> None:
    send_raw(writer, b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n")


def send_raw(writer: asyncio.StreamWriter, data: bytes) -> None:
    """One HTTP chunk, as uvicorn sends each SSE message."""
    writer.write(b"%x\r\n%s\r\n" % (len(data), data))


def start_event_stream(writer: asyncio.StreamWriter) -> None:
    """The head of a streamed answer: its SSE messages follow as chunks."""
    writer.write(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n"
        f"transfer-encoding: chunked\r\nserver: {OWNED_BY}\r\n\r\n".encode()
    )


def end_event_stream(writer: asyncio.StreamWriter) -> None:
    """vLLM's last SSE message, then the chunked stream's end."""
    send_raw(writer, b"data: [DONE]\n\n")
    writer.write(b"0\r\n\r\n")


async def respond(writer: asyncio.StreamWriter, code: int, body: bytes, ctype: str) -> None:
    mimic = f"{sim_mimic.MIMIC_HEADER}: {MIMIC_LINE}\r\n" if MIMIC_LINE else ""
    writer.write(
        f"HTTP/1.1 {code} {HTTP_REASONS.get(code, 'Error')}\r\ncontent-type: {ctype}\r\n"
        f"content-length: {len(body)}\r\nserver: {OWNED_BY}\r\n{mimic}\r\n".encode() + body
    )
    await writer.drain()


async def respond_json(writer: asyncio.StreamWriter, code: int, obj: dict) -> None:
    await respond(writer, code, json.dumps(obj).encode(), "application/json")
