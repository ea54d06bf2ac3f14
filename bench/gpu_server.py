"""This project's own serving loop on a GPU, with vLLM's HTTP API: NOT vLLM, and not the simulator's timing model.

    PATH=bench/vllm-bin:$PATH vllm serve MODEL [--port 8000] [--enforce-eager] [--enable-layerwise-nvtx-tracing]
        [--profiler-config '{"profiler":"torch","torch_profiler_dir":"DIR"}' | '{"profiler":"cuda"}']
        [--step-log steps.jsonl] [-tp 1]

A real server for checking the tool end to end on a GPU machine (bench/h200_lifecycle.sh): the
simulator's HTTP front end and its vLLM 0.16 API (simulator/vllm_sim.py: OpenAI completions and chat,
/metrics, /start_profile and /stop_profile, --profiler-config parsed as vLLM parses it, trace names)
drive a continuous-batching scheduler whose every step runs the decode model of
bench/nsys_serving_loop.py on the GPU: four layers (a dense MLP, then mixtures of experts), an LM head
and an argmax sampler, on the running requests' batch. As vLLM does for decode, the step replays the
CUDA graph captured at start-up for the smallest capture size that holds the batch (1, 2, 4, 8, 16,
32), or runs eagerly at the batch's own size with --enforce-eager. The prompt is not run through the
model (a request's first step is a decode step), and the text streamed back is the simulator's words,
not the sampled tokens: only the GPU work is real.

Profilers, as vLLM 0.16 offers them (vllm/profiler/gpu_profiler.py, vllm/config/profiler.py):
- "torch": a real torch.profiler capture of the steps recorded after /start_profile (delay_iterations
  and max_iterations honoured), written at /stop_profile as `dp0_pp0_tp0_dcp0_ep0_rank0.<ns>.pt.trace.json.gz`
  into torch_profiler_dir; each step is a record_function named as vLLM 0.16 names it
  (`execute_new_N_cached_M`);
- "cuda": cudaProfilerStart before the first recorded step, cudaProfilerStop after the last (for a
  server run under `nsys profile`).
--enable-layerwise-nvtx-tracing registers NVTX ranges on every module as vLLM's PytHooks do
(vllm/utils/nvtx_pytorch_hooks.py; see bench/nsys_serving_loop.py), before the graphs are captured.
As in vLLM, the step annotation is an NVTX range around each step when the profiler is "cuda" (what a
report under nsys shows), a record_function when it is "torch", and nothing without a profiler.

The step log (--step-log, JSON lines, appended) is the truth the tool is checked against: one line per
step with this process's pid, the batch, the size run (padded to a graph's), the step's GPU time from
CUDA events recorded before its first and after its last kernel, and which profiler recorded it.

INFBENCH_GPU_LOOP_NO_NVTX_FLAG=1 leaves --enable-layerwise-nvtx-tracing out of `vllm serve --help`, as a
vLLM version without it would: the tool then profiles without layer ranges.

Without a GPU the step is a small matmul on the CPU (for trying the wiring only).
"""
from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import gzip
import json
import os
import shutil
import socket
import sys
import time
from typing import List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "simulator"))
sys.path.insert(0, HERE)
import sim_http  # noqa: E402
import sim_mimic  # noqa: E402
import vllm_sim  # noqa: E402

LABEL = "inference-bench-gpu-loop"
# The `server` header of every answer names this loop (the simulator's own mark would make the tool take it for the simulator).
sim_http.OWNED_BY = LABEL
MIMIC = "vllm-0.16"
CAPTURE_SIZES = (1, 2, 4, 8, 16, 32)
NVTX_FLAG = "--enable-layerwise-nvtx-tracing"
HIDE_NVTX_ENV = "INFBENCH_GPU_LOOP_NO_NVTX_FLAG"

