"""`profile`: capture torch.profiler traces of a running vLLM or SGLang server's decode steps.

Finds out what the server is (vLLM or SGLang, which version) and where its traces go; starts its
profiler (`POST /start_profile`), drives a short fixed decode workload, stops it (`/stop_profile`,
which can take minutes while the ranks flush), then waits until every new trace file has stopped
growing and reports each one as a `profile.trace` event. The traces are analysed elsewhere (the
extension or `infbench analyze`); nothing here needs PyTorch.

vLLM without a profiler configured answers 404 on /start_profile: the error says how to enable it
for that version, built from the server's own command line where /proc lets us read it.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import shlex
import socket
import threading
import time
import urllib.error
import urllib.request
from typing import Any, Dict, List, Optional, Tuple

from infbench_agent import events
from infbench_agent.probe import attach_process, probe_server

TRACE_NAME = re.compile(r"\.(pt\.)?trace\.json(\.gz)?$|\.json\.gz$")
WORDS = ("the quick brown fox jumps over a lazy dog while seven bold wizards quietly judge "
         "five boxing matches under pale amber light near distant rivers").split()


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--url", default="http://127.0.0.1:8000", help="the inference server as seen from this host")
    p.add_argument("--model", default=None, help="model name for requests (default: the server's first model)")
    p.add_argument("--trace-dir", default=None,
                   help="where the server writes traces (vLLM: read from its command line or environment when "
                        "possible; SGLang: sent as output_dir; default ~/infbench-traces for SGLang)")
    p.add_argument("--concurrency", type=int, default=4, help="requests decoding at once (the decode batch)")
    p.add_argument("--output-len", type=int, default=48, help="tokens each request generates: about that many decode steps")
    p.add_argument("--input-len", type=int, default=128, help="prompt length in words (about tokens)")
    p.add_argument("--request-timeout", type=float, default=300.0, help="seconds per request")
    p.add_argument("--stop-timeout", type=float, default=1200.0, help="seconds to wait for /stop_profile (ranks flush their traces)")
    p.add_argument("--settle-seconds", type=float, default=3.0, help="a trace file counts as written once its size holds this long")
    p.add_argument("--settle-timeout", type=float, default=900.0, help="seconds to wait for all trace files to appear and settle")
    p.add_argument("--expect-ranks", type=int, default=None, help="trace files to wait for (default: from the server's command line)")


# ---------------------------------------------------------------------------------------------- HTTP

def post(url: str, body: Optional[dict], timeout: float) -> Tuple[int, str]:
    data = json.dumps(body).encode() if body is not None else b""
    req = urllib.request.Request(url, data=data, method="POST", headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")


# ------------------------------------------------------------------------------- what the server is

def version_tuple(version: Optional[str]) -> Optional[Tuple[int, int]]:
    m = re.match(r"(\d+)\.(\d+)", version or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def profiler_dir_from_argv(argv: List[str]) -> Optional[str]:
    """torch_profiler_dir from vLLM's --profiler-config (JSON, `=JSON` or dotted form), if given."""
    for i, a in enumerate(argv):
        value = None
        if a == "--profiler-config" and i + 1 < len(argv):
            value = argv[i + 1]
        elif a.startswith("--profiler-config="):
            value = a.split("=", 1)[1]
        elif a.startswith("--profiler-config.torch_profiler_dir"):
            return a.split("=", 1)[1] if "=" in a else (argv[i + 1] if i + 1 < len(argv) else None)
        if value:
            try:
                cfg = json.loads(value)
                if isinstance(cfg, dict) and cfg.get("torch_profiler_dir"):
                    return str(cfg["torch_profiler_dir"])
            except ValueError:
                continue
        if a == "--profiler-dir" and i + 1 < len(argv):  # the inference-bench simulator
            return argv[i + 1]
    return None


def ranks_from_argv(argv: List[str]) -> Optional[int]:
    """Tensor x pipeline parallel size from the server's flags: how many trace files to expect."""
    def flag(names: Tuple[str, ...]) -> Optional[int]:
        for i, a in enumerate(argv):
            for n in names:
                if a == n and i + 1 < len(argv) and argv[i + 1].isdigit():
                    return int(argv[i + 1])
                if a.startswith(n + "=") and a.split("=", 1)[1].isdigit():
                    return int(a.split("=", 1)[1])
        return None
    tp = flag(("--tensor-parallel-size", "-tp", "--tp-size", "--tp", "--world-size"))
    pp = flag(("--pipeline-parallel-size", "-pp", "--pp-size"))
    if tp is None and pp is None:
        return None
    return (tp or 1) * (pp or 1)


