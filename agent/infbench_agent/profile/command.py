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
import signal
import socket
import subprocess
import threading
import time
from typing import Any, Dict, List, Optional, Tuple, cast

from infbench_agent import auth, events, http, options
from infbench_agent.probe.argv import flag_value
from infbench_agent.probe.command import (
    attach_process,
    parallel_sizes,
    probe_server,
    profiler_config_from_argv,
    version_tuple,
    vllm_profiler_setup,
)

TRACE_NAME = re.compile(r"\.(pt\.)?trace\.json(\.gz)?$|\.json\.gz$")
WORDS = (
    "the quick brown fox jumps over a lazy dog while seven bold wizards quietly judge "
    "five boxing matches under pale amber light near distant rivers"
).split()


def add_arguments(p: argparse.ArgumentParser) -> None:
    options.add_arguments(p, "profile")


# ---------------------------------------------------------------------------------------------- HTTP


# ------------------------------------------------------------------------------- what the server is


def profiler_dir_from_argv(argv: List[str]) -> Optional[str]:
    """torch_profiler_dir from vLLM's --profiler-config (JSON, `=JSON` or dotted form), if given."""
    cfg = profiler_config_from_argv(argv)
    if cfg.get("torch_profiler_dir"):
        return str(cfg["torch_profiler_dir"])
    return flag_value(argv, ("--profiler-dir",))  # the inference-bench simulator's own flag


def ranks_from_argv(argv: List[str], kind: str = "vllm") -> Optional[int]:
    """How many trace files to expect: tensor x pipeline x data parallel size from the server's flags."""
    sizes = parallel_sizes(argv, kind)
    return sizes["ranks"] if sizes else None


def resolve_server_path(path: str, server: Dict[str, Any], env: Dict[str, str], what: str) -> str:
    """A folder as the server's process resolves it: `~` with the server's HOME, relative against its cwd.

    vLLM applies os.path.abspath(os.path.expanduser(...)) to torch_profiler_dir in its own process
    (vllm/config/profiler.py; vllm/envs.py for VLLM_TORCH_PROFILER_DIR), and SGLang writes to
    output_dir as its scheduler sees it (scheduler_profiler_mixin.py), both with the server's cwd.
    """
    if "://" in path and len(path.split("://", 1)[0]) > 1:
        raise events.AgentError(
            "trace_dir_remote",
            f"{what} is {path}: the server writes its traces to remote storage.",
            "Download them from there and run {0}, or restart the server with a local absolute folder.",
            [events.command("analyze")],
        )
    resolved = path
    if resolved.startswith("~"):
        home = env.get("HOME")
        if home is None and server.get("pid"):
            try:
                import pwd

                home = pwd.getpwuid(os.stat(f"/proc/{server['pid']}").st_uid).pw_dir
            except (OSError, KeyError, ImportError):
                home = None
        if home is None:
            raise events.AgentError(
                "trace_dir_unresolved",
                f"{what} is {path}, under the server's home folder, " "which /proc does not show to this user.",
                "Pass the absolute folder with {0}, or start the server with an absolute path.",
                [events.flag("--trace-dir")],
            )
        resolved = home + resolved[1:] if resolved == "~" or resolved.startswith("~/") else os.path.expanduser(resolved)
    if not os.path.isabs(resolved):
        cwd = server.get("cwd")
        if not cwd:
            unseen = (
                f"/proc/{server['pid']}/cwd does not show to this user"
                if server.get("pid")
                else "cannot be read (the server process is not visible from here)"
            )
            raise events.AgentError(
                "trace_dir_unresolved",
                f"{what} is the relative folder {path}: relative to the server's working directory, which {unseen}.",
                "Pass the absolute folder with {0}, or start the server with an absolute torch_profiler_dir.",
                [events.flag("--trace-dir")],
            )
        resolved = os.path.join(cwd, resolved)
    resolved = os.path.normpath(resolved)
    if resolved != path:
        events.log(
            f"traces: {what} {path} is, as the server (pid {server.get('pid')}, cwd {server.get('cwd')}) "
            f"resolves it, {resolved}: looking there"
        )
    return resolved


