"""Writes Kineto-format (torch.profiler) traces of the simulated steps, one gzip file per rank, as vLLM does.

Each step becomes: a CPU `user_annotation` "execute_model", one `cuda_runtime` cudaGraphLaunch, and on
the GPU (pid = device, tid = stream) a `gpu_user_annotation` spanning the step ("execute_model") with a
nested one naming the step kind ("decode" or "prefill+decode"), then the kernels replayed by the graph,
all carrying the launch's correlation id. Kernel durations per category come from
sim_timing.step_breakdown, spread over the kernel instances of that category by weight; the step's idle
time is spread evenly over the gaps after each kernel, so categories + idle = the step's wall time.
"""
from __future__ import annotations

import gzip
import json
import os
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import sim_timing as tm

STREAM = 7  # the compute stream id real vLLM traces show

# One transformer layer of a DeepSeek-V3 / Kimi-K2 style model under TP=8 in vLLM: (kernel name, category, weight).
LAYER_KERNELS: List[Tuple[str, str, float]] = [
    (
        "void vllm::rms_norm_kernel<c10::BFloat16, 8, 3>(c10::BFloat16*, c10::BFloat16 const*, long, long, c10::BFloat16 const*, float, int, int)",
        tm.NORM,
        1.0,
    ),
    (
        "void marlin::Marlin<256, 1, 8, 8, 4, 8, false, 1>(int4 const*, int4 const*, int4*, int4*, int4 const*, int4 const*, int const*, int, int, int, int, int*, bool)",
        tm.QUANT_GEMM,
        1.0,
    ),
    (
        "void vllm::rms_norm_kernel<c10::BFloat16, 8, 3>(c10::BFloat16*, c10::BFloat16 const*, long, long, c10::BFloat16 const*, float, int, int)",
        tm.NORM,
        0.6,
    ),
    (
        "void marlin::Marlin<256, 1, 8, 8, 4, 8, false, 1>(int4 const*, int4 const*, int4*, int4*, int4 const*, int4 const*, int const*, int, int, int, int, int*, bool)",
        tm.QUANT_GEMM,
        1.0,
    ),
    (
        "void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, int, long, long, long, int, int, int)",
        tm.ROTARY,
        1.0,
    ),
    (
        "void vllm::concat_and_cache_mla_kernel<__nv_bfloat16, __nv_bfloat16, (vllm::Fp8KVCacheDataType)0>(__nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16*, long const*, int, int, int, int, int, int, float const*)",
        tm.ATTENTION,
        0.3,
    ),
    (
        "void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<64>, cute::C<64>, cute::C<512> >, 512, cutlass::bfloat16_t, float, cutlass::arch::Sm90, true, false, false, true, true, true, false, true, true, true, false, false>, flash::CollectiveEpilogueFwd<cute::tuple<cute::C<64>, cute::C<512>, cute::C<64> >, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cutlass::bfloat16_t, cutlass::arch::Sm90, 256, true, true, true, false>, flash::VarlenDynamicPersistentTileScheduler<64, 256, 128, false, true, true> > > >(flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<64>, cute::C<64>, cute::C<512> >, 512, cutlass::bfloat16_t, float, cutlass::arch::Sm90, true, false, false, true, true, true, false, true, true, true, false, false>, flash::CollectiveEpilogueFwd<cute::tuple<cute::C<64>, cute::C<512>, cute::C<64> >, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cutlass::bfloat16_t, cutlass::arch::Sm90, 256, true, true, true, false>, flash::VarlenDynamicPersistentTileScheduler<64, 256, 128, false, true, true> >::Params)",
        tm.ATTENTION,
        2.0,
    ),
    (
        "void flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<512, 64, 128, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<512, 64, 128, 4, cutlass::bfloat16_t> >, 4, 5, false>(Flash_fwd_params)",
        tm.ATTENTION,
        0.5,
    ),
    (
        "void marlin::Marlin<256, 1, 8, 8, 4, 8, false, 1>(int4 const*, int4 const*, int4*, int4*, int4 const*, int4 const*, int const*, int, int, int, int, int*, bool)",
        tm.QUANT_GEMM,
        1.0,
    ),
    (
        "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, __nv_bfloat16*, int, int)",
        tm.ALLREDUCE,
        1.0,
    ),
    (
        "void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, long, c10::BFloat16*, c10::BFloat16 const*, float, int, int)",
        tm.NORM,
        1.0,
    ),
    ("nvjet_tst_64x8_64x16_4x1_v_bz_TNT", tm.GEMM, 1.0),
    (
        "void vllm::moe::grouped_topk_fused_kernel<float, 8, 32>(float*, float*, int*, float const*, long, long, long, long, double)",
        tm.MOE_ROUTING,
        1.0,
    ),
    (
        "void vllm::moe::moe_align_block_size_kernel<int>(int const*, int*, int*, int*, int, int, int, int, unsigned long, int*)",
        tm.MOE_ROUTING,
        1.0,
    ),
    (
        "void marlin_moe_wna16::Marlin<__nv_bfloat16, 4, 256, 1, 8, 8, 4, 8, false, 1, false>(int4 const*, int4 const*, int4*, int4*, int4 const*, int4 const*, int const*, int const*, int const*, int const*, float const*, int, bool, int, int, int, int, int*, bool)",
        tm.MOE_GEMM,
        1.5,
    ),
    (
        "void vllm::act_and_mul_kernel<c10::BFloat16, &(c10::BFloat16 vllm::silu_kernel<c10::BFloat16>(c10::BFloat16 const&)), true>(c10::BFloat16*, c10::BFloat16 const*, int)",
        tm.ACTIVATION,
        1.0,
    ),
    (
        "void marlin_moe_wna16::Marlin<__nv_bfloat16, 4, 256, 1, 8, 8, 4, 8, false, 1, false>(int4 const*, int4 const*, int4*, int4*, int4 const*, int4 const*, int const*, int const*, int const*, int const*, float const*, int, bool, int, int, int, int, int*, bool)",
        tm.MOE_GEMM,
        1.0,
    ),
    (
        "void marlin::Marlin<256, 1, 8, 8, 4, 8, false, 1>(int4 const*, int4 const*, int4*, int4*, int4 const*, int4 const*, int const*, int, int, int, int, int*, bool)",
        tm.QUANT_GEMM,
        0.5,
    ),
    (
        "void vllm::act_and_mul_kernel<c10::BFloat16, &(c10::BFloat16 vllm::silu_kernel<c10::BFloat16>(c10::BFloat16 const&)), true>(c10::BFloat16*, c10::BFloat16 const*, int)",
        tm.ACTIVATION,
        0.3,
    ),
    (
        "void marlin::Marlin<256, 1, 8, 8, 4, 8, false, 1>(int4 const*, int4 const*, int4*, int4*, int4 const*, int4 const*, int const*, int, int, int, int, int*, bool)",
        tm.QUANT_GEMM,
        0.5,
    ),
    (
        "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)",
        tm.ELEMENTWISE,
        1.0,
    ),
    (
        "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, __nv_bfloat16*, int, int)",
        tm.ALLREDUCE,
        1.0,
    ),
]