def enable_instructions(server: Dict[str, Any], trace_dir: str) -> str:
    """The exact way to turn the profiler on for this server's version, from its command line when known."""
    argv: List[str] = server.get("command_line") or []
    version = server.get("version")
    if server.get("simulated"):
        flag = f"--profiler-dir {shlex.quote(trace_dir)}"
        return (f"Restart the simulator with {flag}" + (f": {shlex.join(argv)} {flag}" if argv else "") + ".")
    vt = version_tuple(version)
    # strip a profiler flag the server may already carry, so the suggestion has exactly one
    kept: List[str] = []
    skip = False
    for a in argv:
        if skip:
            skip = False
            continue
        if a == "--profiler-config":
            skip = True
            continue
        if a.startswith("--profiler-config"):
            continue
        kept.append(a)
    if vt is not None and vt < (0, 13):
        how = f"set VLLM_TORCH_PROFILER_DIR={trace_dir} in the server's environment (vLLM {version} predates --profiler-config)"
        cmd = f"VLLM_TORCH_PROFILER_DIR={shlex.quote(trace_dir)} {shlex.join(kept)}" if kept else None
    else:
        config = json.dumps({"profiler": "torch", "torch_profiler_dir": trace_dir}, separators=(",", ":"))
        how = (f"add --profiler-config '{config}'" + (f" (vLLM {version})" if version else
               " (vLLM >= 0.13; older versions use the VLLM_TORCH_PROFILER_DIR environment variable instead)"))
        cmd = f"{shlex.join(kept)} --profiler-config {shlex.quote(config)}" if kept else None
    return f"Restart the server with its profiler on: {how}." + (f" For this server: {cmd}" if cmd else
                                                                " (The server's command line could not be read from /proc: add it to your usual command.)")


# ------------------------------------------------------------------------------------- trace files

def list_traces(directory: str) -> Dict[str, Tuple[int, float]]:
    """Trace files under `directory` (one level of sub-folders too: SGLang and vLLM may nest per run)."""
    out: Dict[str, Tuple[int, float]] = {}
    if not os.path.isdir(directory):
        return out
    for root, dirs, files in os.walk(directory):
        if root.count(os.sep) - directory.rstrip(os.sep).count(os.sep) >= 2:
            dirs[:] = []
        for f in files:
            if TRACE_NAME.search(f) and not f.endswith(".tmp"):
                path = os.path.join(root, f)
                try:
                    st = os.stat(path)
                except OSError:
                    continue
                out[path] = (st.st_size, st.st_mtime)
    return out


def rank_of(path: str) -> Optional[int]:
    base = os.path.basename(path)
    for pattern in (r"rank[_-]?(\d+)", r"TP-(\d+)", r"_tp(\d+)"):
        m = re.search(pattern, base, re.IGNORECASE)
        if m:
            return int(m.group(1))
    return None


def wait_for_new_traces(directory: str, before: Dict[str, Tuple[int, float]], expect: Optional[int],
                        settle_s: float, timeout_s: float) -> List[str]:
    """New or rewritten trace files, once their sizes hold still for settle_s (and `expect` of them exist)."""
    start = time.monotonic()
    sizes: Dict[str, Tuple[int, float]] = {}
    last_note = 0.0
    while True:
        now = time.monotonic()
        current = {p: v for p, v in list_traces(directory).items() if before.get(p) != v}
        for p, (size, _) in current.items():
            if p not in sizes or sizes[p][0] != size:
                sizes[p] = (size, now)
        sizes = {p: v for p, v in sizes.items() if p in current}
        settled = [p for p, (_, since) in sizes.items() if now - since >= settle_s]
        enough = expect is None or len(current) >= expect
        if current and enough and len(settled) == len(current):
            return sorted(current)
        if now - start > timeout_s:
            if current:
                events.log(f"waited {timeout_s:.0f} s: {len(current)} trace file(s) found"
                           f"{f' of {expect} expected' if expect else ''}, {len(settled)} settled; reporting what is there", "warn")
                return sorted(current)
            raise events.AgentError(
                "no_traces", f"No new trace file appeared in {directory} within {timeout_s:.0f} s of /stop_profile.",
                "Check that this is the folder the server writes traces to (--trace-dir), that the server's user can "
                "write there, and the server's log for profiler errors.")
        if now - last_note >= 5:
            last_note = now
            total = sum(s for s, _ in sizes.values())
            events.emit(events.PROFILE_STATUS, stage="collect",
                        message=f"{len(current)} trace file(s){f' of {expect}' if expect else ''}, {total / 1e6:.1f} MB so far, "
                                f"{len(settled)} finished writing ({now - start:.0f} s)")
        time.sleep(0.5)


