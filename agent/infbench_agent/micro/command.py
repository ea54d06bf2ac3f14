"""The micro phase: how fast are the pieces of a decode step on this host's devices?

GEMMs at the model's exact shapes under its tensor-parallel split, all-reduce at decode message
sizes, and kernel launch overhead eager vs CUDA graph, each next to the device's own measured
ceilings (a copy and a large matmul, the `peak` points). One `micro.point` event per data point as
it is measured; the final `result` holds every point.
PyTorch is imported only once the busy-GPU guard has looked at nvidia-smi (import_torch).
"""
from __future__ import annotations

import argparse
import platform
import sys
from dataclasses import dataclass
from typing import Any, Optional, cast

from infbench_agent import auth, events, options
from infbench_agent.events import AgentError
from infbench_agent.micro.allreduce import annotate, doubling_sizes, run_allreduce, worker_main
from infbench_agent.micro.guard import GpuOccupancy, check_gpus, describe, read_occupancy
from infbench_agent.models import GemmShape, ModelError, ModelInfo, gemm_shapes, parse_shape, preset_names, resolve_model

MIB = 1024 * 1024
DEFAULT_M = options.DEFAULT_M
# On a CPU the figures show the code path, not a GPU's: a short sweep of the decode-step shapes, so
# that a CPU-only run takes seconds, not the minutes the big shapes (LM head, dense MLP) would.
CPU_M = options.CPU_M
CPU_MAX_WEIGHTS = 8 * 1024 * 1024
CPU_REPEATS = 3
PARTS = options.MICRO_PARTS


def add_arguments(p: argparse.ArgumentParser) -> None:
    options.add_arguments(p, "micro")


def parse_m_list(text: str) -> list[int]:
    try:
        values = sorted({int(x) for x in text.replace(" ", "").split(",") if x})
    except ValueError as exc:
        raise AgentError(
            "bad_option",
            f"--m {text!r} is not a list of integers.",
            "Give positive whole numbers, comma-separated: {0}.",
            [events.flag("--m", "1,8,64")],
        ) from exc
    if not values or values[0] < 1:
        raise AgentError(
            "bad_option",
            f"--m {text!r}: token counts must be positive integers.",
            "Give positive whole numbers, comma-separated: {0}.",
            [events.flag("--m", "1,8,64")],
        )
    return values


def select_shapes(args: Any) -> tuple[Optional[ModelInfo], list[GemmShape]]:
    """The model (if any) and the GEMM shapes to run, before anything heavy is imported."""
    model = None
    shapes: list[GemmShape] = []
    try:
        if args.model or args.config or (args.server_url and not args.shape):
            model = resolve_model(args.model, args.config, args.server_url, auth.resolve_api_key(args))
            shapes = gemm_shapes(model, args.tp)
        shapes += [parse_shape(s) for s in args.shape]
    except ModelError as exc:
        if exc.hint:
            raise AgentError(exc.code, str(exc), exc.hint, exc.remedies) from exc
        raise AgentError(exc.code, str(exc), "See {0} for the options.", [events.command("micro", "--help")]) from exc
    if args.only:
        shapes = [s for s in shapes if any(o in s.name for o in args.only)]
    if not shapes and "gemm" not in args.skip_parts:
        raise AgentError(
            "no_shapes",
            "No GEMM shapes to run.",
            f"Pass {{0}} (presets: {', '.join(preset_names())}), {{1}}, or {{2}}; or {{3}}.",
            [events.flag("--model"), events.flag("--config"), events.flag("--shape", "NAME=NxK"), events.flag("--skip", "gemm")],
        )
    return model, shapes