# Before the first layer: the vocab-parallel embedding and its NCCL all-reduce.
PROLOGUE: List[Tuple[str, str, float]] = [
    (
        "void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long, unsigned int, 2, 2, -2, true>(at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>, at::cuda::detail::TensorInfo<c10::BFloat16 const, unsigned int>, at::cuda::detail::TensorInfo<long const, unsigned int>, int, int, unsigned int, unsigned int, long)",
        tm.INDEX_GATHER,
        1.0,
    ),
    ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", tm.NCCL_ALLREDUCE, 1.0),
]
# After the last layer: final norm, lm_head, logits gather, greedy sampling and the token copy to the host.
EPILOGUE: List[Tuple[str, str, float]] = [
    (
        "void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, long, c10::BFloat16*, c10::BFloat16 const*, float, int, int)",
        tm.NORM,
        1.0,
    ),
    ("nvjet_tst_128x64_64x8_2x1_v_bz_NNT", tm.GEMM, 40.0),
    ("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", tm.NCCL_ALLGATHER, 1.0),
    (
        "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::ArgMaxOps<float>, unsigned int, long, 4> >(at::native::ReduceOp<float, at::native::ArgMaxOps<float>, unsigned int, long, 4>)",
        tm.ELEMENTWISE,
        8.0,
    ),
    ("Memcpy DtoH (Device -> Pinned)", tm.MEMORY, 1.0),
]


def step_kernels(layers: int) -> List[Tuple[str, str, float]]:
    return PROLOGUE + LAYER_KERNELS * layers + EPILOGUE


