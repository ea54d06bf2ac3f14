"""The server's profiler, as the simulated version has it: /start_profile and /stop_profile (vLLM's torch
profiler, its CUDA profiler mode for Nsight Systems, SGLang's num_steps and output_dir), which steps it
records, and the Kineto traces it writes of them. Standard library only."""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from typing import List, Optional

import sim_http
import sim_mimic
import sim_timing as tm
import sim_trace
from sim_http import respond, respond_json


class ProfilerEndpoints:
    """A part of the server (vllm_sim.Simulator): the profiler's state and endpoints. A subclass that
    profiles for real (bench/gpu_server.py) overrides stop_profile and stop_profile_mimic."""

    # The server's, read here.
    loop: Optional[asyncio.AbstractEventLoop]
    preset: tm.Preset
    model: tm.TimingModel
    layers: int
    world_size: int
    instance_id: str
    mimic: Optional[sim_mimic.Mimic]
    flags: Optional[sim_mimic.ServerFlags]

    def init_profiler(self, args: argparse.Namespace) -> None:
        """Where traces go and what a capture records, from the command line (a mimicked version's own flags)."""
        self.profiler_dir = args.profiler_dir
        self.profile_max_steps = args.profile_max_steps
        # vLLM's delay_iterations: engine steps after /start_profile that are not recorded.
        self.profile_delay_steps = getattr(args, "profile_delay_steps", 0)
        self.profile_skipped = 0
        self.cuda_profiler = False
        if self.mimic and self.flags:
            self.profiler_dir = self.flags.trace_dir if self.flags.profiler == "torch" else None
            self.cuda_profiler = self.flags.profiler == "cuda"
        self.profile_dir_current: Optional[str] = None
        self.profile_target_steps: Optional[int] = None
        self.profile_id = ""
        self.profile_done: Optional[asyncio.Future] = None
        # Profiling: steps recorded between /start_profile and /stop_profile.
        self.profiling = False
        self.profiled_steps: List[dict] = []
        self.profile_starts = 0
        self.profile_stops = 0
        # Steps between the CUDA profiler's start and stop, for an Nsight Systems report at exit (NSYS_REPORT_ENV).
        self.nsys_steps: List[dict] = []

    def record_step(self, step: dict) -> bool:
        """On the scheduler thread, as a step starts: whether the profiler records it (after the steps it
        skips, up to its most); a capture of num_steps stops itself once it has them."""
        if self.profiling and self.profile_skipped < self.profile_delay_steps:
            self.profile_skipped += 1
            return False
        if not (self.profiling and len(self.profiled_steps) < self.profile_max_steps):
            return False
        self.profiled_steps.append(step)
        if self.profile_target_steps and len(self.profiled_steps) >= self.profile_target_steps:
            # SGLang's num_steps: the profile stops by itself (scheduler_profiler_mixin.py).
            self.profiling = False
            assert self.loop is not None
            self.loop.call_soon_threadsafe(lambda: asyncio.ensure_future(self.auto_stop()))
        return True

    async def stop_profile(self) -> List[str]:
        self.profiling = False
        self.profile_target_steps = None
        self.profile_stops += 1
        steps = list(self.profiled_steps)
        self.profiled_steps = []
        meta = {
            "simulated": True,
            "preset": self.preset.name,
            "timing": self.model.to_json(),
            "layers": self.layers,
            "expected_decode_breakdown_batch1": tm.expected_breakdown(self.model, 1),
            "mimics": sim_http.MIMIC_LINE or None,
        }
        directory = self.profile_dir_current or self.profiler_dir
        assert self.loop is not None and directory
        m, flags = self.mimic, self.flags
        kwargs = {}
        if m and flags:
            host, pid, pid_ = os.uname().nodename, os.getpid(), self.profile_id
            kwargs = {
                "file_name": lambda rank, ns: sim_mimic.trace_file_name(m, flags, rank, ns, self.instance_id, host, pid, pid_),
                "step_label": lambda step: sim_mimic.step_name(m, step),
                "frontend_name": (lambda ns: sim_mimic.frontend_file_name(host, pid, ns)) if m.frontend_trace else None,
                "profiler_out": m.server == "vllm",
            }
        # Written off the event loop so streams keep flowing while the traces are flushed.
        return await self.loop.run_in_executor(
            None, lambda: sim_trace.write_traces(directory, steps, self.model, self.layers, self.world_size, meta, **kwargs)
        )

    async def auto_stop(self) -> None:
        await self.stop_profile()
        if self.profile_done is not None and not self.profile_done.done():
            self.profile_done.set_result(True)

    async def profile_endpoint(self, path: str, writer: asyncio.StreamWriter) -> None:
        """/start_profile or /stop_profile as vLLM without --mimic answers them: 404 without a profiler."""
        if not self.profiler_dir:
            await respond_json(writer, 404, {"detail": "Not Found"})
        elif path == "/start_profile":
            self.profiled_steps = []
            self.profiling = True
            self.profile_skipped = 0
            await respond(writer, 200, b"", "application/json")
        else:
            await self.stop_profile()
            await respond(writer, 200, b"", "application/json")

    async def start_profile_mimic(self, raw: bytes, writer: asyncio.StreamWriter) -> None:
        """/start_profile as the mimicked version answers it."""
        m = self.mimic
        assert m is not None
        if m.server == "vllm":
            if not self.profiler_dir and not self.cuda_profiler:
                await respond_json(writer, 404, {"detail": "Not Found"})
                return
            self.profile_starts += 1
            if self.cuda_profiler:
                # profiler "cuda": cudaProfilerStart() for nsys, no torch trace (vllm/profiler/gpu_profiler.py).
                # The steps are kept for the Nsight Systems report written at exit (sim_nsys.py) under the test's nsys stand-in.
                self.profiled_steps, self.profiling, self.profile_skipped = [], True, 0
                await respond(writer, 200, b"", "application/json")
                return
            self.profiled_steps, self.profiling, self.profile_skipped = [], True, 0
            await respond(writer, 200, b"", "application/json")
            return
        body = json.loads(raw) if raw else {}
        if self.profiling:
            await respond(writer, 500, b"Internal Server Error", "text/plain")
            return
        self.profile_starts += 1
        out = body.get("output_dir") or self.profiler_dir or "/tmp"
        self.profile_dir_current = os.path.abspath(out)
        self.profile_id = str(time.time())
        self.profile_target_steps = int(body["num_steps"]) if body.get("num_steps") else None
        self.profiled_steps, self.profiling = [], True
        if m.start_answers_after_steps and self.profile_target_steps:
            assert self.loop is not None
            self.profile_done = self.loop.create_future()
            await self.profile_done
        await respond(writer, 200, b"Start profiling.\n", "text/plain")

    async def stop_profile_mimic(self, writer: asyncio.StreamWriter) -> None:
        m = self.mimic
        assert m is not None
        if m.server == "vllm":
            if not self.profiler_dir and not self.cuda_profiler:
                await respond_json(writer, 404, {"detail": "Not Found"})
                return
            if self.profiler_dir and self.profiling:
                await self.stop_profile()
            elif self.cuda_profiler:
                self.profile_stops += 1
                self.profiling = False
                self.nsys_steps += self.profiled_steps
                self.profiled_steps = []
            await respond(writer, 200, b"", "application/json")
            return
        if not self.profiling:
            # "Profiling is not in progress" raised in the tokenizer manager: FastAPI's plain 500.
            await respond(writer, 500, b"Internal Server Error", "text/plain")
            return
        await self.stop_profile()
        await respond(writer, 200, b"Stop profiling. This will take some time.\n", "text/plain")
