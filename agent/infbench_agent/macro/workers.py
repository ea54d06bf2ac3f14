"""Macro phase: a level spread over worker processes (this agent re-invoked as `macro --worker`), so that the
client never limits the numbers. The coordinator and its workers speak events.WORKER_MESSAGES, one JSON
object per line: a job and a go on the worker's stdin; ready, records and an end on its stdout.
"""
from __future__ import annotations

import argparse
import json
import os
import selectors
import signal
import subprocess
import sys
import time
from typing import Callable, List

from infbench_agent import events
from infbench_agent.http import Endpoint
from infbench_agent.macro.client import Engine
from infbench_agent.macro.drive import Cancel, cpu_seconds, drive, raise_open_file_limit, request_bodies
from infbench_agent.macro.levels import LevelRun
from infbench_agent.macro.prompts import PromptMaker
from infbench_agent.macro import workloads


def worker_main() -> int:
    """`macro --worker`: reads a job on stdin, waits for the start time, prints records as JSON lines."""
    cancel = Cancel().install()
    raise_open_file_limit()
    job = json.loads(sys.stdin.readline())
    maker = PromptMaker.from_json(job["prompt"], workloads.source_from_json)
    endpoint = Endpoint(job["url"], job.get("api_key"), job.get("headers"))
    out = sys.stdout

    def write(obj: dict) -> None:
        out.write(json.dumps(obj, separators=(",", ":")) + "\n")

    engine = Engine(endpoint, job["path"], job["request_timeout"], lambda r: None)
    bodies = request_bodies(job["plan"], maker)
    write({"kind": "ready"})
    out.flush()
    go = sys.stdin.readline()
    if not go:
        return 0
    job["plan"]["start_at"] = json.loads(go)["start_at"]
    cpu0 = cpu_seconds()
    last_flush = [time.monotonic()]

    pending: List[dict] = []

    def on_record(rec: dict) -> None:
        rec.pop("payload", None)
        pending.append(rec)

    def tick() -> None:
        # Records are written when no read is waiting (or every 0.25 s at the most): streams that finish
        # together must not have their last tokens stamped behind the serializing of the earlier ones.
        now = time.monotonic()
        if pending and (engine.last_reads == 0 or now - last_flush[0] > 0.25):
            for rec in pending:
                write({"kind": "record", "record": rec})
            pending.clear()
            out.flush()
            last_flush[0] = now

    try:
        drive(job["plan"], engine, maker, on_record, cancel, tick, bodies)
    finally:
        engine.close()
        for rec in pending:
            write({"kind": "record", "record": rec})
        write({"kind": "end", "cpu_s": cpu_seconds() - cpu0, "cancelled": cancel.requested})
        out.flush()
    return 0


def agent_root() -> str:
    """The folder or zipapp this package was imported from, to start workers with the same code."""
    import infbench_agent

    return os.path.dirname(os.path.dirname(os.path.abspath(infbench_agent.__file__)))


def run_level_workers(
    plans: List[dict], args: argparse.Namespace, path: str, maker: PromptMaker, level: LevelRun, cancelled: Callable[[], bool]
) -> float:
    """Runs each plan in its own worker process; returns the CPU seconds of all of them and of this process."""
    cmd = [
        sys.executable,
        "-c",
        "import sys; sys.path.insert(0, sys.argv[1]); from infbench_agent.cli import main; " "sys.exit(main(sys.argv[2:]))",
        agent_root(),
        "macro",
        "--worker",
    ]
    procs = []
    cpu0 = cpu_seconds()
    sel = selectors.DefaultSelector()
    try:
        for plan in plans:
            proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
            # The API key travels on stdin, not on a command line other users can read.
            job = {
                "plan": plan,
                "url": args.url,
                "path": path,
                "prompt": maker.to_json(),
                "request_timeout": args.request_timeout,
                "api_key": args.api_key,
                "headers": getattr(args, "request_headers", None),
            }
            assert proc.stdin is not None
            proc.stdin.write((json.dumps(job) + "\n").encode())
            procs.append(proc)
        buffers = {}
        for proc in procs:
            assert proc.stdout is not None
            os.set_blocking(proc.stdout.fileno(), False)
            sel.register(proc.stdout, selectors.EVENT_READ, proc)
            buffers[proc.pid] = b""
        ready = set()
        ended = set()
        worker_cpu = 0.0
        deadline_ready = time.monotonic() + 30.0

        def pump(timeout: float) -> None:
            nonlocal worker_cpu
            for key, _ in sel.select(timeout):
                proc = key.data
                try:
                    chunk = os.read(key.fileobj.fileno(), 1 << 20)  # type: ignore[union-attr]
                except BlockingIOError:
                    continue
                if not chunk:
                    sel.unregister(key.fileobj)
                    ended.add(proc.pid)
                    continue
                buffers[proc.pid] += chunk
                *lines, buffers[proc.pid] = buffers[proc.pid].split(b"\n")
                for line in lines:
                    try:
                        msg = json.loads(line)
                    except ValueError:
                        continue
                    kind = msg.get("kind")
                    if kind == "record":
                        level.add(msg["record"])
                    elif kind == "ready":
                        ready.add(proc.pid)
                    elif kind == "end":
                        worker_cpu += float(msg.get("cpu_s") or 0.0)

        while len(ready) < len(procs):
            if time.monotonic() > deadline_ready or cancelled() or len(ended) > 0:
                raise events.AgentError(
                    "workers_failed",
                    "the load-generator worker processes did not start",
                    f"run '{sys.executable} -c \"import selectors\"' on the host; see the agent's stderr",
                )
            pump(0.1)
        start_at = level.started_at = time.monotonic() + 0.05
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write((json.dumps({"start_at": start_at}) + "\n").encode())
            proc.stdin.flush()
        cancel_sent = None
        while len(ended) < len(procs):
            if cancelled() and cancel_sent is None:
                cancel_sent = time.monotonic()
                for proc in procs:
                    if proc.poll() is None:
                        proc.send_signal(signal.SIGTERM)
            if cancel_sent is not None and time.monotonic() - cancel_sent > 1.5:
                break
            pump(0.05)
            level.tick()
        return worker_cpu + (cpu_seconds() - cpu0)
    finally:
        sel.close()
        for proc in procs:
            if proc.poll() is None:
                try:
                    proc.wait(timeout=0.5 if cancelled() else 5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
