"""Collectives across the hosts of a cluster: all-reduce and all-to-all through torch.distributed.

The controller runs one `collective` agent per host, each over that host's own SSH connection. Each
starts one process per GPU (or --local-ranks on a CPU) with the variables torchrun sets (MASTER_ADDR,
MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK: torch/distributed/run.py),
so that the ranks meet through torch.distributed's own env:// rendezvous (a TCPStore on the first
host) and talk over NCCL on GPUs, gloo on CPUs: no transport of ours between the hosts.

The launcher watches its ranks: one that dies stops the others on this host, and the agent says which
rank died and how; the controller then stops the other hosts. Global rank 0 (on the first host)
prints the points.

`--plan` (no PyTorch) gives what every host needs first: the message sizes of a decode step from the
model's config and a free port on the first host for the rendezvous.
- All-reduce (tensor parallel): M tokens x hidden x 2 bytes, twice per layer (attention and MLP out).
- All-to-all (expert parallel): each token goes to its top-k experts and comes back, dispatch and
  combine once per MoE layer. With the attention data-parallel across the W ranks of the EP group (as
  vLLM's --enable-expert-parallel with --data-parallel-size, and SGLang's --enable-dp-attention, run
  DeepSeek-style models) a rank holds ceil(M / W) of the step's M tokens and sends
  ceil(M / W) x top-k x hidden x 2 bytes each way.
Columns follow nccl-tests (doc/PERFORMANCE.md): algbw = bytes / time; busbw = algbw x 2(n-1)/n for
all-reduce and algbw x (n-1)/n for all-to-all, where bytes is one rank's whole buffer.
"""
from __future__ import annotations

import argparse
import functools
import json
import math
import os
import signal
import socket
import subprocess
import threading
import time
from typing import Any, Callable, Optional

from infbench_agent import auth, events, options
from infbench_agent.events import AgentError
from infbench_agent.micro.allreduce import (
    SAFE_ENV,
    agent_command,
    bus_bandwidth,
    eager_collective_us,
    graph_collective_us,
    rank_clock,
    rank_device,
    stop_ranks,
)
from infbench_agent.micro.guard import GpuOccupancy, check_gpus, read_occupancy
from infbench_agent.models import ModelError, resolve_model

DEFAULT_M = options.DEFAULT_M
CPU_M = options.CPU_M
# A rank that dies leaves the others waiting in a collective; the rendezvous itself waits this long for every host.
RENDEZVOUS_TIMEOUT_S = 120
# What sizes the messages when no model is named: the hidden size, from a model or given.
WHICH_MODEL = "Pass {0} (a preset), {1}, or {2}."
WHICH_MODEL_REMEDIES = [events.flag("--model"), events.flag("--config"), events.flag("--hidden")]
# After a rank fails, how long the others may take to report that they lost it before they are stopped.
FAILURE_GRACE_S = 1.0


def add_arguments(p: argparse.ArgumentParser) -> None:
    options.add_arguments(p, "collective")


def parse_sizes(text: str, flag: str) -> list[int]:
    try:
        sizes = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError as exc:
        raise AgentError("bad_option", f"{flag} {text!r} is not a list of byte counts.", f"For example {flag} 14336,28672.") from exc
    if any(s < 2 for s in sizes):
        raise AgentError("bad_option", f"{flag} {text!r}: sizes must be at least 2 bytes.", f"For example {flag} 14336,28672.")
    return sizes


