"""`--mimic PROFILE`: the simulator behaves as one vLLM or SGLang version where versions differ.

Each profile names the behaviours the tool depends on, each taken from the upstream file cited beside
it (and in simulator/README.md). Where this file and upstream disagree, upstream wins: fix this file.
The simulator stays labelled in every mode: `/v1/models` `owned_by`, the `server` header, the version
suffix `+inference-bench-simulator`, and the `x-inference-bench-simulator-mimics` header naming the
profile.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

# The labels are spelled once, in the agent that recognises them.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "agent"))
from infbench_agent.simulator_mark import MIMIC_HEADER, SIMULATOR_MARK  # noqa: E402,F401


@dataclass(frozen=True)
class Mimic:
    name: str
    server: str  # "vllm" | "sglang"
    version: str
    # vLLM <= 0.15 reads VLLM_TORCH_PROFILER_DIR (and from 0.11 VLLM_TORCH_CUDA_PROFILE) to mount
    # /start_profile: vllm/envs.py, vllm/entrypoints/serve/profile/api_router.py (attach_router).
    # 0.16 removed them (vllm PR #33536).
    profiler_env: bool = False
    cuda_profile_env: bool = False
    # --profiler-config from 0.13 (vllm PR #29912, vllm/config/profiler.py).
    profiler_config: bool = False
    # Worker trace file names: "torch-default" = torch's tensorboard_trace_handler without worker_name,
    # `<host>_<pid>.<ns>.pt.trace.json.gz` (vllm/v1/worker/gpu_worker.py, 0.10); "instance-rank" =
    # `<instance_id>-rank-<r>.<ns>.pt.trace.json.gz` (gpu_worker.py with worker_name, 0.11-0.15);
    # "dp-pp-tp" = `dp<d>_pp<p>_tp<t>_dcp0_ep<e>_rank<r>.<ns>.pt.trace.json.gz` (newest gpu_worker.py);
    # SGLang "sglang-time" = `<time.time()>-TP-<r>.trace.json.gz` (old scheduler.py stop_profile),
    # "sglang-id" = `<profile_id>-TP-<tp>[-DP-<dp>].trace.json.gz` (scheduler_profiler_mixin.py).
    worker_names: str = "dp-pp-tp"
    # Step annotations: "none" (vLLM 0.10, old SGLang); "execute_new" = `execute_new_N_cached_M`
    # (gpu_worker.py annotate_profile, 0.11-0.25); "execute_context" =
    # `execute_context_N(T)_generation_M(T)` (the profiler config's simple annotations, 0.26+);
    # "sglang" = `step[DECODE bs=N]` / `step[EXTEND bs=N toks=M]` (SGLang's model runner).
    step_names: str = "execute_new"
    # vLLM's API server writes its own CPU-only trace `<host>_<pid>.async_llm.<ns>.pt.trace.json.gz`
    # in the same folder (vllm/v1/engine/async_llm.py), unless ignore_frontend.
    frontend_trace: bool = False
    # Old SGLang: /start_profile with num_steps answers only once those steps ran (scheduler.py
    # start_profile returned no ProfileReqOutput until profiler_target_forward_ct was reached).
    start_answers_after_steps: bool = False
    # Paths an --api-key server lets through without the key: vLLM guards only /v1/* (the
    # authentication middleware in vllm/entrypoints/openai/api_server.py); SGLang everything but
    # /health, and newer SGLang /metrics too (add_api_key_middleware in python/sglang/srt/utils.py).
    auth_guards_v1_only: bool = True
    auth_exempt: Tuple[str, ...] = ()
    # SGLang mounts /metrics only with --enable-metrics (python/sglang/srt/entrypoints/http_server.py).
    metrics_need_flag: bool = False
    # SGLang's version lives in /get_server_info, renamed /server_info (the old name kept for a while).
    server_info_paths: Tuple[str, ...] = ()


PROFILES: Dict[str, Mimic] = {
    m.name: m
    for m in [
        Mimic("vllm-0.10", "vllm", "0.10.2", profiler_env=True, worker_names="torch-default", step_names="none"),
        Mimic("vllm-0.11", "vllm", "0.11.2", profiler_env=True, cuda_profile_env=True, worker_names="instance-rank", frontend_trace=True),
        Mimic(
            "vllm-0.13",
            "vllm",
            "0.13.0",
            profiler_env=True,
            cuda_profile_env=True,
            profiler_config=True,
            worker_names="instance-rank",
            frontend_trace=True,
        ),
        Mimic("vllm-0.16", "vllm", "0.16.0", profiler_config=True, frontend_trace=True),
        Mimic("vllm-0.26", "vllm", "0.26.0", profiler_config=True, step_names="execute_context", frontend_trace=True),
        Mimic(
            "sglang-0.4",
            "sglang",
            "0.4.6.post1",
            worker_names="sglang-time",
            step_names="none",
            start_answers_after_steps=True,
            auth_guards_v1_only=False,
            auth_exempt=("/health",),
            metrics_need_flag=True,
            server_info_paths=("/get_server_info",),
        ),
        Mimic(
            "sglang-0.5",
            "sglang",
            "0.5.3",
            worker_names="sglang-id",
            step_names="sglang",
            auth_guards_v1_only=False,
            auth_exempt=("/health", "/metrics"),
            metrics_need_flag=True,
            server_info_paths=("/server_info", "/get_server_info"),
        ),
    ]
}


@dataclass
class ServerFlags:
    """What the mimicked server was told by its own flags and environment."""

    api_key: Optional[str]
    profiler: Optional[str]  # "torch" | "cuda" | None
    trace_dir: Optional[str]  # resolved as the server resolves it (absolute, in its own cwd)
    tp: int
    pp: int
    dp: int
    dp_attention: bool
    enable_metrics: bool

    @property
    def world_size(self) -> int:
        return self.tp * self.pp * (1 if self.dp_attention else self.dp)


def split_dotted(argv: List[str]) -> Tuple[List[str], Dict[str, str]]:
    """vLLM's dotted `--profiler-config.KEY VALUE` / `=VALUE` form, which argparse cannot take as such."""
    rest: List[str] = []
    dotted: Dict[str, str] = {}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a.startswith("--profiler-config."):
            key, eq, value = a[len("--profiler-config.") :].partition("=")
            if not eq:
                i += 1
                value = argv[i] if i < len(argv) else ""
            dotted[key.replace("-", "_")] = value
        else:
            rest.append(a)
        i += 1
    return rest, dotted


