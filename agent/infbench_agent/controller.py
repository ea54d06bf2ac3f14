"""The controller's heartbeat: how the agent notices that whoever started it has gone.

The controller (the extension or the CLI) keeps the agent's stdin open and writes an empty line every
couple of seconds. A connection that dies without a word (a network partition) leaves sshd, and so
the agent, none the wiser for a long time; instead the agent stops itself once the heartbeat has been
silent for the timeout, or stdin closes: first as on cancel (SIGTERM to itself, so the phase ends
its own way and keeps its results), then, if that has not ended it within STOP_GRACE_S (or stdout
has stayed full for BLOCKED_STDOUT_S), with SIGKILL to its process group.

Lines on stdin that are not heartbeats are the phase's input (the API key): `sys.stdin` is replaced
by a reader of those lines, so a phase reads them as it would without the heartbeat.
"""
from __future__ import annotations

import os
import queue
import select
import signal
import sys
import threading
import time
from typing import Optional

# How long the phase's own SIGTERM handling (results out, the profiler stopped) may take, and
# how long stdout may stay full meanwhile (a write to a connection nobody reads never returns).
STOP_GRACE_S = 20.0
BLOCKED_STDOUT_S = 3.0


class _InputLines:
    """What the phase sees as sys.stdin: the non-empty lines, then '' once stdin has closed."""

    def __init__(self) -> None:
        self._lines: "queue.Queue[Optional[str]]" = queue.Queue()
        self._closed = False

    def put(self, line: Optional[str]) -> None:
        self._lines.put(line)

    def readline(self) -> str:
        if self._closed:
            return ""
        line = self._lines.get()
        if line is None:
            self._closed = True
            return ""
        return line

    def fileno(self) -> int:
        return 0


class _Watch:
    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self.last = time.monotonic()
        self.input = _InputLines()
        self._stopping = threading.Lock()

    def read(self) -> None:
        # Straight from the file descriptor: a buffered reader's lock held by this thread would stop
        # the interpreter from shutting down.
        pending = b""
        while True:
            try:
                chunk = os.read(0, 65536)
            except OSError:
                chunk = b""
            if not chunk:
                break
            self.last = time.monotonic()
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for raw in lines:
                line = raw.decode("utf-8", "replace")
                if line.strip():
                    self.input.put(line + "\n")
        self.input.put(None)
        self.stop()

    def watch(self) -> None:
        while time.monotonic() - self.last < self.timeout_s:
            time.sleep(0.5)
        self.stop()

    def stop(self) -> None:
        # No event is written: stdout may be a connection nobody reads, and a blocked write would stall this thread.
        if not self._stopping.acquire(blocking=False):
            return
        threading.Thread(target=_kill_group_later, daemon=True).start()
        os.kill(os.getpid(), signal.SIGTERM)


def _stdout_blocked() -> bool:
    try:
        return not select.select([], [1], [], 0)[1]
    except (OSError, ValueError):
        return False


def _kill_group_later() -> None:
    # Once stdout has stayed full this long nothing the phase says can get out: no use waiting.
    deadline = time.monotonic() + STOP_GRACE_S
    blocked_since: Optional[float] = None
    while time.monotonic() < deadline:
        time.sleep(0.5)
        if not _stdout_blocked():
            blocked_since = None
        elif blocked_since is None:
            blocked_since = time.monotonic()
        elif time.monotonic() - blocked_since > BLOCKED_STDOUT_S:
            break
    try:
        # The group is the run's own when the agent leads it, or when the transport's recorder
        # (which sets INFBENCH_RUN) started it in one; otherwise it may hold whoever started us.
        if os.getpgrp() == os.getpid() or os.environ.get("INFBENCH_RUN"):
            os.killpg(os.getpgrp(), signal.SIGKILL)
        else:
            os.kill(os.getpid(), signal.SIGKILL)
    finally:
        os._exit(1)


def start(timeout_s: float) -> None:
    """Watch stdin for the controller's heartbeat; stop the agent when it has been silent for timeout_s."""
    watch = _Watch(timeout_s)
    sys.stdin = watch.input  # type: ignore[assignment]
    threading.Thread(target=watch.read, name="controller-stdin", daemon=True).start()
    threading.Thread(target=watch.watch, name="controller-heartbeat", daemon=True).start()