def run(args: Any) -> int:
    """The options checked, the GPUs guarded, the device opened, then each part measured in turn: every
    point emitted as it is measured, and all of them in the result."""
    if args.allreduce_worker:
        return worker_main(args)
    m_values = check_options(args)
    model, shapes = select_shapes(args)
    # The guard looks before PyTorch touches a GPU, so that a busy server is not disturbed at all.
    occupancy, budget_mib = guard_gpus(args)
    torch = import_torch()
    dev = open_device(torch, args.device, budget_mib)
    if not dev.on_gpu:
        m_values, shapes = fit_to_cpu(args, m_values, shapes)
    if args.repeats is None:
        args.repeats = 10 if dev.on_gpu else CPU_REPEATS
    events.log(f"Device: {dev.name} ({dev.device}), torch {torch.__version__}, memory budget {dev.budget / 2**30:.1f} GiB.")
    kernel, group_size = gemm_kernel(torch, args, model, dev)
    plan = allreduce_plan(torch, args, model, m_values, dev)

    parts = [p for p in PARTS if p not in args.skip_parts]
    points = Points(
        ("peak" in parts) * 2
        + ("gemm" in parts) * len(shapes) * len(m_values)
        + ("launch" in parts) * (2 if dev.on_gpu else 1)
        + ("allreduce" in parts) * len(plan.sizes) * (2 if dev.on_gpu and plan.world > 1 else 1)
    )
    peak_tbps = peak_tflops = None
    if "peak" in parts:
        peak_tbps, peak_tflops = measure_peak(torch, args, dev, kernel, group_size, points)
    if "gemm" in parts:
        measure_gemms(torch, args, dev, kernel, group_size, shapes, m_values, peak_tbps, peak_tflops, points)
    if "launch" in parts:
        measure_launch(torch, args, dev, points)
    ar_note = measure_allreduce(torch, args, dev, plan, points) if "allreduce" in parts else None

    result = {
        "device": {
            "name": dev.name,
            "kind": "gpu" if dev.on_gpu else "cpu",
            "device": dev.device,
            "torch": torch.__version__,
            "total_bytes": dev.total_bytes,
            "gpu_count": torch.cuda.device_count() if dev.on_gpu else 0,
        },
        "model": model.to_dict() if model else None,
        "tp": args.tp,
        "m": m_values,
        "shapes": [s.to_dict() for s in shapes],
        "kernel": {"label": kernel.label, "dtype": kernel.dtype, "fallback_reason": kernel.fallback_reason or None},
        "allreduce": {"backend": plan.backend, "world_size": plan.world, "note": ar_note} if "allreduce" in parts else None,
        "occupancy": occupancy.to_dict() if occupancy else None,
        "allow_busy": bool(args.allow_busy),
        "memory_budget_bytes": dev.budget,
        "timing": "CUDA graph replay with CUDA events" if dev.on_gpu else "CPU wall-clock loops (no GPU): not GPU figures",
        "failures": points.failures,
        "points": points.points,
    }
    events.emit(events.RESULT, result=result)
    return 0


def check_options(args: Any) -> list[int]:
    """The parts to skip (as args.skip_parts) and the token counts M, refused in words where they are wrong."""
    args.skip_parts = {s.strip() for s in args.skip.split(",") if s.strip()}
    unknown = args.skip_parts - set(PARTS)
    if unknown:
        raise AgentError("bad_option", f"--skip {args.skip!r}: unknown part {sorted(unknown)}.", f"Parts: {', '.join(PARTS)}.")
    if args.tp < 1:
        raise AgentError(
            "bad_option", "--tp must be at least 1.", "Give the GPUs the model is split over: {0}.", [events.flag("--tp", "8")]
        )
    return parse_m_list(args.m or DEFAULT_M)


def guard_gpus(args: Any) -> tuple[Optional[GpuOccupancy], Optional[float]]:
    """What nvidia-smi says of the GPUs, refused when the ones to use are busy (unless allowed), and the
    free memory (MiB) to size the run by; nothing on a CPU run or a host without NVIDIA GPUs."""
    if args.device == "cpu":
        return None, None
    occupancy = read_occupancy()
    if occupancy is None or not occupancy.gpus:
        return occupancy, None
    indices = [int(args.device.split(":")[1])] if args.device.startswith("cuda:") else None
    budget_mib = check_gpus(occupancy, args.busy_threshold, args.allow_busy, indices)
    if args.allow_busy and any(g.used_fraction > args.busy_threshold for g in occupancy.gpus):
        events.log(
            f"The GPUs are busy ({describe(occupancy)}); running anyway as allowed, sized to "
            f"{cast(float, budget_mib) / 1024:.1f} GiB free. Numbers include the other processes' interference.",
            "warn",
        )
    elif occupancy.processes:
        # Under the threshold but not alone: say who else is there, since their kernels share the GPU.
        events.log(
            f"Other processes use the GPUs ({describe(occupancy)}); if they are busy, the figures include " "their interference.",
            "warn",
        )
    return occupancy, budget_mib


def import_torch() -> Any:
    try:
        import torch
    except ImportError as exc:
        raise AgentError(
            "no_torch",
            f"PyTorch is not importable by {sys.executable} ({exc}).",
            "Point the target's python at the server's interpreter (the one with torch and vLLM), for example {0}.",
            [events.flag("--python", "/opt/venv/bin/python3")],
        ) from exc
    return torch


@dataclass
class Device:
    """The device the points are measured on, and the memory they may take."""

    device: str  # cuda:N or cpu
    name: str
    on_gpu: bool
    # Bytes the run may allocate, and the bytes of weights a GEMM rotates through to defeat the cache.
    budget: float
    rotate_bytes: float
    total_bytes: int