# ---------------------------------------------------------------------------------------- workload

def prompt(n_words: int, rng: random.Random) -> str:
    # Different words for every request and run: prefix caching must not shorten the prefill.
    return " ".join(rng.choice(WORDS) for _ in range(n_words)) + f" {rng.getrandbits(64):x}"


def drive(base: str, model: str, concurrency: int, output_len: int, input_len: int, timeout: float) -> Dict[str, Any]:
    """`concurrency` completions at once, each exactly output_len tokens (ignore_eos): about output_len decode steps."""
    rng = random.Random()
    done: List[Dict[str, Any]] = []
    lock = threading.Lock()

    def one(i: int) -> None:
        body = {"model": model, "prompt": prompt(input_len, rng), "max_tokens": output_len, "min_tokens": output_len,
                "ignore_eos": True, "temperature": 0.0, "stream": False}
        t0 = time.monotonic()
        status, text = post(base + "/v1/completions", body, timeout)
        record: Dict[str, Any] = {"ok": status == 200, "status": status, "seconds": round(time.monotonic() - t0, 3)}
        if status == 200:
            try:
                usage = json.loads(text).get("usage") or {}
                record["completion_tokens"] = usage.get("completion_tokens")
            except ValueError:
                pass
        else:
            record["error"] = text[:300]
        with lock:
            done.append(record)
            events.emit(events.PROGRESS, done=len(done), total=concurrency, message=f"request {i + 1}: {'ok' if record['ok'] else status}")

    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(concurrency)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    failed = [r for r in done if not r["ok"]]
    return {"requests": len(done), "failed": len(failed), "seconds": round(time.monotonic() - t0, 3),
            "first_error": failed[0].get("error") if failed else None}


def call_with_progress(what: str, fn, timeout_s: float) -> Any:  # noqa: ANN001 - any callable
    """Runs fn() in a thread, reporting every 5 s so that a long flush does not look like a hang."""
    box: Dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except Exception as exc:  # noqa: BLE001 - re-raised on the caller's thread
            box["error"] = exc

    t = threading.Thread(target=target, daemon=True)
    start = time.monotonic()
    t.start()
    while t.is_alive():
        t.join(5.0)
        if t.is_alive():
            waited = time.monotonic() - start
            events.emit(events.PROFILE_STATUS, stage="stop",
                        message=f"{what}: {waited:.0f} s so far (the ranks write their traces; big models take minutes)")
            if waited > timeout_s:
                raise events.AgentError("stop_timeout", f"{what} did not answer within {timeout_s:.0f} s.",
                                        "The traces may still be written: look in the trace folder, or raise --stop-timeout.")
    if "error" in box:
        raise box["error"]
    return box.get("value")


# ---------------------------------------------------------------------------------------------- run