HELP = f"""usage: vllm serve [model_tag] [options]

{LABEL}: this project's own GPU serving loop with vLLM's API (bench/gpu_server.py), NOT vLLM.

options:
  --host HOST
  --port PORT
  --served-model-name NAME
  --api-key KEY
  --tensor-parallel-size, -tp N     (1 only)
  --profiler-config JSON            {{"profiler": "torch"|"cuda", "torch_profiler_dir": DIR,
                                      "delay_iterations": N, "max_iterations": N}}
  --enforce-eager                   no CUDA graphs: every step runs eagerly
  --max-num-seqs N                  most running requests (at most {max(CAPTURE_SIZES)})
  --step-log FILE                   the loop's own step log (JSON lines, appended)
"""


def log(text: str, where: str) -> None:
    """A start-up line as vLLM's logger writes it (the tool follows these while the server starts)."""
    print(f"INFO {time.strftime('%m-%d %H:%M:%S')} [{where}] {text} ({LABEL})", file=sys.stderr, flush=True)


class GpuLoop:
    """The model and its CUDA graphs; every method runs on the one GPU thread."""

    def __init__(self, graphs: bool, nvtx: bool, sizes: List[int]) -> None:
        import torch

        self.torch = torch
        self.cuda = torch.cuda.is_available()
        self.graphs_on = graphs and self.cuda
        self.sizes = sizes
        torch.manual_seed(0)
        t0 = time.perf_counter()
        if self.cuda:
            import nsys_serving_loop as loop

            self.model = loop.Model(loop._fake_all_reduce()).cuda().eval()
            self.sampler = loop.Sampler()
            if nvtx:
                loop.register_nvtx_hooks(self.model, "model")
                loop.register_nvtx_hooks(self.sampler, "sampler")
        else:
            weight = torch.randn(256, 256)
            self.model = lambda ids: (ids.float().unsqueeze(-1) + weight[0]) @ weight
            self.sampler = lambda logits: torch.argmax(logits, dim=-1)
        device = "cuda" if self.cuda else "cpu"
        self.ids = {b: torch.zeros(b, dtype=torch.long, device=device) for b in sizes}
        log(f"Loading weights took {time.perf_counter() - t0:.2f} seconds", "default_loader.py:272")
        self.graphs: dict = {}
        self.logits: dict = {}
        with torch.inference_mode():
            for b in sizes:
                self.model(self.ids[b])  # warm-up: Triton compiles, cuBLAS picks its kernels
            if self.cuda:
                torch.cuda.synchronize()
            if self.graphs_on:
                t0 = time.perf_counter()
                print(f"Capturing CUDA graphs (decode, FULL): {len(sizes)} sizes", file=sys.stderr, flush=True)
                pool = None
                for b in sorted(sizes, reverse=True):
                    g = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(g, pool=pool):
                        self.logits[b] = self.model(self.ids[b])
                    pool = g.pool()
                    self.graphs[b] = g
                torch.cuda.synchronize()
                log(f"Graph capturing finished in {time.perf_counter() - t0:.0f} secs, took 0.00 GiB", "gpu_model_runner.py:3480")

    def size_for(self, running: int) -> int:
        """The batch a step runs: the smallest capture size that holds it (graphs), else its own."""
        if not self.graphs_on:
            return running
        return next(b for b in self.sizes if b >= running)

    def step(self, running: int, label: str, nvtx_step: bool) -> dict:
        torch = self.torch
        b = self.size_for(running)
        if b not in self.ids:
            self.ids[b] = torch.zeros(b, dtype=torch.long, device="cuda" if self.cuda else "cpu")
        with torch.inference_mode():
            if self.cuda:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            t0 = time.perf_counter()
            # The step annotation as vLLM's profilers write it: an NVTX range in the CUDA profiler mode, a
            # record_function for torch (vllm/v1/worker/gpu_worker.py annotate_profile, vllm/profiler/wrapper.py).
            with torch.cuda.nvtx.range(label) if nvtx_step else contextlib.nullcontext(), torch.profiler.record_function(label):
                if self.cuda:
                    start.record()
                if self.graphs_on:
                    self.graphs[b].replay()
                    logits = self.logits[b]
                else:
                    logits = self.model(self.ids[b])
                nxt = self.sampler(logits)
                self.ids[b].copy_(nxt)
                if self.cuda:
                    end.record()
            nxt.cpu()  # the sampled tokens reach the host, as a server's step ends
            ms = start.elapsed_time(end) if self.cuda else (time.perf_counter() - t0) * 1000.0
        return {"size": b, "gpuMs": round(ms, 4), "graph": self.graphs_on}