def free_port() -> int:
    """A port free on every interface of this host now; the rendezvous binds it moments later."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("", 0))
        return int(s.getsockname()[1])


def plan(args: Any) -> dict:
    """Decode-step message sizes for the cluster's world size, from the model's config."""
    from infbench_agent.micro.command import parse_m_list

    local, device, occupancy = _local_ranks(args)
    if occupancy is not None:
        # As micro does, before anything touches a GPU: a server holding this host's GPUs is not disturbed.
        check_gpus(occupancy, args.busy_threshold, args.allow_busy)
    where = {"port": free_port(), "host": socket.gethostname(), "local_ranks": local, "device": device, "addr": ssh_server_addr()}
    if args.world_size == 0:
        # Only this host's part: its ranks and address (the controller adds the hosts up before sizing).
        empty: list[Any] = []
        return {
            "model": None,
            "hidden": 0,
            "top_k": None,
            "layers": None,
            "moe_layers": None,
            "world_size": 0,
            "m": empty,
            **where,
            "allreduce": empty,
            "alltoall": empty,
        }
    model = None
    if args.model or args.config or args.server_url:
        try:
            model = resolve_model(args.model, args.config, args.server_url, auth.resolve_api_key(args))
        except ModelError as exc:
            hint, remedies = (exc.hint, exc.remedies) if exc.hint else (WHICH_MODEL, WHICH_MODEL_REMEDIES)
            raise AgentError(exc.code, str(exc), hint, remedies) from exc
    config = model.config if model else {}
    hidden = model.hidden if model else args.hidden
    if not hidden:
        raise AgentError("no_model", "No model to size the messages by.", WHICH_MODEL, WHICH_MODEL_REMEDIES)
    if args.device == "cpu":
        args.cpu = True
    top_k = int(config.get("num_experts_per_tok") or 0) or args.top_k
    layers = model.layers if model else 0
    moe_layers = (
        max(0, layers - int(config.get("first_k_dense_replace") or 0)) if config.get("n_routed_experts") or config.get("num_experts") else 0
    )
    world = max(1, args.world_size)
    m_values = parse_m_list(args.m or (CPU_M if args.cpu else DEFAULT_M))
    allreduce = [{"m": m, "bytes": m * hidden * 2} for m in m_values]
    alltoall = []
    if top_k:
        for m in m_values:
            tokens = math.ceil(m / world)
            # all_to_all_single splits the buffer evenly between the ranks: round up to a multiple of W elements.
            count = tokens * top_k * hidden
            count = int(math.ceil(count / world) * world)
            alltoall.append({"m": m, "tokens_per_rank": tokens, "bytes": count * 2})
    return {
        "model": model.name if model else None,
        "hidden": hidden,
        "top_k": top_k or None,
        "layers": layers or None,
        "moe_layers": moe_layers or None,
        "world_size": world,
        "m": m_values,
        "allreduce": allreduce,
        "alltoall": alltoall,
        **where,
    }


def ssh_server_addr() -> Optional[str]:
    """This host's address on the interface the controller's SSH session came in on (sshd's SSH_CONNECTION:
    client address, client port, server address, server port): the address the other nodes most likely reach it by."""
    parts = os.environ.get("SSH_CONNECTION", "").split()
    return parts[2] if len(parts) == 4 else None


def run(args: Any) -> int:
    if args.worker:
        return worker_main(args)
    if args.plan:
        events.emit(events.RESULT, result={"plan": plan(args)})
        return 0
    return launch(args)


def _local_ranks(args: Any) -> tuple[int, str, Optional[GpuOccupancy]]:
    """Processes on this host, the device kind, and what nvidia-smi says of the GPUs (None without one),
    without importing PyTorch."""
    if args.device == "cpu":
        return args.local_ranks or 2, "cpu", None
    try:
        occupancy = read_occupancy()
    except AgentError:
        occupancy = None  # nvidia-smi there but failing: no GPU to count, as on a host without one
    gpus = len(occupancy.gpus) if occupancy else 0
    if args.device.startswith("cuda") and not gpus:
        raise AgentError(
            "no_gpu",
            f"--device {args.device}: nvidia-smi lists no GPU on {socket.gethostname()}.",
            "Run on the CPU: {0}.",
            [events.flag("--device", "cpu")],
        )
    if not gpus:
        return args.local_ranks or 2, "cpu", None
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        gpus = len([v for v in visible.split(",") if v.strip()])
    return args.local_ranks or gpus, "cuda", occupancy


def launch(args: Any) -> int:
    """Starts this host's ranks, forwards global rank 0's points, and stops every rank if one dies."""
    local, device, _ = _local_ranks(args)
    if args.rank_offset + local > args.world_size:
        raise AgentError(
            "bad_option",
            f"This host's ranks {args.rank_offset}..{args.rank_offset + local - 1} do not fit in world size {args.world_size}.",
            "The controller gives each host its rank offset and the world size; pass --local-ranks to match.",
        )
    if not args.master_port:
        raise AgentError("bad_option", "--master-port is missing.", "Run --plan on the first host for a free port.")
    backend = args.backend if args.backend != "auto" else ("nccl" if device == "cuda" else "gloo")
    argv, env = agent_command()
    env.update(SAFE_ENV)
    env.update(
        {
            "MASTER_ADDR": args.master_addr,
            "MASTER_PORT": str(args.master_port),
            "WORLD_SIZE": str(args.world_size),
            "LOCAL_WORLD_SIZE": str(local),
            "GROUP_RANK": str(args.node_rank),
        }
    )
    host = socket.gethostname()
    events.log(
        f"{host}: ranks {args.rank_offset}..{args.rank_offset + local - 1} of {args.world_size} ({backend} on {device}), "
        f"rendezvous at {args.master_addr}:{args.master_port}."
    )
    cmd = argv + [
        "collective",
        "--worker",
        "--backend",
        backend,
        "--device",
        device,
        "--ops",
        args.ops,
        "--ar-sizes",
        args.ar_sizes,
        "--a2a-sizes",
        args.a2a_sizes,
        "--repeats",
        str(args.repeats),
    ]
    procs = []
    for local_rank in range(local):
        rank_env = dict(env, RANK=str(args.rank_offset + local_rank), LOCAL_RANK=str(local_rank))
        procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=None, env=rank_env, text=True))
    errors: dict[int, str] = {}
    points = []

    def read(local_rank: int, stream: Any) -> None:
        rank = args.rank_offset + local_rank
        for line in stream:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            kind = event.get("type")
            if kind == events.MICRO_POINT and rank == 0:
                points.append(event["point"])
                events.emit(events.MICRO_POINT, kind=event["kind"], point=event["point"])
            elif kind == events.PROGRESS and rank == 0:
                events.emit(events.PROGRESS, done=event["done"], total=event["total"], message=str(event.get("message", "")))
            elif kind == events.LOG and rank == 0:
                events.log(event["message"], event.get("level", "info"))
            elif kind == events.ERROR:
                errors[rank] = str(event.get("message"))

    readers = [threading.Thread(target=read, args=(r, p.stdout), daemon=True) for r, p in enumerate(procs)]
    for t in readers:
        t.start()
    stopping = [False]

    def on_sigterm(signum: int, _frame: Any) -> None:
        # Cancelled (SIGTERM from the controller or the heartbeat): the ranks go first, then this agent.
        stopping[0] = True
        for p in procs:
            if p.poll() is None:
                p.kill()

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    # Exit codes as the ranks ended by themselves, before any was stopped here.
    ended: dict[int, int] = {}
    try:
        first_failure: Optional[float] = None
        while not stopping[0]:
            for local_rank, p in enumerate(procs):
                if local_rank not in ended and p.poll() is not None:
                    ended[local_rank] = p.returncode
            if len(ended) == len(procs):
                break
            if first_failure is None and any(c != 0 for c in ended.values()):
                first_failure = time.monotonic()
            # One rank gone means the others wait in a collective until the timeout: once the ranks that lost
            # their peer have had a moment to say so, stop the rest.
            if first_failure is not None and time.monotonic() - first_failure > FAILURE_GRACE_S:
                break
            time.sleep(0.05)
    finally:
        stop_ranks(procs, readers)
        signal.signal(signal.SIGTERM, previous)
    if stopping[0]:
        raise KeyboardInterrupt
    failed = {r: c for r, c in ended.items() if c != 0}
    if failed:
        # A rank that died without a word (a signal, an out-of-memory kill) is the cause; ranks that
        # reported an error mostly lost that peer.
        silent = [r for r in failed if args.rank_offset + r not in errors]
        if silent:
            local_rank = silent[0]
            code = failed[local_rank]
            how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
            raise AgentError(
                "rank_died",
                f"Rank {args.rank_offset + local_rank} (local rank {local_rank} on {host}) {how}.",
                "Its stderr is in the run's log for this host; the other ranks were stopped.",
            )
        rank = args.rank_offset + min(failed)
        raise AgentError(
            "collective_failed",
            f"Rank {rank} on {host} failed: {errors[rank]}",
            "A rank on another host may have died first (the others lose their peer); see each host's log.",
        )
    if len(ended) < len(procs):
        raise AgentError("collective_failed", f"The ranks on {host} did not finish.", "See this host's log.")
    events.emit(events.RESULT, result={"host": host, "ranks": local, "backend": backend, "device": device, "points": points})
    return 0


def worker_main(args: Any) -> int:
    """One rank: every collective at every size, over all ranks and (with several hosts) within each host."""
    import datetime

    import torch
    import torch.distributed as dist

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ["LOCAL_RANK"])
    on_gpu = args.device.startswith("cuda")
    backend = args.backend
    device = rank_device(torch, on_gpu, local_rank)
    dist.init_process_group(backend, init_method="env://", timeout=datetime.timedelta(seconds=RENDEZVOUS_TIMEOUT_S))
    # Which host each rank is on, so that each host's ranks form a group of their own.
    layout: list[Any] = [None] * world
    dist.all_gather_object(layout, int(os.environ["GROUP_RANK"]))
    hosts = sorted(set(layout))
    groups = {h: [r for r in range(world) if layout[r] == h] for h in hosts}
    # new_group is collective: every rank makes every group, in the same order.
    local_groups = {h: dist.new_group(ranks) for h, ranks in groups.items()}
    my_host = layout[rank]
    scopes: list[tuple[str, Any, int]] = [("inter-node" if len(hosts) > 1 else "intra-node", None, world)]
    if len(hosts) > 1 and len(groups[my_host]) > 1 and all(len(g) == len(groups[my_host]) for g in groups.values()):
        scopes.append(("intra-node", local_groups[my_host], len(groups[my_host])))
    dtype = torch.bfloat16 if backend == "nccl" else torch.float16
    dtype_name = "bf16" if dtype == torch.bfloat16 else "fp16"
    ops = [o.strip() for o in args.ops.split(",") if o.strip()]
    sizes = {"allreduce": parse_sizes(args.ar_sizes, "--ar-sizes"), "alltoall": parse_sizes(args.a2a_sizes, "--a2a-sizes")}
    # One NCCL rank all-reduces nothing (an empty graph); an all-to-all still copies its buffer.
    graphed = lambda op, n: on_gpu and (n > 1 or op == "alltoall")  # noqa: E731
    total = sum(len(sizes.get(o, [])) * (2 if graphed(o, n) else 1) for o in ops for _, _, n in scopes)
    done = 0

    slowest, sync = rank_clock(torch, dist, backend, device)

    check_collectives(torch, dist, ops, world, rank, dtype, device)
    for op in ops:
        for scope, group, n in scopes:
            for size in sizes.get(op, []):
                count = max(n, size // 2 // n * n) if op == "alltoall" else max(1, size // 2)
                inp = torch.ones(count, dtype=dtype, device=device)
                out = torch.empty_like(inp)
                call: Callable[[], Any]
                if op == "alltoall":
                    call = functools.partial(dist.all_to_all_single, out, inp, group=group)
                else:
                    call = functools.partial(dist.all_reduce, inp, group=group)
                eager_us, iters = eager_collective_us(dist, call, sync, slowest, args.repeats)
                modes = [("eager", slowest(eager_us), f"wall clock over {iters} calls, median of {args.repeats}, slowest rank")]
                if graphed(op, n):
                    us = graph_collective_us(torch, dist, call, iters, args.repeats)
                    modes.append(("graph", slowest(us), f"CUDA graph of {iters} calls replayed, median of {args.repeats}, slowest rank"))
                for mode, us, how in modes:
                    algbw = count * 2 / us / 1e3  # GB/s
                    busbw = bus_bandwidth(algbw, n) if op == "allreduce" else algbw * (n - 1) / n
                    point = {
                        "kind": op,
                        "bytes": count * 2,
                        "count": count,
                        "dtype": dtype_name,
                        "backend": backend,
                        "world_size": n,
                        "nodes": len(hosts) if scope == "inter-node" else 1,
                        "scope": scope,
                        "mode": mode,
                        "us": us,
                        "algbw_gbps": algbw,
                        "busbw_gbps": busbw,
                        "timing": how,
                        "correct": True,
                    }
                    done += 1
                    if rank == 0:
                        events.emit(events.MICRO_POINT, kind=op, point=point)
                        events.emit(events.PROGRESS, done=done, total=total, message=f"{op} {scope} {count * 2} B {mode}: {us:.1f} us")
                del inp, out
    dist.barrier()
    dist.destroy_process_group()
    return 0


def check_collectives(torch: Any, dist: Any, ops: list[str], world: int, rank: int, dtype: Any, device: str) -> None:
    """Known answers before any timing: a wrong collective's speed means nothing."""
    if "allreduce" in ops:
        t = torch.full((world * 4,), float(rank + 1), dtype=dtype, device=device)
        dist.all_reduce(t)
        expected = world * (world + 1) / 2
        if abs(float(t[0].item()) - expected) > 1e-3:
            raise AgentError(
                "allreduce_wrong", f"all_reduce gave {t[0].item()} where {expected} was due (rank {rank}).", "Run nccl-tests' -c 1."
            )
    if "alltoall" in ops:
        # Chunk j of rank r goes to rank j; rank r then holds chunk r of every rank, in rank order.
        inp = torch.tensor([float(rank * world + j) for j in range(world)], dtype=torch.float32, device=device)
        out = torch.empty_like(inp)
        dist.all_to_all_single(out, inp)
        want = [float(j * world + rank) for j in range(world)]
        got = [float(x) for x in out.tolist()]
        if got != want:
            raise AgentError("alltoall_wrong", f"all_to_all_single gave {got} where {want} was due (rank {rank}).", "Run nccl-tests' -c 1.")
