"""The GPUs over a macro level: power, SM and memory clocks, utilisation, memory used, temperature and the
reasons the clocks are held down, sampled on the host while the level runs; from them the level's energy,
joules per output token and output tokens per second per watt, and the throttling (power or thermal) named.

NVIDIA: one `nvidia-smi --query-gpu=... --format=csv,noheader,nounits -lms N` child process for the whole
level, each line read and stamped on a thread of its own (one process, not one per sample: a start of
nvidia-smi costs tens of ms of the host's CPU). ROCm hosts are detected (amd-smi, rocm-smi) and said so.
Standard library only. Standalone, to check the sampler against nvidia-smi's own log:

    python3 -m infbench_agent.macro.gpu_telemetry --seconds 10 --interval-ms 100

prints one JSON object per sample.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import threading
import time
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

# Every sample's fields, in the order of the query. The clock-event reasons were `clocks_throttle_reasons.*`
# before driver 535 and `clocks_event_reasons.*` after (the old names are still accepted by newer drivers,
# the new ones refused by older): the old name is asked first, the new one if the old is refused.
FIELDS = (
    "index",
    "power.draw",
    "clocks.sm",
    "clocks.mem",
    "utilization.gpu",
    "memory.used",
    "temperature.gpu",
    "power.limit",
)
REASON_FIELDS = ("clocks_throttle_reasons.active", "clocks_event_reasons.active")
# The row's keys, FIELDS and the reasons mask in that order.
KEYS = ("gpu", "power_w", "sm_clock_mhz", "mem_clock_mhz", "util_percent", "mem_used_mib", "temp_c", "power_limit_w", "reasons")

# NVML's clocks-event reason bits (nvml.h, nvmlClocksEventReason*): those that mean the GPU was held below
# the clocks it asked for by power or heat. Idle, an applications-clocks setting and sync boost are no throttling.
THROTTLE_BITS: Dict[int, Tuple[str, str]] = {
    0x4: ("sw_power_cap", "power"),
    0x8: ("hw_slowdown", "power or thermal"),
    0x20: ("sw_thermal_slowdown", "thermal"),
    0x40: ("hw_thermal_slowdown", "thermal"),
    0x80: ("hw_power_brake_slowdown", "power"),
}

DEFAULT_INTERVAL_MS = 500
# Seconds nvidia-smi has to print its first round before the level goes on without it.
FIRST_SAMPLE_TIMEOUT_S = 5.0


def number(text: str) -> Optional[float]:
    """A CSV value of nvidia-smi's: a number, or None for "[N/A]", "[Not Supported]" and the like."""
    text = text.strip()
    try:
        return float(int(text, 16)) if text.lower().startswith("0x") else float(text)
    except ValueError:
        return None


def parse_row(line: str) -> Optional[dict]:
    """One CSV line of the query (noheader, nounits) as a sample without its time, or None for no sample."""
    parts = [p.strip() for p in line.split(",")]
    if len(parts) != len(KEYS):
        return None
    values = [number(p) for p in parts]
    if values[0] is None:
        return None
    row: dict = {k: v for k, v in zip(KEYS, values)}
    row["gpu"] = int(values[0])
    row["reasons"] = int(values[-1]) if values[-1] is not None else None
    return row


def throttle_names(mask: Optional[int]) -> List[str]:
    return [name for bit, (name, _) in THROTTLE_BITS.items() if mask and mask & bit]


def detect() -> dict:
    """Which GPU tool this host has: {"vendor": "nvidia"|"amd"|None, "tool": path, "note": why not}."""
    smi = shutil.which("nvidia-smi")
    if smi:
        return {"vendor": "nvidia", "tool": smi}
    for tool in ("amd-smi", "rocm-smi"):
        path = shutil.which(tool)
        if path:
            return {
                "vendor": "amd",
                "tool": path,
                "note": f"a ROCm host ({tool}): its power and clocks are not sampled yet, so no energy per token here",
            }
    return {"vendor": None, "note": "no GPU tool on this host (no nvidia-smi, amd-smi or rocm-smi): no power or energy per token"}