def parse_server_flags(mimic: Mimic, argv: List[str], env: Dict[str, str]) -> ServerFlags:
    """The flags the mimicked server takes, parsed as it would; unknown ones are an error, as there."""
    argv, dotted = split_dotted(argv)
    p = argparse.ArgumentParser(prog=f"vllm_sim --mimic {mimic.name}", allow_abbrev=False)
    p.add_argument("--api-key", default=None)
    p.add_argument("--served-model-name", default=None)
    if mimic.server == "vllm":
        p.add_argument("--hf-token", default=None)
        p.add_argument("--tensor-parallel-size", "-tp", type=int, default=1)
        p.add_argument("--pipeline-parallel-size", "-pp", type=int, default=1)
        p.add_argument("--data-parallel-size", "-dp", type=int, default=1)
        if mimic.profiler_config:
            p.add_argument("--profiler-config", default=None)
    else:
        p.add_argument("--tp-size", "--tp", "--tensor-parallel-size", dest="tensor_parallel_size", type=int, default=1)
        p.add_argument("--pp-size", "--pp", "--pipeline-parallel-size", dest="pipeline_parallel_size", type=int, default=1)
        p.add_argument("--dp-size", "--dp", "--data-parallel-size", dest="data_parallel_size", type=int, default=1)
        p.add_argument("--enable-dp-attention", action="store_true")
        p.add_argument("--enable-metrics", action="store_true")
    a = p.parse_args(argv)
    if dotted and not mimic.profiler_config:
        p.error("--profiler-config is not an option of this version")
    profiler: Optional[str] = None
    trace_dir: Optional[str] = None
    if mimic.server == "vllm":
        cfg: Dict[str, str] = {}
        if getattr(a, "profiler_config", None):
            cfg.update(json.loads(a.profiler_config))
        cfg.update(dotted)
        if cfg.get("profiler"):
            profiler = cfg["profiler"]
            trace_dir = cfg.get("torch_profiler_dir") or None
            if profiler == "torch" and not trace_dir:
                p.error("torch_profiler_dir must be set when profiler is 'torch'")  # vllm/config/profiler.py
        # vllm/config/profiler.py (0.13-0.15) reads VLLM_TORCH_CUDA_PROFILE first, then the directory.
        elif mimic.cuda_profile_env and env.get("VLLM_TORCH_CUDA_PROFILE") not in (None, "", "0"):
            profiler = "cuda"
        elif mimic.profiler_env and env.get("VLLM_TORCH_PROFILER_DIR"):
            profiler, trace_dir = "torch", env["VLLM_TORCH_PROFILER_DIR"]
        if trace_dir and "://" not in trace_dir:
            # abspath(expanduser()) in the server's own process: relative to its cwd (vllm/config/profiler.py).
            trace_dir = os.path.abspath(os.path.expanduser(trace_dir))
    else:
        profiler = "torch"  # SGLang always serves /start_profile; the folder comes with each request
        trace_dir = env.get("SGLANG_TORCH_PROFILER_DIR") or "/tmp"
    api_key = a.api_key or (env.get("VLLM_API_KEY") if mimic.server == "vllm" else None) or None
    return ServerFlags(
        api_key=api_key,
        profiler=profiler,
        trace_dir=trace_dir,
        tp=a.tensor_parallel_size,
        pp=a.pipeline_parallel_size,
        dp=a.data_parallel_size,
        dp_attention=bool(getattr(a, "enable_dp_attention", False)),
        enable_metrics=bool(getattr(a, "enable_metrics", False)),
    )


