"""Writes the simulated decode steps as an Nsight Systems SQLite export (the schema `nsys export --type sqlite` writes).

The tables and columns are those agent/infbench_agent/profile/nsys_report.py reads from Nsight Systems 2025.3
exports: StringIds, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
NVTX_EVENTS (push/pop ranges, eventType 59) and TARGET_INFO_GPU. Every kernel of a step (sim_trace's
step_kernels, timed by the timing model) is launched eagerly inside the NVTX range of its module, as
vLLM's --enable-layerwise-nvtx-tracing writes them, within a `decode_step` range; the step's token copy
to the host runs outside every module range, as in real servers. cudaProfilerStart and cudaProfilerStop
calls bracket the steps, as the server's CUDA profiler switch makes them at /start_profile and /stop_profile.
It holds rank 0's process (device 0), and says it is simulated in META_DATA_EXPORT.

`expected_modules` gives the known answer: each module type's kernel time in one step.
"""
from __future__ import annotations

import os
import sqlite3
from typing import Dict, List, Optional, Sequence, Tuple

import sim_timing as tm
from sim_trace import step_kernels, _kernel_durations

# The module of each kernel of a layer (sim_trace.LAYER_KERNELS, in order), under model.layers.N.
LAYER_MODULES = (
    ["input_layernorm"]
    + ["self_attn.qkv_proj"] * 4
    + ["self_attn.attn"] * 3
    + ["self_attn.o_proj", "self_attn.o_proj.all_reduce", "post_attention_layernorm"]
    + ["mlp.gate"] * 3
    + ["mlp.experts"] * 5
    + ["mlp.shared_experts"] * 2
    + ["mlp.all_reduce"]
)
PROLOGUE_MODULES = ["model.embed_tokens", "model.embed_tokens"]
# The epilogue: final norm, lm_head, the logits gather, sampling, and the token copy (no range).
EPILOGUE_MODULES: List[Optional[str]] = ["model.norm", "lm_head", "logits_processor", "sampler", None]
PID = 4242
TID = 4243
LAUNCH_NS = 3000  # CPU time of one launch call


def kernel_modules(layers: int) -> List[Optional[str]]:
    mods: List[Optional[str]] = list(PROLOGUE_MODULES)
    for layer in range(layers):
        mods += [f"model.layers.{layer}.{m}" for m in LAYER_MODULES]
    return mods + EPILOGUE_MODULES


def slowed(durations: List[float], mods: List[Optional[str]], slow_layer: Optional[Tuple[int, float]]) -> List[float]:
    """The kernels of one layer `factor` times longer (a straggler layer, to show the skew between layers)."""
    if not slow_layer:
        return durations
    prefix = f"model.layers.{slow_layer[0]}."
    return [ms * slow_layer[1] if m is not None and m.startswith(prefix) else ms for ms, m in zip(durations, mods)]