def enable_instructions(server: Dict[str, Any], trace_dir: str) -> str:
    """The exact way to turn the profiler on for this server's version, from its command line when known."""
    argv: List[str] = server.get("command_line") or []
    version = server.get("version")
    if server.get("simulated") and not server.get("mimic"):
        flag = f"--profiler-dir {shlex.quote(trace_dir)}"
        return f"Restart the simulator with {flag}" + (f": {shlex.join(argv)} {flag}" if argv else "") + "."
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
        how = f"add --profiler-config '{config}'" + (
            f" (vLLM {version})"
            if version
            else " (vLLM >= 0.13; older versions use the VLLM_TORCH_PROFILER_DIR environment variable instead)"
        )
        cmd = f"{shlex.join(kept)} --profiler-config {shlex.quote(config)}" if kept else None
    redacted = " (secrets in it are shown as REDACTED: put yours back)" if cmd and auth.REDACTED in cmd else ""
    unread = " (The server's command line could not be read from /proc: add it to your usual command.)"
    return f"Restart the server with its profiler on: {how}." + (f" For this server{redacted}: {cmd}" if cmd else unread)


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


def is_frontend_trace(path: str) -> bool:
    """vLLM's API-server trace (CPU only, no rank): `<host>_<pid>.async_llm.<ns>.pt.trace.json.gz`
    (vllm/v1/engine/async_llm.py names its profiler worker `<host>_<pid>.async_llm`)."""
    return ".async_llm." in os.path.basename(path)


def rank_of(path: str) -> Optional[int]:
    base = os.path.basename(path)
    for pattern in (r"rank[_-]?(\d+)", r"TP-(\d+)", r"_tp(\d+)"):
        m = re.search(pattern, base, re.IGNORECASE)
        if m:
            return int(m.group(1))
    return None


def wait_for_new_traces(
    directory: str, before: Dict[str, Tuple[int, float]], expect: Optional[int], settle_s: float, timeout_s: float
) -> List[str]:
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
        enough = expect is None or len([p for p in current if not is_frontend_trace(p)]) >= expect
        if current and enough and len(settled) == len(current):
            return sorted(current)
        if now - start > timeout_s:
            if current:
                events.log(
                    f"waited {timeout_s:.0f} s: {len(current)} trace file(s) found"
                    f"{f' of {expect} expected' if expect else ''}, {len(settled)} settled; reporting what is there",
                    "warn",
                )
                return sorted(current)
            raise events.AgentError(
                "no_traces",
                f"No new trace file appeared in {directory} within {timeout_s:.0f} s of /stop_profile.",
                "Check that this is the folder the server writes traces to ({0}), that the server's user can "
                "write there, and the server's log for profiler errors.",
                [events.flag("--trace-dir")],
            )
        if now - last_note >= 5:
            last_note = now
            total = sum(s for s, _ in sizes.values())
            events.emit(
                events.PROFILE_STATUS,
                stage="collect",
                message=f"{len(current)} trace file(s){f' of {expect}' if expect else ''}, {total / 1e6:.1f} MB so far, "
                f"{len(settled)} finished writing ({now - start:.0f} s)",
            )
        time.sleep(0.5)


# ---------------------------------------------------------------------------------------- workload


def prompt(n_words: int, rng: random.Random) -> str:
    # Different words for every request and run: prefix caching must not shorten the prefill.
    return " ".join(rng.choice(WORDS) for _ in range(n_words)) + f" {rng.getrandbits(64):x}"


def stream_tokens(
    url: str, body: dict, timeout: float, api_key: Optional[str], at: int, reached: threading.Event
) -> Tuple[Optional[int], str, Optional[int]]:
    """A streamed completion: sets `reached` once `at` tokens have come (each one a forward step of the batch).
    (status, error text, completion tokens)."""
    tokens, usage = 0, None

    def on_line(line: str) -> None:
        nonlocal tokens, usage
        if not line.startswith("data:") or line == "data: [DONE]":
            return
        try:
            chunk = json.loads(line[5:])
        except ValueError:
            return
        usage = (chunk.get("usage") or {}).get("completion_tokens", usage)
        if any(c.get("text") for c in chunk.get("choices") or []):
            tokens += 1
            if tokens >= at:
                reached.set()

    status, error = http.post_stream(url, {**body, "stream": True, "stream_options": {"include_usage": True}}, timeout, api_key, on_line)
    if error is not None:
        return status, error, None
    return status, "", usage if usage is not None else tokens


