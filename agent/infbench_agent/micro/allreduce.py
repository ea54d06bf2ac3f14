"""All-reduce at decode message sizes: one process per device through torch.distributed.

The parent (the agent's `micro` command) starts `world_size` worker processes by running the agent
again (`python -m infbench_agent micro --allreduce-worker ...` with the agent's zipapp or folder on
PYTHONPATH, so it works the same from agent.pyz). Rank 0 prints its points as events; the parent
forwards them. Columns follow nccl-tests' all_reduce_perf: time, algbw = bytes / time, and
busbw = algbw * 2(n-1)/n, the bandwidth each link must carry in a ring, comparable across world sizes.
"""
from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Callable, Optional

from infbench_agent import events
from infbench_agent.events import AgentError
from infbench_agent.micro.timing import median

# NVLink multicast (NVLS) can put a shared host's GPUs out of service; never let NCCL try it.
SAFE_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


def bus_bandwidth(algbw: float, world_size: int) -> float:
    """nccl-tests' bus bandwidth for all-reduce: algbw * 2(n-1)/n."""
    return algbw * 2.0 * (world_size - 1) / world_size


def doubling_sizes(min_bytes: int, max_bytes: int) -> list[int]:
    sizes, size = [], max(2, min_bytes)
    while size <= max_bytes:
        sizes.append(size)
        size *= 2
    return sizes


def agent_command() -> tuple[list[str], dict[str, str]]:
    """argv and environment that start this agent again, from a zipapp or from its source folder."""
    # __file__ is <agent.pyz>/infbench_agent/micro/allreduce.py in a zipapp, or <folder>/infbench_agent/... .
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(SAFE_ENV)
    return [sys.executable, "-u", "-m", "infbench_agent"], env


def stop_ranks(procs: list, readers: list) -> None:
    """Kills the rank processes still running and waits for them and for the threads reading their output."""
    for p in procs:
        if p.poll() is None:
            p.kill()
    for p in procs:
        p.wait()
    for t in readers:
        t.join(timeout=5)


def run_allreduce(
    sizes: list[int], world_size: int, backend: str, device: str, repeats: int, on_point: Callable[[dict], None], timeout_s: float = 900.0
) -> list[dict]:
    """Starts the workers, forwards rank 0's points to `on_point`, and returns them."""
    argv, env = agent_command()
    rendezvous_dir = tempfile.mkdtemp(prefix="infbench-allreduce-")
    rendezvous = os.path.join(rendezvous_dir, "store")
    points: list[dict] = []
    worker_errors: list[str] = []
    procs = []
    for rank in range(world_size):
        cmd = argv + [
            "micro",
            "--allreduce-worker",
            "--rank",
            str(rank),
            "--world-size",
            str(world_size),
            "--rendezvous",
            rendezvous,
            "--ar-backend",
            backend,
            "--device",
            device,
            "--ar-sizes",
            ",".join(str(s) for s in sizes),
            "--repeats",
            str(repeats),
        ]
        procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=None, env=env, text=True))

    def read(rank: int, stream: Any) -> None:
        for line in stream:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("type") == events.MICRO_POINT and rank == 0:
                points.append(event["point"])
                on_point(event["point"])
            elif event.get("type") == events.ERROR:
                worker_errors.append(f"rank {rank}: {event.get('message')}")

    readers = [threading.Thread(target=read, args=(r, p.stdout), daemon=True) for r, p in enumerate(procs)]
    for t in readers:
        t.start()
    deadline = time.monotonic() + timeout_s
    try:
        while any(p.poll() is None for p in procs):
            failed = [r for r, p in enumerate(procs) if p.returncode not in (None, 0)]
            # One rank gone means the others wait in a collective forever: stop them.
            if failed or time.monotonic() > deadline:
                break
            time.sleep(0.05)
    finally:
        stop_ranks(procs, readers)
        try:
            os.remove(rendezvous)
        except OSError:
            pass
        try:
            os.rmdir(rendezvous_dir)
        except OSError:
            pass
    codes = [p.returncode for p in procs]
    if any(c != 0 for c in codes):
        detail = "; ".join(worker_errors) or f"exit codes {codes}"
        timed_out = time.monotonic() > deadline
        raise AgentError(
            "allreduce_failed",
            f"The all-reduce workers ({world_size} x {backend}) failed: {detail}" + (" (timed out)" if timed_out else ""),
            "The workers' stderr is in the run's agent.log. Try {0}, {1}, or {2}.",
            [events.flag("--ar-world-size", "1"), events.flag("--ar-backend", "gloo"), events.flag("--skip", "allreduce")],
        )
    return points