class GpuServer(vllm_sim.Simulator):
    """The simulator's front end and scheduler; each step run by GpuLoop on the GPU thread."""

    simulated = False

    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__(args)
        self.args = args
        self.step_log = open(args.step_log, "a") if args.step_log else None
        # One thread owns the GPU: the model, its graphs, every step and the profilers' start and stop.
        self.gpu = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="gpu")
        self.capture: Optional[str] = None  # "torch" | "cuda" while a profiler records
        self.torch_prof = None
        self.step_index = 0
        sizes = [b for b in CAPTURE_SIZES if b <= self.model.max_batch] or [1]
        nvtx = bool(args.enable_layerwise_nvtx_tracing)
        self.nvtx = nvtx
        self.loop_gpu: GpuLoop = self.gpu.submit(GpuLoop, not args.enforce_eager, nvtx, sizes).result()
        SERVERS.append(self)

    # ---- the step, on the GPU thread ----

    def execute_step(self, step: dict, end: float, recorded: bool) -> float:
        self.gpu.submit(self._gpu_step, step, recorded).result()
        return time.monotonic()

    def _gpu_step(self, step: dict, recorded: bool) -> None:
        mode = "torch" if self.profiler_dir else ("cuda" if self.cuda_profiler else None)
        if recorded and self.capture is None and mode:
            self._capture_start(mode)
        elif not recorded and self.capture is not None:
            self._capture_stop()
        label = sim_mimic.step_name(self.mimic, step) if self.mimic else None
        done = self.loop_gpu.step(step["running"], label or "execute_model", self.cuda_profiler and self.loop_gpu.cuda)
        self.step_index += 1
        if self.step_log:
            line = {"pid": os.getpid(), "step": self.step_index, "t": round(time.time(), 6), "running": step["running"]}
            line.update(done, label=label, profiled=self.capture, nvtx=self.nvtx)
            self.step_log.write(json.dumps(line) + "\n")
            self.step_log.flush()

    def _capture_start(self, mode: str) -> None:
        torch = self.loop_gpu.torch
        if mode == "cuda":
            if self.loop_gpu.cuda:
                torch.cuda.cudart().cudaProfilerStart()
        else:
            activities = [torch.profiler.ProfilerActivity.CPU]
            if self.loop_gpu.cuda:
                activities.append(torch.profiler.ProfilerActivity.CUDA)
            self.torch_prof = torch.profiler.profile(activities=activities)
            self.torch_prof.start()
        self.capture = mode

    def _capture_stop(self) -> None:
        if self.capture == "cuda" and self.loop_gpu.cuda:
            self.loop_gpu.torch.cuda.cudart().cudaProfilerStop()
        elif self.capture == "torch" and self.torch_prof is not None:
            self.torch_prof.stop()
        self.capture = None

    def _export_torch(self, directory: str) -> List[str]:
        """Stops the torch profiler and writes its trace under vLLM 0.16's name for rank 0."""
        if self.capture == "torch":
            self._capture_stop()
        prof, self.torch_prof = self.torch_prof, None
        if prof is None:
            return []
        os.makedirs(directory, exist_ok=True)
        assert self.mimic is not None and self.flags is not None
        name = sim_mimic.trace_file_name(
            self.mimic, self.flags, 0, time.time_ns(), self.instance_id, socket.gethostname(), os.getpid(), self.profile_id
        )
        final = os.path.join(directory, name)
        raw = os.path.join(directory, f".{name}.writing.json")
        prof.export_chrome_trace(raw)
        with open(raw, "rb") as src, gzip.open(raw + ".gz", "wb") as dst:
            shutil.copyfileobj(src, dst)
        os.remove(raw)
        os.replace(raw + ".gz", final)  # appears whole, as the tool waits for it
        return [final]

    # ---- the profiler endpoints ----

    async def stop_profile(self) -> List[str]:
        self.profiling = False
        self.profile_stops += 1
        self.profiled_steps = []
        directory = self.profiler_dir
        assert self.loop is not None and directory
        return await self.loop.run_in_executor(None, lambda: self.gpu.submit(self._export_torch, directory).result())

    async def stop_profile_mimic(self, writer) -> None:  # noqa: ANN001 - asyncio.StreamWriter
        await super().stop_profile_mimic(writer)
        if self.cuda_profiler:
            assert self.loop is not None
            await self.loop.run_in_executor(None, lambda: self.gpu.submit(self._capture_stop).result())

    # ---- labels: vLLM's API, this loop's name ----

    def models_body(self) -> dict:
        body = super().models_body()
        for m in body["data"]:
            m.pop("simulator", None)
            m["owned_by"] = "vllm"
            m["serving_loop"] = LABEL
        return body

    def metrics_text(self) -> str:
        return super().metrics_text().replace("a SIMULATED vLLM server, not a model", "this project's own GPU serving loop, not vLLM")

    async def route(self, method, path, raw, headers, writer) -> bool:  # noqa: ANN001 - as the simulator's
        if path == "/version":
            await sim_http.respond_json(writer, 200, {"version": f"{sim_mimic.PROFILES[MIMIC].version}+{LABEL}"})
            return True
        return await super().route(method, path, raw, headers, writer)

    def close(self) -> None:
        def end() -> None:
            if self.capture is not None:
                self._capture_stop()
            if self.step_log:
                self.step_log.close()

        self.gpu.submit(end).result()
        self.gpu.shutdown()