def open_device(torch: Any, wanted: str, budget_mib: Optional[float]) -> Device:
    """The --device asked for (auto: a GPU when PyTorch sees one), made current, with its memory budget."""
    device = wanted
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise AgentError(
            "no_gpu",
            f"--device {device}: this PyTorch ({torch.__version__}) sees no GPU.",
            "Check `nvidia-smi` and that torch is a CUDA build; or run on the CPU: {0}.",
            [events.flag("--device", "cpu")],
        )
    if not device.startswith("cuda"):
        # 96 MiB rotated: past a typical server CPU's last-level cache per core group.
        return Device(device, f"CPU ({platform.processor() or platform.machine()})", False, 2048.0 * MIB, 96.0 * MIB, 0)
    if device == "cuda":
        device = f"cuda:{torch.cuda.current_device()}"
    torch.cuda.set_device(torch.device(device))
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    l2_bytes = float(getattr(props, "L2_cache_size", 0) or 64 * MIB)
    free_bytes, total_bytes = torch.cuda.mem_get_info()
    budget = float(free_bytes) * 0.8
    if budget_mib is not None:
        budget = min(budget, budget_mib * MIB * 0.8)
    return Device(device, props.name, True, budget, 3 * l2_bytes, total_bytes)


def fit_to_cpu(args: Any, m_values: list[int], shapes: list[GemmShape]) -> tuple[list[int], list[GemmShape]]:
    """On a CPU, what the user did not choose is cut to a short run (M, the big shapes, the repeats), saying so."""
    cut = []
    if args.m is None:
        m_values = parse_m_list(CPU_M)
        cut.append(f"M {CPU_M}")
    if not args.only and not args.shape and any(s.n * s.k > CPU_MAX_WEIGHTS for s in shapes):
        small = [s for s in shapes if s.n * s.k <= CPU_MAX_WEIGHTS]
        if small:
            cut.append(f"the decode-step shapes ({', '.join(s.name for s in small)}; {len(shapes) - len(small)} larger ones left out)")
            shapes = small
    if args.repeats is None:
        cut.append(f"{CPU_REPEATS} repeats")
    if cut:
        events.log(f"On a CPU: {', '.join(cut)} — the code path, not GPU figures; --m, --only and --repeats choose otherwise.")
    return m_values, shapes


def gemm_kernel(torch: Any, args: Any, model: Optional[ModelInfo], dev: Device) -> tuple[Any, int]:
    """The kernel the server would run the model's GEMMs with (--dtype auto follows the model), and its int4 group size."""
    from infbench_agent.micro.gemm import choose_kernel

    want = args.dtype
    if want == "auto":
        want = (model.quant if model and model.quant else None) or (model.dtype if model else "bf16")
    if not dev.on_gpu and want == "bf16" and args.dtype == "auto":
        want = "fp32"  # CPUs without bf16 units run it through slow emulation
    group_size = args.group_size or int((model.config.get("_group_size") if model else 0) or 0) or 128
    kernel = choose_kernel(torch, dev.device, want, (model.dtype if model else "bf16") if dev.on_gpu else "fp32", group_size)
    if kernel.fallback_reason:
        events.log(f"GEMM kernel: {kernel.label}. Fallback: {kernel.fallback_reason}.", "warn", topic="gemm_kernel")
    else:
        events.log(f"GEMM kernel: {kernel.label}.", topic="gemm_kernel")
    return kernel, group_size


@dataclass
class AllreducePlan:
    """The all-reduce sweep: its message sizes (the decode steps' among them), ranks and backend."""

    hidden: Optional[int]
    # Bytes of a decode step's all-reduce, to the M that sends it.
    decode_sizes: dict[int, int]
    sizes: list[int]
    world: int
    backend: str


def allreduce_plan(torch: Any, args: Any, model: Optional[ModelInfo], m_values: list[int], dev: Device) -> AllreducePlan:
    hidden = model.hidden if model else (args.hidden or None)
    decode_sizes = {m * hidden * 2: m for m in m_values} if hidden else {}
    # Each rank holds one message; on a busy GPU keep it to a small share of what is free.
    max_bytes = args.ar_max_bytes or int(min(256 * MIB if dev.on_gpu else MIB, max(MIB, dev.budget / 16)))
    sizes = sorted(set(decode_sizes) | set(doubling_sizes(args.ar_min_bytes, max_bytes)))
    world = args.ar_world_size or (torch.cuda.device_count() if dev.on_gpu else 2)
    backend = args.ar_backend if args.ar_backend != "auto" else ("nccl" if dev.on_gpu else "gloo")
    return AllreducePlan(hidden, decode_sizes, sizes, world, backend)


