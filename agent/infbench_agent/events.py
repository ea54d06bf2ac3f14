"""The agent's event schema: one JSON object per line on stdout.

This module is the single definition on the Python side; src/remote/agentProtocol.ts mirrors it.
Every event carries the schema version `v`, its `type`, and `t` (wall-clock seconds since the epoch).
Bump SCHEMA_VERSION when a field changes meaning or goes away; adding optional fields keeps it.
"""
from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any

SCHEMA_VERSION = 1
AGENT_VERSION = "0.1.0"

# Event types, in the order a run usually emits them.
HELLO = "hello"          # {agent_version, command, pid, python}
LOG = "log"              # {level: debug|info|warn|error, message}
PROGRESS = "progress"    # {done, total, message}
PROBE = "probe"          # {result: ProbeResult}
MACRO_REQUEST = "macro.request"  # {level, record}: one finished request
MACRO_LEVEL = "macro.level"      # {level, partial: bool, summary}: running or final aggregate of one load level
MICRO_POINT = "micro.point"      # {kind: gemm|allreduce|launch|peak, point}
PROFILE_STATUS = "profile.status"  # {stage, message}
PROFILE_TRACE = "profile.trace"    # {path, rank, bytes, host, frontend?: vLLM's CPU-only API-server trace}
RESULT = "result"        # {result}: the phase's final result object
ERROR = "error"          # {code, message, hint}
DONE = "done"            # {ok}

_lock = threading.Lock()


def emit(event_type: str, **payload: Any) -> None:
    """Write one event as one line; safe to call from several threads."""
    record = {"v": SCHEMA_VERSION, "type": event_type, "t": round(time.time(), 6)}
    record.update(payload)
    line = json.dumps(record, separators=(",", ":"), allow_nan=False, default=str)
    with _lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def log(message: str, level: str = "info") -> None:
    emit(LOG, level=level, message=message)


def error(code: str, message: str, hint: str = "") -> None:
    emit(ERROR, code=code, message=message, hint=hint)


class AgentError(Exception):
    """A failure with an actionable message; the entry point turns it into an `error` event."""

    def __init__(self, code: str, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.hint = hint
