#!/usr/bin/env python3
"""A simulated vLLM server (a SIMULATOR, not a model): vLLM's OpenAI-compatible HTTP API with a known timing model.

Speaks /health, /v1/models, /v1/completions and /v1/chat/completions (streaming with SSE and `usage` in
a final chunk, and non-streaming), /tokenize, /metrics (vLLM's metric names), /version, and
/start_profile + /stop_profile (404 unless --profiler-dir is given, as vLLM without a profiler config).
Tokens come out of a continuous-batching scheduler thread whose step times follow sim_timing.TimingModel,
so a client's measurements can be checked against known answers. Standard library only.

    python3 simulator/vllm_sim.py --port 8000                      # the Kimi-K2.5 TP=8 story (default preset)
    python3 simulator/vllm_sim.py --port 0 --step-base-ms 10 --step-per-seq-ms 0.5 --prefill-per-token-ms 0.01
    python3 simulator/vllm_sim.py --zero-cost                      # tokens as fast as possible (client ceiling)
    python3 simulator/vllm_sim.py --pace-ms 20                     # each stream one token per 20 ms
    python3 simulator/vllm_sim.py --fault error500:every=5 --fault cut:every=7:after=3
See simulator/README.md.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import threading
import time
import uuid
from typing import List, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sim_http  # noqa: E402
import sim_mimic  # noqa: E402
import sim_nsys  # noqa: E402
import sim_timing as tm  # noqa: E402
from sim_api import ApiRoutes  # noqa: E402
from sim_generation import Generation  # noqa: E402
from sim_metrics import ServerMetrics  # noqa: E402
from sim_pacing import PacedStreams  # noqa: E402
from sim_prefix_cache import PrefixCache  # noqa: E402
from sim_profiler import ProfilerEndpoints  # noqa: E402
from sim_request import Fault  # noqa: E402
from sim_scheduler import BatchScheduler  # noqa: E402

# Set by an Nsight Systems stand-in (the tests' fake nsys): at exit the simulator writes there, as SQLite,
# the report nsys would have written of its profiled steps (sim_nsys.py). A real nsys knows nothing of it.
NSYS_REPORT_ENV = "INFBENCH_SIMULATOR_NSYS_REPORT"


class Simulator(ApiRoutes, Generation, ProfilerEndpoints, BatchScheduler):
    """The server: what it serves (a preset's model and timing, a mimicked version, its metrics), made of
    its parts: the API (sim_api.py), generation (sim_generation.py), the profiler (sim_profiler.py) and
    the scheduler (sim_scheduler.py). bench/gpu_server.py serves for real through it."""

    # A subclass that serves for real (bench/gpu_server.py) says so: no header then names a mimicked version.
    simulated = True

    def __init__(self, args: argparse.Namespace) -> None:
        preset = tm.PRESETS[args.preset]
        self.preset = preset
        self.model = tm.with_overrides(preset.timing, args.step_base_ms, args.step_per_seq_ms, args.prefill_per_token_ms, args.max_batch)
        self.served_name = args.served_model_name or preset.served_model_name
        self.world_size = args.world_size or preset.world_size
        self.layers = args.layers or preset.layers
        self.mimic: Optional[sim_mimic.Mimic] = sim_mimic.PROFILES[args.mimic] if args.mimic else None
        self.flags: Optional[sim_mimic.ServerFlags] = getattr(args, "server_flags", None)
        if self.mimic and self.flags and not args.world_size:
            self.world_size = self.flags.world_size
        self.instance_id = uuid.uuid4().hex[:5]
        self.created = int(time.time())
        self.loop: Optional[asyncio.AbstractEventLoop] = None
        # Generation: how requests run (the scheduler, or one of the modes without it) and what they meet.
        self.zero_cost = args.zero_cost
        self.pace_s = args.pace_ms / 1000.0 if args.pace_ms else None
        self.paced = PacedStreams(self.pace_s, self.emit_token) if self.pace_s else None
        self.unbatched: set = set()  # requests in flight in the zero-cost and paced modes (no scheduler)
        self.faults = [Fault.parse(f) for f in args.fault or []]
        self.natural_len = args.natural_output_len
        self.generation_count = 0
        # On by default, as in vLLM V1 (--no-enable-prefix-caching turns it off).
        self.prefix_cache = PrefixCache(args.kv_cache_tokens // 16) if args.enable_prefix_caching else None
        self.metrics = ServerMetrics()
        self.init_scheduler()
        self.init_profiler(args)

    def models_body(self) -> dict:
        return {
            "object": "list",
            "data": [
                {
                    "id": self.served_name,
                    "object": "model",
                    "created": self.created,
                    "owned_by": sim_http.OWNED_BY,
                    "root": self.served_name,
                    "parent": None,
                    "max_model_len": self.preset.max_model_len,
                    "permission": [],
                    "simulator": {"preset": self.preset.name, "timing": self.model.to_json(), "world_size": self.world_size},
                }
            ],
        }

    def metrics_text(self) -> str:
        with self.cv:
            running, waiting = len(self.running) + len(self.unbatched), len(self.waiting)
        text = self.metrics.text(
            self.served_name, self.preset.name, self.model, running, waiting, self.profiling, self.profile_stops, self.prefix_cache
        )
        if self.mimic and self.mimic.server == "sglang":
            # SGLang's own prefix; only the token counters are meant to match its names.
            text = text.replace("vllm:", "sglang:")
        return text


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="vllm_sim",
        description="A SIMULATED vLLM server with a known timing model "
        "(inference-bench-simulator). Not a model: its numbers are known answers for tests and demos.",
    )
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000, help="0 picks a free port (printed on the ready line)")
    p.add_argument("--preset", default=tm.DEFAULT_PRESET, choices=sorted(tm.PRESETS))
    p.add_argument("--served-model-name", default=None)
    p.add_argument("--step-base-ms", type=float, default=None, help="a in step = a + b x running (ms)")
    p.add_argument("--step-per-seq-ms", type=float, default=None, help="b in step = a + b x running (ms)")
    p.add_argument("--prefill-per-token-ms", type=float, default=None, help="added to the step a request joins, per prompt token")
    p.add_argument("--max-batch", type=int, default=None, help="most running requests; the rest wait")
    p.add_argument("--world-size", type=int, default=None, help="ranks written by /stop_profile")
    p.add_argument("--layers", type=int, default=None, help="layers per step in the traces")
    p.add_argument("--natural-output-len", type=int, default=None, help="without ignore_eos, stop (EOS) after this many tokens")
    p.add_argument("--zero-cost", action="store_true", help="no timing model: every token at once (client-ceiling benchmark)")
    p.add_argument("--pace-ms", type=float, default=None, help="no batching: each stream one token per PACE ms")
    p.add_argument("--profiler-dir", default=None, help="enables /start_profile and /stop_profile; traces go here")
    p.add_argument("--profile-max-steps", type=int, default=32, help="steps recorded per profile (vLLM's max_iterations)")
    p.add_argument("--fault", action="append", help="e.g. error500:every=5, error429:every=3, cut:every=7:after=3, slow:every=4:ms=500")
    p.add_argument(
        "--startup-seconds",
        type=float,
        default=0.0,
        help="take this long to start (weights, CUDA graphs), writing a start-up log like vLLM's on stderr",
    )
    p.add_argument(
        "--enable-prefix-caching",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="vLLM's automatic prefix caching (on by default, as in vLLM V1): cached prompt blocks skip their prefill",
    )
    p.add_argument(
        "--enable-layerwise-nvtx-tracing",
        action="store_true",
        help="vLLM's layerwise NVTX ranges: the Nsight Systems report written under the tests' nsys stand-in names each kernel's module",
    )
    p.add_argument(
        "--slow-layer",
        type=slow_layer_arg,
        default=None,
        metavar="N:FACTOR",
        help="in the Nsight Systems report only: layer N's kernels run FACTOR times longer (a straggler layer, to show the skew)",
    )
    p.add_argument("--kv-cache-tokens", type=int, default=1_000_000, help="prefix-cache capacity in tokens (blocks of 16)")
    p.add_argument("--describe", action="store_true", help="print the timing model and expected breakdown as JSON and exit")
    p.add_argument(
        "--mimic",
        default=None,
        choices=sorted(sim_mimic.PROFILES),
        help="behave as this server version where versions differ (endpoints, profiler flags and variables, "
        "--api-key, trace names); the rest of the command line is that server's own flags, e.g. "
        '--mimic vllm-0.16 --profiler-config \'{"profiler":"torch","torch_profiler_dir":"./t"}\' -tp 8',
    )
    if argv is None:
        argv = sys.argv[1:]
    if "--mimic" not in argv and not any(a.startswith("--mimic=") for a in argv):
        return p.parse_args(argv)
    args, rest = p.parse_known_args(argv)
    args.server_flags = sim_mimic.parse_server_flags(sim_mimic.PROFILES[args.mimic], rest, dict(os.environ))
    # A bounded capture as vLLM's profiler config states it (delay_iterations, max_iterations in
    # vllm/config/profiler.py): steps skipped after /start_profile, then at most that many recorded.
    config = bounded_capture(rest)
    if config.get("max_iterations"):
        args.profile_max_steps = int(config["max_iterations"])
    args.profile_delay_steps = int(config.get("delay_iterations") or 0)
    return args


def bounded_capture(rest: List[str]) -> dict:
    """delay_iterations and max_iterations from --profiler-config JSON (also `=JSON`) or its dotted form."""
    out: dict = {}
    for i, a in enumerate(rest):
        value = rest[i + 1] if a == "--profiler-config" and i + 1 < len(rest) else None
        if a.startswith("--profiler-config="):
            value = a.split("=", 1)[1]
        if value:
            try:
                parsed = json.loads(value)
            except ValueError:
                continue
            out.update({k: v for k, v in parsed.items() if k in ("delay_iterations", "max_iterations")} if isinstance(parsed, dict) else {})
        for key in ("delay_iterations", "max_iterations"):
            if a == f"--profiler-config.{key}" and i + 1 < len(rest):
                out[key] = rest[i + 1]
            elif a.startswith(f"--profiler-config.{key}="):
                out[key] = a.split("=", 1)[1]
    return out


def describe(sim: Simulator) -> dict:
    return {
        "simulator": sim_http.OWNED_BY,
        "preset": sim.preset.name,
        "served_model_name": sim.served_name,
        "world_size": sim.world_size,
        "layers": sim.layers,
        "timing": sim.model.to_json(),
        "expected_breakdown": {str(b): tm.expected_breakdown(sim.model, b) for b in (1, 8, 32, 64)},
        "single_stream_tok_s": 1000.0 / sim.model.step_ms(1),
    }


def startup_log(text: str, where: str) -> None:
    """One line as vLLM's logger writes it: `INFO 10-06 12:00:31 [default_loader.py:272] ...`."""
    print(f"INFO {time.strftime('%m-%d %H:%M:%S')} [{where}] {text} (SIMULATED)", file=sys.stderr, flush=True)


async def simulate_startup(sim: "Simulator", seconds: float) -> None:
    """The milestones of a vLLM start, spread over `seconds`, before the port is bound (as /health
    refusing until then). The words are vLLM's: "Loading weights took %.2f seconds"
    (vllm/model_executor/model_loader/default_loader.py), the "Capturing CUDA graphs" progress bar and
    "Graph capturing finished in %.0f secs, took %.2f GiB" (vllm/v1/worker/gpu_model_runner.py)."""
    startup_log(f"Starting to load model {sim.served_name}...", "gpu_model_runner.py:2602")
    await asyncio.sleep(0.6 * seconds)
    startup_log(f"Loading weights took {0.6 * seconds:.2f} seconds", "default_loader.py:272")
    print("Capturing CUDA graphs (decode, FULL): 100%|##########| 11/11", file=sys.stderr, flush=True)
    await asyncio.sleep(0.35 * seconds)
    startup_log(f"Graph capturing finished in {0.35 * seconds:.0f} secs, took 0.31 GiB", "gpu_model_runner.py:3480")
    await asyncio.sleep(0.05 * seconds)


async def serve(args: argparse.Namespace, make: type = Simulator) -> None:
    sim = make(args)
    if sim.mimic and sim.simulated:
        sim_http.MIMIC_LINE = f"{sim.mimic.server} {sim.mimic.version}"
    sim.loop = asyncio.get_running_loop()
    if args.startup_seconds > 0:
        await simulate_startup(sim, args.startup_seconds)
    server = await asyncio.start_server(sim.handle_connection, args.host, args.port, backlog=2048, limit=1 << 20)
    port = server.sockets[0].getsockname()[1]
    if args.startup_seconds > 0:
        # vllm/entrypoints/openai/api_server.py, then uvicorn's own line.
        startup_log(f"Starting vLLM API server 0 on http://{args.host}:{port}", "api_server.py:1971")
        print("INFO:     Application startup complete.", file=sys.stderr, flush=True)
    thread = threading.Thread(target=sim.scheduler_thread, name="scheduler", daemon=True)
    thread.start()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        sim.loop.add_signal_handler(sig, stop.set)
    timed = f"step = {sim.model.step_base_ms} + {sim.model.step_per_seq_ms} x batch ms"
    mode = "zero-cost" if sim.zero_cost else (f"paced {args.pace_ms} ms/token" if sim.pace_s else timed)
    # The ready line: tests and `infbench simulate` wait for it and read the port from it.
    print(
        json.dumps(
            {
                "ready": True,
                "url": f"http://{args.host}:{port}",
                "port": port,
                "model": sim.served_name,
                **({"simulator": sim_http.OWNED_BY, "mode": mode} if sim.simulated else {"serving_loop": type(sim).__name__}),
            }
        ),
        flush=True,
    )
    async with server:
        await stop.wait()
    sim.stop_scheduler()
    report = os.environ.get(NSYS_REPORT_ENV)
    if report:
        size = sim_nsys.write_report(
            report, sim.nsys_steps, sim.model, sim.layers, modules=args.enable_layerwise_nvtx_tracing, slow_layer=args.slow_layer
        )
        print(f"SIMULATED nsys report: {report} ({size} bytes, {len(sim.nsys_steps)} profiled steps)", file=sys.stderr, flush=True)


def slow_layer_arg(text: str) -> Tuple[int, float]:
    """--slow-layer N:FACTOR (a layer number and how many times longer its kernels run)."""
    layer, _, factor = text.partition(":")
    try:
        parsed = (int(layer), float(factor or "2"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--slow-layer takes N:FACTOR such as 2:1.5, not {text}") from None
    if parsed[0] < 0 or parsed[1] <= 0:
        raise argparse.ArgumentTypeError(f"--slow-layer takes a layer 0 or above and a factor above 0, not {text}")
    return parsed


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    try:
        for f in args.fault or []:
            Fault.parse(f)
    except ValueError as exc:
        print(f"vllm_sim: {exc}", file=sys.stderr)
        return 2
    if args.describe:
        print(json.dumps(describe(Simulator(args)), indent=2))
        return 0
    asyncio.run(serve(args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
