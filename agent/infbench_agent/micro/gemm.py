"""GEMMs at a model's shapes with the kernel the server would use where it can be imported.

INT4 weight-only models run vLLM's Marlin W4A16 kernel when vLLM imports on the host; FP8 models run
torch._scaled_mm in e4m3; everything else (and any fallback) runs torch.matmul in the model's dtype.
Each point says which kernel ran and, for a fallback, why.
Weights are rotated through enough copies to exceed the last-level cache several times, so that a
memory-bound GEMM reads its weights from memory the way it does in a decode step, not from L2.
"""
from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import Any, Callable, Optional

from infbench_agent.micro.timing import graph_time_us, loop_time_us

TORCH_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
ELEMENT_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4, "fp8": 1, "int4": 0.5}


@dataclass
class KernelChoice:
    mode: str  # torch | fp8 | marlin
    dtype: str  # bf16 | fp16 | fp32 | fp8 | int4: the weights' storage
    act_dtype: str  # activations' dtype
    label: str  # what ran, in words: "torch.matmul bf16 (cuBLAS)"
    fallback_reason: str = ""


@dataclass
class BuiltGemm:
    calls: list[Callable[[], Any]]
    bytes: float  # bytes one call must move at least: weights + activations + output
    copies: int  # weight copies rotated through


def torch_dtype(torch: Any, name: str) -> Any:
    return getattr(torch, TORCH_DTYPES[name])


def choose_kernel(torch: Any, device: str, want: str, model_dtype: str, group_size: int) -> KernelChoice:
    """Picks the kernel for `want` (auto, or a dtype) and checks that it runs here; else falls back, saying why."""
    act = model_dtype if model_dtype in TORCH_DTYPES else "bf16"
    on_gpu = device.startswith("cuda")
    plain = KernelChoice("torch", act, act, f"torch.matmul {act}" + (" (cuBLAS)" if on_gpu else " (CPU)"))
    if want in TORCH_DTYPES:
        return KernelChoice("torch", want, want, f"torch.matmul {want}" + (" (cuBLAS)" if on_gpu else " (CPU)"))
    if want == "fp8":
        if not on_gpu:
            plain.fallback_reason = "fp8 GEMMs need a GPU; ran torch in the model dtype on the CPU"
            return plain
        try:
            built = build_gemm(torch, KernelChoice("fp8", "fp8", act, ""), device, 1, 256, 256, 1, group_size)
            built.calls[0]()
            torch.cuda.synchronize()
        except Exception as exc:  # noqa: BLE001 - any failure means this torch/GPU cannot run it
            plain.fallback_reason = f"torch._scaled_mm fp8 did not run here ({type(exc).__name__}: {str(exc)[:160]})"
            return plain
        return KernelChoice("fp8", "fp8", act, "torch._scaled_mm fp8 e4m3, per-tensor scales (cuBLASLt)")
    if want == "int4":
        if not on_gpu:
            plain.fallback_reason = "Marlin W4A16 needs a GPU; ran torch in the model dtype on the CPU"
            return plain
        try:
            import vllm  # noqa: F401 - only to learn whether the server's kernels are importable
        except Exception as exc:  # noqa: BLE001
            plain.fallback_reason = f"vLLM is not importable here ({type(exc).__name__}), so its Marlin W4A16 kernel cannot run"
            return plain
        try:
            built = build_gemm(torch, KernelChoice("marlin", "int4", "bf16", ""), device, 1, 256, 256, 1, group_size)
            built.calls[0]()
            torch.cuda.synchronize()
        except Exception as exc:  # noqa: BLE001 - vLLM's internal API moves between versions
            plain.fallback_reason = f"vLLM's Marlin kernel did not run here ({type(exc).__name__}: {str(exc)[:160]})"
            return plain
        return KernelChoice("marlin", "int4", "bf16", f"vLLM Marlin W4A16 (gptq_marlin_gemm, group {group_size})")
    return plain