def _kernel_durations(kernels: Sequence[Tuple[str, str, float]], breakdown: Dict[str, float]) -> List[float]:
    weight_sum: Dict[str, float] = {}
    for _, cat, w in kernels:
        weight_sum[cat] = weight_sum.get(cat, 0.0) + w
    missing = [c for c, ms in breakdown.items() if c != tm.IDLE and ms > 0 and c not in weight_sum]
    if missing:
        raise ValueError(f"no kernel carries categories {missing}")
    return [breakdown.get(cat, 0.0) * w / weight_sum[cat] for _, cat, w in kernels]


def build_rank_trace(
    rank: int,
    world_size: int,
    steps: Sequence[dict],
    model: tm.TimingModel,
    layers: int,
    host_pid: int,
    base_time_ns: int,
    meta: dict,
    step_label: Optional[Callable[[dict], Optional[str]]] = None,
) -> str:
    """One rank's trace as JSON text. `steps` hold {start_s (monotonic), running, prefill_tokens}.

    `step_label` (a --mimic profile's) names each step's annotation as that server version does, or
    returns None where it writes none; without it the steps are `execute_model` with a nested kind."""
    kernels = step_kernels(layers)
    ev: List[str] = []
    dev = rank
    tid_cpu = host_pid + 1 + rank
    corr = 1000 + rank * 10_000_000
    dumps = json.dumps
    names = [dumps(k[0]) for k in kernels]
    for index, step in enumerate(steps):
        corr += 1
        breakdown = tm.step_breakdown(model, step["running"], step["prefill_tokens"])
        durations_ms = _kernel_durations(kernels, breakdown)
        step_us = model.step_ms(step["running"], step["prefill_tokens"]) * 1000.0
        gap_us = breakdown[tm.IDLE] * 1000.0 / len(kernels)
        t0 = step["start_s"] * 1e6
        kind = "prefill+decode" if step["prefill_tokens"] else "decode"
        launch_ts = t0 - 45.0
        label = step_label(step) if step_label else "execute_model"
        if label is not None:
            ev.append(
                f'{{"ph":"X","cat":"user_annotation","name":{dumps(label)},"pid":{host_pid},"tid":{tid_cpu},'
                f'"ts":{t0 - 60.0:.3f},"dur":{step_us + 40.0:.3f},"args":{{"External id":{corr},"step":{index},'
                f'"num_running":{step["running"]},"num_prefill_tokens":{step["prefill_tokens"]}}}}}'
            )
        ev.append(
            f'{{"ph":"X","cat":"cuda_runtime","name":"cudaGraphLaunch","pid":{host_pid},"tid":{tid_cpu},'
            f'"ts":{launch_ts:.3f},"dur":12.500,"args":{{"cbid":311,"correlation":{corr},"graph id":{1 + step["running"]}}}}}'
        )
        ev.append(f'{{"ph":"s","id":{corr},"pid":{host_pid},"tid":{tid_cpu},"ts":{launch_ts:.3f},"cat":"ac2g","name":"ac2g"}}')
        if label is not None:
            ev.append(
                f'{{"ph":"X","cat":"gpu_user_annotation","name":{dumps(label)},"pid":{dev},"tid":{STREAM},'
                f'"ts":{t0:.3f},"dur":{step_us:.3f},"args":{{"External id":{corr}}}}}'
            )
        if step_label is None:
            ev.append(
                f'{{"ph":"X","cat":"gpu_user_annotation","name":"{kind}","pid":{dev},"tid":{STREAM},'
                f'"ts":{t0:.3f},"dur":{step_us:.3f},"args":{{"External id":{corr}}}}}'
            )
        t = t0
        for node, (kernel, name) in enumerate(zip(kernels, names)):
            dur = durations_ms[node] * 1000.0
            cat = "gpu_memcpy" if kernel[1] == tm.MEMORY else "kernel"
            extra = (
                ',"bytes":8,"memory bandwidth (GB/s)":0.4'
                if cat == "gpu_memcpy"
                else ',"grid":[132,1,1],"block":[256,1,1],"registers per thread":128,"shared memory":98304'
            )
            ev.append(
                f'{{"ph":"X","cat":"{cat}","name":{name},"pid":{dev},"tid":{STREAM},"ts":{t:.3f},"dur":{dur:.3f},'
                f'"args":{{"device":{dev},"stream":{STREAM},"correlation":{corr},"graph id":{1 + step["running"]},'
                f'"graph node id":{node}{extra}}}}}'
            )
            if node == 0:
                ev.append(f'{{"ph":"f","id":{corr},"pid":{dev},"tid":{STREAM},"ts":{t:.3f},"cat":"ac2g","name":"ac2g","bp":"e"}}')
            t += dur + gap_us
    device_props = [
        {
            "id": i,
            "name": "NVIDIA H200",
            "totalGlobalMem": 150754820096,
            "computeMajor": 9,
            "computeMinor": 0,
            "maxThreadsPerBlock": 1024,
            "maxThreadsPerMultiprocessor": 2048,
            "regsPerBlock": 65536,
            "warpSize": 32,
            "sharedMemPerBlock": 49152,
            "numSms": 132,
            "regsPerMultiprocessor": 65536,
            "sharedMemPerBlockOptin": 232448,
            "sharedMemPerMultiprocessor": 233472,
        }
        for i in range(world_size)
    ]
    head = {
        "schemaVersion": 1,
        "deviceProperties": device_props,
        "distributedInfo": {
            "backend": "nccl",
            "rank": rank,
            "world_size": world_size,
            "pg_count": 3,
            "pg_config": [],
            "nccl_version": "2.27.3",
        },
        "record_shapes": 0,
        "with_stack": 0,
        "cuda_runtime_version": 12080,
        "cuda_driver_version": 12080,
        "trace_id": f"SIM{rank:04d}{base_time_ns % 10**12}",
        "displayTimeUnit": "ms",
        "baseTimeNanoseconds": base_time_ns,
        "inference_bench_simulator": meta,
    }
    head_text = json.dumps(head)[:-1]
    return head_text + ',"traceEvents":[\n' + ",\n".join(ev) + '\n],"traceName":"simulated"}'