def drive(
    base: str,
    model: str,
    concurrency: int,
    output_len: int,
    input_len: int,
    timeout: float,
    api_key: Optional[str] = None,
    steady: Optional[Tuple[int, threading.Event]] = None,
) -> Dict[str, Any]:
    """`concurrency` completions at once, each exactly output_len tokens (ignore_eos): about output_len decode steps.
    With `steady` (n, event), the first request streams and sets the event once it has n tokens."""
    rng = random.Random()
    done: List[Dict[str, Any]] = []
    lock = threading.Lock()

    def one(i: int) -> None:
        body = {
            "model": model,
            "prompt": prompt(input_len, rng),
            "max_tokens": output_len,
            "min_tokens": output_len,
            "ignore_eos": True,
            "temperature": 0.0,
            "stream": False,
        }
        t0 = time.monotonic()
        if steady and i == 0:
            status, text, tokens = stream_tokens(base + "/v1/completions", body, timeout, api_key, *steady)
            text = text or json.dumps({"usage": {"completion_tokens": tokens}})
        else:
            status, text = http.post(base + "/v1/completions", body, timeout, api_key)
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
        try:
            events.emit(events.PROGRESS, done=len(done), total=concurrency, message=f"request {i + 1}: {'ok' if record['ok'] else status}")
        except OSError:
            pass  # the controller is gone; the main thread notices on its next status line

    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(concurrency)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    last_note = t0
    for t in threads:
        while t.is_alive():
            t.join(0.5)
            if time.monotonic() - last_note >= 5:
                last_note = time.monotonic()
                # A line every few seconds: a dropped connection shows up here as a broken pipe.
                events.emit(
                    events.PROFILE_STATUS,
                    stage="workload",
                    message=f"{len(done)} of {concurrency} profiled request(s) done ({last_note - t0:.0f} s)",
                )
    failed = [r for r in done if not r["ok"]]
    return {
        "requests": len(done),
        "failed": len(failed),
        "seconds": round(time.monotonic() - t0, 3),
        "first_error": failed[0].get("error") if failed else None,
        "statuses": sorted({r["status"] for r in failed if r["status"] is not None}),
    }


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
            events.emit(
                events.PROFILE_STATUS,
                stage="stop",
                message=f"{what}: {waited:.0f} s so far (the ranks write their traces; big models take minutes)",
            )
            if waited > timeout_s:
                raise events.AgentError(
                    "stop_timeout",
                    f"{what} did not answer within {timeout_s:.0f} s.",
                    "The traces may still be written: look in the trace folder, or raise {0}.",
                    [events.flag("--stop-timeout")],
                )
    if "error" in box:
        raise box["error"]
    return box.get("value")


# ---------------------------------------------------------------------------------------------- run