class GpuSampler:
    """Samples every GPU through one nvidia-smi child process until stopped. Each line is stamped when read
    (monotonic seconds, from `origin`), and with the wall clock (`unix`) to set beside nvidia-smi's own log."""

    def __init__(
        self,
        interval_ms: int = DEFAULT_INTERVAL_MS,
        origin: Optional[float] = None,
        clock: Callable[[], float] = time.monotonic,
        found: Optional[dict] = None,
    ) -> None:
        self.interval_ms = max(20, int(interval_ms))
        self.clock = clock
        self.origin = clock() if origin is None else origin
        self.found = found if found is not None else detect()
        self.samples: List[dict] = []
        self.note: Optional[str] = self.found.get("note")
        self.reason_field: Optional[str] = None
        self._proc: Optional[subprocess.Popen] = None
        self._thread: Optional[threading.Thread] = None
        self.started_at: Optional[float] = None
        self.stopped_at: Optional[float] = None

    def start(self) -> "GpuSampler":
        self.started_at = self.clock()
        if self.found.get("vendor") != "nvidia":
            return self
        for reasons in REASON_FIELDS:
            query = ",".join(FIELDS + (reasons,))
            argv = [self.found["tool"], f"--query-gpu={query}", "--format=csv,noheader,nounits", "-lms", str(self.interval_ms)]
            try:
                proc = subprocess.Popen(
                    argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True, bufsize=1
                )
            except OSError as exc:
                self.note = f"nvidia-smi could not be started ({exc}): no power or energy per token"
                return self
            self._proc, self.reason_field = proc, reasons
            first: List[str] = []
            answered = threading.Event()
            self._thread = threading.Thread(target=self._read, args=(first, answered), name="gpu-telemetry", daemon=True)
            self._thread.start()
            # A driver that hangs must not hold the level: the first round has this long to come.
            answered.wait(FIRST_SAMPLE_TIMEOUT_S)
            if self.samples:
                return self
            # Refused (a field this driver does not know), no GPU, or no answer: the other name, then say why.
            self._end_process()
            said = (first[0] if first else "").strip()
            self.note = f"nvidia-smi gave no GPU sample ({said[:200] or 'no answer'}): no power or energy per token"
            self._proc = self.reason_field = None
        return self

    def _take(self, line: str) -> None:
        row = parse_row(line)
        if row is None:
            return
        row["t"] = round(self.clock() - self.origin, 4)
        row["unix"] = round(time.time(), 3)
        self.samples.append(row)

    def _read(self, first: List[str], answered: threading.Event) -> None:
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        for line in proc.stdout:
            if not first:
                first.append(line)
            self._take(line)
            answered.set()
        answered.set()

    def _end_process(self) -> None:
        proc, thread = self._proc, self._thread
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=2.0)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if thread is not None:
            thread.join(timeout=2.0)
        if proc is not None and proc.stdout is not None:
            proc.stdout.close()
        self._thread = None

    def stop(self) -> "GpuSampler":
        self.stopped_at = self.clock()
        self._end_process()
        return self

    def level_result(self, output_tokens: int, window: Optional[Tuple[float, float]] = None) -> dict:
        """The level's figures over `window` (seconds from origin; default from start to stop)."""
        if window is None:
            t0 = (self.started_at or self.origin) - self.origin
            t1 = (self.stopped_at or self.clock()) - self.origin
            window = (t0, t1)
        out = summarize(self.samples, window, output_tokens)
        out["source"] = "nvidia-smi" if self.found.get("vendor") == "nvidia" else self.found.get("tool")
        out["interval_ms"] = self.interval_ms
        if self.reason_field:
            out["reason_field"] = self.reason_field
        if self.note and not self.samples:
            out["note"] = self.note
        return out


def energy_joules(points: Sequence[Tuple[float, float]], t0: float, t1: float) -> Optional[float]:
    """The integral of power (watts) over [t0, t1] from (time, watts) points: trapezoids between points,
    each end of the window read by linear interpolation, held flat past the first or last point."""
    pts = sorted((t, w) for t, w in points if w is not None)
    if not pts or t1 <= t0:
        return None

    def at(t: float) -> float:
        if t <= pts[0][0]:
            return pts[0][1]
        if t >= pts[-1][0]:
            return pts[-1][1]
        for (ta, wa), (tb, wb) in zip(pts, pts[1:]):
            if ta <= t <= tb:
                return wa if tb == ta else wa + (wb - wa) * (t - ta) / (tb - ta)
        return pts[-1][1]

    inner = [(t, w) for t, w in pts if t0 < t < t1]
    path = [(t0, at(t0))] + inner + [(t1, at(t1))]
    return sum((tb - ta) * (wa + wb) / 2.0 for (ta, wa), (tb, wb) in zip(path, path[1:]))