class Points:
    """The points as they are measured: each emitted at once with the run's progress, the failures beside them."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.points: list[dict] = []
        self.failures: list[dict] = []

    def record(self, kind: str, point: dict) -> None:
        point = {"kind": kind, **point}
        self.points.append(point)
        events.emit(events.MICRO_POINT, kind=kind, point=point)
        events.emit(events.PROGRESS, done=len(self.points), total=self.total, message=f"{kind} {_label(kind, point)}")

    def failed(self, part: str, what: str, exc: BaseException) -> None:
        # One part failing (a shape the kernel rejects, NCCL on an odd host) keeps the points already measured.
        message = f"{part} {what} failed: {getattr(exc, 'message', None) or f'{type(exc).__name__}: {exc}'}"
        self.failures.append({"part": part, "what": what, "message": message})
        events.log(message, "error")


def measure_peak(torch: Any, args: Any, dev: Device, kernel: Any, group_size: int, points: Points) -> tuple[float, float]:
    """The device's own ceilings, a copy and a large matmul; returns their TB/s and TFLOP/s."""
    from infbench_agent.micro.gemm import build_gemm, torch_dtype
    from infbench_agent.micro.timing import event_time_us, measure_peaks

    # Marlin and fp8 compute in the activations' dtype on tensor cores; the bf16 matmul is their ceiling
    # until the fp8 one below replaces it.
    peaks = measure_peaks(torch, dev.device, torch_dtype(torch, kernel.act_dtype), kernel.act_dtype, dev.budget, args.repeats)
    if kernel.mode == "fp8":
        # FP8 tensor cores run twice the bf16 rate: the ceiling for an fp8 GEMM is an fp8 matmul.
        size = 8192
        built = build_gemm(torch, kernel, dev.device, size, size, size, 1, group_size)
        us = event_time_us(torch, built.calls[0], args.repeats)
        peaks[1] = {
            "what": "matmul",
            "dtype": "fp8",
            "m": size,
            "n": size,
            "k": size,
            "flops": 2.0 * size**3,
            "us": us,
            "tflops": 2.0 * size**3 / us / 1e6,
            "timing": f"cuda events, median of {args.repeats}",
            "note": f"{size}^3 torch._scaled_mm fp8 on random data",
        }
    for p in peaks:
        points.record("peak", {**p, "device": dev.name, "device_kind": "gpu" if dev.on_gpu else "cpu"})
    return peaks[0]["tbps"], peaks[1]["tflops"]


def measure_gemms(
    torch: Any,
    args: Any,
    dev: Device,
    kernel: Any,
    group_size: int,
    shapes: list[GemmShape],
    m_values: list[int],
    peak_tbps: Optional[float],
    peak_tflops: Optional[float],
    points: Points,
) -> None:
    """Every shape at every M, each set against the ceilings where they were measured."""
    from infbench_agent.micro.gemm import gemm_point, time_gemm

    for shape in shapes:
        for m in m_values:
            try:
                us, built, how = time_gemm(
                    torch, kernel, dev.device, m, shape.n, shape.k, dev.rotate_bytes, dev.budget, args.repeats, group_size
                )
            except Exception as exc:  # noqa: BLE001 - reported as a failure of this point
                points.failed("gemm", f"{shape.name} M={m}", exc)
                continue
            del built.calls
            points.record("gemm", gemm_point(shape, m, us, built, kernel, how, peak_tbps, peak_tflops))
        if dev.on_gpu:
            torch.cuda.empty_cache()


def measure_launch(torch: Any, args: Any, dev: Device, points: Points) -> None:
    from infbench_agent.micro.timing import launch_overhead

    try:
        for p in launch_overhead(torch, dev.device, args.launch_kernels, args.repeats):
            points.record("launch", p)
    except Exception as exc:  # noqa: BLE001 - reported as a failure of this part
        points.failed("launch", "overhead", exc)


def measure_allreduce(torch: Any, args: Any, dev: Device, plan: AllreducePlan, points: Points) -> Optional[str]:
    """The all-reduce sweep across the plan's ranks; returns what the result notes of it (one rank: no busbw)."""
    if dev.on_gpu:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    note = None
    if plan.world == 1:
        note = (
            "world size 1: there is no other rank, so busbw is 0 by definition, the time is the "
            f"{plan.backend} call's own overhead, and a CUDA graph would capture nothing (not timed); "
            "all-reduce across GPUs needs a multi-GPU host"
        )
        events.log(note)
    try:
        run_allreduce(
            plan.sizes,
            plan.world,
            plan.backend,
            dev.device,
            max(3, args.repeats // 2),
            lambda p: points.record("allreduce", annotate(p, plan.decode_sizes, plan.hidden)),
        )
    except AgentError as exc:
        points.failed("allreduce", f"{plan.world} x {plan.backend}", exc)
    return note


def _label(kind: str, p: dict) -> str:
    if kind == "gemm":
        return f"{p['shape']} M={p['m']}: {p['us']:.1f} us"
    if kind == "allreduce":
        return f"{p['bytes']} B {p['mode']}: {p['us']:.1f} us"
    if kind == "launch":
        return f"{p['mode']}: {p['us_per_kernel']:.2f} us/kernel"
    return f"{p['what']}"
