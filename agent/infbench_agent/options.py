"""Every agent command's options, defined once.

Each row names a flag, its type, default and help, the commands that take it, and whether its value
is a secret. The agent's argparse is built from these rows (`add_arguments`), and
scripts/gen-agent-options.py writes from them the controller's side: the TypeScript option types and
the table the argv builder checks against (src/remote/agentOptions.ts). A flag the controller passes
is therefore one the agent accepts, and the key goes the same way to every command that talks to the
server. Standard library only; no phase module is imported here.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from infbench_agent.models import preset_names

# The kinds of value: str, int, float, flag (present or not), strs (repeatable, one value each time).
KINDS = ("str", "int", "float", "flag", "strs")

# Token counts M of a decode step swept by micro and sized by collective; a CPU gets a short list.
DEFAULT_M = "1,2,4,8,16,32,64,128,256"
CPU_M = "1,4,16"
MICRO_PARTS = ("peak", "gemm", "launch", "allreduce")
PRESETS_TEXT = ", ".join(preset_names())
DEFAULT_SERVER_URL = "http://127.0.0.1:8000"

# The commands whose options the table defines; each talks to the inference server, so each takes the key the same way.
COMMANDS = ("probe", "macro", "micro", "profile", "collective", "server")
# The `server` command's one positional argument: what it does with the server.
SERVER_ACTIONS = ("status", "stop", "start")


@dataclass(frozen=True)
class Option:
    flag: str
    kind: str
    commands: Tuple[str, ...]
    help: str
    default: Any = None
    choices: Tuple[str, ...] = ()
    # Its value must never reach a command line the host's process list shows (it comes over stdin).
    secret: bool = False
    # Started by the agent itself (a worker rank), not by the controller: no help, no TypeScript field.
    internal: bool = False
    aliases: Tuple[str, ...] = ()
    metavar: Optional[str] = None
    # The least value a user may give (int and float rows): the CLI refuses less, naming the flag, before
    # anything runs. The agent's argparse does not check it (a default of 0 there means its own choice).
    minimum: Optional[float] = None

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")


def _opt(flag: str, kind: str, commands: Tuple[str, ...], help: str, default: Any = None, **more: Any) -> Option:
    return Option(flag, kind, commands, help, default, **more)


OPTIONS: List[Option] = [
    # ---- the server, and its key
    _opt("--url", "str", ("probe", "macro", "profile"), "the inference server's base URL as seen from this host", DEFAULT_SERVER_URL),
    _opt(
        "--api-key",
        "str",
        COMMANDS,
        "bearer token for a server started with --api-key; default from the environment: INFBENCH_API_KEY, else OPENAI_API_KEY",
        secret=True,
    ),
    _opt("--api-key-stdin", "flag", COMMANDS, "read the API key from the first line of stdin (keeps it off the host's process list)"),
    _opt("--timeout", "float", ("probe",), "seconds per HTTP request and nvidia-smi call", 3.0),
    # ---- the model
    _opt("--model", "str", ("macro",), "model name; default: the first one /v1/models lists", metavar="NAME"),
    _opt("--model", "str", ("profile",), "model name for requests (default: the server's first model)", metavar="NAME"),
    _opt(
        "--model",
        "str",
        ("micro", "collective"),
        f"a preset ({PRESETS_TEXT}), a model folder, or a Hugging Face id in the host's cache",
        metavar="NAME",
    ),
    _opt("--config", "str", ("micro", "collective"), "the model's config.json (or its folder) on the host", metavar="PATH"),
    _opt(
        "--server-url", "str", ("micro", "collective"), "find the model through this server's /v1/models when no --model/--config is given"
    ),
    _opt("--hidden", "int", ("micro", "collective"), "hidden size for decode message sizes when no model is given", 0, minimum=1),
    _opt("--top-k", "int", ("collective",), "experts per token when no model is given (for --plan)", 0),
    # ---- macro: the load
    _opt("--api", "str", ("macro",), "the OpenAI API to call", "completions", choices=("completions", "chat")),
    _opt("--concurrency", "str", ("macro",), "closed-loop levels, comma-separated", "1", metavar="1,8,32"),
    _opt(
        "--request-rate",
        "str",
        ("macro",),
        "open-loop levels instead: requests per second with gamma gaps, comma-separated; inf sends all at once",
        metavar="2,4,inf",
    ),
    _opt("--max-concurrency", "int", ("macro",), "cap on requests in flight in request-rate mode", minimum=1),
    _opt("--burstiness", "float", ("macro",), "gamma shape of the arrival gaps; 1 = Poisson", 1.0, metavar="K"),
    _opt("--requests", "int", ("macro",), "requests per level (default: max(8, 4 x concurrency), or 10 s worth in rate mode)", minimum=1),
    _opt("--duration", "float", ("macro",), "seconds per level instead of a request count", metavar="S"),
    _opt("--input-len", "int", ("macro",), "prompt tokens (random prompts, calibrated with /tokenize)", 256),
    _opt("--output-len", "int", ("macro",), "max_tokens for each request", 128),
    _opt("--no-ignore-eos", "flag", ("macro",), "let the model stop at EOS instead of output-len"),
    # ---- macro: what each request asks for (vllm/benchmarks/serve.py's sampling and request flags)
    _opt(
        "--temperature", "float", ("macro",), "sampling temperature (default 0, greedy, as vllm bench serve sends)", metavar="T", minimum=0
    ),
    _opt("--top-p", "float", ("macro",), "top-p sampling", metavar="P"),
    _opt("--top-k", "int", ("macro",), "top-k sampling", metavar="K"),
    _opt("--min-p", "float", ("macro",), "min-p sampling", metavar="P"),
    _opt(
        "--extra-body",
        "str",
        ("macro",),
        'a JSON object merged into every request body, e.g. \'{"chat_template_kwargs":{"enable_thinking":false}}\'',
        metavar="JSON",
    ),
    _opt("--header", "strs", ("macro",), "a header sent with every request (repeatable)", [], metavar="KEY=VALUE"),
    _opt("--warmup", "int", ("macro",), "requests sent and discarded before the first level", 2, minimum=0),
    _opt("--seed", "int", ("macro",), "prompt seed; default random, so runs never share a prefix"),
    _opt("--percentiles", "str", ("macro",), "percentiles of each latency, comma-separated", "50,90,99", metavar="P,P"),
    _opt("--goodput", "str", ("macro",), "SLOs in ms for goodput: ttft, tpot, e2el", metavar='"ttft:500 tpot:50"'),
    _opt(
        "--trials",
        "int",
        ("macro",),
        "runs of each load level, each with fresh prompts (from --seed and request numbers of its own); every figure "
        "is then reported as its mean, 95% confidence interval (Student's t) and coefficient of variation",
        1,
        metavar="N",
        minimum=1,
    ),
    _opt(
        "--slo",
        "str",
        ("macro",),
        "objectives each level is judged on, comma-separated: METRIC_STAT<=MS (ttft, tpot, itl or e2el at p50, p90, "
        "p99, mean or median; an s suffix for seconds) or goodput>=PERCENT% (the share of requests meeting every "
        "--goodput SLO, as vllm bench serve counts a good request)",
        metavar='"ttft_p99<=2000,tpot_p99<=50"',
    ),
    _opt(
        "--search",
        "str",
        ("macro",),
        "find the highest load that meets --slo: from the first --concurrency (or --request-rate) level, doubling "
        "until a level fails, then bisecting to one level (1 request; 5% of a rate)",
        choices=("concurrency", "rate"),
    ),
    _opt(
        "--search-max",
        "float",
        ("macro",),
        "the highest load the search tries (default 1024 requests in flight, or 256 requests/s)",
        metavar="N",
    ),
    _opt(
        "--request-timeout",
        "float",
        ("macro",),
        "seconds a request may take from send to its last token before it counts as failed (timeout); "
        "a level whose requests all stall stops the run",
        600.0,
        metavar="S",
    ),
    _opt(
        "--stall-timeout",
        "float",
        ("macro",),
        "seconds a stream may send no token before it fails as stalled, whatever other bytes arrive (a request still waiting for its first "
        "token only while every stream is silent, so a queue is no stall); 0 turns it off",
        60.0,
        metavar="S",
        minimum=0,
    ),
    _opt("--workers", "str", ("macro",), "load-generator processes per level: auto or a number", "auto", metavar="auto|N"),
    _opt("--streams-per-worker", "int", ("macro",), "with --workers auto: in-flight streams per process", 96, minimum=1),
    _opt("--update-interval", "float", ("macro",), "seconds between running aggregates", 1.0),
    _opt("--no-request-events", "flag", ("macro",), "do not emit one event per request"),
    _opt("--no-tokenize", "flag", ("macro",), "skip /tokenize calibration (assume 1 token per word)"),
    _opt(
        "--gpu-sample-ms",
        "int",
        ("macro",),
        "milliseconds between samples of each GPU's power, clocks, utilisation, memory and temperature (nvidia-smi)"
        " while a level runs; 0 turns it off",
        500,
        metavar="MS",
        minimum=0,
    ),
    _opt(
        "--slow-client-ms",
        "float",
        ("macro",),
        "a check of the client's own limit: the load generator spends this many ms of CPU before each send, as a slow client would, "
        "so its dispatch delay shows; 0 (the default) is off",
        0.0,
        metavar="MS",
        minimum=0,
    ),
    # ---- profile: the decode workload and the traces
    _opt(
        "--trace-dir",
        "str",
        ("profile",),
        "where the server writes traces (vLLM: read from its command line or environment when "
        "possible; SGLang: sent as output_dir, default SGLANG_TORCH_PROFILER_DIR or /tmp as SGLang does)",
        metavar="DIR",
    ),
    _opt("--concurrency", "int", ("profile",), "requests decoding at once (the decode batch)", 4, minimum=1),
    _opt("--output-len", "int", ("profile",), "tokens each request generates: about that many decode steps", 48, minimum=1),
    _opt("--input-len", "int", ("profile",), "prompt length in words (about tokens)", 128, minimum=1),
    # SGLang's bounded capture (ProfileReqInput in python/sglang/srt/managers/io_struct.py); vLLM bounds
    # its capture in --profiler-config at the server's start (infbench server --profile-delay-iterations).
    _opt(
        "--delay-steps",
        "int",
        ("profile",),
        "SGLang: decode steps the profiled batch runs before /start_profile is sent (counted on the first request's "
        "streamed tokens), so the capture holds a steady batch rather than its prefill",
        0,
        minimum=1,
    ),
    _opt(
        "--num-steps", "int", ("profile",), "SGLang: forward steps captured (num_steps; default output-len - delay-steps - 4)", 0, minimum=1
    ),
    _opt("--record-shapes", "flag", ("profile",), "SGLang: record each operator's input shapes (record_shapes)"),
    _opt("--with-stack", "flag", ("profile",), "SGLang: record each operator's source line (with_stack)"),
    _opt("--request-timeout", "float", ("profile",), "seconds per request", 300.0),
    _opt(
        "--start-timeout",
        "float",
        ("profile",),
        "seconds to wait for /start_profile to answer (older SGLang answers only after num_steps ran)",
        120.0,
    ),
    _opt(
        "--stop-timeout",
        "float",
        ("profile",),
        "seconds to wait for /stop_profile (ranks flush their traces)",
        1200.0,
        metavar="S",
        minimum=1,
    ),
    _opt("--settle-seconds", "float", ("profile",), "a trace file counts as written once its size holds this long", 3.0),
    _opt("--settle-timeout", "float", ("profile",), "seconds to wait for all trace files to appear and settle", 900.0),
    _opt("--expect-ranks", "int", ("profile",), "trace files to wait for (default: from the server's command line)", minimum=1),
    _opt(
        "--nodes",
        "int",
        ("profile",),
        "hosts the server spans: each writes its own ranks' traces (the head waits for its share)",
        1,
        minimum=1,
    ),
    _opt(
        "--collect-since",
        "float",
        ("profile",),
        "on another host of a multi-node server: only collect the trace files written in --trace-dir since EPOCH "
        "(this host's clock), without driving the server",
        metavar="EPOCH",
    ),
    _opt(
        "--profiler",
        "str",
        ("profile",),
        "torch: the server's torch profiler writes traces; nsys: the server runs under Nsight Systems and "
        "/start_profile and /stop_profile only bound its capture (vLLM's CUDA profiler mode, SGLang's CUDA_PROFILER)",
        "torch",
        choices=("torch", "nsys"),
    ),
    _opt(
        "--nsys-report",
        "str",
        ("profile",),
        "after an nsys capture, once the server has stopped: export this report to SQLite with --nsys, read it here "
        "(every kernel's layer and module) and report the records and Kineto traces, without driving the server",
        metavar="FILE",
    ),
    _opt(
        "--nsys",
        "str",
        ("profile",),
        "the nsys on the host that exports --nsys-report (default: one found there as server status --nsys auto finds it)",
        metavar="PATH",
    ),
    # ---- micro: shapes and parts
    _opt("--tp", "int", ("micro",), "tensor-parallel size the shapes are split by (default 1)", 1, minimum=1),
    _opt(
        "--m", "str", ("micro", "collective"), f"token counts M of a decode step (default {DEFAULT_M}; {CPU_M} on a CPU)", metavar="1,8,64"
    ),
    _opt("--shape", "strs", ("micro",), "an extra GEMM (repeatable); with no model, the only shapes", [], metavar="NAME=NxK"),
    _opt("--only", "strs", ("micro",), "keep only shapes whose name contains TEXT (repeatable)", [], metavar="TEXT"),
    _opt(
        "--dtype",
        "str",
        ("micro",),
        "GEMM weights: auto follows the model (int4 -> Marlin, fp8 -> scaled_mm, else its dtype)",
        "auto",
        choices=("auto", "bf16", "fp16", "fp32", "fp8", "int4"),
    ),
    _opt("--group-size", "int", ("micro",), "int4 quantization group size (default: the model's, else 128)", 0, minimum=1),
    _opt(
        "--device",
        "str",
        ("micro", "collective"),
        "auto (a GPU when one is there), cuda, cuda:N or cpu",
        "auto",
        metavar="auto|cuda|cuda:N|cpu",
    ),
    _opt("--allow-busy", "flag", ("micro", "collective"), "run even when the GPUs' memory is mostly taken, sized to what is free"),
    _opt(
        "--busy-threshold",
        "float",
        ("micro", "collective"),
        "fraction of GPU memory in use that counts as busy (default 0.5)",
        0.5,
        metavar="F",
    ),
    _opt("--skip", "str", ("micro",), f"comma-separated parts to leave out: {', '.join(MICRO_PARTS)}", "", metavar="PARTS"),
    _opt("--repeats", "int", ("micro",), "timed repeats per point; the median is reported (default 10; 3 on a CPU)", minimum=1),
    _opt("--repeats", "int", ("collective",), "timed repeats per point; the median is reported", 5, minimum=1),
    _opt("--launch-kernels", "int", ("micro",), "kernels per launch-overhead sample (default 1000)", 1000, minimum=1),
    _opt("--ar-world-size", "int", ("micro",), "all-reduce processes (default: one per GPU; 2 on CPU)", 0, minimum=1),
    _opt("--ar-backend", "str", ("micro",), "auto: nccl on GPUs, gloo on CPU", "auto", choices=("auto", "nccl", "gloo")),
    _opt("--ar-min-bytes", "int", ("micro",), "smallest message of the doubling sweep (default 1 KiB)", 1024, minimum=1),
    _opt(
        "--ar-max-bytes", "int", ("micro",), "largest message of the doubling sweep (default 256 MiB on GPUs, 1 MiB on CPU)", 0, minimum=1
    ),
    # ---- collective: the cluster's rendezvous
    _opt("--plan", "flag", ("collective",), "only print the decode-step message sizes and a free rendezvous port (no PyTorch)"),
    _opt("--cpu", "flag", ("collective",), "plan for a CPU run (short M list)"),
    _opt("--world-size", "int", ("collective",), "ranks on all hosts together (--plan with 0: only count this host's)", 1),
    _opt("--master-addr", "str", ("collective",), "the first host's address as the other hosts reach it", "127.0.0.1"),
    _opt("--master-port", "int", ("collective",), "the rendezvous port on the first host (from --plan)", 0),
    _opt("--node-rank", "int", ("collective",), "this host's place in the cluster (0 = the first host)", 0),
    _opt("--rank-offset", "int", ("collective",), "global rank of this host's first process", 0),
    _opt("--local-ranks", "int", ("collective",), "processes on this host (default: one per GPU; 2 on a CPU)", 0),
    _opt("--backend", "str", ("collective",), "auto: nccl on GPUs, gloo on CPU", "auto", choices=("auto", "nccl", "gloo")),
    _opt("--ops", "str", ("collective",), "collectives to time (default allreduce,alltoall)", "allreduce,alltoall"),
    _opt("--ar-sizes", "str", ("collective",), "all-reduce message bytes, comma-separated (from --plan)", ""),
    _opt("--a2a-sizes", "str", ("collective",), "all-to-all bytes per rank, comma-separated (from --plan)", ""),
    # ---- server: the inference server's recipe, stopped and started on the user's word
    _opt("--url", "str", ("server",), "the inference server as seen from this host", DEFAULT_SERVER_URL),
    _opt("--timeout", "float", ("server",), "seconds per HTTP request", 3.0),
    _opt(
        "--profiler-dir",
        "str",
        ("server",),
        "status: also give the recipe with the torch profiler writing here (auto: a new folder in the agent's cache)",
    ),
    _opt("--profile-delay-iterations", "int", ("server",), "status: engine steps the profiler skips first (vLLM)", 0, minimum=1),
    _opt("--profile-max-iterations", "int", ("server",), "status: engine steps the profiler records at most (vLLM)", 0, minimum=1),
    _opt(
        "--nsys",
        "str",
        ("server",),
        "status: also give the recipe under Nsight Systems (nsys profile), with this nsys or one found here (auto)",
        metavar="PATH|auto",
    ),
    _opt("--pid", "int", ("server",), "stop: the server's pid"),
    _opt("--start-ticks", "int", ("server",), "stop: its start time, as /proc/<pid>/stat field 22"),
    _opt("--argv-json", "str", ("server",), "stop: its command line as adopted (JSON list, secrets redacted)"),
    _opt("--stop-timeout", "float", ("server",), "stop: seconds after SIGTERM before SIGKILL", 60.0),
    _opt("--recipe", "str", ("server",), "start: the recipe (JSON, as status gave it)"),
    _opt(
        "--recipe-stdin",
        "flag",
        ("server",),
        "start: read the recipe (one JSON line) from stdin, after the API key's line where there is one: "
        "a whole environment can pass Linux's 128 KiB limit on one argument",
    ),
    _opt("--start-timeout", "float", ("server",), "start: seconds to wait for /health and /v1/models", 3600.0),
    # ---- internal: processes the agent starts itself
    _opt("--worker", "flag", ("macro", "collective"), "", internal=True),
    _opt("--allreduce-worker", "flag", ("micro",), "", internal=True),
    _opt("--rank", "int", ("micro",), "", 0, internal=True),
    _opt("--world-size", "int", ("micro",), "", 1, internal=True),
    _opt("--rendezvous", "str", ("micro",), "", internal=True),
    _opt("--ar-sizes", "str", ("micro",), "", "", internal=True),
]

DESCRIPTIONS: Dict[str, str] = {
    "probe": "What is on this host: Python, packages, GPUs, network, and the inference server (kind, version, profiler, API key).",
    "macro": "End-to-end serving benchmark against the server's OpenAI-compatible API (vllm bench serve's metrics).",
    "micro": "Micro-benchmarks: GEMMs at the model's shapes, all-reduce at decode sizes, launch overhead.",
    "profile": "Profiles decode steps through the server's own torch profiler and collects the per-rank traces.",
    "collective": "All-reduce and all-to-all across hosts (one agent per host), through torch.distributed's env:// rendezvous.",
}


def options_of(command: str) -> List[Option]:
    return [o for o in OPTIONS if command in o.commands]


def add_arguments(parser: argparse.ArgumentParser, command: str, more: Sequence[Option] = ()) -> None:
    """The command's flags, as the table defines them, then `more`: rows a unit above this table owns (the macro
    workloads' own flags, macro/workloads/)."""
    parser.description = DESCRIPTIONS.get(command)
    for o in [*options_of(command), *more]:
        _add(parser, o)