def worker_main(args: Any) -> int:
    """One rank: times all_reduce at each size, eagerly and (on GPUs) replayed from a CUDA graph."""
    import datetime

    import torch
    import torch.distributed as dist

    rank, world = args.rank, args.world_size
    on_gpu = args.device.startswith("cuda")
    backend = args.ar_backend
    device = rank_device(torch, on_gpu, rank)
    dist.init_process_group(
        backend, init_method=f"file://{args.rendezvous}", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=300)
    )
    # gloo has no bfloat16 all-reduce; fp16 has the same 2 bytes per element.
    dtype = torch.bfloat16 if backend == "nccl" else torch.float16
    dtype_name = "bf16" if dtype == torch.bfloat16 else "fp16"

    check = torch.full((1024,), float(rank + 1), dtype=dtype, device=device)
    dist.all_reduce(check)
    expected = world * (world + 1) / 2
    if abs(float(check[0].item()) - expected) > 1e-3:
        raise AgentError(
            "allreduce_wrong",
            f"all_reduce gave {check[0].item()} where {expected} was due (rank {rank}).",
            "The GPUs' interconnect or NCCL is misbehaving: run nccl-tests' all_reduce_perf -c 1.",
        )

    slowest, sync = rank_clock(torch, dist, backend, device)

    for size in [int(s) for s in args.ar_sizes.split(",") if s]:
        count = max(1, size // 2)
        buf = torch.ones(count, dtype=dtype, device=device)
        call = functools.partial(dist.all_reduce, buf)
        eager_us, iters = eager_collective_us(dist, call, sync, slowest, args.repeats)
        modes = [("eager", slowest(eager_us), f"wall clock over {iters} calls, median of {args.repeats}, slowest rank")]
        # With one rank NCCL launches nothing, so a captured graph is empty: no graph figure to give.
        if on_gpu and world > 1:
            modes.append(
                (
                    "graph",
                    slowest(graph_collective_us(torch, dist, call, iters, args.repeats)),
                    f"CUDA graph of {iters} all-reduces replayed, median of {args.repeats}, slowest rank",
                )
            )
        for mode, us, how in modes:
            algbw = count * 2 / us / 1e3  # GB/s
            point = {
                "bytes": count * 2,
                "count": count,
                "dtype": dtype_name,
                "backend": backend,
                "world_size": world,
                "mode": mode,
                "us": us,
                "algbw_gbps": algbw,
                "busbw_gbps": bus_bandwidth(algbw, world),
                "timing": how,
                "correct": True,
            }
            if rank == 0:
                events.emit(events.MICRO_POINT, kind="allreduce", point=point)
        del buf
    dist.barrier()
    dist.destroy_process_group()
    return 0


def rank_device(torch: Any, on_gpu: bool, local_rank: int) -> str:
    """The device one rank works on: its own GPU of this host (set as the current one), else the CPU."""
    if not on_gpu:
        return "cpu"
    torch.cuda.set_device(local_rank % torch.cuda.device_count())
    return f"cuda:{torch.cuda.current_device()}"


def rank_clock(torch: Any, dist: Any, backend: str, device: str) -> tuple[Callable[[float], float], Callable[[], None]]:
    """`slowest(us)`: every rank's figure for the same collectives, the slowest rank's (the collective's time);
    `sync()`: waits for the device's queued work (nothing on a CPU)."""

    def slowest(us: float) -> float:
        t = torch.tensor([us], dtype=torch.float64 if backend == "gloo" else torch.float32, device=device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return float(t.item())

    def sync() -> None:
        if device.startswith("cuda"):
            torch.cuda.synchronize()

    return slowest, sync


def eager_collective_us(
    dist: Any, call: Callable[[], Any], sync: Callable[[], None], slowest: Callable[[float], float], repeats: int
) -> tuple[float, int]:
    """Median wall-clock microseconds per call of a collective, and the calls per sample; every rank runs the same count."""
    for _ in range(3):
        call()
    sync()
    dist.barrier()
    start = time.perf_counter()
    call()
    sync()
    # Every rank must run the same number of calls, so the count comes from the slowest rank's estimate.
    first = slowest((time.perf_counter() - start) * 1e6)
    iters = int(max(5, min(200, 5000 / max(first, 1.0))))
    samples = []
    for _ in range(repeats):
        dist.barrier()
        sync()
        start = time.perf_counter()
        for _ in range(iters):
            call()
        sync()
        samples.append((time.perf_counter() - start) * 1e6 / iters)
    return median(samples), iters


def graph_collective_us(torch: Any, dist: Any, call: Callable[[], Any], iters: int, repeats: int) -> float:
    """Median microseconds per call of a collective captured `iters` times in one CUDA graph (how vLLM decodes)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        call()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(iters):
            call()
    graph.replay()
    torch.cuda.synchronize()
    samples = []
    for _ in range(repeats):
        dist.barrier()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1000.0 / iters)
    del graph
    return median(samples)


def annotate(point: dict, decode_sizes: dict[int, int], hidden: Optional[int]) -> dict:
    """Marks a point that is a decode step's message: M tokens x hidden x 2 bytes."""
    m = decode_sizes.get(int(point["bytes"]))
    point["source"] = "decode" if m is not None else "sweep"
    point["m"] = m
    if m is not None and hidden:
        point["note"] = f"M={m} tokens x hidden {hidden} x 2 bytes"
    return point