def write_traces(
    directory: str,
    steps: Sequence[dict],
    model: tm.TimingModel,
    layers: int,
    world_size: int,
    meta: dict,
    file_name: Optional[Callable[[int, int], str]] = None,
    step_label: Optional[Callable[[dict], Optional[str]]] = None,
    frontend_name: Optional[Callable[[int], str]] = None,
    profiler_out: bool = True,
) -> List[str]:
    """Writes `dp0_pp0_tp0_rank{r}.{time_ns}.pt.trace.json.gz` per rank, like vLLM; returns the paths.

    A --mimic profile passes its version's `file_name(rank, time_ns)`, `step_label(step)` and, for vLLM's
    API-server trace, `frontend_name(time_ns)` (a CPU-only trace in the same folder)."""
    os.makedirs(directory, exist_ok=True)
    stamp = time.time_ns()
    # ts are monotonic microseconds; baseTimeNanoseconds maps them back to wall time.
    base_time_ns = time.time_ns() - time.monotonic_ns()
    paths = []
    if frontend_name is not None:
        front = {
            "schemaVersion": 1,
            "deviceProperties": [],
            "displayTimeUnit": "ms",
            "baseTimeNanoseconds": base_time_ns,
            "inference_bench_simulator": meta,
            "traceName": "simulated API server (CPU only)",
            "traceEvents": [
                {
                    "ph": "X",
                    "cat": "user_annotation",
                    "name": "AsyncLLM.generate",
                    "pid": os.getpid(),
                    "tid": os.getpid(),
                    "ts": round(s["start_s"] * 1e6, 3),
                    "dur": 50.0,
                }
                for s in steps
            ],
        }
        front_path = os.path.join(directory, frontend_name(stamp))
        with gzip.open(front_path + ".tmp", "wb", compresslevel=3) as f:
            f.write(json.dumps(front).encode("utf-8"))
        os.replace(front_path + ".tmp", front_path)
    for rank in range(world_size):
        text = build_rank_trace(rank, world_size, steps, model, layers, os.getpid(), base_time_ns, meta, step_label)
        path = os.path.join(directory, file_name(rank, stamp) if file_name else f"dp0_pp0_tp0_rank{rank}.{stamp}.pt.trace.json.gz")
        tmp = path + ".tmp"
        with gzip.open(tmp, "wb", compresslevel=3) as f:
            f.write(text.encode("utf-8"))
        os.replace(tmp, path)
        if profiler_out:
            with open(os.path.join(directory, f"profiler_out_{rank}.txt"), "w") as f:
                f.write(f"simulated profile of rank {rank}: {len(steps)} steps (inference-bench simulator)\n")
        paths.append(path)
    return paths
