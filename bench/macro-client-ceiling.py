#!/usr/bin/env python3
"""The macro load generator's ceiling: how many tokens per second it ingests, and its CPU per token.

1. Zero cost: the simulator sends every token at once (one SSE chunk each); concurrency 1..512.
   Prints tokens/s ingested, the client's CPU microseconds per token and its CPU share, and the
   simulator's own CPU (on a small machine the simulator, not the client, is usually what saturates).
2. Paced: every stream gets one token per 20 ms, as a real server sends them (one token per packet).
   TPOT at 256 streams must stay within 2% of TPOT at 8 streams; prints the client's CPU per token.
   400 streams at 20 ms are 20,000 tokens/s, one per packet: a real server's rate the client must not limit.

    python3 bench/macro-client-ceiling.py              # both parts
    python3 bench/macro-client-ceiling.py --quick      # fewer levels, for a smoke run
Run from the repository root. Standard library only.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cpu_of(pid: int) -> float:
    """utime + stime of a process and its reaped children, in seconds (from /proc)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def start_simulator(*args: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, os.path.join(ROOT, "simulator", "vllm_sim.py"), "--port", "0", *args], stdout=subprocess.PIPE, text=True
    )
    info = json.loads(proc.stdout.readline())
    raise_priority(proc.pid)
    return proc, info["url"]


def raise_priority(pid: int = 0) -> None:
    """On a shared host, other jobs stand aside (nice -10, where permitted): the client and the simulator
    then compete only with each other, as on a machine of their own."""
    try:
        os.setpriority(os.PRIO_PROCESS, pid, -10)
    except OSError:
        pass


def run_agent(url: str, levels: str, requests: int | None, output_len: int, extra: list[str]) -> list[dict]:
    cmd = [
        sys.executable,
        "-m",
        "infbench_agent",
        "macro",
        "--url",
        url,
        "--concurrency",
        levels,
        "--input-len",
        "32",
        "--output-len",
        str(output_len),
        "--no-request-events",
        "--update-interval",
        "1000",
        *(extra or ["--warmup", "4"]),
    ]
    if requests:
        cmd += ["--requests", str(requests)]
    out = subprocess.run(cmd, cwd=os.path.join(ROOT, "agent"), capture_output=True, text=True, check=False, preexec_fn=raise_priority)
    for line in out.stdout.splitlines():
        event = json.loads(line)
        if event["type"] == "result":
            return event["result"]["levels"]
    raise SystemExit(f"the agent gave no result:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")


def zero_cost(levels: list[int], output_len: int) -> None:
    print(f"== zero-cost simulator: every token at once, {output_len} tokens per request ==")
    print(
        f"{'streams':>7} {'requests':>8} {'tokens':>8} {'tok/s in':>10} {'client µs/tok':>13} {'client CPU':>10} "
        f"{'procs':>5} {'sim µs/tok':>10}"
    )
    for c in levels:
        proc, url = start_simulator("--zero-cost")
        try:
            requests = max(16, 2 * c)
            sim0 = cpu_of(proc.pid)
            [level] = run_agent(url, str(c), requests, output_len, [])
            # the simulator's CPU over the whole agent run, warm-up requests included
            sim_us = 1e6 * (cpu_of(proc.pid) - sim0) / ((requests + 4) * output_len)
        finally:
            proc.terminate()
            proc.wait()
        cpu = level["client_cpu"]
        print(
            f"{c:>7} {level['completed']:>8} {level['total_output_tokens']:>8} {level['output_throughput']:>10.0f} "
            f"{cpu['us_per_output_token']:>13.1f} {cpu['cpu_percent_of_one_core']:>9.0f}% {cpu['workers']:>5} "
            f"{sim_us:>10.1f}",
            flush=True,
        )


def sent_tpot(url: str) -> tuple[float, int]:
    """The simulator's own account: sum and count of TPOT as it wrote the tokens."""
    sys.path.insert(0, os.path.join(ROOT, "agent"))
    from infbench_agent.http import Endpoint, simple_request
    from infbench_agent.macro.metrics import parse_prometheus_totals

    text = simple_request(Endpoint(url), "GET", "/metrics")[1].decode()
    t = parse_prometheus_totals(
        text, ["inference_bench_simulator_sent_tpot_seconds_sum", "inference_bench_simulator_sent_tpot_seconds_count"]
    )
    return t.get("inference_bench_simulator_sent_tpot_seconds_sum", 0.0), int(t.get("inference_bench_simulator_sent_tpot_seconds_count", 0))


def paced(pace_ms: float, output_len: int) -> None:
    print(f"\n== paced simulator: every stream one token per {pace_ms:g} ms, {output_len} tokens per request ==")
    print(
        f"{'streams':>7} {'client TPOT ms':>14} {'median':>7} {'p99':>7} {'sent TPOT ms':>12} {'client error':>12} "
        f"{'tok/s in':>9} {'client µs/tok':>13} {'client CPU':>10} {'procs':>5} {'sim µs/tok':>10}"
    )
    proc, url = start_simulator("--pace-ms", str(pace_ms))
    measured = {}
    try:
        for c in (8, 256, 400):
            s0, n0 = sent_tpot(url)
            sim0 = cpu_of(proc.pid)
            [level] = run_agent(url, str(c), c, output_len, ["--warmup", "0"])
            sim_us = 1e6 * (cpu_of(proc.pid) - sim0) / max(1, level["total_output_tokens"])
            s1, n1 = sent_tpot(url)
            sent_ms = 1000 * (s1 - s0) / max(1, n1 - n0)
            cpu = level["client_cpu"]
            measured[c] = level["mean_tpot_ms"]
            print(
                f"{c:>7} {level['mean_tpot_ms']:>14.3f} {level['median_tpot_ms']:>7.3f} {level['p99_tpot_ms']:>7.3f} "
                f"{sent_ms:>12.3f} {100 * (level['mean_tpot_ms'] - sent_ms) / sent_ms:>+11.2f}% "
                f"{level['output_throughput']:>9.0f} {cpu['us_per_output_token']:>13.1f} "
                f"{cpu['cpu_percent_of_one_core']:>9.0f}% {cpu['workers']:>5} {sim_us:>10.1f}",
                flush=True,
            )
    finally:
        proc.terminate()
        proc.wait()
    drift = 100 * (measured[256] - measured[8]) / measured[8]
    print(
        f"TPOT at 256 streams vs 8 streams: {drift:+.2f}% ({'within' if abs(drift) <= 2 else 'OUTSIDE'} the 2% bound). "
        "'sent TPOT' is the simulator's own account; 'client error' is what the load generator adds to it."
    )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--output-len", type=int, default=256)
    p.add_argument("--pace-ms", type=float, default=20.0)
    p.add_argument("--paced-output-len", type=int, default=150)
    a = p.parse_args()
    print(
        f"host: {os.uname().machine}, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, "
        f"load average {os.getloadavg()[0]:.1f}; client and simulator at nice -10 where permitted"
    )
    zero_cost([1, 8, 64, 512] if a.quick else [1, 2, 4, 8, 16, 32, 64, 128, 256, 512], a.output_len)
    paced(a.pace_ms, 50 if a.quick else a.paced_output_len)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