def _copies_for(weight_bytes: float, rotate_bytes: float, budget_bytes: float) -> int:
    copies = max(1, math.ceil(rotate_bytes / max(weight_bytes, 1)))
    # Never take more than a quarter of the memory budget for weights.
    return int(max(1, min(copies, 512, budget_bytes // 4 // max(weight_bytes, 1))))


def build_gemm(torch: Any, kernel: KernelChoice, device: str, m: int, n: int, k: int, copies: int, group_size: int) -> BuiltGemm:
    """`copies` independent weight tensors of [K, N] and one activation [M, K]; call i uses weight i % copies."""
    act_dtype = torch_dtype(torch, kernel.act_dtype)
    x = torch.randn(m, k, device=device).to(act_dtype)
    io_bytes = (m * k + m * n) * ELEMENT_BYTES[kernel.act_dtype]
    calls: list[Callable[[], Any]] = []
    if kernel.mode == "torch":
        out = torch.empty(m, n, device=device, dtype=act_dtype)
        weights = [torch.randn(k, n, device=device).to(act_dtype) for _ in range(copies)]
        calls = [lambda w=w: torch.matmul(x, w, out=out) for w in weights]  # type: ignore[misc]
        weight_bytes = k * n * ELEMENT_BYTES[kernel.act_dtype]
    elif kernel.mode == "fp8":
        xq = x.to(torch.float8_e4m3fn)
        one = torch.ones((), device=device, dtype=torch.float32)
        # _scaled_mm wants its second operand column-major: the transpose of a row-major [N, K].
        weights = [torch.randn(n, k, device=device).to(torch.float8_e4m3fn).t() for _ in range(copies)]
        calls = [lambda w=w: torch._scaled_mm(xq, w, scale_a=one, scale_b=one, out_dtype=act_dtype) for w in weights]  # type: ignore[misc]
        weight_bytes = k * n
        io_bytes = m * k + m * n * ELEMENT_BYTES[kernel.act_dtype]
    elif kernel.mode == "marlin":
        calls = _marlin_calls(torch, x, n, k, copies, group_size)
        weight_bytes = k * n / 2 + (k / group_size) * n * 2  # packed int4 + bf16 group scales
    else:
        raise ValueError(kernel.mode)
    return BuiltGemm(calls, weight_bytes + io_bytes, copies)


def _marlin_calls(torch: Any, x: Any, n: int, k: int, copies: int, group_size: int) -> list[Callable[[], Any]]:
    # vLLM's own test helpers quantize and repack for Marlin; their signatures have moved between
    # versions, so only the arguments the installed version takes are passed.
    from vllm.model_executor.layers.quantization.utils import marlin_utils
    from vllm.model_executor.layers.quantization.utils.marlin_utils_test import marlin_quantize
    from vllm.scalar_type import scalar_types

    wtype = scalar_types.uint4b8
    make_ws = getattr(marlin_utils, "marlin_make_workspace_new", None)
    workspace = make_ws(x.device) if make_ws else marlin_utils.marlin_make_workspace(n, x.device)
    apply = marlin_utils.apply_gptq_marlin_linear
    accepted = set(inspect.signature(apply).parameters)
    calls: list[Callable[[], Any]] = []
    for _ in range(copies):
        w = torch.randn(k, n, device=x.device, dtype=x.dtype)
        _, q_w, scales, g_idx, sort_idx, _ = marlin_quantize(w, wtype, group_size, False)
        kwargs = dict(
            input=x,
            weight=q_w,
            weight_scale=scales,
            weight_zp=torch.empty(0, dtype=torch.int, device=x.device),
            g_idx=g_idx,
            g_idx_sort_indices=sort_idx,
            workspace=workspace,
            wtype=wtype,
            output_size_per_partition=n,
            input_size_per_partition=k,
            is_k_full=True,
            bias=None,
        )
        kwargs = {key: value for key, value in kwargs.items() if key in accepted}
        calls.append(lambda kwargs=kwargs: apply(**kwargs))  # type: ignore[misc]
    return calls


def time_gemm(
    torch: Any,
    kernel: KernelChoice,
    device: str,
    m: int,
    n: int,
    k: int,
    rotate_bytes: float,
    budget_bytes: float,
    repeats: int,
    group_size: int,
    min_calls: int = 32,
) -> tuple[float, BuiltGemm, str]:
    """Median microseconds of one GEMM call, the built GEMM, and how it was timed."""
    weight_bytes = k * n * ELEMENT_BYTES[kernel.dtype]
    if weight_bytes > budget_bytes / 2:
        raise MemoryError(
            f"one {n}x{k} weight ({weight_bytes / 2**30:.2f} GiB) is more than half the memory budget "
            f"({budget_bytes / 2**30:.2f} GiB); skipped"
        )
    copies = _copies_for(weight_bytes, rotate_bytes, budget_bytes)
    built = build_gemm(torch, kernel, device, m, n, k, copies, group_size)
    # Enough calls per replay that the replay lasts well past the event timer's resolution.
    per_replay = built.calls * max(1, math.ceil(min_calls / len(built.calls)))
    if device.startswith("cuda"):
        us = graph_time_us(torch, per_replay, repeats)
        how = f"CUDA graph of {len(per_replay)} calls replayed, median of {repeats}; {copies} weight copies rotated"
    else:
        us, done = loop_time_us(built.calls, repeats)
        how = f"CPU wall-clock loop (no CUDA graph), median of {done}; {copies} weight copies rotated"
    return us, built, how


def gemm_point(
    shape: Any,
    m: int,
    us: float,
    built: BuiltGemm,
    kernel: KernelChoice,
    how: str,
    peak_tbps: Optional[float],
    peak_tflops: Optional[float],
) -> dict:
    flops = 2.0 * m * shape.n * shape.k
    tbps = built.bytes / us / 1e6
    tflops = flops / us / 1e6
    return {
        "shape": shape.name,
        "m": m,
        "n": shape.n,
        "k": shape.k,
        "per_step": shape.per_step,
        "dtype": kernel.dtype,
        "kernel": kernel.label,
        "fallback_reason": kernel.fallback_reason or None,
        "us": us,
        "bytes": built.bytes,
        "flops": flops,
        "tbps": tbps,
        "tflops": tflops,
        "pct_peak_bw": 100.0 * tbps / peak_tbps if peak_tbps else None,
        "pct_peak_flops": 100.0 * tflops / peak_tflops if peak_tflops else None,
        "timing": how,
    }
