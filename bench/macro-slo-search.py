#!/usr/bin/env python3
"""The SLO search against a full sweep: the same answer, how many levels and how many seconds each took.

Two simulated servers whose answer is known from the timing model (simulator/sim_timing.py):
  knee: step = 20 ms, at most 12 requests running (--max-batch 12). Up to c=12 a request's TTFT is at most
        two steps; at c=13 one request of each wave waits a whole request (32 steps, 640 ms) for a slot.
        Objective TTFT p99 <= 200 ms: the highest concurrency meeting it is 12.
  tpot: step = 10 ms + 2 ms x running, no cap. TPOT = 10 + 2c ms. Objective TPOT p99 <= 59 ms: c=24 (58 ms)
        meets it, c=25 (60 ms) does not.
For each, `macro --search concurrency` (doubling, then bisecting), then a sweep of every concurrency from 1 to
the search's first failing bracket end, judged on the same objective; prints the levels each visited, its
answer and its wall time.

    python3 bench/macro-slo-search.py            # both servers
    python3 bench/macro-slo-search.py knee       # one
Run from the repository root. Standard library only.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SERVERS = {
    "knee": (["--step-base-ms", "20", "--step-per-seq-ms", "0", "--prefill-per-token-ms", "0", "--max-batch", "12"], "ttft_p99<=200", 12),
    "tpot": (["--step-base-ms", "10", "--step-per-seq-ms", "2", "--prefill-per-token-ms", "0", "--max-batch", "256"], "tpot_p99<=59", 24),
}


def start_simulator(args: list[str]) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, os.path.join(ROOT, "simulator", "vllm_sim.py"), "--port", "0", *args], stdout=subprocess.PIPE, text=True
    )
    return proc, json.loads(proc.stdout.readline())["url"]


def run_agent(url: str, extra: list[str]) -> tuple[dict, float]:
    cmd = [sys.executable, "-m", "infbench_agent", "macro", "--url", url, "--input-len", "32", "--output-len", "32"]
    cmd += ["--warmup", "2", "--no-request-events", "--update-interval", "1000", "--seed", "1", *extra]
    t0 = time.monotonic()
    out = subprocess.run(cmd, cwd=os.path.join(ROOT, "agent"), capture_output=True, text=True, check=False)
    wall = time.monotonic() - t0
    for line in out.stdout.splitlines():
        event = json.loads(line)
        if event["type"] == "result":
            return event["result"], wall
    raise SystemExit(f"the agent gave no result:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")


def main() -> None:
    names = sys.argv[1:] or list(SERVERS)
    for name in names:
        sim_args, slo, known = SERVERS[name]
        proc, url = start_simulator(sim_args)
        try:
            search, search_s = run_agent(url, ["--slo", slo, "--search", "concurrency", "--search-max", "64"])
            top = int(search["slo"]["bracket"][1])
            sweep, sweep_s = run_agent(url, ["--slo", slo, "--concurrency", ",".join(str(c) for c in range(1, top + 1))])
        finally:
            proc.terminate()
            proc.wait()
        s, w = search["slo"], sweep["slo"]
        sweep_best = max((v["value"] for v in w["visited"] if v["verdict"] == "meets"), default=None)
        print(f"== {name}: {slo}; known answer c={known} ==")
        print(f"search: {len(s['visited'])} levels, {search_s:.1f} s: " + ", ".join(f"{v['load']} {v['verdict']}" for v in s["visited"]))
        print(f"        bracket c={s['bracket'][0]}..{s['bracket'][1]}; answer: {s['line']}")
        print(f"sweep:  {len(w['visited'])} levels (c=1..{top}), {sweep_s:.1f} s; highest meeting c={sweep_best}")
        print(f"        {w['line']}")
        print(f"agree: {s['highest_meeting'] == sweep_best}; search found the known answer: {s['highest_meeting'] == known}", flush=True)


if __name__ == "__main__":
    main()
