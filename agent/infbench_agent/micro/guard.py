"""The busy-GPU guard: before the micro phase takes GPU memory, look at what already holds the GPUs.

A GPU the inference server holds (vLLM takes about 90% of memory at start) leaves little room, and
timing kernels beside a server under load measures the server as much as the kernels. So the phase
stops with the numbers unless the user consented (--allow-busy), and then sizes itself to what is free.
Reads `nvidia-smi` only; standard library.
"""
from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Optional

from infbench_agent import events
from infbench_agent.events import AgentError

MIB = 1024 * 1024


@dataclass
class GpuMemory:
    index: int
    uuid: str
    name: str
    used_mib: float
    total_mib: float

    @property
    def free_mib(self) -> float:
        return max(0.0, self.total_mib - self.used_mib)

    @property
    def used_fraction(self) -> float:
        return self.used_mib / self.total_mib if self.total_mib else 0.0


@dataclass
class GpuProcess:
    pid: int
    name: str
    used_mib: float
    gpu_uuid: str
    cmdline: str = ""


@dataclass
class GpuOccupancy:
    gpus: list[GpuMemory]
    processes: list[GpuProcess] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "gpus": [{"index": g.index, "name": g.name, "used_mib": g.used_mib, "total_mib": g.total_mib} for g in self.gpus],
            "processes": [{"pid": p.pid, "name": p.name, "used_mib": p.used_mib, "cmdline": p.cmdline} for p in self.processes],
        }


def _number(text: str) -> float:
    try:
        return float(text.strip())
    except ValueError:
        return 0.0  # "[N/A]" on some drivers


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()[:160]
    except OSError:
        return ""  # another container's process, or gone


def read_occupancy(nvidia_smi: Optional[str] = None) -> Optional[GpuOccupancy]:
    """What nvidia-smi says about every GPU, or None where there is no nvidia-smi (no NVIDIA GPU)."""
    exe = nvidia_smi or shutil.which("nvidia-smi")
    if not exe:
        return None
    try:
        gpus_out = subprocess.run(
            [exe, "--query-gpu=index,uuid,name,memory.used,memory.total", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise AgentError(
            "nvidia_smi_failed",
            f"nvidia-smi could not be run ({exc}).",
            "Check the GPU driver on the host with `nvidia-smi`; or run on the CPU: {0}.",
            [events.flag("--device", "cpu")],
        ) from exc
    if gpus_out.returncode != 0:
        raise AgentError(
            "nvidia_smi_failed",
            f"nvidia-smi failed (exit code {gpus_out.returncode}): " f"{(gpus_out.stderr or gpus_out.stdout).strip()[:300]}",
            "Check the GPU driver on the host with `nvidia-smi`; or run on the CPU: {0}.",
            [events.flag("--device", "cpu")],
        )
    gpus = []
    for line in gpus_out.stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 5 and parts[0].isdigit():
            gpus.append(GpuMemory(int(parts[0]), parts[1], parts[2], _number(parts[3]), _number(parts[4])))
    processes = []
    try:
        apps = subprocess.run(
            [exe, "--query-compute-apps=pid,process_name,used_memory,gpu_uuid", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        for line in apps.stdout.splitlines() if apps.returncode == 0 else []:
            parts = [p.strip() for p in line.split(",")]
            if len(parts) >= 4 and parts[0].isdigit():
                pid = int(parts[0])
                processes.append(GpuProcess(pid, parts[1], _number(parts[2]), parts[3], _cmdline(pid)))
    except (OSError, subprocess.TimeoutExpired):
        pass  # the process list is a courtesy; memory numbers decide
    return GpuOccupancy(gpus, processes)


def describe(occ: GpuOccupancy) -> str:
    gpu_text = "; ".join(
        f"GPU {g.index}: {g.used_mib / 1024:.1f} of {g.total_mib / 1024:.1f} GiB used " f"({100 * g.used_fraction:.0f}%)" for g in occ.gpus
    )
    if not occ.processes:
        return gpu_text + "; no compute processes visible (they may run in another container)"
    by_uuid = {g.uuid: g.index for g in occ.gpus}
    procs = "; ".join(
        f"pid {p.pid} {p.cmdline or p.name} on GPU {by_uuid.get(p.gpu_uuid, '?')} ({p.used_mib / 1024:.1f} GiB)" for p in occ.processes[:8]
    )
    more = f" and {len(occ.processes) - 8} more" if len(occ.processes) > 8 else ""
    return f"{gpu_text}. Processes: {procs}{more}"


def check_gpus(occ: GpuOccupancy, threshold: float, allow_busy: bool, gpu_indices: Optional[list[int]] = None) -> Optional[float]:
    """Raises `gpus_busy` when a GPU to be used has more than `threshold` of its memory taken, unless
    allowed. Returns the smallest free memory (MiB) over those GPUs, to size the run by, or None."""
    gpus = [g for g in occ.gpus if gpu_indices is None or g.index in gpu_indices]
    if not gpus:
        return None
    free = min(g.free_mib for g in gpus)
    busy = [g for g in gpus if g.used_fraction > threshold]
    if busy and not allow_busy:
        raise AgentError(
            "gpus_busy",
            f"The GPUs are busy: {describe(occ)}. Micro-benchmarks beside a running server would measure the "
            f"server too and may run out of memory ({free / 1024:.1f} GiB free on the fullest GPU).",
            "Stop the server (or wait until it is idle) and run again, or let Inference Bench stop it and start it again "
            "afterwards ({0}; it asks first); or consent to run anyway: {1} "
            "(the run then sizes itself to the free memory, and its numbers include the server's interference).",
            [events.command("micro", "--stop-server"), events.flag("--allow-busy")],
        )
    return free
