"""The micro phase: how fast are the pieces of a decode step on this host's devices?

GEMMs at the model's exact shapes under its tensor-parallel split, all-reduce at decode message
sizes, and kernel launch overhead eager vs CUDA graph, each next to the device's own measured
ceilings (a copy and a large matmul, the `peak` points). One `micro.point` event per data point as
it is measured; the final `result` holds every point.
PyTorch is imported inside `run` only, after the busy-GPU guard has looked at nvidia-smi.
"""
from __future__ import annotations

import argparse
import platform
import sys
from typing import Any, Optional, cast

from infbench_agent import auth, events, options
from infbench_agent.events import AgentError
from infbench_agent.micro.allreduce import annotate, doubling_sizes, run_allreduce, worker_main
from infbench_agent.micro.guard import check_gpus, describe, read_occupancy
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
    if args.allreduce_worker:
        return worker_main(args)
    args.skip_parts = {s.strip() for s in args.skip.split(",") if s.strip()}
    unknown = args.skip_parts - set(PARTS)
    if unknown:
        raise AgentError("bad_option", f"--skip {args.skip!r}: unknown part {sorted(unknown)}.", f"Parts: {', '.join(PARTS)}.")
    if args.tp < 1:
        raise AgentError(
            "bad_option", "--tp must be at least 1.", "Give the GPUs the model is split over: {0}.", [events.flag("--tp", "8")]
        )
    m_values = parse_m_list(args.m or DEFAULT_M)
    model, shapes = select_shapes(args)

    # The guard looks before PyTorch touches a GPU, so that a busy server is not disturbed at all.
    occupancy = None
    budget_mib: Optional[float] = None
    if args.device != "cpu":
        occupancy = read_occupancy()
        if occupancy is not None and occupancy.gpus:
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

    try:
        import torch
    except ImportError as exc:
        raise AgentError(
            "no_torch",
            f"PyTorch is not importable by {sys.executable} ({exc}).",
            "Point the target's python at the server's interpreter (the one with torch and vLLM), for example {0}.",
            [events.flag("--python", "/opt/venv/bin/python3")],
        ) from exc

    device = args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise AgentError(
            "no_gpu",
            f"--device {device}: this PyTorch ({torch.__version__}) sees no GPU.",
            "Check `nvidia-smi` and that torch is a CUDA build; or run on the CPU: {0}.",
            [events.flag("--device", "cpu")],
        )
    on_gpu = device.startswith("cuda")
    if on_gpu:
        if device == "cuda":
            device = f"cuda:{torch.cuda.current_device()}"
        torch.cuda.set_device(torch.device(device))
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        device_name = props.name
        l2_bytes = float(getattr(props, "L2_cache_size", 0) or 64 * MIB)
        free_bytes, total_bytes = torch.cuda.mem_get_info()
        budget = float(free_bytes) * 0.8
        if budget_mib is not None:
            budget = min(budget, budget_mib * MIB * 0.8)
        rotate_bytes = 3 * l2_bytes
    else:
        device_name = f"CPU ({platform.processor() or platform.machine()})"
        budget = 2048.0 * MIB
        rotate_bytes = 96.0 * MIB  # past a typical server CPU's last-level cache per core group
        total_bytes = 0

    if not on_gpu:
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
    if args.repeats is None:
        args.repeats = 10 if on_gpu else CPU_REPEATS
    events.log(f"Device: {device_name} ({device}), torch {torch.__version__}, memory budget {budget / 2**30:.1f} GiB.")
    from infbench_agent.micro.gemm import build_gemm, choose_kernel, gemm_point, time_gemm, torch_dtype
    from infbench_agent.micro.timing import event_time_us, launch_overhead, measure_peaks

    want = args.dtype
    if want == "auto":
        want = (model.quant if model and model.quant else None) or (model.dtype if model else "bf16")
    if not on_gpu and want == "bf16" and args.dtype == "auto":
        want = "fp32"  # CPUs without bf16 units run it through slow emulation
    group_size = args.group_size or int((model.config.get("_group_size") if model else 0) or 0) or 128
    kernel = choose_kernel(torch, device, want, (model.dtype if model else "bf16") if on_gpu else "fp32", group_size)
    if kernel.fallback_reason:
        events.log(f"GEMM kernel: {kernel.label}. Fallback: {kernel.fallback_reason}.", "warn", topic="gemm_kernel")
    else:
        events.log(f"GEMM kernel: {kernel.label}.", topic="gemm_kernel")

    hidden = model.hidden if model else (args.hidden or None)
    decode_sizes = {m * hidden * 2: m for m in m_values} if hidden else {}
    # Each rank holds one message; on a busy GPU keep it to a small share of what is free.
    max_bytes = args.ar_max_bytes or int(min(256 * MIB if on_gpu else MIB, max(MIB, budget / 16)))
    ar_sizes = sorted(set(decode_sizes) | set(doubling_sizes(args.ar_min_bytes, max_bytes)))
    world = args.ar_world_size or (torch.cuda.device_count() if on_gpu else 2)
    backend = args.ar_backend if args.ar_backend != "auto" else ("nccl" if on_gpu else "gloo")

    parts = [p for p in PARTS if p not in args.skip_parts]
    total = (
        ("peak" in parts) * 2
        + ("gemm" in parts) * len(shapes) * len(m_values)
        + ("launch" in parts) * (2 if on_gpu else 1)
        + ("allreduce" in parts) * len(ar_sizes) * (2 if on_gpu and world > 1 else 1)
    )
    points: list[dict] = []
    done = 0

    def record(kind: str, point: dict) -> None:
        nonlocal done
        point = {"kind": kind, **point}
        points.append(point)
        events.emit(events.MICRO_POINT, kind=kind, point=point)
        done += 1
        events.emit(events.PROGRESS, done=done, total=total, message=f"{kind} {_label(kind, point)}")

    peak_tbps = peak_tflops = None
    if "peak" in parts:
        # Marlin and fp8 compute in the activations' dtype on tensor cores; the bf16 matmul is their ceiling
        # until the fp8 one below replaces it.
        peaks = measure_peaks(torch, device, torch_dtype(torch, kernel.act_dtype), kernel.act_dtype, budget, args.repeats)
        if kernel.mode == "fp8":
            # FP8 tensor cores run twice the bf16 rate: the ceiling for an fp8 GEMM is an fp8 matmul.
            size = 8192
            built = build_gemm(torch, kernel, device, size, size, size, 1, group_size)
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
            record("peak", {**p, "device": device_name, "device_kind": "gpu" if on_gpu else "cpu"})
        peak_tbps, peak_tflops = peaks[0]["tbps"], peaks[1]["tflops"]

    failures: list[dict] = []

    def failed(part: str, what: str, exc: BaseException) -> None:
        # One part failing (a shape the kernel rejects, NCCL on an odd host) keeps the points already measured.
        message = f"{part} {what} failed: {getattr(exc, 'message', None) or f'{type(exc).__name__}: {exc}'}"
        failures.append({"part": part, "what": what, "message": message})
        events.log(message, "error")

    if "gemm" in parts:
        for shape in shapes:
            for m in m_values:
                try:
                    us, built, how = time_gemm(torch, kernel, device, m, shape.n, shape.k, rotate_bytes, budget, args.repeats, group_size)
                except Exception as exc:  # noqa: BLE001 - reported as a failure of this point
                    failed("gemm", f"{shape.name} M={m}", exc)
                    continue
                del built.calls
                record("gemm", gemm_point(shape, m, us, built, kernel, how, peak_tbps, peak_tflops))
            if on_gpu:
                torch.cuda.empty_cache()

    if "launch" in parts:
        try:
            for p in launch_overhead(torch, device, args.launch_kernels, args.repeats):
                record("launch", p)
        except Exception as exc:  # noqa: BLE001 - reported as a failure of this part
            failed("launch", "overhead", exc)

    ar_note = None
    if "allreduce" in parts:
        if on_gpu:
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
        if world == 1:
            ar_note = (
                "world size 1: there is no other rank, so busbw is 0 by definition, the time is the "
                f"{backend} call's own overhead, and a CUDA graph would capture nothing (not timed); "
                "all-reduce across GPUs needs a multi-GPU host"
            )
            events.log(ar_note)
        try:
            run_allreduce(
                ar_sizes,
                world,
                backend,
                device,
                max(3, args.repeats // 2),
                lambda p: record("allreduce", annotate(p, decode_sizes, hidden)),
            )
        except AgentError as exc:
            failed("allreduce", f"{world} x {backend}", exc)

    result = {
        "device": {
            "name": device_name,
            "kind": "gpu" if on_gpu else "cpu",
            "device": device,
            "torch": torch.__version__,
            "total_bytes": total_bytes,
            "gpu_count": torch.cuda.device_count() if on_gpu else 0,
        },
        "model": model.to_dict() if model else None,
        "tp": args.tp,
        "m": m_values,
        "shapes": [s.to_dict() for s in shapes],
        "kernel": {"label": kernel.label, "dtype": kernel.dtype, "fallback_reason": kernel.fallback_reason or None},
        "allreduce": {"backend": backend, "world_size": world, "note": ar_note} if "allreduce" in parts else None,
        "occupancy": occupancy.to_dict() if occupancy else None,
        "allow_busy": bool(args.allow_busy),
        "memory_budget_bytes": budget,
        "timing": "CUDA graph replay with CUDA events" if on_gpu else "CPU wall-clock loops (no GPU): not GPU figures",
        "failures": failures,
        "points": points,
    }
    events.emit(events.RESULT, result=result)
    return 0


def _label(kind: str, p: dict) -> str:
    if kind == "gemm":
        return f"{p['shape']} M={p['m']}: {p['us']:.1f} us"
    if kind == "allreduce":
        return f"{p['bytes']} B {p['mode']}: {p['us']:.1f} us"
    if kind == "launch":
        return f"{p['mode']}: {p['us_per_kernel']:.2f} us/kernel"
    return f"{p['what']}"
