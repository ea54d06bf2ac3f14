"""How the micro phase times small kernels, and the device's own ceilings to compare them with.

On a GPU a kernel of a few microseconds is shorter than its launch, so timing it call by call measures
the launch. Instead many calls are captured in one CUDA graph and replayed, timed with CUDA events,
and the median over replays is divided by the calls per replay (Triton's do_bench_cudagraph does
the same). On a CPU there is nothing to capture: a plain wall-clock loop, labelled as such.
PyTorch is passed in by the caller, which imported it; this module imports nothing heavy.
"""
from __future__ import annotations

import statistics
import time
from typing import Any, Callable, Sequence

MIB = 1024 * 1024


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def graph_time_us(torch: Any, calls: Sequence[Callable[[], Any]], repeats: int) -> float:
    """Median microseconds per call of `calls`, captured once into a CUDA graph and replayed `repeats` times."""
    # Warm up on a side stream, as graph capture requires (cuBLAS picks its algorithms here).
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for call in calls[: min(3, len(calls))]:
            call()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for call in calls:
            call()
    graph.replay()
    torch.cuda.synchronize()
    samples = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1000.0 / len(calls))
    del graph
    return median(samples)


def loop_time_us(
    calls: Sequence[Callable[[], Any]], repeats: int, min_seconds: float = 0.002, max_seconds: float = 1.0
) -> tuple[float, int]:
    """CPU: median microseconds per call of a wall-clock loop over `calls` (each repeat at least
    min_seconds), and the repeats made: fewer when one call is slow, so that a point takes about
    max_seconds at most (a CPU can take seconds for a GEMM a GPU does in microseconds)."""
    start = time.perf_counter()
    calls[0]()  # warm-up, and an estimate of one call
    first = time.perf_counter() - start
    # Weight rotation matters less on a CPU than finishing: a slow call rotates through fewer copies.
    if first * len(calls) > max_seconds:
        calls = calls[: max(1, int(max_seconds / max(first, 1e-9)))]
    repeats = max(1, min(repeats, int(max_seconds / max(first * len(calls), 1e-9))))
    samples = []
    for _ in range(repeats):
        count = 0
        start = time.perf_counter()
        while True:
            for call in calls:
                call()
            count += len(calls)
            elapsed = time.perf_counter() - start
            if elapsed >= min_seconds:
                break
        samples.append(elapsed * 1e6 / count)
    return median(samples), repeats


def event_time_us(torch: Any, call: Callable[[], Any], repeats: int, warmup: int = 3) -> float:
    """GPU: median microseconds of one eager call timed with CUDA events (for calls long enough: > 100 us)."""
    for _ in range(warmup):
        call()
    torch.cuda.synchronize()
    samples = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1000.0)
    return median(samples)


