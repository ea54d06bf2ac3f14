"""The agent's event schema: one JSON object per line on stdout, and the load-generator workers' messages.

This module is the one definition of both. Field types are written in TypeScript's syntax, so that
scripts/gen-agent-schema.py writes src/remote/agentSchema.ts (and src/shared/remedyFlags.ts) from it as it stands, and `problems()`
checks an event against it here (the Python tests check every event they see). Every event carries the
schema version `v`, its `type`, and `t` (wall-clock seconds since the epoch).
Bump SCHEMA_VERSION (version.py) when a field changes meaning or goes away; adding optional fields keeps it.
After any change here run `python3 scripts/gen-agent-schema.py`; test_events.py fails until the two agree.
"""
from __future__ import annotations

import json
import re
import sys
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

from infbench_agent.version import AGENT_VERSION, COMMANDS, MIN_PYTHON, SCHEMA_VERSION

try:
    from typing import Literal
except ImportError:  # pragma: no cover - Python < 3.8 never gets past the entry point
    Literal = None  # type: ignore[assignment]

__all__ = [
    "AGENT_VERSION",
    "MIN_PYTHON",
    "SCHEMA_VERSION",
    "REMEDY_COMMANDS",
    "REMEDY_FLAGS",
    "AgentError",
    "command",
    "emit",
    "error",
    "flag",
    "log",
    "printable",
    "printable_lines",
    "server",
]