def write_report(
    path: str,
    steps: Sequence[dict],
    model: tm.TimingModel,
    layers: int,
    modules: bool = True,
    slow_layer: Optional[Tuple[int, float]] = None,
) -> int:
    """Writes `steps` ({running, prefill_tokens} each) as one SQLite export at `path`; returns its size in bytes.

    `modules`: the layerwise NVTX ranges were on (without them only the step ranges are there).
    `slow_layer` (layer, factor): that layer's kernels run `factor` times longer than the timing model says."""
    kernels = step_kernels(layers)
    mods = kernel_modules(layers)
    assert len(mods) == len(kernels), (len(mods), len(kernels))
    if os.path.exists(path):
        os.remove(path)
    db = sqlite3.connect(path)
    db.executescript(
        """
        CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, eventClass INTEGER, globalTid INTEGER,
            correlationId INTEGER, nameId INTEGER, returnValue INTEGER, callchainId INTEGER);
        CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, contextId INTEGER,
            greenContextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER,
            shortName INTEGER, mangledName INTEGER, graphNodeId INTEGER, graphId INTEGER);
        CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER, end INTEGER, deviceId INTEGER, contextId INTEGER,
            streamId INTEGER, correlationId INTEGER, globalPid INTEGER, bytes INTEGER, copyKind INTEGER, graphNodeId INTEGER);
        CREATE TABLE ENUM_CUDA_MEMCPY_OPER (id INTEGER PRIMARY KEY, name TEXT, label TEXT);
        CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, eventType INTEGER, rangeId INTEGER, category INTEGER,
            color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER, domainId INTEGER);
        CREATE TABLE TARGET_INFO_GPU (id INTEGER, name TEXT);
        CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT);
        """
    )
    strings: Dict[str, int] = {}

    def sid(text: str) -> int:
        if text not in strings:
            strings[text] = len(strings) + 1
            db.execute("INSERT INTO StringIds VALUES (?, ?)", (strings[text], text))
        return strings[text]

    db.execute("INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (2, 'CUDA_MEMCPY_OPER_DTOH', 'Device-to-Host')")
    db.execute("INSERT INTO TARGET_INFO_GPU VALUES (0, 'NVIDIA H200 (simulated)')")
    db.execute("INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_VERSION', '2025.3.1 (inference-bench simulator)')")
    gtid = (PID << 24) | TID
    gpid = PID << 24
    cpu = 1_000_000_000
    gpu = cpu + 500_000
    corr = 0

    def runtime(name: str, start: int) -> int:
        nonlocal corr
        corr += 1
        db.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 1, ?, ?, ?, 0, NULL)", (start, start + LAUNCH_NS, gtid, corr, sid(name))
        )
        return corr

    def nvtx(text: str, start: int, end: int) -> None:
        db.execute("INSERT INTO NVTX_EVENTS VALUES (?, ?, 59, NULL, NULL, NULL, ?, ?, ?, NULL, NULL)", (start, end, text, gtid, gtid))

    runtime("cudaProfilerStart_v4000", cpu)
    cpu += 10 * LAUNCH_NS
    for step in steps:
        breakdown = tm.step_breakdown(model, step["running"], step["prefill_tokens"])
        durations = slowed(_kernel_durations(kernels, breakdown), mods, slow_layer)
        gap_ns = int(breakdown[tm.IDLE] * 1e6 / len(kernels))
        step_cpu = cpu
        gpu = max(gpu, cpu + 20_000)
        for (name, cat, _w), module, ms in zip(kernels, mods, durations):
            launch = cpu + LAUNCH_NS
            dur = int(round(ms * 1e6))
            if module is not None and modules:
                nvtx(f"{{'Module': '{module}', 'Inputs': []}}", cpu, launch + 2 * LAUNCH_NS)
            if cat == tm.MEMORY:
                c = runtime("cudaMemcpyAsync_v3020", launch)
                db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?, ?, 0, 1, 7, ?, ?, 8, 2, NULL)", (gpu, gpu + dur, c, gpid))
            else:
                c = runtime("cudaLaunchKernel_v7000", launch)
                db.execute(
                    "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, 0, 1, NULL, 7, ?, ?, ?, ?, ?, NULL, NULL)",
                    (gpu, gpu + dur, c, gpid, sid(name), sid(name[:40]), sid(name)),
                )
            cpu += 4 * LAUNCH_NS
            gpu += dur + gap_ns
        cpu = max(cpu, gpu) + 5 * LAUNCH_NS
        nvtx("decode_step", step_cpu, cpu - LAUNCH_NS)
    runtime("cudaProfilerStop_v4000", cpu)
    db.commit()
    db.close()
    return os.path.getsize(path)


def expected_modules(model: tm.TimingModel, layers: int, running: int, slow_layer: Optional[Tuple[int, float]] = None) -> Dict[str, float]:
    """Kernel time of one decode step of `running` requests per module path (ms): the known answer."""
    kernels = step_kernels(layers)
    durations = slowed(_kernel_durations(kernels, tm.step_breakdown(model, running, 0)), kernel_modules(layers), slow_layer)
    out: Dict[str, float] = {}
    for module, ms in zip(kernel_modules(layers), durations):
        key = module or "(no NVTX range)"
        out[key] = out.get(key, 0.0) + ms
    return out