def measure_peaks(torch: Any, device: str, dtype: Any, dtype_name: str, budget_bytes: float, repeats: int) -> list[dict]:
    """A short device-to-device copy and a large matmul: the bandwidth and compute the GEMMs are compared with."""
    on_gpu = device.startswith("cuda")
    # Copy: large enough to dwarf the L2 and launch cost, small enough for the memory budget.
    copy_bytes = int(min(2048 * MIB if on_gpu else 64 * MIB, max(16 * MIB, budget_bytes / 4)))
    src = torch.empty(copy_bytes // 4, dtype=torch.float32, device=device).fill_(1.0)
    dst = torch.empty_like(src)
    if on_gpu:
        copy_us = event_time_us(torch, lambda: dst.copy_(src), repeats)
        timing = f"cuda events, median of {repeats}"
    else:
        copy_us, done = loop_time_us([lambda: dst.copy_(src)], repeats, min_seconds=0.02)
        timing = f"cpu wall-clock loop, median of {done}"
    moved = 2 * copy_bytes  # read + written, the way bandwidth tests count a copy
    src = dst = None  # the buffers go before the matmul's are made
    points = [
        {
            "what": "copy",
            "bytes": moved,
            "us": copy_us,
            "tbps": moved / copy_us / 1e6,
            "timing": timing,
            "note": "one buffer copied to another in the device's memory, bytes read + written",
        }
    ]

    size = 8192 if on_gpu else 256
    while on_gpu and size > 1024 and 3 * size * size * 2 > budget_bytes / 2:
        size //= 2
    a = torch.randn(size, size, device=device).to(dtype)
    b = torch.randn(size, size, device=device).to(dtype)
    out = torch.empty(size, size, device=device, dtype=dtype)
    if on_gpu:
        mm_us = event_time_us(torch, lambda: torch.matmul(a, b, out=out), repeats)
    else:
        mm_us, _ = loop_time_us([lambda: torch.matmul(a, b, out=out)], repeats, min_seconds=0.02)
    flops = 2.0 * size**3
    a = b = out = None
    points.append(
        {
            "what": "matmul",
            "dtype": dtype_name,
            "m": size,
            "n": size,
            "k": size,
            "flops": flops,
            "us": mm_us,
            "tflops": flops / mm_us / 1e6,
            "timing": timing,
            "note": f"{size}^3 torch.matmul on random data",
        }
    )
    return points


def launch_overhead(torch: Any, device: str, kernels: int, repeats: int) -> list[dict]:
    """A one-element add, launched `kernels` times eagerly and replayed from a CUDA graph."""
    on_gpu = device.startswith("cuda")
    x = torch.zeros(1, device=device)
    points = []
    if not on_gpu:
        samples = []
        for _ in range(repeats):
            start = time.perf_counter()
            for _ in range(kernels):
                x.add_(1.0)
            samples.append((time.perf_counter() - start) * 1e6 / kernels)
        us = median(samples)
        return [
            {
                "mode": "eager",
                "kernels": kernels,
                "us_per_kernel": us,
                "cpu_us_per_launch": us,
                "timing": f"cpu wall-clock, median of {repeats}",
                "note": "CPU device: the cost of one PyTorch op dispatch; there is no kernel launch",
            }
        ]

    for _ in range(3):
        x.add_(1.0)
    torch.cuda.synchronize()
    wall, cpu, gpu = [], [], []
    for _ in range(repeats):
        start_evt, end_evt = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start = time.perf_counter()
        start_evt.record()
        for _ in range(kernels):
            x.add_(1.0)
        issued = time.perf_counter()
        end_evt.record()
        torch.cuda.synchronize()
        finished = time.perf_counter()
        cpu.append((issued - start) * 1e6 / kernels)
        wall.append((finished - start) * 1e6 / kernels)
        gpu.append(start_evt.elapsed_time(end_evt) * 1000.0 / kernels)
    points.append(
        {
            "mode": "eager",
            "kernels": kernels,
            "us_per_kernel": median(wall),
            "gpu_us_per_kernel": median(gpu),
            "cpu_us_per_launch": median(cpu),
            "timing": f"wall clock and cuda events, median of {repeats}",
            "note": "one-element add launched one by one from Python",
        }
    )

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        x.add_(1.0)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(kernels):
            x.add_(1.0)
    graph.replay()
    torch.cuda.synchronize()
    wall, cpu, gpu = [], [], []
    for _ in range(repeats):
        start_evt, end_evt = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start = time.perf_counter()
        start_evt.record()
        graph.replay()
        issued = time.perf_counter()
        end_evt.record()
        torch.cuda.synchronize()
        finished = time.perf_counter()
        cpu.append((issued - start) * 1e6)
        wall.append((finished - start) * 1e6 / kernels)
        gpu.append(start_evt.elapsed_time(end_evt) * 1000.0 / kernels)
    del graph
    points.append(
        {
            "mode": "graph",
            "kernels": kernels,
            "us_per_kernel": median(wall),
            "gpu_us_per_kernel": median(gpu),
            "cpu_us_per_launch": median(cpu) / kernels,
            "cpu_us_per_replay": median(cpu),
            "timing": f"wall clock and cuda events, median of {repeats}",
            "note": f"the same {kernels} adds captured in one CUDA graph and replayed",
        }
    )
    return points