SERVERS: List[GpuServer] = []


def parse(argv: List[str]) -> argparse.Namespace:
    """`serve MODEL [flags]`: this loop's flags, then the rest as the simulator's --mimic vllm-0.16 takes them."""
    if argv[:1] != ["serve"]:
        print(f"usage: vllm serve MODEL [options]  ({LABEL}: only `serve` is here)", file=sys.stderr)
        raise SystemExit(2)
    argv = argv[1:]
    if any(a == "--help" or a.startswith("--help=") or a == "-h" for a in argv):
        text = HELP
        if os.environ.get(HIDE_NVTX_ENV) in (None, "", "0"):
            text += f"  {NVTX_FLAG}   NVTX ranges on every module (vLLM's layerwise NVTX hooks)\n"
        print(text)
        raise SystemExit(0)
    own = argparse.ArgumentParser(prog="vllm serve", add_help=False)
    own.add_argument("--enforce-eager", action="store_true")
    own.add_argument("--step-log", default=None)
    own.add_argument("--max-num-seqs", type=int, default=max(CAPTURE_SIZES))
    mine, rest = own.parse_known_args(argv)
    model = None
    if rest and not rest[0].startswith("-"):
        model, rest = rest[0], rest[1:]
    if model and "--served-model-name" not in rest:
        rest = ["--served-model-name", model] + rest
    # vLLM's max_iterations defaults to 0, no limit (vllm/config/profiler.py): every step between start and stop
    # is recorded unless the profiler config bounds it (the simulator's own default is 32).
    batch = str(min(mine.max_num_seqs, max(CAPTURE_SIZES)))
    args = vllm_sim.parse_args(["--mimic", MIMIC, "--max-batch", batch, "--profile-max-steps", str(10**9)] + rest)
    args.enforce_eager = mine.enforce_eager
    args.step_log = mine.step_log
    return args


def main(argv: Optional[List[str]] = None) -> int:
    import asyncio

    args = parse(sys.argv[1:] if argv is None else argv)
    log(f"{LABEL}: this project's own serving loop with vLLM's API, not vLLM", "gpu_server.py")
    try:
        asyncio.run(vllm_sim.serve(args, GpuServer))
    finally:
        for s in SERVERS:
            s.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