class _Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP: ends the run like Ctrl-C, so the profiler is stopped on the way out."""


def _on_signal(signum, frame) -> None:  # noqa: ANN001 - signal handler signature
    raise _Stopped(f"signal {signum}")


class ProfilerSession:
    """Remembers that the server's profiler runs, so that every way out of the run stops it.

    Cancel (Ctrl-C, the controller's SIGTERM), a closed terminal (SIGHUP) and a dropped connection (the
    next event line fails with a broken pipe) all end here while /start_profile is in effect: a server
    left profiling keeps recording every step and writes a trace of all of it at some later stop.
    """

    def __init__(self, base: str, api_key: Optional[str]) -> None:
        self.base = base
        self.api_key = api_key
        self.active = False

    def stop_after_failure(self, why: str) -> None:
        if not self.active:
            return
        self.active = False
        # Short: the controller's SIGKILL follows its SIGTERM within seconds; the server acts on the request
        # once it has arrived, whether or not we are still there for the answer.
        status, text = http.post(self.base + "/stop_profile", None, 2.5, self.api_key)
        try:
            events.log(
                f"{why}: stopped the server's profiler (/stop_profile answered " f"{status if status is not None else text})", "warn"
            )
        except OSError:
            pass


def start_profile(
    base: str, body: Optional[dict], api_key: Optional[str], kind: str, start_timeout: float
) -> Tuple[Optional[int], str, Optional[threading.Thread], Dict[str, Any]]:
    """POST /start_profile. SGLang with num_steps may answer only after those steps ran (older releases:
    scheduler.py returned no ProfileReqOutput until profiler_target_forward_ct was reached), so its
    answer is awaited in a thread: the workload goes ahead if none came within a few seconds."""
    box: Dict[str, Any] = {}

    def target() -> None:
        box["answer"] = http.post(base + "/start_profile", body, start_timeout, api_key)

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(3.0 if kind == "sglang" and body and body.get("num_steps") else start_timeout + 1)
    if t.is_alive():
        return None, "", t, box
    status, text = box["answer"]
    return status, text, None, box


def collect_since(args: argparse.Namespace) -> int:
    """Another host's part of a multi-node profile: its ranks' trace files, written since the capture began."""
    if not args.trace_dir:
        raise events.AgentError("trace_dir_unknown", "--collect-since needs --trace-dir.", "The head's capture names the folder.")
    trace_dir = os.path.abspath(os.path.expanduser(args.trace_dir))
    before = {p: v for p, v in list_traces(trace_dir).items() if v[1] < args.collect_since}
    events.emit(events.PROFILE_STATUS, stage="collect", message=f"waiting for this host's trace files in {trace_dir}")
    host = socket.gethostname()
    for path in wait_for_new_traces(trace_dir, before, args.expect_ranks, args.settle_seconds, args.settle_timeout):
        frontend = is_frontend_trace(path)
        extra = {"frontend": True} if frontend else {}
        events.emit(
            events.PROFILE_TRACE, path=path, rank=None if frontend else rank_of(path), bytes=os.path.getsize(path), host=host, **extra
        )
    return 0


def collect_nsys(args: argparse.Namespace) -> int:
    """--nsys-report: the server under nsys has stopped; export its report to SQLite here and read it here.

    Writes beside the report REPORT.sqlite, REPORT.records.jsonl (every kernel with its step and NVTX module,
    profile/nsys_report.py) and REPORT-kineto/ (the same steps as Kineto traces), and reports their paths and sizes.
    """
    from infbench_agent.server import nsys as nsys_host
    from infbench_agent.profile import nsys_report

    nsys = args.nsys or nsys_host.discover().get("nsys")
    if not nsys:
        raise events.AgentError(
            "nsys_missing", "Nsight Systems (nsys) was not found on this host to export the report.", nsys_host.GET_NSYS
        )
    report = os.path.abspath(os.path.expanduser(args.nsys_report))
    events.emit(events.PROFILE_STATUS, stage="collect", message=f"waiting for nsys to finish writing {report}")
    try:
        size = nsys_host.wait_settled(report, args.settle_seconds, args.settle_timeout)
    except FileNotFoundError as err:
        raise events.AgentError("nsys_report_missing", str(err)) from err
    events.emit(events.PROFILE_STATUS, stage="collect", message=f"the Nsight Systems report is written: {report} ({size / 1e6:.1f} MB)")
    export = nsys_host.export_argv(nsys, report)
    sqlite_path = export[export.index("-o") + 1]
    events.emit(events.PROFILE_STATUS, stage="export", message="exporting it to SQLite: " + " ".join(shlex.quote(a) for a in export))
    try:
        done = subprocess.run(export, capture_output=True, text=True, timeout=args.settle_timeout)
    except (OSError, subprocess.SubprocessError) as err:
        raise events.AgentError("nsys_export_failed", f"`{' '.join(export)}` did not run: {err}.", nsys_host.GET_NSYS) from err
    if done.returncode != 0 or not os.path.isfile(sqlite_path):
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        raise events.AgentError(
            "nsys_export_failed",
            f"`{' '.join(export)}` exited with code {done.returncode}: {' | '.join(tail) or 'no output'}.",
            f"The report is still on the host ({report}); export it there by hand and read it with `infbench analyze REPORT.sqlite`.",
        )
    base = re.sub(r"\.sqlite$", "", sqlite_path)
    records_path, kineto_dir = base + ".records.jsonl", base + "-kineto"
    events.emit(events.PROFILE_STATUS, stage="read", message=f"reading {sqlite_path} ({os.path.getsize(sqlite_path) / 1e6:.1f} MB) here")
    try:
        reader = nsys_report.NsysReport(sqlite_path)
        summary: Dict[str, Any] = {}
        with open(records_path, "w") as out:
            for record in reader.records():
                if record["type"] == "nsys-summary":
                    summary = record
                out.write(json.dumps(record, separators=(",", ":")) + "\n")
        kineto = nsys_report.write_kineto(reader, kineto_dir)
    except nsys_report.ReportError as err:
        raise events.AgentError("nsys_report_unreadable", str(err)) from err

    def described(path: str) -> Dict[str, Any]:
        return {"path": path, "bytes": os.path.getsize(path)}

    events.emit(
        events.RESULT,
        result={
            "server": {"url": args.url, "kind": None, "version": None, "model": None, "simulated": False},
            "trace_dir": os.path.dirname(report),
            "workload": {"concurrency": 0, "output_len": 0, "input_len": 0},
            "nsys": {
                "report": described(report),
                "sqlite": described(sqlite_path),
                "records": described(records_path),
                "kineto": [described(p) for p in kineto],
                "summary": summary,
                "exporter": nsys,
            },
        },
    )
    return 0


def run(args: argparse.Namespace) -> int:
    if args.collect_since is not None:
        return collect_since(args)
    if args.nsys_report:
        return collect_nsys(args)
    base = args.url.rstrip("/")
    api_key = auth.resolve_api_key(args)
    server = probe_server(args.url, 5.0, api_key)
    if not server.get("reachable"):
        raise events.AgentError(
            "server_unreachable",
            server.get("error") or f"nothing answers at {args.url}",
            "Start the server, or give its URL as seen from this host with {0}.",
            [events.flag("--url")],
        )
    kind = server.get("kind")
    if kind not in ("vllm", "sglang"):
        raise events.AgentError(
            "unknown_server",
            f"The server at {args.url} is neither vLLM nor SGLang as far as it tells "
            f"({server.get('kind_evidence') or 'no /version, no vllm:/sglang: metrics'}).",
            "The profiler phase drives the /start_profile and /stop_profile endpoints of vLLM and SGLang "
            "only: if this URL is a proxy, point {0} at the vLLM/SGLang server behind it; otherwise "
            "capture a torch profiler trace with the server's own tools and break it down with {1}.",
            [events.flag("--url"), events.command("analyze")],
        )
    if server["auth"]["required"] and not server["auth"].get("key_accepted"):
        raise events.AgentError("unauthorized", server.get("error") or "this server wants an API key.", auth.KEY_HINT, auth.KEY_REMEDIES)
    process: Dict[str, Any] = {}
    attach_process(process, args.url)
    argv: List[str] = server.get("command_line") or []
    env: Dict[str, str] = process.get("_environ") or {}
    models = [m.get("id") for m in server.get("models") or [] if m.get("id")]
    model = args.model or (models[0] if models else None)
    if not model:
        raise events.AgentError(
            "no_model", f"{args.url}/v1/models lists no model.", "Pass the model name with {0}.", [events.flag("--model")]
        )
    version = server.get("version")
    label = f"{'SIMULATED ' if server.get('simulated') else ''}{kind} {version or '(version unknown)'}"
    events.log(f"server {label} at {args.url}, model {model}, pid {server.get('pid') or 'not visible'}")
    events.server(args.url, kind, version, model, bool(server.get("simulated")))

    legacy_simulator = bool(server.get("simulated")) and not server.get("mimic")
    suggested_dir = os.path.abspath(os.path.expanduser(args.trace_dir or "~/infbench-traces"))
    trace_dir: Optional[str] = None
    body = None
    nsys = args.profiler == "nsys"
    if nsys and kind == "vllm":
        setup = vllm_profiler_setup(argv, env, version) if not legacy_simulator else {"kind": None}
        if setup["kind"] != "cuda":
            raise events.AgentError(
                "nsys_profiler_off",
                f"vLLM at {args.url} does not run its CUDA profiler: /start_profile would not bound an Nsight Systems capture.",
                "Let infbench restart it under nsys with the CUDA profiler on ({0}), or start it yourself under `nsys profile` "
                'with --profiler-config \'{"profiler":"cuda"}\' (VLLM_TORCH_CUDA_PROFILE=1 before vLLM 0.13).',
                [events.command("profile", "--profiler", "nsys")],
            )
        events.log("nsys: /start_profile and /stop_profile bound the capture (vLLM's CUDA profiler mode)")
    elif nsys:
        body = sglang_profile_body(args, None)
        # scheduler_profiler_mixin.py: CUDA_PROFILER calls cudaProfilerStart/Stop on the first GPU's rank.
        body["activities"] = ["CUDA_PROFILER"]
        events.log("nsys: /start_profile asks SGLang for its CUDA_PROFILER activity")
    elif kind == "vllm" and not legacy_simulator:
        setup = vllm_profiler_setup(argv, env, version)
        if setup["ignored_env"]:
            events.log(setup["ignored_env"], "warn")
        if setup["kind"] == "cuda":
            raise events.AgentError(
                "cuda_profiler",
                f"vLLM at {args.url} runs its CUDA profiler ({setup['source']}): /start_profile only marks a capture "
                "range for Nsight Systems and writes no torch trace to analyse.",
                "Either capture with nsys (start the server under `nsys profile --capture-range=cudaProfilerApi "
                "--capture-range-end=repeat ...`, then drive /start_profile and /stop_profile) and read the report "
                "there, or restart it with the torch profiler: " + enable_instructions(server, suggested_dir),
            )
        if setup["dir"]:
            trace_dir = resolve_server_path(
                setup["dir"],
                server,
                env,
                f"{setup['source']} torch_profiler_dir" if setup["source"] == "--profiler-config" else setup["source"],
            )
        elif args.trace_dir:
            trace_dir = os.path.abspath(os.path.expanduser(args.trace_dir))
    elif kind == "vllm":
        trace_dir = profiler_dir_from_argv(argv) or args.trace_dir
        trace_dir = resolve_server_path(trace_dir, server, env, "--profiler-dir") if trace_dir else None
    else:
        # SGLang: output_dir when given, else its own default, SGLANG_TORCH_PROFILER_DIR or /tmp
        # (scheduler_profiler_mixin.py init_profile).
        if args.trace_dir:
            trace_dir = os.path.abspath(os.path.expanduser(args.trace_dir))
        else:
            trace_dir = (
                resolve_server_path(env["SGLANG_TORCH_PROFILER_DIR"], server, env, "SGLANG_TORCH_PROFILER_DIR")
                if env.get("SGLANG_TORCH_PROFILER_DIR")
                else "/tmp"
            )
        events.log(
            f"traces: SGLang writes them to {trace_dir}" f"{' (--trace-dir, sent as output_dir)' if args.trace_dir else ' (its default)'}"
        )
        body = sglang_profile_body(args, trace_dir if args.trace_dir else None)
        if args.trace_dir:
            os.makedirs(cast(str, trace_dir), exist_ok=True)  # set from --trace-dir just above
    sizes = parallel_sizes(argv, kind)
    expect = args.expect_ranks or (sizes["ranks"] if sizes else None)
    if expect and args.nodes > 1 and not args.expect_ranks:
        # A multi-node server: each host writes its own ranks' traces; this one waits for its share.
        expect = -(-expect // args.nodes)
    if sizes and not args.expect_ranks and (sizes["dp"] > 1 or sizes["pp"] > 1):
        events.log(
            f"expecting {expect} trace files: tp {sizes['tp']} x pp {sizes['pp']} x dp "
            f"{1 if sizes['dp_attention'] else sizes['dp']}{' (DP attention: inside TP)' if sizes['dp_attention'] else ''}"
        )

    before = list_traces(trace_dir) if trace_dir else {}
    events.emit(events.PROFILE_STATUS, stage="start", message=f"starting the profiler of {label}")
    session = ProfilerSession(base, api_key)
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGHUP)}
    for sig in previous:
        signal.signal(sig, _on_signal)
    try:
        return _profile(args, base, api_key, server, kind, label, model, trace_dir, suggested_dir, body, expect, before, session)
    except BaseException as exc:  # noqa: BLE001 - every way out stops the profiler, then goes on as it was
        why = (
            "cancelled"
            if isinstance(exc, KeyboardInterrupt)
            else "the controller's connection is gone"
            if isinstance(exc, (BrokenPipeError, ConnectionResetError))
            else f"the run failed ({type(exc).__name__})"
        )
        session.stop_after_failure(why)
        raise
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def sglang_profile_body(args: argparse.Namespace, output_dir: Optional[str]) -> Dict[str, Any]:
    """The body of SGLang's POST /start_profile: a bounded capture of `num_steps` forward steps.

    Field names are those of ProfileReqInput in python/sglang/srt/managers/io_struct.py (output_dir,
    start_step, num_steps, activities, with_stack, record_shapes), which http_server.py's /start_profile
    passes to the scheduler. start_step is not sent: scheduler_profiler_mixin.py init_profile reads it as
    the scheduler's own forward count since the server started (max(start_step, forward_ct + 1)), which
    no endpoint tells, so on a server that has run it would start at once. The steps to skip
    (--delay-steps) are counted here instead, on a streamed request, before /start_profile is sent.
    """
    # num_steps must be steps the workload surely runs after the capture starts (all requests joining at
    # once): older SGLang answers /start_profile only after them, newer stops by itself there.
    room = args.output_len - args.delay_steps - 4
    steps = args.num_steps or max(1, room)
    if args.delay_steps < 0 or steps > max(1, room):
        raise events.AgentError(
            "bad_option",
            f"--num-steps {steps} after --delay-steps {args.delay_steps} does not fit in --output-len {args.output_len}: "
            "the requests end before the capture does.",
            f"Raise {{0}} to at least {args.delay_steps + steps + 4}, or capture fewer steps.",
            [events.flag("--output-len")],
        )
    body: Dict[str, Any] = {"num_steps": steps, "activities": ["CPU", "GPU"]}
    # SGLang's defaults (with_stack on, record_shapes off) stand unless asked for.
    if args.record_shapes:
        body["record_shapes"] = True
    if args.with_stack:
        body["with_stack"] = True
    if output_dir:
        body["output_dir"] = output_dir
    return body


def steady_workload(args: argparse.Namespace, base: str, model: str, api_key: Optional[str]) -> Tuple[threading.Thread, Dict[str, Any]]:
    """Starts the profiled workload and returns once its batch has run --delay-steps decode steps (the
    first request's streamed tokens say so), so that /start_profile then captures a steady batch."""
    reached = threading.Event()
    box: Dict[str, Any] = {}
    events.emit(
        events.PROFILE_STATUS,
        stage="workload",
        message=f"running {args.delay_steps} decode steps before the capture: {args.concurrency} request(s) at once",
    )

    def target() -> None:
        box["workload"] = drive(
            base, model, args.concurrency, args.output_len, args.input_len, args.request_timeout, api_key, (args.delay_steps + 1, reached)
        )

    t = threading.Thread(target=target, daemon=True)
    t.start()
    while not reached.wait(0.5):
        if not t.is_alive():
            w = box.get("workload") or {}
            raise events.AgentError(
                "workload_failed",
                f"The profiled requests ended before {args.delay_steps} decode steps had run"
                f"{': ' + str(w.get('first_error')) if w.get('first_error') else ''}.",
                "Check {0} and the server's log, or lower {1}.",
                [events.flag("--model"), events.flag("--delay-steps")],
            )
    return t, box


def _profile(
    args: argparse.Namespace,
    base: str,
    api_key: Optional[str],
    server: Dict[str, Any],
    kind: str,
    label: str,
    model: str,
    trace_dir: Optional[str],
    suggested_dir: str,
    body: Optional[dict],
    expect: Optional[int],
    before: Dict[str, Tuple[int, float]],
    session: ProfilerSession,
) -> int:
    steady = steady_workload(args, base, model, api_key) if kind == "sglang" and args.delay_steps else None
    session.active = True  # from the moment the request may have reached the server
    status, text, pending, box = start_profile(base, body, api_key, kind, args.start_timeout)
    if pending is None:
        if status is None:
            session.active = False
            raise events.AgentError(
                "start_profile_failed",
                f"POST {base}/start_profile got no answer: {text}.",
                "Is the server busy or stuck? See its log; raise {0} if it is slow.",
                [events.flag("--start-timeout")],
            )
        if status == 404 and kind == "vllm":
            session.active = False
            raise events.AgentError(
                "profiler_disabled",
                f"vLLM at {args.url} answered 404 on /start_profile: the server was started without a profiler.",
                enable_instructions(server, suggested_dir),
            )
        if status in (401, 403):
            session.active = False
            raise events.AgentError(
                "unauthorized",
                auth.unauthorized_message(f"POST {base}/start_profile", status, bool(api_key)),
                auth.KEY_HINT,
                auth.KEY_REMEDIES,
            )
        if status != 200:
            session.active = False
            raise events.AgentError(
                "start_profile_failed",
                f"POST {base}/start_profile answered {status}: {text[:300]}",
                "See the server's log; another profile may be running already.",
            )
    else:
        events.log(
            "/start_profile has not answered yet (older SGLang answers once num_steps have run): " "driving the workload meanwhile", "info"
        )
    if not trace_dir and args.profiler != "nsys":
        # The profiler is on, but neither the command line nor the environment says where it writes.
        session.stop_after_failure("the trace folder is unknown")
        raise events.AgentError(
            "trace_dir_unknown",
            "The profiler is on, but where vLLM writes its traces could not be read " "from the server's command line or environment.",
            "Pass the folder of --profiler-config's torch_profiler_dir with {0}.",
            [events.flag("--trace-dir")],
        )
    events.emit(
        events.PROFILE_STATUS,
        stage="workload",
        message=f"profiling: {args.concurrency} request(s) at once, {args.output_len} output tokens each, "
        f"prompts of ~{args.input_len} words",
    )
    if steady:
        steady[0].join()
        workload = steady[1]["workload"]
    else:
        workload = drive(base, model, args.concurrency, args.output_len, args.input_len, args.request_timeout, api_key)
    if pending is not None:
        pending.join(args.start_timeout)
        if pending.is_alive() or box.get("answer", (None, ""))[0] is None:
            session.stop_after_failure("/start_profile never answered")
            raise events.AgentError(
                "start_profile_timeout",
                f"POST {base}/start_profile did not answer within {args.start_timeout:.0f} s, though the workload ran "
                f"({workload['requests'] - workload['failed']} of {workload['requests']} requests ok).",
                "Older SGLang answers only after num_steps forward steps: if the server is merely slow, raise "
                "{0}; otherwise see the server's log.",
                [events.flag("--start-timeout")],
            )
        status, text = box["answer"]
        if status != 200:
            session.stop_after_failure("/start_profile failed")
            raise events.AgentError(
                "start_profile_failed",
                f"POST {base}/start_profile answered {status}: {text[:300]}",
                "See the server's log; another profile may be running already.",
            )
    if workload["failed"]:
        if any(s in (401, 403) for s in workload["statuses"]):
            session.stop_after_failure("the profiled requests were refused")
            raise events.AgentError(
                "unauthorized",
                auth.unauthorized_message(f"{base}/v1/completions", workload["statuses"][0], bool(api_key)),
                auth.KEY_HINT,
                auth.KEY_REMEDIES,
            )
        if workload["failed"] == workload["requests"]:
            session.stop_after_failure("every profiled request failed")
            raise events.AgentError(
                "workload_failed",
                f"All {workload['requests']} profiled requests failed: " f"{workload['first_error']}",
                "The traces would hold no decode step. Check {0} and the server's log.",
                [events.flag("--model")],
            )
        events.log(f"{workload['failed']} of {workload['requests']} profiled requests failed: {workload['first_error']}", "warn")

    events.emit(events.PROFILE_STATUS, stage="stop", message="stopping the profiler; the ranks now write their traces")
    t_stop = time.monotonic()
    status, text = call_with_progress(
        "/stop_profile", lambda: http.post(base + "/stop_profile", None, args.stop_timeout, api_key), args.stop_timeout
    )
    session.active = False
    if status != 200 and kind == "vllm":
        answer = f"answered {status}: {text[:300]}" if status is not None else f"got no answer ({text})"
        raise events.AgentError("stop_profile_failed", f"POST {base}/stop_profile {answer}", "See the server's log.")
    if status != 200:
        # SGLang stopped by itself after num_steps; a second stop answers 500 "not in progress".
        events.log(f"/stop_profile answered {status} (SGLang stops by itself after num_steps): {text[:200]}", "debug")
    stop_s = time.monotonic() - t_stop

    if args.profiler == "nsys":
        # nsys writes its report when the server exits: the controller stops it, then collects (--nsys-report).
        events.emit(events.PROFILE_STATUS, stage="stop", message="the capture is bounded; nsys writes its report when the server stops")
        events.emit(events.RESULT, result=capture_result(args, server, kind, model, "", [], expect, workload, stop_s))
        return 0
    events.emit(events.PROFILE_STATUS, stage="collect", message=f"waiting for the trace files in {trace_dir}")
    paths = wait_for_new_traces(cast(str, trace_dir), before, expect, args.settle_seconds, args.settle_timeout)
    host = socket.gethostname()
    traces = []
    for path in paths:
        size = os.path.getsize(path)
        frontend = is_frontend_trace(path)
        rank = None if frontend else rank_of(path)
        traces.append({"path": path, "rank": rank, "bytes": size, "host": host, **({"frontend": True} if frontend else {})})
        events.emit(events.PROFILE_TRACE, path=path, rank=rank, bytes=size, host=host, **({"frontend": True} if frontend else {}))
    ranks_found = len([p for p in paths if not is_frontend_trace(p)])
    if expect and ranks_found < expect:
        events.log(f"{ranks_found} trace file(s) for {expect} expected ranks", "warn")
    events.emit(events.RESULT, result=capture_result(args, server, kind, model, cast(str, trace_dir), traces, expect, workload, stop_s))
    return 0


def capture_result(
    args: argparse.Namespace,
    server: Dict[str, Any],
    kind: str,
    model: str,
    trace_dir: str,
    traces: List[Dict[str, Any]],
    expect: Optional[int],
    workload: Dict[str, Any],
    stop_s: float,
) -> Dict[str, Any]:
    return {
        "server": {
            "kind": kind,
            "version": server.get("version"),
            "simulated": bool(server.get("simulated")),
            "model": model,
            "url": args.url,
        },
        "trace_dir": trace_dir,
        "traces": traces,
        "expected_ranks": expect,
        "workload": {"concurrency": args.concurrency, "output_len": args.output_len, "input_len": args.input_len, **workload},
        "stop_seconds": round(stop_s, 3),
        "profiler": args.profiler,
    }