def needs_key(mimic: Mimic, path: str) -> bool:
    if mimic.auth_guards_v1_only:
        return path.startswith("/v1")
    return not any(path.startswith(p) for p in mimic.auth_exempt)


def step_name(mimic: Mimic, step: dict) -> Optional[str]:
    """The step annotation the mimicked version writes, or None."""
    joiners = int(step.get("joiners", 0))
    running = int(step["running"])
    cached = running - joiners
    prefill = int(step.get("prefill_tokens", 0))
    if mimic.step_names == "execute_new":
        return f"execute_new_{joiners}_cached_{cached}"
    if mimic.step_names == "execute_context":
        return f"execute_context_{joiners}({prefill})_generation_{cached}({cached})"
    if mimic.step_names == "sglang":
        return f"step[EXTEND bs={running} toks={prefill + cached}]" if joiners else f"step[DECODE bs={running}]"
    return None


def trace_file_name(
    mimic: Mimic, flags: ServerFlags, rank: int, stamp_ns: int, instance_id: str, host: str, pid: int, profile_id: str
) -> str:
    """rank = global rank; the name the mimicked version gives that rank's trace."""
    per_dp = flags.tp * flags.pp
    dp, local = divmod(rank, per_dp) if not flags.dp_attention else (0, rank)
    pp, tp = divmod(local, flags.tp)
    if mimic.worker_names == "torch-default":
        return f"{host}_{pid + rank}.{stamp_ns + rank}.pt.trace.json.gz"
    if mimic.worker_names == "instance-rank":
        # Assumed, not checked: each DP engine has its own instance id (else their files would collide).
        return f"{instance_id}{'-dp' + str(dp) if flags.dp > 1 else ''}-rank-{local}.{stamp_ns}.pt.trace.json.gz"
    if mimic.worker_names == "sglang-time":
        return f"{stamp_ns / 1e9:.6f}-TP-{tp}{'-DP-' + str(dp) if flags.dp > 1 else ''}.trace.json.gz"
    if mimic.worker_names == "sglang-id":
        return f"{profile_id}-TP-{tp}{'-DP-' + str(dp) if flags.dp > 1 else ''}{'-PP-' + str(pp) if flags.pp > 1 else ''}.trace.json.gz"
    return f"dp{dp}_pp{pp}_tp{tp}_dcp0_ep{local}_rank{local}.{stamp_ns}.pt.trace.json.gz"


def frontend_file_name(host: str, pid: int, stamp_ns: int) -> str:
    return f"{host}_{pid}.async_llm.{stamp_ns}.pt.trace.json.gz"