def _add(parser: argparse.ArgumentParser, o: Option) -> None:
    # argparse formats help with %: a literal percent sign is written twice.
    more: Dict[str, Any] = {"help": argparse.SUPPRESS if o.internal else o.help.replace("%", "%%"), "dest": o.dest}
    if o.kind == "flag":
        parser.add_argument(o.flag, *o.aliases, action="store_true", **more)
        return
    if o.kind == "strs":
        more["action"] = "append"
        more["default"] = list(o.default or [])
    else:
        more["default"] = o.default
        if o.kind == "int":
            more["type"] = int
        elif o.kind == "float":
            more["type"] = float
    if o.choices:
        more["choices"] = list(o.choices)
    if o.metavar:
        more["metavar"] = o.metavar
    parser.add_argument(o.flag, *o.aliases, **more)


def check_table(more: Sequence[Option] = ()) -> List[str]:
    """What is wrong with the table (and `more` rows): unknown kinds, a flag defined twice for one command, a secret
    without its stdin twin."""
    problems = []
    seen: Dict[Tuple[str, str], int] = {}
    for o in [*OPTIONS, *more]:
        if o.kind not in KINDS:
            problems.append(f"{o.flag}: kind {o.kind!r} is not one of {KINDS}")
        for c in o.commands:
            if c not in COMMANDS:
                problems.append(f"{o.flag}: unknown command {c!r}")
            seen[(c, o.flag)] = seen.get((c, o.flag), 0) + 1
        if o.secret and any(f"{o.flag}-stdin" != p.flag or p.commands != o.commands for p in OPTIONS if p.flag == f"{o.flag}-stdin"):
            problems.append(f"{o.flag}: a secret needs {o.flag}-stdin for the same commands")
    problems += [f"{flag}: defined {n} times for {c}" for (c, flag), n in seen.items() if n > 1]
    return problems