# Text a server wrote (an error body, an SSE error, a model id, a metric label, a start-up log line) is shown
# to the user: raw, an ESC or BEL in it sets the terminal's title or colours and clears the screen, and a bidi
# override reorders what a view shows. C0 and C1 controls, DEL, and the bidi embedding, override and isolate
# marks, as src/shared/printable.ts cleans them on the host.
_UNPRINTABLE = re.compile("[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """The text with each control character replaced by U+FFFD, so that it shows where one was."""
    return _UNPRINTABLE.sub("\ufffd", text)


def printable_lines(text: str) -> str:
    """printable() for a message of several lines (a start-up log's last lines): its line breaks stay."""
    return "\n".join(printable(line) for line in text.replace("\r\n", "\n").split("\n"))


# The fields of each event that are text to be read (where server text lands): emit() cleans them, whoever built them.
_TEXT_FIELDS: Dict[str, Tuple[str, ...]] = {
    "log": ("message", "hint"),
    "error": ("message", "hint"),
    "progress": ("message", "label"),
    "server.log": ("line",),
    "server.state": ("message",),
    "profile.status": ("message",),
}

# Machine-readable error codes: the controller acts on some (gpus_busy asks the user; python_too_old and
# the hello check name the interpreter), the rest are said to the user with their message and hint.
ErrorCode = Literal[
    "allreduce_failed",
    "allreduce_wrong",
    "alltoall_wrong",
    "bad_arguments",
    "bad_model",
    "bad_option",
    "bad_prompts_file",
    "cancelled",
    "collective_failed",
    "crash",
    "cuda_profiler",
    "gpus_busy",
    "no_gpu",
    "no_model",
    "no_shapes",
    "no_torch",
    "no_traces",
    "nsys_export_failed",
    "nsys_missing",
    "nsys_profiler_off",
    "nsys_report_missing",
    "nsys_report_unreadable",
    "nvidia_smi_failed",
    "profiler_disabled",
    "python_too_old",
    "rank_died",
    "server_down",
    "server_error",
    "server_identity_changed",
    "server_manual",
    "server_secret_missing",
    "server_stalled",
    "server_start_failed",
    "server_start_timeout",
    "server_stop_failed",
    "server_unreachable",
    "start_profile_failed",
    "start_profile_timeout",
    "stop_profile_failed",
    "stop_timeout",
    "trace_dir_remote",
    "trace_dir_unknown",
    "trace_dir_unresolved",
    "unauthorized",
    "unknown_server",
    "warmup_failed",
    "workers_failed",
    "workload_failed",
]
ERROR_CODES = ErrorCode.__args__  # type: ignore[attr-defined]

# What a log line is about, where the controller treats it apart from the others (never by its words).
LogTopic = Literal["gemm_kernel"]
LOG_TOPICS = LogTopic.__args__  # type: ignore[attr-defined]

# What a remedy (flag(), command()) may name: the CLI says each as written, VS Code in its own words, which
# src/vscode/runs/extensionWords.ts must have for every flag here. scripts/gen-agent-schema.py writes both
# lists to src/shared/remedyFlags.ts.
REMEDY_FLAGS = (
    "--url",
    "--python",
    "--api-key",
    "--workspace",
    "--request-timeout",
    "--stall-timeout",
    "--trials",
    "--slo",
    "--goodput",
    "--request-rate",
    "--model",
    "--config",
    "--hidden",
    "--shape",
    "--tp",
    "--m",
    "--skip",
    "--device",
    "--allow-busy",
    "--ar-world-size",
    "--ar-backend",
    "--trace-dir",
    "--output-len",
    "--delay-steps",
    "--start-timeout",
    "--stop-timeout",
    "--concurrency",
    "--header",
    "--workers",
    "--dataset-name",
    "--dataset-path",
    "--sharegpt-output-len",
    "--search",
    "--input-len",
)
# A macro workload's own flags (macro/workloads/, each module's option rows): the package adds them as it loads,
# and VS Code words each from its workload's table row, so that adding a workload touches only its module.
WORKLOAD_REMEDY_FLAGS: List[str] = []
REMEDY_COMMANDS = ("macro", "micro", "profile", "probe", "analyze")

# Named types the events use. A field ending in "?" may be left out; "*" gives the type of further fields.
ALIASES: Dict[str, str] = {
    "AgentCommand": " | ".join(f"'{c}'" for c in COMMANDS),
    "LogLevel": "'debug' | 'info' | 'warn' | 'error'",
    "LogTopic": " | ".join(f"'{t}'" for t in LOG_TOPICS),
    "ErrorCode": " | ".join(f"'{c}'" for c in ERROR_CODES),
    "ServerKind": "'vllm' | 'sglang' | 'unknown'",
    "MicroKind": "'gemm' | 'allreduce' | 'alltoall' | 'launch' | 'peak'",
    "AgentResult": "ProbeResult | MacroResult | MicroResult | ProfileCapture | CollectiveResult | ServerControlResult",
    "ServerManagerKind": "'process' | 'systemd' | 'docker' | 'podman'",
    "ServerOutputKind": "'file' | 'null' | 'tty' | 'pipe' | 'journal' | 'container' | 'socket' | 'other'",
    "ServerStage": "'stopping' | 'stopped' | 'starting' | 'weights' | 'cuda_graphs' | 'api' | 'ready' | 'failed'",
}
# Shapes the host owns in src/shared (the webview draws them); here only their being objects is checked.
# Remedy: what the user can do (a flag, a command), filling a `{n}` slot of an error's hint; each front end
# says it in its own words (src/shared/remedy.ts). Made with flag() and command() below, from REMEDY_FLAGS.
HOST_SHAPES: Dict[str, str] = {"MacroLevelSummary": "../shared/results", "Remedy": "../shared/remedy"}
STRUCTS: Dict[str, Dict[str, str]] = {
    # The server the phase measures, as the agent found it (macro: /v1/models; profile: as probe detects it).
    "ServerInfo": {
        "url": "string",
        "kind": "ServerKind",
        "version": "string | null",
        "model": "string | null",
        "simulated": "boolean",
        "*": "unknown",
    },
    "ProbeResult": {
        "host": "string",
        "platform": "string",
        "python": "ProbePython",
        "packages": "Record<string, string | null>",
        "cuda_visible_devices": "string | null",
        "gpus": "ProbeGpus",
        # Older agents have none.
        "network?": "ProbeNetwork",
        "server": "ProbeServer",
        "*": "unknown",
    },
    "ProbePython": {"version": "string", "executable": "string", "implementation": "string"},
    "ProbeGpus": {
        "available": "boolean",
        "error": "string | null",
        "devices": "ProbeGpu[]",
        "processes": "ProbeGpuProcess[]",
        "topology": "string | null",
    },
    "ProbeNetwork": {"rdma": "ProbeRdmaPort[]", "interfaces": "ProbeInterface[]", "env": "Record<string, string>"},
    "ProbeRdmaPort": {
        "device": "string",
        "port": "number | string",
        "state": "string | null",
        "rate": "string | null",
        "link_layer": "string | null",
    },
    "ProbeInterface": {"name": "string", "state": "string | null", "speed_mbps": "number | null", "nccl_default": "boolean"},
    "ProbeGpu": {
        "index": "number",
        "name": "string",
        "uuid": "string",
        "memory_used_mib": "number | null",
        "memory_total_mib": "number | null",
        "utilization_pct": "number | null",
        "driver_version": "string",
    },
    "ProbeGpuProcess": {
        "gpu_uuid": "string",
        "gpu_index": "number | null",
        "pid": "number",
        "process_name": "string",
        "used_memory_mib": "number | null",
    },
    "ProbeServer": {
        "url": "string",
        "reachable": "boolean",
        "healthy": "boolean | null",
        "error": "string | null",
        "kind": "ServerKind",
        "kind_evidence": "string | null",
        "simulated": "boolean",
        "version": "string | null",
        "models": "ProbeModel[]",
        "profiler": "ProbeProfiler",
        # A 401/403 on /v1/models (or, for SGLang, its other routes): the server wants an API key.
        "auth?": "ProbeAuth",
        # The server process's working directory (relative trace folders are relative to it).
        "cwd?": "string | null",
        "parallel?": "ProbeParallel | null",
        # The served model's config.json, summarized (probe/served_model.py); absent where it is not on this host.
        "model_config?": "ProbeModelConfig",
        "pid": "number | null",
        "command_line": "string[] | null",
        "*": "unknown",
    },
    "ProbeModel": {"id": "string | null", "max_model_len": "number | null", "owned_by?": "string | null", "root?": "string | null"},
    "ProbeProfiler": {"enabled": "boolean | null", "kind?": "'torch' | 'cuda' | null", "evidence": "string | null", "*": "unknown"},
    # required: the server refused a request without a key; key_accepted: whether it took the key given (null: none given).
    "ProbeAuth": {"required": "boolean", "key_given": "boolean", "key_accepted?": "boolean | null", "status": "number | null"},
    "ProbeModelConfig": {
        "model": "string",
        "path": "string",
        "found_by": "string",
        "model_type": "string | null",
        # "text_config" where a multimodal wrapper (Kimi-K2.5) nests the language model; its own model_type beside.
        "nested?": "string",
        "outer_model_type?": "string | null",
        "num_hidden_layers?": "number",
        "hidden_size?": "number",
        "num_attention_heads?": "number",
        "num_key_value_heads?": "number",
        "intermediate_size?": "number",
        "moe_intermediate_size?": "number",
        "num_experts_per_tok?": "number",
        "first_k_dense_replace?": "number",
        "vocab_size?": "number",
        # Routed experts, whichever of n_routed_experts / num_experts / num_local_experts the config names.
        "experts?": "number",
        "experts_field?": "string",
    },
    "ProbeParallel": {"tp": "number", "pp": "number", "dp": "number", "dp_attention": "boolean", "ranks": "number"},
    # One finished request of a macro level, in milliseconds; start_s from the level's first send, run_s the run's.
    "MacroRequestRecord": {
        "id": "number | null",
        "ok": "boolean",
        "reason": "string | null",
        "error": "string | null",
        "prompt_tokens": "number | null",
        "output_tokens": "number | null",
        "ttft_ms": "number | null",
        "tpot_ms": "number | null",
        "e2el_ms": "number | null",
        "itl_mean_ms": "number | null",
        "itl_max_ms": "number | null",
        "lag_ms": "number | null",
        "start_s": "number | null",
        "run_s": "number | null",
        # A multi-turn conversation's request: the conversation's number in its level, and the turn (1 = the first).
        "conversation?": "number",
        "turn?": "number",
    },
    "MacroResult": {
        "levels": "MacroLevelSummary[]",
        "server": "ServerInfo",
        "cancelled": "boolean",
        "client": "MacroClient",
        "stopped?": "string",
        "stalled?": "boolean",
        "*": "unknown",
    },
    "MacroClient": {"python": "string", "cpu_count": "number | null", "host": "string", "*": "unknown"},
    "MicroPointPayload": {"kind": "MicroKind", "*": "unknown"},
    "MicroResult": {
        "device": "MicroDevice",
        "model": "MicroModel | null",
        "timing": "string",
        "allreduce": "MicroAllreduce | null",
        "points": "MicroPointPayload[]",
        "*": "unknown",
    },
    "MicroDevice": {"name": "string", "kind": "'gpu' | 'cpu'", "*": "unknown"},
    "MicroModel": {"name?": "string", "*": "unknown"},
    "MicroAllreduce": {"backend": "string", "world_size": "number", "note": "string | null"},
    # collective --plan: the decode-step message sizes and the rendezvous port; a host's run: its ranks' points.
    "CollectiveResult": {
        "plan?": "CollectivePlan",
        "host?": "string",
        "ranks?": "number",
        "backend?": "string",
        "points?": "MicroPointPayload[]",
        "*": "unknown",
    },
    "CollectivePlan": {
        "model": "string | null",
        "hidden": "number",
        "top_k": "number | null",
        "layers": "number | null",
        "moe_layers": "number | null",
        "world_size": "number",
        "m": "number[]",
        "allreduce": "CollectiveSize[]",
        "alltoall": "CollectiveSize[]",
        "port": "number",
        "host": "string",
        "local_ranks": "number",
        "device": "'cuda' | 'cpu'",
        # The address this host's SSH session came in on, null outside SSH.
        "addr": "string | null",
    },
    "CollectiveSize": {"m": "number", "bytes": "number", "tokens_per_rank?": "number"},
    # How the server runs, as adopted from its process (server/command.py): what starts it again as it was.
    # Secret values (--api-key, *_TOKEN) read REDACTED; the agent fills them in on the host.
    "ServerRecipe": {
        "url": "string",
        "argv": "string[]",
        "cwd": "string | null",
        "env": "Record<string, string>",
        "user": "string | null",
        "manager": "ServerManager",
        "kind": "ServerKind",
        "version": "string | null",
        # The process it was adopted from (or started as): pid and start time in clock ticks since boot.
        "identity": "ServerIdentity | null",
        # env is the process's whole environment (absent: a recipe adopted when only a chosen few were kept).
        "env_complete?": "boolean",
        # Where its stdout and stderr went (/proc/<pid>/fd/1 and 2), for a start to put them back there.
        "stdout?": "ServerOutput | null",
        "stderr?": "ServerOutput | null",
    },
    # file: a regular file (path; deleted when it was removed since); null: /dev/null; tty: a terminal;
    # pipe: peer is the reader's pid and command; journal: journald's stdout stream; container: the
    # container's log; socket: another socket (peer: the path it is bound to); other: target says.
    "ServerOutput": {"kind": "ServerOutputKind", "target": "string", "path?": "string", "peer?": "string", "deleted?": "boolean"},
    "ServerManager": {"kind": "ServerManagerKind", "unit?": "string", "container?": "string"},
    "ServerIdentity": {"pid": "number", "start_ticks": "number"},
    "ServerControlResult": {
        "action": "'status' | 'stop' | 'start'",
        "recipe": "ServerRecipe | null",
        # status --profiler-dir: the same recipe with the profiler switched on for the server's version.
        "profiler_recipe?": "ServerRecipe | null",
        "profiler_change?": "string | null",
        "running?": "boolean",
        "log_file?": "string",
        "ready_s?": "number",
        "estimate_s?": "number | null",
        # status: the agent's own environment (redacted), the shell a command typed on the host starts from.
        "shell_env?": "Record<string, string>",
        "*": "unknown",
    },
    "ProfileCapture": {"server": "ServerInfo", "trace_dir": "string", "workload": "ProfileWorkload", "*": "unknown"},
    "ProfileWorkload": {"concurrency": "number", "output_len": "number", "input_len": "number", "*": "unknown"},
}

# Event types, in the order a run usually emits them, with their fields beside v, type and t.
EVENTS: Dict[str, Dict[str, str]] = {
    "hello": {"agent_version": "string", "command": "AgentCommand", "pid": "number", "python": "string", "executable": "string"},
    # A warning's next step, as an error's: the hint's `{0}`, `{1}`... are its remedies.
    "log": {"level": "LogLevel", "message": "string", "topic?": "LogTopic", "hint?": "string", "remedies?": "Remedy[]"},
    # label: the load level it is about, where there is one (macro: "c=8", "rate 4/s").
    "progress": {"done": "number", "total": "number", "message?": "string", "label?": "string"},
    "server": {"server": "ServerInfo"},
    "probe": {"result": "ProbeResult"},
    "macro.request": {"level": "number", "record": "MacroRequestRecord"},
    # A running (partial) or final aggregate of one load level.
    "macro.level": {"level": "number", "partial": "boolean", "summary": "MacroLevelSummary"},
    "micro.point": {"kind": "MicroKind", "point": "MicroPointPayload"},
    "profile.status": {"stage": "string", "message": "string"},
    # The server's lifecycle (server stop/start): where it is, with the estimate from its last start.
    # starting: with the new process's pid and start time, so that a controller cut off mid-start still knows it.
    "server.state": {
        "stage": "ServerStage",
        "message": "string",
        "elapsed_s?": "number",
        "estimate_s?": "number | null",
        "identity?": "ServerIdentity",
    },
    # One line of the server's start-up log as it is written; stage when the line marks one.
    "server.log": {"line": "string", "stage?": "ServerStage"},
    # frontend: vLLM's CPU-only API-server trace.
    "profile.trace": {"path": "string", "rank": "number | null", "bytes": "number", "host?": "string", "frontend?": "boolean"},
    # The phase's final result object.
    "result": {"result": "AgentResult"},
    # The hint's `{0}`, `{1}`... are its remedies, in order.
    "error": {"code": "ErrorCode", "message": "string", "hint?": "string", "remedies?": "Remedy[]"},
    "done": {"ok": "boolean"},
}

# The macro coordinator and its `macro --worker` processes, one JSON object per line each way.
WORKER_MESSAGES: Dict[str, Dict[str, str]] = {
    # coordinator -> worker, first line: the worker's share of a level.
    "job": {
        "plan": "object",
        "url": "string",
        "path": "string",
        "prompt": "object",
        "request_timeout": "number",
        "api_key": "string | null",
    },
    # coordinator -> worker, once every worker is ready: when to send the first request (time.monotonic()).
    "go": {"start_at": "number"},
    # worker -> coordinator, tagged by `kind`.
    "ready": {"kind": "'ready'"},
    "record": {"kind": "'record'", "record": "object"},
    "end": {"kind": "'end'", "cpu_s": "number", "cancelled": "boolean"},
}

HELLO = "hello"
LOG = "log"
PROGRESS = "progress"
SERVER = "server"
PROBE = "probe"
MACRO_REQUEST = "macro.request"
MACRO_LEVEL = "macro.level"
MICRO_POINT = "micro.point"
PROFILE_STATUS = "profile.status"
PROFILE_TRACE = "profile.trace"
SERVER_STATE = "server.state"
SERVER_LOG = "server.log"
RESULT = "result"
ERROR = "error"
DONE = "done"
EVENT_TYPES = tuple(EVENTS)

_lock = threading.Lock()
Remedy = Dict[str, Any]


def emit(event_type: str, **payload: Any) -> None:
    """Write one event as one line; safe to call from several threads."""
    record: Dict[str, Any] = {"v": SCHEMA_VERSION, "type": event_type, "t": round(time.time(), 6)}
    record.update(payload)
    for field in _TEXT_FIELDS.get(event_type, ()):
        text = record.get(field)
        if isinstance(text, str):
            record[field] = printable_lines(text)
    line = json.dumps(record, separators=(",", ":"), allow_nan=False, default=str)
    with _lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def log(message: str, level: str = "info", topic: str = "", hint: str = "", remedies: Optional[List[Remedy]] = None) -> None:
    """A log line; `hint` is what the user can do about it, with `{n}` slots for `remedies`, as an error's."""
    more: Dict[str, Any] = {"topic": topic} if topic else {}
    if hint:
        more["hint"] = hint
    if remedies:
        more["remedies"] = remedies
    emit(LOG, level=level, message=message, **more)


def flag(name: str, value: Optional[str] = None) -> Remedy:
    """A flag to pass (a Remedy); `value` is an example. One of REMEDY_FLAGS, which VS Code has words for."""
    if name not in REMEDY_FLAGS and name not in WORKLOAD_REMEDY_FLAGS:
        raise ValueError(f"{name} is not in events.REMEDY_FLAGS: add it there, and VS Code's words for it")
    return {"kind": "flag", "flag": name, **({"value": value} if value is not None else {})}


def command(name: str, *flags: str) -> Remedy:
    """A command to run (a Remedy): one of REMEDY_COMMANDS; `flags` are its CLI flags, which VS Code asks for itself."""
    if name not in REMEDY_COMMANDS:
        raise ValueError(f"{name!r} is not in events.REMEDY_COMMANDS (its flags go after the name)")
    return {"kind": "command", "command": name, **({"flags": list(flags)} if flags else {})}


def error(code: ErrorCode, message: str, hint: str = "", remedies: Optional[List[Remedy]] = None) -> None:
    if remedies:
        emit(ERROR, code=code, message=message, hint=hint, remedies=remedies)
    else:
        emit(ERROR, code=code, message=message, hint=hint)


def server(url: str, kind: str, version: Any, model: Any, simulated: bool, **more: Any) -> Dict[str, Any]:
    """Emits the `server` event and returns its ServerInfo, for the phase's result."""
    info = {"url": url, "kind": kind, "version": version, "model": model, "simulated": bool(simulated), **more}
    emit(SERVER, server=info)
    return info


class AgentError(Exception):
    """A failure with an actionable message; the entry point turns it into an `error` event."""

    def __init__(self, code: ErrorCode, message: str, hint: str = "", remedies: Optional[List[Remedy]] = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        # `{0}`, `{1}`... in the hint are these remedies, which each front end says in its own words.
        self.hint = hint
        self.remedies = remedies


# ---------------- checking a message against the schema (tests) ----------------

_PRIMITIVES = {"string": str, "boolean": bool, "object": dict}


def _split_union(text: str) -> List[str]:
    """The alternatives of a union, leaving those inside Record<...> whole."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch == "<"
        depth -= ch == ">"
        if ch == "|" and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    return parts + [text[start:].strip()]


def _type_problems(value: Any, type_text: str, where: str) -> List[str]:
    type_text = ALIASES.get(type_text, type_text)
    alternatives = _split_union(type_text)
    found: List[str] = []
    for alt in alternatives:
        problems = _one_type_problems(value, alt, where)
        if not problems:
            return []
        found = found or problems
    return found if len(alternatives) == 1 else [f"{where}: {value!r:.80} is none of {type_text}"]


def _one_type_problems(value: Any, alt: str, where: str) -> List[str]:
    if alt in ALIASES:
        return _type_problems(value, alt, where)
    if alt == "unknown":
        return []
    if alt == "null":
        return [] if value is None else [f"{where}: not null"]
    if alt.startswith("'"):
        return [] if value == alt.strip("'") else [f"{where}: {value!r:.80} is not {alt}"]
    if alt == "number":
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return [] if ok else [f"{where}: {value!r:.80} is not a number"]
    if alt in _PRIMITIVES:
        return [] if isinstance(value, _PRIMITIVES[alt]) else [f"{where}: {value!r:.80} is not {alt}"]
    if alt.endswith("[]"):
        if not isinstance(value, list):
            return [f"{where}: not a list"]
        return [p for i, v in enumerate(value) for p in _type_problems(v, alt[:-2], f"{where}[{i}]")]
    record = re.fullmatch(r"Record<string, (.+)>", alt)
    if record:
        if not isinstance(value, dict):
            return [f"{where}: not an object"]
        return [p for k, v in value.items() for p in _type_problems(v, record.group(1), f"{where}.{k}")]
    if alt in HOST_SHAPES:
        return [] if isinstance(value, dict) else [f"{where}: not an object"]
    if alt in STRUCTS:
        return _fields_problems(value, STRUCTS[alt], where)
    return [f"{where}: the schema names an unknown type {alt}"]


def _fields_problems(value: Any, fields: Dict[str, str], where: str) -> List[str]:
    if not isinstance(value, dict):
        return [f"{where}: not an object"]
    problems: List[str] = []
    names = set()
    for name, type_text in fields.items():
        if name == "*":
            continue
        optional = name.endswith("?")
        name = name.rstrip("?")
        names.add(name)
        if name not in value:
            if not optional:
                problems.append(f"{where}.{name} is missing")
            continue
        problems += _type_problems(value[name], type_text, f"{where}.{name}")
    extra = "*" not in fields and [k for k in value if k not in names]
    if extra:
        problems.append(f"{where} has fields the schema does not name: {', '.join(extra)}")
    return problems


def problems(event: Dict[str, Any]) -> List[str]:
    """Where an event (as parsed from its line) differs from the schema; empty when it conforms."""
    if event.get("v") != SCHEMA_VERSION:
        return [f"schema version {event.get('v')!r}, not {SCHEMA_VERSION}"]
    fields = EVENTS.get(event.get("type"))  # type: ignore[arg-type]
    if fields is None:
        return [f"unknown event type {event.get('type')!r}"]
    body = {k: v for k, v in event.items() if k not in ("v", "type")}
    t = body.pop("t", None)
    found = [] if isinstance(t, float) or isinstance(t, int) else ["t is not a number"]
    return found + _fields_problems(body, fields, str(event["type"]))


def worker_message_problems(name: str, message: Dict[str, Any]) -> List[str]:
    """Where a worker message differs from WORKER_MESSAGES[name]."""
    return _fields_problems(message, WORKER_MESSAGES[name], name)