def summarize(samples: Sequence[dict], window: Tuple[float, float], output_tokens: int) -> dict:
    """Per GPU and in all: mean and peak power, clocks, utilisation, memory, temperature; the energy over the
    window (every GPU's summed), J per output token and output tokens/s per watt; the throttling named."""
    t0, t1 = window
    by_gpu: Dict[int, List[dict]] = {}
    for s in samples:
        by_gpu.setdefault(s["gpu"], []).append(s)
    out: dict = {"gpus": len(by_gpu), "samples": len(samples), "window_s": round(t1 - t0, 4)}
    if not by_gpu:
        return out
    per_gpu = []
    energy_total = 0.0
    energy_known = True
    throttled: Dict[str, str] = {}
    for gpu, rows in sorted(by_gpu.items()):
        inside = [r for r in rows if t0 <= r["t"] <= t1] or rows

        def values(key: str) -> List[float]:
            return [r[key] for r in inside if isinstance(r.get(key), (int, float))]

        def mean(key: str) -> Optional[float]:
            v = values(key)
            return round(sum(v) / len(v), 2) if v else None

        energy = energy_joules([(r["t"], r["power_w"]) for r in rows if r.get("power_w") is not None], t0, t1)
        if energy is None:
            energy_known = False
        else:
            energy_total += energy
        reasons: Dict[str, float] = {}
        for r in inside:
            for name in throttle_names(r.get("reasons")):
                reasons[name] = reasons.get(name, 0) + 1
        for name in reasons:
            throttled[name] = next(kind for _, (n, kind) in THROTTLE_BITS.items() if n == name)
        per_gpu.append(
            {
                "gpu": gpu,
                "energy_j": round(energy, 3) if energy is not None else None,
                "mean_power_w": mean("power_w"),
                "max_power_w": max(values("power_w"), default=None),
                "power_limit_w": max(values("power_limit_w"), default=None),
                "mean_sm_clock_mhz": mean("sm_clock_mhz"),
                "min_sm_clock_mhz": min(values("sm_clock_mhz"), default=None),
                "mean_mem_clock_mhz": mean("mem_clock_mhz"),
                "mean_util_percent": mean("util_percent"),
                "max_mem_used_mib": max(values("mem_used_mib"), default=None),
                "max_temp_c": max(values("temp_c"), default=None),
                # The share of the level's samples each reason held the clocks down.
                "throttle": {k: round(v / len(inside), 3) for k, v in sorted(reasons.items())},
            }
        )
    out["per_gpu"] = per_gpu
    if energy_known and t1 > t0:
        out["energy_j"] = round(energy_total, 3)
        out["mean_power_w"] = round(energy_total / (t1 - t0), 2)
        if output_tokens > 0 and energy_total > 0:
            out["joules_per_output_token"] = round(energy_total / output_tokens, 5)
            # Tokens per second per watt is tokens per joule: the same window's tokens over its energy.
            out["output_tokens_per_s_per_watt"] = round(output_tokens / energy_total, 5)
    out["throttled"] = [{"reason": name, "kind": kind} for name, kind in sorted(throttled.items())]
    return out


def timeline_rows(samples: Iterable[dict]) -> List[list]:
    """The samples for the run's timeline, compact: [t, gpu, power W, SM MHz, util %, mem MiB, temp C, reasons]."""
    return [
        [
            s["t"],
            s["gpu"],
            s.get("power_w"),
            s.get("sm_clock_mhz"),
            s.get("util_percent"),
            s.get("mem_used_mib"),
            s.get("temp_c"),
            s.get("reasons"),
        ]
        for s in samples
    ]


def level_telemetry(sampler: GpuSampler, output_tokens: int, window: Tuple[float, float], label: str) -> dict:
    """A level's GPU figures with its samples for the timeline; says on the log when power or heat held the
    clocks down (NVML's clocks-event reasons), which is where a level's numbers are the GPU's limit."""
    from infbench_agent import events

    out = sampler.level_result(output_tokens, window)
    out["series"] = timeline_rows(s for s in sampler.samples if window[0] - 1.0 <= s["t"] <= window[1] + 1.0)
    for item in out.get("throttled") or []:
        held = [g for g in out.get("per_gpu") or [] if item["reason"] in (g.get("throttle") or {})]
        share = max((g["throttle"][item["reason"]] for g in held), default=0.0)
        events.log(
            f"{label}: {item['kind']} throttling ({item['reason']}) on GPU {', '.join(str(g['gpu']) for g in held)} in "
            f"{100 * share:.0f}% of the samples: the clocks were held down, so this level measured a throttled GPU",
            "warn",
        )
    return out


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m infbench_agent.macro.gpu_telemetry", description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=10.0, help="how long to sample")
    p.add_argument("--interval-ms", type=int, default=DEFAULT_INTERVAL_MS, help="nvidia-smi's -lms period")
    p.add_argument("--output-tokens", type=int, default=0, help="tokens made over the seconds, for J per token")
    args = p.parse_args(argv)
    sampler = GpuSampler(args.interval_ms)
    if sampler.found.get("vendor") != "nvidia":
        print(json.dumps({"note": sampler.note}), flush=True)
        return 0
    sampler.start()
    printed = 0
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline:
        time.sleep(0.05)
        while printed < len(sampler.samples):
            print(json.dumps(sampler.samples[printed]), flush=True)
            printed += 1
    sampler.stop()
    for s in sampler.samples[printed:]:
        print(json.dumps(s), flush=True)
    summary = sampler.level_result(args.output_tokens)
    print(json.dumps({"summary": summary}), flush=True)
    return 0 if sampler.samples else 1


if __name__ == "__main__":
    sys.exit(main())