def run(args: argparse.Namespace) -> int:
    base = args.url.rstrip("/")
    server = probe_server(args.url, 5.0)
    if not server.get("reachable"):
        raise events.AgentError("server_unreachable", server.get("error") or f"nothing answers at {args.url}",
                                "Start the server, or give its URL as seen from this host with --url.")
    kind = server.get("kind")
    if kind not in ("vllm", "sglang"):
        raise events.AgentError("unknown_server", f"The server at {args.url} is neither vLLM nor SGLang as far as it tells "
                                f"({server.get('kind_evidence') or 'no /version, no vllm:/sglang: metrics'}).",
                                "The profiler phase drives the /start_profile and /stop_profile endpoints of vLLM and SGLang "
                                "only: if this URL is a proxy, point --url at the vLLM/SGLang server behind it; otherwise "
                                "capture a torch profiler trace with the server's own tools and break it down with "
                                "`infbench analyze TRACE...` (or Analyze Trace File... in VS Code).")
    process: Dict[str, Any] = {}
    attach_process(process, args.url)
    argv: List[str] = server.get("command_line") or []
    env: Dict[str, str] = process.get("_environ") or {}
    models = [m.get("id") for m in server.get("models") or [] if m.get("id")]
    model = args.model or (models[0] if models else None)
    if not model:
        raise events.AgentError("no_model", f"{args.url}/v1/models lists no model.", "Pass the model name with --model.")
    label = f"{'SIMULATED ' if server.get('simulated') else ''}{kind} {server.get('version') or '(version unknown)'}"
    events.log(f"server {label} at {args.url}, model {model}, pid {server.get('pid') or 'not visible'}")

    if kind == "vllm":
        trace_dir = profiler_dir_from_argv(argv) or env.get("VLLM_TORCH_PROFILER_DIR") or args.trace_dir
    else:
        trace_dir = args.trace_dir or env.get("SGLANG_TORCH_PROFILER_DIR") or os.path.expanduser("~/infbench-traces")
    suggested_dir = os.path.abspath(os.path.expanduser(args.trace_dir or "~/infbench-traces"))
    expect = args.expect_ranks or ranks_from_argv(argv)

    before = list_traces(trace_dir) if trace_dir else {}
    events.emit(events.PROFILE_STATUS, stage="start", message=f"starting the profiler of {label}")
    body = None
    if kind == "sglang":
        os.makedirs(trace_dir, exist_ok=True)
        # num_steps makes SGLang stop by itself after that many forward steps (the prefill included).
        body = {"output_dir": os.path.abspath(trace_dir), "num_steps": args.output_len + 2, "activities": ["CPU", "GPU"]}
    status, text = post(base + "/start_profile", body, 30.0)
    if status == 404 and kind == "vllm":
        raise events.AgentError(
            "profiler_disabled",
            f"vLLM at {args.url} answered 404 on /start_profile: the server was started without a profiler.",
            enable_instructions(server, suggested_dir))
    if status != 200:
        raise events.AgentError("start_profile_failed", f"POST {base}/start_profile answered {status}: {text[:300]}",
                                "See the server's log; another profile may be running already.")
    if not trace_dir:
        # The profiler is on, but neither the command line nor the environment says where it writes.
        post(base + "/stop_profile", None, args.stop_timeout)
        raise events.AgentError("trace_dir_unknown", "The profiler is on, but where vLLM writes its traces could not be read "
                                "from the server's command line or environment.",
                                "Pass the folder of --profiler-config's torch_profiler_dir with --trace-dir.")
    events.emit(events.PROFILE_STATUS, stage="workload",
                message=f"profiling: {args.concurrency} request(s) at once, {args.output_len} output tokens each, "
                        f"prompts of ~{args.input_len} words")
    workload = drive(base, model, args.concurrency, args.output_len, args.input_len, args.request_timeout)
    if workload["failed"]:
        events.log(f"{workload['failed']} of {workload['requests']} profiled requests failed: {workload['first_error']}", "warn")

    events.emit(events.PROFILE_STATUS, stage="stop", message="stopping the profiler; the ranks now write their traces")
    t_stop = time.monotonic()
    status, text = call_with_progress("/stop_profile", lambda: post(base + "/stop_profile", None, args.stop_timeout), args.stop_timeout)
    if status != 200 and kind == "vllm":
        raise events.AgentError("stop_profile_failed", f"POST {base}/stop_profile answered {status}: {text[:300]}",
                                "See the server's log.")
    if status != 200:
        events.log(f"/stop_profile answered {status} (SGLang stops by itself after num_steps): {text[:200]}", "debug")
    stop_s = time.monotonic() - t_stop

    events.emit(events.PROFILE_STATUS, stage="collect", message=f"waiting for the trace files in {trace_dir}")
    paths = wait_for_new_traces(trace_dir, before, expect, args.settle_seconds, args.settle_timeout)
    host = socket.gethostname()
    traces = []
    for i, path in enumerate(paths):
        size = os.path.getsize(path)
        rank = rank_of(path)
        traces.append({"path": path, "rank": rank, "bytes": size, "host": host})
        events.emit(events.PROFILE_TRACE, path=path, rank=rank if rank is not None else None, bytes=size, host=host)
    if expect and len(paths) < expect:
        events.log(f"{len(paths)} trace file(s) for {expect} expected ranks", "warn")
    events.emit(events.RESULT, result={
        "server": {"kind": kind, "version": server.get("version"), "simulated": bool(server.get("simulated")), "model": model,
                   "url": args.url},
        "trace_dir": trace_dir, "traces": traces, "expected_ranks": expect,
        "workload": {"concurrency": args.concurrency, "output_len": args.output_len, "input_len": args.input_len, **workload},
        "stop_seconds": round(stop_s, 3),
    })
    return 0
